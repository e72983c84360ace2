//! A cubin (an ELF64 little-endian file) read just far enough for the SASS stage: its function
//! symbols by name (`nvdisasm --function` takes symbol indices), and each function's section of
//! code with what nvdisasm would otherwise read from the file around it (the subroutines ptxas
//! placed in the section, the symbols its relocations name, its `-lineinfo` line table), so that
//! one `nvdisasm --binary` per architecture reads the code of many cubins; and what names the
//! callee of a call through a register, which no disassembly prints: the function symbols and the
//! constant-bank slots that relocations fill with a function's address ([`Cubin::call_symbols`]).
//! Every read is bounds-checked: a file this cannot read gives `None` and the caller disassembles
//! the whole cubin with nvdisasm.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use occupancy_core::sass::raw::{FunctionCode, LineRow};
use occupancy_core::sass::FunctionSymbols;

mod line_table;
mod marks;
mod nv_info;
mod resources;

pub use marks::CodeMarks;
pub use resources::SpillEvidence;

const SHT_SYMTAB: u32 = 2;
const SHT_RELA: u32 = 4;
const SHT_REL: u32 = 9;
const STT_FUNC: u8 = 2;
/// `st_other` of a kernel (`.other k,@"STO_CUDA_ENTRY STV_DEFAULT"`).
const STO_CUDA_ENTRY: u8 = 0x10;

/// A parsed cubin: its section headers and symbols.
pub struct Cubin<'a> {
    bytes: &'a [u8],
    header: ElfHeader,
    sections: Vec<Section>,
    symbols: Vec<Symbol>,
}

impl std::fmt::Debug for Cubin<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Cubin")
            .field("bytes", &self.bytes.len())
            .field("sections", &self.sections.len())
            .finish_non_exhaustive()
    }
}

/// What the ELF header says about the code: whose machine, which ABI, linked or not.
#[derive(Debug, Clone, Copy)]
struct ElfHeader {
    /// `EI_OSABI` (0x33 `ELFOSABI_CUDA` up to CUDA 12, 0x41 since CUDA 13's ABI 8).
    os_abi: u8,
    /// `e_type`: 1 `ET_REL` (an `-rdc` object's cubin), 2 `ET_EXEC` (linked).
    kind: u16,
    /// `e_machine`: 190 `EM_CUDA`.
    machine: u16,
    /// `e_flags`: the SM the code is for, in an ABI-dependent place.
    flags: u32,
}

#[derive(Debug, Clone)]
struct Section {
    name: String,
    kind: u32,
    flags: u64,
    offset: usize,
    size: usize,
    link: usize,
    /// For a relocation section, the section it applies to.
    info: usize,
}

#[derive(Debug, Clone)]
struct Symbol {
    name: String,
    kind: u8,
    other: u8,
    section: usize,
    value: u64,
}

/// A relocation: the symbol it names and its addend (`None` for `SHT_REL`, whose addend is the
/// value stored at the offset).
#[derive(Debug, Clone, Copy)]
struct Relocation {
    symbol: usize,
    addend: Option<i64>,
}

/// The symbol-table index of every function symbol (`STT_FUNC`: kernels and device functions)
/// in the cubin `bytes`, by name.
#[cfg(test)]
pub fn function_symbols(bytes: &[u8]) -> Option<BTreeMap<String, usize>> {
    Some(Cubin::parse(bytes)?.function_symbols())
}

