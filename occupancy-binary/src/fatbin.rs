//! Where a file's fatbins are, found without reading the file whole: each is then handed to
//! cuobjdump on its own. cuobjdump on a whole shared library or object reads all of it into
//! memory, and names the cubins it writes after their modules when the compile recorded a
//! source name (`-lineinfo`, `-G`: `k.sm_80.cubin`), so two modules of one name (`a/k.cu`,
//! `b/k.cu`) overwrite each other's cubins in one directory.
//!
//! A fatbin: a 16-byte header (magic `0xBA55ED50`, version `u16`, header size `u16`, size of the
//! entries `u64`), then its entries, each a header (kind `u16`: 1 PTX, 2 ELF; header size `u32`
//! at 4; payload size `u64` at 8) and its payload. A fatbin file is fatbins end to end; a host
//! ELF (object, shared library, executable) holds them in `.nv_fatbin` (a `-rdc` object in
//! `__nv_relfatbin`, read when there is no `.nv_fatbin`, as cuobjdump does), end to end, padded
//! with zeros to 8 bytes. Anything else (an ELF32 or big-endian host, non-zero bytes between
//! fatbins) is `None`: the caller hands the file to cuobjdump whole. A fatbin whose own header
//! reads but whose entries do not (an entry of no known kind, sizes past its end, entries that
//! do not fill it) is an error: cuobjdump reads it as one without device code.

use super::read_full;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The fatbin header's magic, little-endian.
pub const MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
const HEADER_BYTES: u64 = 16;
/// An entry of kind PTX, of kind ELF (a cubin).
const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
/// An entry of LTO IR (`-gencode arch=compute_80,code=lto_80`), linked by `nvcc -dlink`.
const KIND_LTO: u16 = 8;
/// ELF64 section header size, and the type of a section with no bytes in the file.
const SECTION_HEADER_BYTES: u64 = 64;
const SHT_NOBITS: u32 = 8;
/// The most section headers, and the longest section-name table, read.
const MAX_SECTIONS: u64 = 1 << 20;
const MAX_SECTION_NAMES_BYTES: u64 = 64 << 20;

/// One fatbin in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    pub offset: u64,
    pub len: u64,
    /// Whether it holds cubins, PTX, and LTO IR (`-dlto`, `code=lto_80`).
    pub elf: bool,
    pub ptx: bool,
    pub lto: bool,
}

/// The fatbins of the fatbin or host ELF file at `path`, in file order; `None` when its layout
/// is not one this reads (see the module docs).
pub fn blobs(path: &Path) -> io::Result<Option<Vec<Blob>>> {
    let mut file = BufReader::new(File::open(path)?);
    let file_len = file.get_ref().metadata()?.len();
    let mut head = [0u8; 64];
    let filled = read_full(&mut file, &mut head)?;
    let head = &head[..filled];
    if head.starts_with(&MAGIC) {
        return walk(&mut file, 0, file_len);
    }
    // An ELF64 file cut inside its 64-byte header (or before its class byte) has no section
    // table to read: damaged, not one without device code (issue #35's third pass: `cargo
    // occupancy build` took a `k.o` cut to 20 bytes for a host object).
    // (ELF32, class 1, is a layout this does not read: left to cuobjdump as before.)
    if head.starts_with(b"\x7fELF") && filled < 64 && head.get(4) != Some(&1) {
        return Err(invalid(&format!(
            "a damaged ELF file: {filled} bytes, shorter than its 64-byte header"
        )));
    }
    if !head.starts_with(b"\x7fELF") || filled < 64 || head[4] != 2 || head[5] != 1 {
        return Ok(None);
    }
    let Some(sections) = fatbin_sections(&mut file, head, file_len)? else {
        return Ok(None);
    };
    let mut found = Vec::new();
    for (offset, size) in sections {
        match walk(&mut file, offset, offset + size)? {
            Some(blobs) => found.extend(blobs),
            None => return Ok(None),
        }
    }
    Ok(Some(found))
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default())
}

