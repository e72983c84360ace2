//! The `-lineinfo` line table of a cubin: DWARF 2 to 4 `.debug_line` programs (32-bit format),
//! run into rows of (section, offset, file, line). Each `DW_LNE_set_address` operand is placed by
//! the caller from the relocation at its position (a cubin's addresses are relocated against the
//! function's symbol). NVIDIA's own extended opcodes are skipped by their length. Every read is
//! bounds-checked; a program this cannot read gives `None`.

use std::collections::BTreeMap;

use occupancy_core::sass::raw::LineRow;

use super::{u16_at, u32_at, u64_at};

/// Rows per code section, in program order by offset (rows at one offset keep their order:
/// nvdisasm's `-g` shows the last). `locate(operand_at, stored)` places an address operand at
/// byte `operand_at` of `program` holding `stored`: `(section, offset)`, or `None` for an address
/// no code section has.
pub fn rows(
    program: &[u8],
    locate: &dyn Fn(usize, u64) -> Option<(usize, u64)>,
) -> Option<BTreeMap<usize, Vec<LineRow>>> {
    let mut rows: BTreeMap<usize, Vec<LineRow>> = BTreeMap::new();
    let mut at = 0;
    while at < program.len() {
        let unit_length = usize::try_from(u32_at(program, at, 0)?).ok()?;
        if unit_length >= 0xffff_fff0 {
            return None; // 64-bit DWARF
        }
        let end = at.checked_add(4)?.checked_add(unit_length)?;
        let unit = program.get(..end)?;
        run_unit(unit, at, locate, &mut rows)?;
        at = end;
    }
    for section_rows in rows.values_mut() {
        section_rows.sort_by_key(|row| row.offset);
    }
    Some(rows)
}

/// The line program header fields the opcodes need.
struct Header {
    minimum_instruction_length: u64,
    line_base: i64,
    line_range: u64,
    opcode_base: u8,
    standard_lengths: Vec<u8>,
    files: Vec<String>,
}

