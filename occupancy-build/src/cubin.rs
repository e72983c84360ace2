//! The symbol table of a cubin (an ELF64 little-endian file), read just far enough to name
//! functions to `nvdisasm --function`, which takes symbol indices. Every read is bounds-checked:
//! a file this cannot read gives `None` and the caller disassembles the whole cubin.

use std::collections::BTreeMap;

/// The symbol-table index of every function symbol (`STT_FUNC`: kernels and device functions)
/// in the cubin `bytes`, by name.
pub fn function_symbols(bytes: &[u8]) -> Option<BTreeMap<String, usize>> {
    if bytes.get(..4)? != b"\x7fELF" || *bytes.get(4)? != 2 || *bytes.get(5)? != 1 {
        return None; // not ELF64 little-endian
    }
    let section_table = usize::try_from(u64_at(bytes, 0, 0x28)?).ok()?;
    let entry_size = usize::from(u16_at(bytes, 0, 0x3A)?);
    let count = usize::from(u16_at(bytes, 0, 0x3C)?);
    let section = |index: usize| {
        let at = section_table.checked_add(index.checked_mul(entry_size)?)?;
        Some((
            u32_at(bytes, at, 4)?,                           // sh_type
            usize::try_from(u64_at(bytes, at, 0x18)?).ok()?, // sh_offset
            usize::try_from(u64_at(bytes, at, 0x20)?).ok()?, // sh_size
            usize::try_from(u32_at(bytes, at, 0x28)?).ok()?, // sh_link
            usize::try_from(u64_at(bytes, at, 0x38)?).ok()?, // sh_entsize
        ))
    };
    const SYMTAB: u32 = 2;
    let (_, offset, size, link, symbol_size) = (0..count)
        .filter_map(section)
        .find(|(kind, ..)| *kind == SYMTAB)?;
    let (_, strings, strings_size, _, _) = section(link)?;
    let strings = bytes.get(strings..strings.checked_add(strings_size)?)?;
    if symbol_size < 24 {
        return None;
    }
    let mut found = BTreeMap::new();
    const STT_FUNC: u8 = 2;
    for index in 0..size / symbol_size {
        let at = offset.checked_add(index.checked_mul(symbol_size)?)?;
        if field::<1>(bytes, at, 4)?[0] & 0xf != STT_FUNC {
            continue;
        }
        let name_at = usize::try_from(u32_at(bytes, at, 0)?).ok()?;
        let name = strings.get(name_at..)?;
        let name = &name[..name.iter().position(|&byte| byte == 0)?];
        if let Ok(name) = std::str::from_utf8(name) {
            found.entry(name.to_owned()).or_insert(index);
        }
    }
    Some(found)
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