/// An ELF64 file's section header table.
struct SectionTable {
    offset: u64,
    file_len: u64,
}

impl SectionTable {
    /// Reads section header `index` into `header`.
    fn read(
        &self,
        file: &mut BufReader<File>,
        index: u64,
        header: &mut [u8; 64],
    ) -> io::Result<()> {
        let at = index
            .checked_mul(SECTION_HEADER_BYTES)
            .and_then(|offset| offset.checked_add(self.offset))
            .filter(|at| {
                at.checked_add(SECTION_HEADER_BYTES)
                    .is_some_and(|end| end <= self.file_len)
            })
            .ok_or_else(|| invalid("a section header past the end of the file"))?;
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(header)
    }
}

/// `(offset, size)` of the `.nv_fatbin` sections of the ELF64 little-endian file whose first 64
/// bytes are `head`, else of its `__nv_relfatbin` ones; an error when its section table cannot
/// be read.
fn fatbin_sections(
    file: &mut BufReader<File>,
    head: &[u8],
    file_len: u64,
) -> io::Result<Option<Vec<(u64, u64)>>> {
    let table = SectionTable {
        offset: u64_at(head, 0x28),
        file_len,
    };
    let (mut count, mut names_index) =
        (u64::from(u16_at(head, 0x3C)), u64::from(u16_at(head, 0x3E)));
    if table.offset == 0 {
        return Ok(Some(Vec::new())); // no sections (an executable stripped of them)
    }
    // An ELF64 file whose section table cannot be read is damaged, not one to hand cuobjdump
    // whole: it reads such a file as one without device code (issue #35, class 1).
    let entry_bytes = u16_at(head, 0x3A);
    if u64::from(entry_bytes) != SECTION_HEADER_BYTES {
        return Err(invalid(&format!(
            "a damaged ELF file: its section headers are {entry_bytes} bytes, not 64"
        )));
    }
    let mut header = [0u8; 64];
    // More than 0xFF00 sections: the count and the names' index are in section 0.
    if count == 0 || names_index == 0xFFFF {
        table.read(file, 0, &mut header)?;
        if count == 0 {
            count = u64_at(&header, 0x20);
        }
        if names_index == 0xFFFF {
            names_index = u64::from(u32_at(&header, 0x28));
        }
    }
    if count > MAX_SECTIONS || names_index >= count {
        return Err(invalid(&format!(
            "a damaged ELF file: {count} sections, the names in section {names_index}"
        )));
    }
    table.read(file, names_index, &mut header)?;
    let (names_offset, names_size) = (u64_at(&header, 0x18), u64_at(&header, 0x20));
    if names_size > MAX_SECTION_NAMES_BYTES
        || names_offset
            .checked_add(names_size)
            .is_none_or(|end| end > file_len)
    {
        return Err(invalid(
            "a damaged ELF file: its section names lie past its end",
        ));
    }
    let mut names = vec![0u8; usize::try_from(names_size).unwrap_or(0)];
    file.seek(SeekFrom::Start(names_offset))?;
    file.read_exact(&mut names)?;
    let (mut executable, mut relocatable) = (Vec::new(), Vec::new());
    for index in 0..count {
        table.read(file, index, &mut header)?;
        let name_at = usize::try_from(u32_at(&header, 0)).unwrap_or(usize::MAX);
        let name = names
            .get(name_at..)
            .and_then(|rest| rest.split(|&byte| byte == 0).next())
            .unwrap_or_default();
        let (kind, offset, size) = (
            u32_at(&header, 4),
            u64_at(&header, 0x18),
            u64_at(&header, 0x20),
        );
        let list = match name {
            b".nv_fatbin" => &mut executable,
            b"__nv_relfatbin" => &mut relocatable,
            _ => continue,
        };
        if kind == SHT_NOBITS || size == 0 {
            continue;
        }
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(invalid("a fatbin section past the end of the file"));
        }
        list.push((offset, size));
    }
    Ok(Some(if executable.is_empty() {
        relocatable
    } else {
        executable
    }))
}

