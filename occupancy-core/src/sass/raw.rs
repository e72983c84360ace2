//! The code of many functions, from many cubins of one architecture, disassembled by one
//! `nvdisasm --binary SMxx` and split back into one [`SassSection`] per function.
//!
//! nvdisasm spends about 0.2 s of CPU starting up for every file it reads, however little code
//! it prints, so a build that reads its cubins one by one pays that per cubin. In raw mode it reads
//! bare instruction bytes: [`RawBinary::new`] lays the functions' code one after another, and
//! [`RawBinary::sections`] reads nvdisasm's text back into what its ELF mode (`nvdisasm -c -g`)
//! gives [`super::parse_nvdisasm`]: branch, call and `BSSY` targets as labels (`.L_x_<offset>`,
//! the function, a subroutine `$kernel$callee`), a call the cubin relocates named by its symbol,
//! subroutines at their symbols' offsets, the symbol a relocation writes into another
//! instruction's operand (ELF mode's `32@lo(NAME)`), and every instruction's source line from the
//! line table rows (the last row at or before its offset, as `-g` shows it). What the cubin says
//! about the code ([`FunctionCode`]) is read by the caller; this module does no I/O.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::parse::{parse_instruction, subroutine_name, Instruction, SourceLine, Subroutine};
use super::symbols::FunctionSymbols;
use super::{SassError, SassSection};

/// Bytes per instruction on every architecture nvdisasm's raw mode reads (sm_75 and later).
const INSTRUCTION_BYTES: usize = 16;

/// The mnemonics whose last operand is a code address in raw mode and a `(label)` in ELF mode.
const TARGETED: [&str; 5] = ["BRA", "JMP", "CALL", "BSSY", "RET"];

/// One row of a line table: from `offset` on, the code is at `file:line` (`file` is `None` past
/// the end of a sequence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    pub offset: u64,
    pub file: Option<String>,
    pub line: u32,
}

/// One function's section of a cubin and what the file says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCode {
    /// The section's function (`.text.NAME`).
    pub name: String,
    /// A kernel (`STO_CUDA_ENTRY`).
    pub entry: bool,
    /// The section's bytes.
    pub code: Vec<u8>,
    /// The other function symbols in the section, by offset (ptxas's `$kernel$callee`).
    pub subroutines: Vec<(u64, String)>,
    /// The symbol each relocation of the section names, by offset.
    pub relocated_symbols: BTreeMap<u64, String>,
    /// Line table rows, by offset.
    pub lines: Vec<LineRow>,
    /// The cubin's function symbols and constant slots (one for all functions of a cubin).
    pub functions: Arc<FunctionSymbols>,
}

/// Functions laid one after another in one raw instruction binary.
#[derive(Debug)]
pub struct RawBinary<'a> {
    functions: &'a [FunctionCode],
    /// Each function's first byte in [`Self::bytes`].
    bases: Vec<u64>,
    pub bytes: Vec<u8>,
}

impl<'a> RawBinary<'a> {
    /// `None` when a function's code is not whole instructions.
    pub fn new(functions: &'a [FunctionCode]) -> Option<RawBinary<'a>> {
        let mut bytes = Vec::with_capacity(functions.iter().map(|code| code.code.len()).sum());
        let mut bases = Vec::with_capacity(functions.len());
        for function in functions {
            if function.code.len() % INSTRUCTION_BYTES != 0 {
                return None;
            }
            bases.push(bytes.len() as u64);
            bytes.extend_from_slice(&function.code);
        }
        Some(RawBinary {
            functions,
            bases,
            bytes,
        })
    }

    /// nvdisasm's raw-mode text of [`Self::bytes`] (`arch` as in its `.target`), one section per
    /// function, in order. One pass over the text.
    pub fn sections(&self, text: &str, arch: &str) -> Result<Vec<SassSection>, SassError> {
        let mut sections: Vec<SassSection> = self
            .functions
            .iter()
            .map(|function| SassSection {
                name: function.name.clone(),
                arch: Some(arch.to_owned()),
                entry: function.entry,
                functions: Some(Arc::clone(&function.functions)),
                ..SassSection::default()
            })
            .collect();
        let mut current = 0;
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if !line.starts_with("/*") {
                continue;
            }
            let Some(mut instruction) = parse_instruction(line, index + 1)? else {
                continue;
            };
            while current + 1 < self.bases.len() && instruction.offset >= self.bases[current + 1] {
                current += 1;
            }
            let base = *self.bases.get(current).ok_or(SassError::NoCode)?;
            instruction.offset -= base.min(instruction.offset);
            sections[current].instructions.push(instruction);
        }
        for (index, section) in sections.iter_mut().enumerate() {
            self.complete(index, section)?;
        }
        Ok(sections)
    }