impl<'a> Cubin<'a> {
    pub fn parse(bytes: &'a [u8]) -> Option<Cubin<'a>> {
        if bytes.get(..4)? != b"\x7fELF" || *bytes.get(4)? != 2 || *bytes.get(5)? != 1 {
            return None; // not ELF64 little-endian
        }
        let table = usize::try_from(u64_at(bytes, 0, 0x28)?).ok()?;
        let entry_size = usize::from(u16_at(bytes, 0, 0x3A)?);
        // ELF64's section headers are 64 bytes: another size (0 read every header at one
        // place, a cubin of no kernel that passed) is a damaged file.
        if entry_size != 64 {
            return None;
        }
        let count = usize::from(u16_at(bytes, 0, 0x3C)?);
        let names_index = usize::from(u16_at(bytes, 0, 0x3E)?);
        let header = |index: usize| -> Option<(u32, Section)> {
            let at = table.checked_add(index.checked_mul(entry_size)?)?;
            let section = Section {
                name: String::new(),
                kind: u32_at(bytes, at, 4)?,
                flags: u64_at(bytes, at, 8)?,
                offset: usize::try_from(u64_at(bytes, at, 0x18)?).ok()?,
                size: usize::try_from(u64_at(bytes, at, 0x20)?).ok()?,
                link: usize::try_from(u32_at(bytes, at, 0x28)?).ok()?,
                info: usize::try_from(u32_at(bytes, at, 0x2C)?).ok()?,
            };
            Some((u32_at(bytes, at, 0)?, section))
        };
        let headers: Vec<(u32, Section)> = (0..count).map(header).collect::<Option<_>>()?;
        let names = headers.get(names_index).map(|(_, names)| names.clone());
        let mut cubin = Cubin {
            bytes,
            header: ElfHeader {
                os_abi: *bytes.get(7)?,
                kind: u16_at(bytes, 0, 0x10)?,
                machine: u16_at(bytes, 0, 0x12)?,
                flags: u32_at(bytes, 0, 0x30)?,
            },
            sections: Vec::with_capacity(count),
            symbols: Vec::new(),
        };
        for (name_at, mut section) in headers {
            if let Some(names) = &names {
                section.name = cubin.string(names, name_at as usize).unwrap_or_default();
            }
            cubin.sections.push(section);
        }
        cubin.symbols = cubin.read_symbols()?;
        Some(cubin)
    }

    fn contents(&self, section: &Section) -> Option<&'a [u8]> {
        self.bytes
            .get(section.offset..section.offset.checked_add(section.size)?)
    }

    fn string(&self, table: &Section, at: usize) -> Option<String> {
        let text = self.contents(table)?.get(at..)?;
        let text = &text[..text.iter().position(|&byte| byte == 0)?];
        std::str::from_utf8(text).ok().map(str::to_owned)
    }

    fn read_symbols(&self) -> Option<Vec<Symbol>> {
        let Some(table) = self
            .sections
            .iter()
            .find(|section| section.kind == SHT_SYMTAB)
        else {
            return Some(Vec::new());
        };
        let strings = self.sections.get(table.link)?;
        let bytes = self.contents(table)?;
        (0..bytes.len() / 24)
            .map(|index| {
                let at = index * 24;
                let name_at = usize::try_from(u32_at(bytes, at, 0)?).ok()?;
                Some(Symbol {
                    name: self.string(strings, name_at).unwrap_or_default(),
                    kind: field::<1>(bytes, at, 4)?[0] & 0xf,
                    other: field::<1>(bytes, at, 5)?[0],
                    section: usize::from(u16_at(bytes, at, 6)?),
                    value: u64_at(bytes, at, 8)?,
                })
            })
            .collect()
    }

    /// The symbol-table index of every function symbol by name (the first of a name).
    pub fn function_symbols(&self) -> BTreeMap<String, usize> {
        let mut found = BTreeMap::new();
        for (index, symbol) in self.symbols.iter().enumerate() {
            if symbol.kind == STT_FUNC && !symbol.name.is_empty() {
                found.entry(symbol.name.clone()).or_insert(index);
            }
        }
        found
    }

    /// The symbol indices of `kernels` (`None`: of every kernel, `STO_CUDA_ENTRY`); `None` when
    /// one of them is not a function symbol here.
    pub fn kernel_symbols(&self, kernels: Option<&BTreeSet<String>>) -> Option<Vec<usize>> {
        let Some(kernels) = kernels else {
            return Some(
                (self.symbols.iter().enumerate())
                    .filter(|(_, symbol)| symbol.kind == STT_FUNC)
                    .filter(|(_, symbol)| symbol.other & STO_CUDA_ENTRY != 0)
                    .map(|(index, _)| index)
                    .collect(),
            );
        };
        let by_name = self.function_symbols();
        kernels
            .iter()
            .map(|kernel| by_name.get(kernel).copied())
            .collect()
    }

    /// The relocations that apply to section `target`, by offset in it.
    fn relocations_of(&self, target: usize) -> Option<BTreeMap<u64, Relocation>> {
        let mut found = BTreeMap::new();
        for section in &self.sections {
            let entry = match section.kind {
                SHT_RELA => 24,
                SHT_REL => 16,
                _ => continue,
            };
            if section.info != target {
                continue;
            }
            let bytes = self.contents(section)?;
            for at in (0..bytes.len() / entry).map(|index| index * entry) {
                let info = u64_at(bytes, at, 8)?;
                let addend = match entry {
                    24 => Some(u64_at(bytes, at, 16)? as i64),
                    _ => None,
                };
                let symbol = usize::try_from(info >> 32).ok()?;
                found.insert(u64_at(bytes, at, 0)?, Relocation { symbol, addend });
            }
        }
        Some(found)
    }