/// The fatbins end to end in `start..end` of `file`, zero padding between them skipped in steps
/// of 8 bytes; `None` at any other byte that does not start a fatbin.
fn walk(file: &mut BufReader<File>, start: u64, end: u64) -> io::Result<Option<Vec<Blob>>> {
    let mut found = Vec::new();
    let mut at = start;
    let mut header = [0u8; 16];
    while at + 8 <= end {
        file.seek(SeekFrom::Start(at))?;
        let filled = read_full(
            file,
            &mut header[..usize::try_from((end - at).min(16)).unwrap_or(16)],
        )?;
        if header[..8] == [0; 8] {
            at += 8;
            continue;
        }
        if filled < 16 || header[..4] != MAGIC {
            return Ok(None);
        }
        let header_size = u64::from(u16::from_le_bytes([header[6], header[7]]));
        let entries_size = u64::from_le_bytes(header[8..16].try_into().unwrap_or_default());
        let len = header_size
            .checked_add(entries_size)
            .filter(|&len| {
                header_size >= HEADER_BYTES
                    && at.checked_add(len).is_some_and(|blob_end| blob_end <= end)
            })
            .ok_or_else(|| invalid("a fatbin whose size runs past its section or file"))?;
        let (elf, ptx, lto) = entry_kinds(file, at + header_size, at + len)?;
        found.push(Blob {
            offset: at,
            len,
            elf,
            ptx,
            lto,
        });
        at += len;
    }
    Ok(Some(found))
}

/// The kinds of the entries that fill `start..end` of `file` exactly: `(elf, ptx, lto)`. An
/// entry of no kind a fatbin holds, a header shorter than 16 bytes, or entries that end
/// anywhere but at the fatbin's end is a damaged fatbin, an error: cuobjdump reads such a
/// fatbin as one without device code, which would drop its kernels without a word.
fn entry_kinds(file: &mut BufReader<File>, start: u64, end: u64) -> io::Result<(bool, bool, bool)> {
    let (mut elf, mut ptx, mut lto) = (false, false, false);
    let mut header = [0u8; 16];
    let mut entry = start;
    while entry < end {
        if end - entry < 16 {
            return Err(damaged(entry, "leaves fewer bytes than an entry's header"));
        }
        file.seek(SeekFrom::Start(entry))?;
        file.read_exact(&mut header)?;
        let kind = u16::from_le_bytes([header[0], header[1]]);
        let entry_header = u64::from(u32_at(&header, 4));
        let payload = u64_at(&header, 8);
        match kind {
            KIND_ELF => elf = true,
            KIND_PTX => ptx = true,
            KIND_LTO => lto = true,
            _ => {
                return Err(damaged(
                    entry,
                    &format!("has kind {kind}, none a fatbin holds"),
                ))
            }
        }
        entry = entry_header
            .checked_add(payload)
            .and_then(|step| entry.checked_add(step))
            .filter(|&next| entry_header >= 16 && next <= end)
            .ok_or_else(|| damaged(entry, "has sizes that run past its fatbin"))?;
    }
    Ok((elf, ptx, lto))
}