    /// Labels, subroutines, targets and source lines of function `index`'s section.
    fn complete(&self, index: usize, section: &mut SassSection) -> Result<(), SassError> {
        let function = &self.functions[index];
        let at_offset: HashMap<u64, usize> = section
            .instructions
            .iter()
            .enumerate()
            .map(|(position, instruction)| (instruction.offset, position))
            .collect();
        let mut labels: BTreeMap<u64, String> = BTreeMap::from([(0, function.name.clone())]);
        for (offset, label) in &function.subroutines {
            labels.insert(*offset, label.clone());
            let Some(&first_instruction) = at_offset.get(offset) else {
                continue;
            };
            if label.starts_with('$') {
                section.subroutines.push(Subroutine {
                    label: label.clone(),
                    name: subroutine_name(label).to_owned(),
                    first_instruction,
                });
            }
            section.labels.insert(label.clone(), first_instruction);
        }
        section.labels.insert(function.name.clone(), 0);
        let base = self.bases[index];
        let size = function.code.len() as u64;
        for instruction in &mut section.instructions {
            if let Some(symbol) = operand_symbol(instruction, function) {
                instruction.symbol = Some(symbol);
            }
            let Some(label) = target_label(instruction, function, base, size, &mut labels) else {
                continue;
            };
            let Some(position) = label.1.and_then(|offset| at_offset.get(&offset)) else {
                replace_target(instruction, &label.0);
                continue;
            };
            section.labels.insert(label.0.clone(), *position);
            replace_target(instruction, &label.0);
        }
        assign_lines(section, &function.lines);
        Ok(())
    }
}

/// The symbol a relocation writes into an instruction that has no target (`MOV R2, 0x0` that
/// ELF mode prints `MOV R2, 32@lo(f)`); not the function's own (a return address, which ELF mode
/// prints as an expression).
fn operand_symbol(instruction: &Instruction, function: &FunctionCode) -> Option<String> {
    if TARGETED.contains(&instruction.base_opcode()) {
        return None;
    }
    let end = instruction.offset + INSTRUCTION_BYTES as u64;
    let (_, symbol) = function
        .relocated_symbols
        .range(instruction.offset..end)
        .next()?;
    (*symbol != function.name).then(|| symbol.clone())
}

/// The label an instruction's target becomes, and the offset it labels in the function (`None`
/// for a relocated symbol): `None` when the instruction names no target.
fn target_label(
    instruction: &Instruction,
    function: &FunctionCode,
    base: u64,
    size: u64,
    labels: &mut BTreeMap<u64, String>,
) -> Option<(String, Option<u64>)> {
    if !TARGETED.contains(&instruction.base_opcode()) {
        return None;
    }
    let offset = instruction.offset;
    let end = offset + INSTRUCTION_BYTES as u64;
    if let Some((_, symbol)) = function.relocated_symbols.range(offset..end).next() {
        return Some((symbol.clone(), None));
    }
    let address = last_operand(&instruction.operands)?;
    let address = u64::from_str_radix(address.strip_prefix("0x")?, 16).ok()?;
    let target = address.checked_sub(base).filter(|target| *target < size)?;
    let label = labels
        .entry(target)
        .or_insert_with(|| format!(".L_x_{target:x}"))
        .clone();
    Some((label, Some(target)))
}

fn last_operand(operands: &str) -> Option<&str> {
    operands
        .rsplit([',', ' '])
        .find(|part| !part.is_empty())
        .map(str::trim)
}

/// Writes the target as ELF mode prints it: `` `(label) ``.
fn replace_target(instruction: &mut Instruction, label: &str) {
    let operands = &instruction.operands;
    let kept = match last_operand(operands).filter(|last| last.starts_with("0x")) {
        Some(last) => operands[..operands.len() - last.len()].trim_end(),
        None => operands.trim_end(),
    };
    instruction.operands = if kept.is_empty() {
        format!("`({label})")
    } else {
        format!("{kept} `({label})")
    };
}