fn header(unit: &[u8], start: usize) -> Option<(Header, usize)> {
    let version = u16_at(unit, start, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let header_length = usize::try_from(u32_at(unit, start, 6)?).ok()?;
    let program_start = start.checked_add(10)?.checked_add(header_length)?;
    let mut at = start + 10;
    let minimum_instruction_length = u64::from(*unit.get(at)?);
    at += if version >= 4 { 2 } else { 1 }; // DWARF 4 adds maximum_operations_per_instruction
    let _default_is_stmt = unit.get(at)?;
    let line_base = i64::from(*unit.get(at + 1)? as i8);
    let line_range = u64::from(*unit.get(at + 2)?);
    let opcode_base = *unit.get(at + 3)?;
    at += 4;
    let standard_lengths = unit
        .get(at..at.checked_add(usize::from(opcode_base.checked_sub(1)?))?)?
        .to_vec();
    at += standard_lengths.len();
    let mut directories = vec![String::new()];
    while *unit.get(at)? != 0 {
        let (directory, next) = c_string(unit, at)?;
        directories.push(directory);
        at = next;
    }
    at += 1;
    let mut files = vec![String::new()];
    while *unit.get(at)? != 0 {
        let (name, next) = c_string(unit, at)?;
        let (directory, next) = uleb(unit, next)?;
        let (_modified, next) = uleb(unit, next)?;
        let (_length, next) = uleb(unit, next)?;
        at = next;
        let directory = usize::try_from(directory).ok()?;
        files.push(match directories.get(directory) {
            Some(directory) if directory_applies(directory, &name) => format!("{directory}/{name}"),
            _ => name,
        });
    }
    if line_range == 0 {
        return None;
    }
    Some((
        Header {
            minimum_instruction_length,
            line_base,
            line_range,
            opcode_base,
            standard_lengths,
            files,
        },
        program_start,
    ))
}

/// A file name is under its directory unless it is absolute or the directory is the unit's own
/// (index 0, recorded as empty here).
fn directory_applies(directory: &str, name: &str) -> bool {
    !directory.is_empty() && !name.starts_with('/')
}

/// The state machine's registers.
#[derive(Clone)]
struct State {
    place: Option<(usize, u64)>,
    file: usize,
    line: i64,
}

impl State {
    fn new() -> State {
        State {
            place: None,
            file: 1,
            line: 1,
        }
    }

    fn advance(&mut self, by: u64) {
        if let Some((_, offset)) = &mut self.place {
            *offset = offset.wrapping_add(by);
        }
    }
}

fn run_unit(
    unit: &[u8],
    start: usize,
    locate: &dyn Fn(usize, u64) -> Option<(usize, u64)>,
    rows: &mut BTreeMap<usize, Vec<LineRow>>,
) -> Option<()> {
    let (header, mut at) = header(unit, start)?;
    let mut state = State::new();
    let emit = |state: &State, end: bool, rows: &mut BTreeMap<usize, Vec<LineRow>>| {
        if let Some((section, offset)) = state.place {
            let file = (!end)
                .then(|| header.files.get(state.file).cloned())
                .flatten();
            rows.entry(section).or_default().push(LineRow {
                offset,
                file,
                line: u32::try_from(state.line).unwrap_or(0),
            });
        }
    };
    while at < unit.len() {
        let opcode = unit[at];
        at += 1;
        if opcode >= header.opcode_base {
            let adjusted = u64::from(opcode - header.opcode_base);
            state.advance(adjusted / header.line_range * header.minimum_instruction_length);
            state.line += header.line_base + (adjusted % header.line_range) as i64;
            emit(&state, false, rows);
            continue;
        }
        match opcode {
            0 => {
                let (length, next) = uleb(unit, at)?;
                let end = next.checked_add(usize::try_from(length).ok()?)?;
                match unit.get(next) {
                    Some(1) => {
                        emit(&state, true, rows);
                        state = State::new();
                    }
                    Some(2) => {
                        let stored = u64_at(unit, next, 1)?;
                        state.place = locate(next + 1, stored);
                    }
                    _ => {} // DW_LNE_define_file, set_discriminator, NVIDIA's own: skipped
                }
                at = end;
            }
            1 => emit(&state, false, rows),
            2 => {
                let (by, next) = uleb(unit, at)?;
                state.advance(by.wrapping_mul(header.minimum_instruction_length));
                at = next;
            }
            3 => {
                let (by, next) = sleb(unit, at)?;
                state.line = state.line.wrapping_add(by);
                at = next;
            }
            4 => {
                let (file, next) = uleb(unit, at)?;
                state.file = usize::try_from(file).ok()?;
                at = next;
            }
            8 => {
                let adjusted = u64::from(255 - header.opcode_base);
                state.advance(adjusted / header.line_range * header.minimum_instruction_length);
            }
            9 => {
                state.advance(u64::from(u16_at(unit, at, 0)?));
                at += 2;
            }
            _ => {
                // set_column, negate_stmt, basic_block, prologue/epilogue, isa and unknown
                // standard opcodes: skip their ULEB operands.
                for _ in 0..*header.standard_lengths.get(usize::from(opcode) - 1)? {
                    at = uleb(unit, at)?.1;
                }
            }
        }
    }
    Some(())
}

fn c_string(data: &[u8], at: usize) -> Option<(String, usize)> {
    let rest = data.get(at..)?;
    let length = rest.iter().position(|&byte| byte == 0)?;
    let text = String::from_utf8_lossy(&rest[..length]).into_owned();
    Some((text, at + length + 1))
}

/// One LEB128 number's low 64 bits, how many bits its bytes carried, and where it ends.
fn leb128(data: &[u8], mut at: usize) -> Option<(u64, u32, usize)> {
    let mut bits = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *data.get(at)?;
        at += 1;
        if shift < 64 {
            bits |= u64::from(byte & 0x7f) << shift;
        }
        shift = shift.saturating_add(7);
        if byte & 0x80 == 0 {
            return Some((bits, shift, at));
        }
    }
}

fn uleb(data: &[u8], at: usize) -> Option<(u64, usize)> {
    let (bits, _, at) = leb128(data, at)?;
    Some((bits, at))
}