    /// The code of the functions whose symbols are `symbol_indices`: each symbol's whole section
    /// once (a subroutine's symbol names its caller's section), with the subroutines in it, the
    /// symbols its relocations name and its line rows. `None` when a symbol or section cannot be
    /// read, or the line table is one this reader does not know.
    pub fn code_of(&self, symbol_indices: &[usize]) -> Option<Vec<FunctionCode>> {
        let mut sections: Vec<usize> = symbol_indices
            .iter()
            .map(|index| Some(self.symbols.get(*index)?.section))
            .collect::<Option<_>>()?;
        sections.sort_unstable();
        sections.dedup();
        let mut lines = self.line_rows(&sections)?;
        let functions = Arc::new(self.call_symbols());
        sections
            .into_iter()
            .map(|index| {
                let lines = lines.remove(&index).unwrap_or_default();
                self.function_code(index, lines, Arc::clone(&functions))
            })
            .collect()
    }

    /// The function symbols and, per slot of a module-wide constant bank (`.nv.constant4`), the
    /// function a relocation writes there: in whole-program code the addresses of `__assertfail`,
    /// `vprintf`, `malloc`, which a kernel loads into a register to call
    /// (`LDC.64 R2, c[0x4][R0]`). A relocation section this cannot read gives no slots.
    pub fn call_symbols(&self) -> FunctionSymbols {
        let is_function = |index: usize| {
            self.symbols
                .get(index)
                .filter(|symbol| symbol.kind == STT_FUNC && !symbol.name.is_empty())
        };
        let names = (0..self.symbols.len())
            .filter_map(is_function)
            .map(|symbol| symbol.name.clone())
            .collect();
        let mut slots = BTreeMap::new();
        for (index, section) in self.sections.iter().enumerate() {
            let Some(bank) = module_constant_bank(&section.name) else {
                continue;
            };
            for (offset, relocation) in self.relocations_of(index).unwrap_or_default() {
                if let Some(symbol) = is_function(relocation.symbol) {
                    slots.insert((bank, offset), symbol.name.clone());
                }
            }
        }
        FunctionSymbols::new(names, slots)
    }

    fn function_code(
        &self,
        index: usize,
        lines: Vec<LineRow>,
        functions: Arc<FunctionSymbols>,
    ) -> Option<FunctionCode> {
        let section = self.sections.get(index)?;
        let name = section.name.strip_prefix(".text.")?.to_owned();
        let in_section = || {
            self.symbols
                .iter()
                .filter(move |symbol| symbol.section == index && symbol.kind == STT_FUNC)
        };
        let entry =
            in_section().any(|symbol| symbol.name == name && symbol.other & STO_CUDA_ENTRY != 0);
        let mut subroutines: Vec<(u64, String)> = in_section()
            .filter(|symbol| symbol.name != name)
            .map(|symbol| (symbol.value, symbol.name.clone()))
            .collect();
        subroutines.sort();
        let relocated_symbols = self
            .relocations_of(index)?
            .into_iter()
            .filter_map(|(offset, relocation)| {
                let symbol = self.symbols.get(relocation.symbol)?;
                Some((offset, symbol.name.clone()))
            })
            .collect();
        Some(FunctionCode {
            name,
            entry,
            code: self.contents(section)?.to_vec(),
            subroutines,
            relocated_symbols,
            lines,
            functions,
        })
    }

    /// The `.debug_line` rows of the code sections `wanted` (sorted), by section (empty without
    /// line tables): the program is run whole, but only their rows are kept (a cubin's other
    /// kernels' rows, each with its file's name, took tens of MB of a large cubin).
    fn line_rows(&self, wanted: &[usize]) -> Option<BTreeMap<usize, Vec<LineRow>>> {
        let Some(index) = self
            .sections
            .iter()
            .position(|section| section.name == ".debug_line")
        else {
            return Some(BTreeMap::new());
        };
        let program = self.contents(&self.sections[index])?;
        let relocations = self.relocations_of(index)?;
        // An address operand the line program sets: the section of the symbol its relocation
        // names, and the offset in that section.
        let locate = |operand_at: usize, stored: u64| {
            let relocation = relocations.get(&(operand_at as u64))?;
            let symbol = self.symbols.get(relocation.symbol)?;
            let addend = relocation.addend.map_or(stored, |addend| addend as u64);
            let offset = symbol.value.wrapping_add(addend);
            (wanted.binary_search(&symbol.section).is_ok()).then_some((symbol.section, offset))
        };
        line_table::rows(program, &locate)
    }
}