/// Each instruction's source line: the last row at or before its offset.
fn assign_lines(section: &mut SassSection, rows: &[LineRow]) {
    let mut index: HashMap<SourceLine, usize> = HashMap::new();
    for instruction in &mut section.instructions {
        let next = rows.partition_point(|row| row.offset <= instruction.offset);
        let Some(row) = next.checked_sub(1).map(|at| &rows[at]) else {
            continue;
        };
        let Some(file) = &row.file else {
            continue;
        };
        let line = SourceLine {
            file: file.clone(),
            line: row.line,
        };
        let fresh = section.lines.len();
        let position = *index.entry(line.clone()).or_insert(fresh);
        if position == fresh {
            section.lines.push(line);
        }
        instruction.source_line = Some(position);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(name: &str, instructions: usize) -> FunctionCode {
        FunctionCode {
            name: name.to_owned(),
            entry: true,
            code: vec![0; instructions * INSTRUCTION_BYTES],
            subroutines: Vec::new(),
            relocated_symbols: BTreeMap::new(),
            lines: Vec::new(),
            functions: Arc::default(),
        }
    }

    #[test]
    fn targets_become_labels_and_each_function_its_own_section() {
        let mut first = function("a", 4);
        first.lines = vec![
            LineRow {
                offset: 0,
                file: Some("/k.cu".into()),
                line: 7,
            },
            LineRow {
                offset: 0x20,
                file: Some("/k.cu".into()),
                line: 9,
            },
        ];
        let mut second = function("b", 5);
        second.subroutines = vec![(0x30, "$b$callee".into())];
        second.relocated_symbols =
            BTreeMap::from([(0x14, "vprintf".into()), (0x34, "_Z5twicef".into())]);
        first.relocated_symbols = BTreeMap::from([(0x4, "a".into())]);
        let functions = [first, second];
        let raw = RawBinary::new(&functions).unwrap();
        assert_eq!(raw.bytes.len(), 9 * 16);
        let text = "\t.headerflags\t@\"EF_CUDA_SM90\"\n\
            /*0000*/ LDL R2, [R1+0x8] ;\n\
            /*0010*/ @!P0 BRA 0x30 ;\n\
            /*0020*/ BRA 0x10 ;\n\
            /*0030*/ EXIT ;\n\
            /*0040*/ BSSY B0, 0x60 ;\n\
            /*0050*/ CALL.ABS.NOINC 0x0 ;\n\
            /*0060*/ CALL.REL.NOINC 0x70 ;\n\
            /*0070*/ MOV R2, 0x0 ;\n\
            /*0080*/ RET.REL.NODEC R20 0x40 ;\n";
        let sections = raw.sections(text, "sm_90").unwrap();
        let a = &sections[0];
        assert_eq!(a.instructions.len(), 4);
        assert_eq!(a.instructions[1].operands, "`(.L_x_30)");
        assert_eq!(a.labels[".L_x_30"], 3);
        assert_eq!(a.labels[".L_x_10"], 1);
        assert_eq!(a.lines[a.instructions[1].source_line.unwrap()].line, 7);
        assert_eq!(a.lines[a.instructions[3].source_line.unwrap()].line, 9);
        let b = &sections[1];
        assert_eq!(b.instructions[0].offset, 0);
        assert_eq!(b.instructions[0].operands, "B0, `(.L_x_20)");
        assert_eq!(b.instructions[1].operands, "`(vprintf)");
        assert_eq!(b.instructions[2].operands, "`($b$callee)");
        assert_eq!(b.instructions[4].operands, "R20 `(b)");
        // A relocated operand names its symbol, unless it is the function's own (an address in
        // it); a relocated target is a label, not an operand's symbol.
        assert_eq!(b.instructions[3].symbol.as_deref(), Some("_Z5twicef"));
        assert_eq!(b.instructions[1].symbol, None);
        assert_eq!(a.instructions[0].symbol, None);
        assert_eq!(b.subroutines[0].name, "callee");
        assert_eq!(b.range_of(None), 0..3);
        assert!(b.instructions[0].source_line.is_none());
    }

    #[test]
    fn code_that_is_not_whole_instructions_is_refused() {
        let mut odd = function("a", 1);
        odd.code.push(0);
        assert!(RawBinary::new(&[odd]).is_none());
    }
}