fn sleb(data: &[u8], at: usize) -> Option<(i64, usize)> {
    let (mut bits, shift, at) = leb128(data, at)?;
    // The last byte's bit 6 is the sign: extend it above the bits read.
    if shift < 64 && (bits >> (shift - 1)) & 1 == 1 {
        bits |= u64::MAX << shift;
    }
    Some((bits as i64, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_reads_the_dwarf_examples() {
        // DWARF 5, tables 7.6 and 7.7.
        for (bytes, value) in [
            (&[2u8][..], 2u64),
            (&[127], 127),
            (&[0x80, 1], 128),
            (&[0xb9, 0x64], 12857),
        ] {
            assert_eq!(uleb(bytes, 0), Some((value, bytes.len())), "{bytes:?}");
        }
        for (bytes, value) in [
            (&[2u8][..], 2i64),
            (&[0x7e], -2),
            (&[0xff, 0], 127),
            (&[0x81, 0x7f], -127),
            (&[0x80, 1], 128),
            (&[0x80, 0x7f], -128),
        ] {
            assert_eq!(sleb(bytes, 0), Some((value, bytes.len())), "{bytes:?}");
        }
        assert_eq!(uleb(&[0x80], 0), None, "cut short");
    }

    /// A DWARF 2 line program for one function: files `a.cu` (absolute) and `inc/b.cuh`, rows at
    /// 0 (line 7), 0x10 (line 9), 0x10 (b.cuh line 3), end at 0x40.
    fn program() -> (Vec<u8>, usize) {
        let mut header = vec![1u8, 1, (-5i8) as u8, 14, 13]; // min len, is_stmt, base, range, opcode base
        header.extend([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]); // standard opcode lengths
        header.extend(b"/inc\0\0");
        header.extend(b"/src/a.cu\0\0\0\0b.cuh\0\x01\0\0\0");
        let mut body = vec![0u8, 9, 2];
        body.extend(0u64.to_le_bytes()); // DW_LNE_set_address (relocated)
        body.extend([3, 6, 1]); // advance_line +6 -> 7, copy
        body.extend([2, 0x10, 3, 2, 1]); // advance_pc 16, advance_line +2 -> 9, copy
        body.extend([0, 2, 0x90, 7]); // an NVIDIA extended opcode, skipped
        body.extend([4, 2, 3, 0x7a, 1]); // file 2, advance_line -6 -> 3, copy
        body.extend([2, 0x30, 0, 1, 1]); // advance_pc 48, end_sequence
        let mut unit = 2u16.to_le_bytes().to_vec();
        unit.extend((header.len() as u32).to_le_bytes());
        unit.extend(header);
        let address_at = 4 + unit.len() + 3;
        unit.extend(body);
        let mut program = (unit.len() as u32).to_le_bytes().to_vec();
        program.extend(unit);
        (program, address_at)
    }

    #[test]
    fn rows_follow_the_program_with_relocated_addresses() {
        let (program, address_at) = program();
        let place = |at: usize, stored: u64| (at == address_at).then_some((7, stored + 0x100));
        let rows = rows(&program, &place).unwrap();
        let row = |offset: u64, file: Option<&str>, line: u32| LineRow {
            offset,
            file: file.map(str::to_owned),
            line,
        };
        assert_eq!(
            rows[&7],
            [
                row(0x100, Some("/src/a.cu"), 7),
                row(0x110, Some("/src/a.cu"), 9),
                row(0x110, Some("/inc/b.cuh"), 3),
                row(0x140, None, 3),
            ]
        );
    }

    #[test]
    fn damaged_programs_give_none_or_rows_never_a_panic() {
        let (program, address_at) = program();
        let place = |at: usize, stored: u64| (at == address_at).then_some((7, stored));
        for cut in 0..program.len() {
            let _ = rows(&program[..cut], &place);
            let mut flipped = program.clone();
            flipped[cut] ^= 0xff;
            let _ = rows(&flipped, &place);
        }
        let mut version_5 = program.clone();
        version_5[4] = 5;
        assert!(rows(&version_5, &place).is_none());
    }
}