/// The bank of a module-wide constant section: 4 for `.nv.constant4`; `None` for a kernel's own
/// (`.nv.constant0.k`) and every other section.
fn module_constant_bank(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(".nv.constant")?;
    let numbered = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
    numbered.then(|| digits.parse().ok()).flatten()
}

/// `N` bytes at `base + offset`, when the file has them.
fn field<const N: usize>(bytes: &[u8], base: usize, offset: usize) -> Option<[u8; N]> {
    let start = base.checked_add(offset)?;
    bytes.get(start..start.checked_add(N)?)?.try_into().ok()
}

fn u16_at(bytes: &[u8], base: usize, offset: usize) -> Option<u16> {
    field(bytes, base, offset).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], base: usize, offset: usize) -> Option<u32> {
    field(bytes, base, offset).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], base: usize, offset: usize) -> Option<u64> {
    field(bytes, base, offset).map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64: null section, a symtab linked to a strtab, three symbols.
    fn tiny_elf() -> Vec<u8> {
        let strtab = b"\0.text.k\0k\0other\0".to_vec();
        let mut symtab = vec![0u8; 24 * 3];
        // Symbol 1 `k` and 2 `other` are functions; 0 is the null symbol.
        for (index, name_at) in [(1usize, 9u32), (2, 11)] {
            symtab[index * 24..index * 24 + 4].copy_from_slice(&name_at.to_le_bytes());
            symtab[index * 24 + 4] = 0x12; // STB_GLOBAL, STT_FUNC
        }
        let mut bytes = vec![0u8; 64];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let symtab_at = bytes.len();
        bytes.extend(&symtab);
        let strtab_at = bytes.len();
        bytes.extend(&strtab);
        let sections_at = bytes.len();
        bytes[0x28..0x30].copy_from_slice(&(sections_at as u64).to_le_bytes());
        bytes[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        bytes[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        let header = |kind: u32, offset: usize, size: usize, link: u32, entsize: u64| {
            let mut section = vec![0u8; 64];
            section[4..8].copy_from_slice(&kind.to_le_bytes());
            section[0x18..0x20].copy_from_slice(&(offset as u64).to_le_bytes());
            section[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            section[0x28..0x2C].copy_from_slice(&link.to_le_bytes());
            section[0x38..0x40].copy_from_slice(&entsize.to_le_bytes());
            section
        };
        bytes.extend(header(0, 0, 0, 0, 0));
        bytes.extend(header(2, symtab_at, symtab.len(), 2, 24));
        bytes.extend(header(3, strtab_at, strtab.len(), 0, 0));
        bytes
    }

    #[test]
    fn functions_map_to_their_symbol_indices() {
        let found = function_symbols(&tiny_elf()).unwrap();
        assert_eq!(
            found,
            BTreeMap::from([("k".into(), 1), ("other".into(), 2)])
        );
        let mut not_a_function = tiny_elf();
        not_a_function[64 + 24 * 2 + 4] = 0x13; // STT_SECTION
        let found = function_symbols(&not_a_function).unwrap();
        assert_eq!(found, BTreeMap::from([("k".into(), 1)]));
    }

    /// An ELF64 of `(name, kind, contents, link, info)` sections after the null one, with the
    /// section names in a last string table.
    fn elf(sections: &[(&str, u32, Vec<u8>, u32, u32)]) -> Vec<u8> {
        let mut names = b"\0".to_vec();
        let mut bytes = vec![0u8; 64];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut headers = vec![0u8; 64];
        let mut add = |bytes: &mut Vec<u8>, name: &str, kind: u32, data: &[u8], link, info| {
            let mut header = vec![0u8; 64];
            header[..4].copy_from_slice(&(names.len() as u32).to_le_bytes());
            names.extend(name.bytes().chain([0]));
            header[4..8].copy_from_slice(&kind.to_le_bytes());
            header[0x18..0x20].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            header[0x20..0x28].copy_from_slice(&(data.len() as u64).to_le_bytes());
            header[0x28..0x2C].copy_from_slice(&u32::to_le_bytes(link));
            header[0x2C..0x30].copy_from_slice(&u32::to_le_bytes(info));
            bytes.extend(data);
            headers.extend(header);
        };
        for (name, kind, data, link, info) in sections {
            add(&mut bytes, name, *kind, data, *link, *info);
        }
        let count = sections.len() + 2;
        let names_at = bytes.len();
        let names_size = names.len() + ".shstrtab\0".len();
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(&(names.len() as u32).to_le_bytes());
        names.extend(b".shstrtab\0");
        header[4..8].copy_from_slice(&3u32.to_le_bytes());
        header[0x18..0x20].copy_from_slice(&(names_at as u64).to_le_bytes());
        header[0x20..0x28].copy_from_slice(&(names_size as u64).to_le_bytes());
        bytes.extend(&names);
        headers.extend(header);
        let table = bytes.len();
        bytes[0x28..0x30].copy_from_slice(&(table as u64).to_le_bytes());
        bytes[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        bytes[0x3C..0x3E].copy_from_slice(&(count as u16).to_le_bytes());
        bytes[0x3E..0x40].copy_from_slice(&((count - 1) as u16).to_le_bytes());
        bytes.extend(headers);
        bytes
    }

    #[test]
    fn constant_slots_name_the_functions_relocations_put_there() {
        // Symbols: 1 `__assertfail` (function), 2 `$str` (data).
        let strings = b"\0__assertfail\0$str\0".to_vec();
        let mut symbols = vec![0u8; 24 * 3];
        symbols[24..28].copy_from_slice(&1u32.to_le_bytes());
        symbols[24 + 4] = 0x12; // STB_GLOBAL, STT_FUNC
        symbols[48..52].copy_from_slice(&14u32.to_le_bytes());
        symbols[48 + 4] = 0x01; // STT_OBJECT
        let rela = |entries: &[(u64, u64)]| -> Vec<u8> {
            let mut bytes = Vec::new();
            for (offset, symbol) in entries {
                bytes.extend(offset.to_le_bytes());
                bytes.extend(((symbol << 32) | 2).to_le_bytes());
                bytes.extend(0u64.to_le_bytes());
            }
            bytes
        };
        let file = elf(&[
            (".strtab", 3, strings, 0, 0),
            (".symtab", SHT_SYMTAB, symbols, 1, 0),
            (".nv.constant4", 1, vec![0; 0x48], 0, 0),
            (
                ".rela.nv.constant4",
                SHT_RELA,
                rela(&[(0x40, 1), (0x10, 2)]),
                2,
                3,
            ),
            (".nv.constant0.k", 1, vec![0; 0x10], 0, 0),
            (".rela.nv.constant0.k", SHT_RELA, rela(&[(0x8, 1)]), 2, 5),
        ]);
        let cubin = Cubin::parse(&file).unwrap();
        let found = cubin.call_symbols();
        assert_eq!(found.names, BTreeSet::from(["__assertfail".to_owned()]));
        assert_eq!(
            found.constant_slots,
            BTreeMap::from([((4, 0x40), "__assertfail".to_owned())]),
            "a data symbol's slot and a kernel's own bank are not function slots"
        );
    }

    /// Issue #42, class 9: `tests/kernels/recursive.cu` compiled with `nvcc -cubin -arch=sm_90
    /// -G` (13.0): `EIATTR_MIN_STACK_SIZE` is 0xffffffff, which was read as a 4 GiB stack.
    #[test]
    fn a_stack_the_compiler_could_not_size_is_unknown() {
        let bytes = include_bytes!("cubin/recursive_g.sm_90.cubin");
        let kernels = Cubin::parse(bytes).unwrap().kernels().unwrap();
        let kernel = kernels
            .iter()
            .find(|kernel| kernel.record.name == "recursive_rec")
            .unwrap();
        assert_eq!(
            kernel.record.cumulative_stack,
            Some(occupancy_core::ptxas::StackSize::Unknown)
        );
        assert_eq!(kernel.record.stack_frame_bytes, Some(64));
    }

    #[test]
    fn only_module_wide_constant_banks_hold_function_slots() {
        assert_eq!(module_constant_bank(".nv.constant4"), Some(4));
        assert_eq!(module_constant_bank(".nv.constant2"), Some(2));
        assert_eq!(module_constant_bank(".nv.constant0.asserts"), None);
        assert_eq!(module_constant_bank(".nv.constant"), None);
        assert_eq!(module_constant_bank(".text.k"), None);
    }

    #[test]
    fn damaged_files_give_none_never_a_panic() {
        let elf = tiny_elf();
        for cut in 0..elf.len() {
            let _ = function_symbols(&elf[..cut]);
        }
        assert!(function_symbols(b"not an elf").is_none());
        let mut wrong_offset = elf.clone();
        wrong_offset[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(function_symbols(&wrong_offset).is_none());
    }
}