/// A damaged fatbin entry header at byte `at` of the file.
fn damaged(at: u64, what: &str) -> io::Error {
    invalid(&format!(
        "a damaged fatbin: the entry header at byte {at} {what}"
    ))
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fatbin of entries `(kind, payload length)`.
    fn fatbin(entries: &[(u16, usize)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, payload) in entries {
            body.extend(kind.to_le_bytes());
            body.extend(0x0101u16.to_le_bytes());
            body.extend(64u32.to_le_bytes());
            body.extend((payload as u64).to_le_bytes());
            body.resize(body.len() + 48 + payload, 0xAB);
        }
        let mut bytes = MAGIC.to_vec();
        bytes.extend(1u16.to_le_bytes());
        bytes.extend(16u16.to_le_bytes());
        bytes.extend((body.len() as u64).to_le_bytes());
        bytes.extend(body);
        bytes
    }

    /// A little-endian ELF64 of `sections` `(name, type, bytes)` and its section-name table,
    /// section 0 the null one.
    fn elf(sections: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
        let mut names = vec![0u8];
        let mut name_offsets = Vec::new();
        for name in sections
            .iter()
            .map(|section| section.0)
            .chain([".shstrtab"])
        {
            name_offsets.push(names.len() as u32);
            names.extend(name.as_bytes());
            names.push(0);
        }
        let mut all: Vec<(u32, &[u8])> = sections
            .iter()
            .map(|(_, kind, bytes)| (*kind, bytes.as_slice()))
            .collect();
        all.push((3, &names));
        let (mut data, mut headers) = (Vec::new(), vec![[0u8; 64]]);
        for ((kind, bytes), name) in all.iter().zip(&name_offsets) {
            let mut header = [0u8; 64];
            header[..4].copy_from_slice(&name.to_le_bytes());
            header[4..8].copy_from_slice(&kind.to_le_bytes());
            header[0x18..0x20].copy_from_slice(&(64 + data.len() as u64).to_le_bytes());
            header[0x20..0x28].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            headers.push(header);
            data.extend(*bytes);
            while data.len() % 8 != 0 {
                data.push(0);
            }
        }
        let mut bytes = vec![0u8; 64];
        bytes[..6].copy_from_slice(b"\x7fELF\x02\x01");
        bytes[0x28..0x30].copy_from_slice(&(64 + data.len() as u64).to_le_bytes());
        bytes[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        bytes[0x3C..0x3E].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        bytes[0x3E..0x40].copy_from_slice(&((headers.len() - 1) as u16).to_le_bytes());
        bytes.extend(data);
        for header in headers {
            bytes.extend(header);
        }
        bytes
    }

    fn blobs_of(bytes: &[u8]) -> Option<Vec<Blob>> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("occupancy-fatbin-test-{}-{n}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let found = blobs(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        found
    }

    #[test]
    fn the_fatbins_of_a_shared_library_end_to_end_with_padding() {
        let (first, second) = (fatbin(&[(2, 40), (2, 24)]), fatbin(&[(2, 8), (1, 16)]));
        let mut section = first.clone();
        section.extend([0u8; 8]);
        section.extend(&second);
        let bytes = elf(&[
            (".text", 1, vec![0x90; 24]),
            (".nv_fatbin", 1, section),
            ("__nv_relfatbin", 1, fatbin(&[(2, 8)])),
        ]);
        let found = blobs_of(&bytes).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].len, found[0].elf, found[0].ptx),
            (first.len() as u64, true, false)
        );
        assert_eq!(
            (found[1].len, found[1].elf, found[1].ptx),
            (second.len() as u64, true, true)
        );
        assert_eq!(found[1].offset, found[0].offset + first.len() as u64 + 8);
        assert_eq!(bytes[found[1].offset as usize..][..4], MAGIC);
    }

    #[test]
    fn a_relocatable_fatbin_is_read_without_an_executable_one_and_a_host_file_has_none() {
        let found = blobs_of(&elf(&[("__nv_relfatbin", 1, fatbin(&[(1, 8)]))])).unwrap();
        assert_eq!(found.len(), 1);
        assert!(found[0].ptx && !found[0].elf);
        assert_eq!(
            blobs_of(&elf(&[(".text", 1, vec![1; 8])])),
            Some(Vec::new())
        );
        let file = fatbin(&[(2, 16)]);
        assert_eq!(
            blobs_of(&file),
            Some(vec![Blob {
                offset: 0,
                len: file.len() as u64,
                elf: true,
                ptx: false,
                lto: false,
            }])
        );
    }

    proptest::proptest! {
        /// Any bytes, as they are or behind a fatbin's or a little-endian ELF64's first bytes,
        /// give fatbins, `None` or an error, never a panic or a loop without end.
        #[test]
        fn any_bytes_are_read_or_refused_without_panicking(
            mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
            head in 0..3u8,
        ) {
            let magic: &[u8] = match head {
                0 => &MAGIC,
                1 => b"\x7fELF\x02\x01",
                _ => b"",
            };
            let prefix = magic.len().min(bytes.len());
            bytes[..prefix].copy_from_slice(&magic[..prefix]);
            let path = std::env::temp_dir().join(format!(
                "occupancy-fatbin-any-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&path, &bytes).unwrap();
            let _ = blobs(&path);
            std::fs::remove_file(&path).unwrap();
        }
    }

    /// Issue #35, class 1: a fatbin whose entry header is damaged is an error naming the byte,
    /// never a fatbin without device code; an LTO IR entry is one of its kinds.
    #[test]
    fn a_damaged_entry_header_is_an_error_naming_its_byte() {
        let good = fatbin(&[(2, 16), (1, 8)]);
        let second_entry = 16 + 64 + 16;
        let damage = |at: usize, bytes: &[u8]| {
            let mut bytes_now = good.clone();
            bytes_now[at..at + bytes.len()].copy_from_slice(bytes);
            let path = std::env::temp_dir().join(format!(
                "occupancy-fatbin-damaged-{}-{at}-{}",
                std::process::id(),
                bytes.len()
            ));
            std::fs::write(&path, &bytes_now).unwrap();
            let read = blobs(&path);
            std::fs::remove_file(&path).unwrap();
            read.expect_err("a damaged fatbin is an error").to_string()
        };
        let kind = damage(second_entry, &0x77u16.to_le_bytes());
        assert!(
            kind.contains(&format!("entry header at byte {second_entry} has kind 119")),
            "{kind}"
        );
        let header = damage(second_entry + 4, &0u32.to_le_bytes());
        assert!(header.contains("run past its fatbin"), "{header}");
        let payload = damage(second_entry + 8, &1_000_000u64.to_le_bytes());
        assert!(payload.contains("run past its fatbin"), "{payload}");
        let short = damage(16 + 8, &10u64.to_le_bytes());
        assert!(short.contains("damaged fatbin"), "{short}");
        let lto = blobs_of(&fatbin(&[(8, 24)])).unwrap();
        assert!(lto[0].lto && !lto[0].elf && !lto[0].ptx);
    }

    /// Issue #35, class 1: an ELF64 file whose section table cannot be read is an error, not a
    /// file for cuobjdump, which reads it as one without device code.
    #[test]
    fn an_elf_whose_section_table_cannot_be_read_is_an_error() {
        let mut bytes = elf(&[(".nv_fatbin", 1, fatbin(&[(2, 8)]))]);
        bytes[0x3A..0x3C].copy_from_slice(&40u16.to_le_bytes());
        let path = std::env::temp_dir().join(format!(
            "occupancy-fatbin-elf-damaged-{}",
            std::process::id()
        ));
        std::fs::write(&path, &bytes).unwrap();
        let error = blobs(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(
            error.contains("a damaged ELF file: its section headers are 40 bytes"),
            "{error}"
        );
    }

    #[test]
    fn an_unexpected_layout_is_left_to_cuobjdump() {
        let mut section = fatbin(&[(2, 8)]);
        section.extend(b"not zero");
        assert_eq!(blobs_of(&elf(&[(".nv_fatbin", 1, section)])), None);
        let mut big_endian = elf(&[]);
        big_endian[5] = 2;
        assert_eq!(blobs_of(&big_endian), None);
        assert_eq!(blobs_of(b"\x7fELF\x01\x01"), None);
    }
}
