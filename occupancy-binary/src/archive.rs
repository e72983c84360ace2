//! Reads a static library (an `ar` archive) member by member, streaming, so that each member's
//! device code is taken out on its own: `cuobjdump -xelf all` on a whole archive names the cubins
//! it writes after their modules (`k.sm_80.cubin`), so two members compiled from sources of one
//! name (`a/k.cu`, `b/k.cu`; a CMake library of both) write the same file, and it reads the whole
//! archive into memory.
//!
//! The common format (System V / GNU, and BSD's `#1/<length>` names): `!<arch>\n`, then per
//! member a 60-byte header (name 16, date 12, uid 6, gid 6, mode 8, size 10, `` `\n ``) and its
//! data, padded to an even offset. The symbol tables (`/`, `/SYM64/`, `__.SYMDEF...`) are
//! skipped; GNU's long-name table (`//`) is kept to resolve `/<offset>` names. Nothing is
//! allocated by a size read from the file beyond [`MAX_NAME_TABLE_BYTES`].

use super::read_full;
use std::io::{self, Read};

/// `!<arch>\n`.
pub const MAGIC: &[u8; 8] = b"!<arch>\n";
/// A GNU thin archive's magic: its members are paths to files elsewhere, not their bytes.
pub const THIN_MAGIC: &[u8; 8] = b"!<thin>\n";
const HEADER_BYTES: usize = 60;
/// The largest GNU long-name table read (names of every member, one a line): far above a real
/// library's (10,000 members of 100-byte names are 1 MB).
const MAX_NAME_TABLE_BYTES: u64 = 64 << 20;
/// The longest BSD `#1/<length>` name read.
const MAX_BSD_NAME_BYTES: u64 = 4096;

/// An archive being read: [`Archive::next_member`] moves to the next member, whose data is then
/// what [`Read`] gives.
pub struct Archive<R> {
    reader: R,
    long_names: Vec<u8>,
    /// Bytes of the current member's data not yet read.
    remaining: u64,
    /// Whether a padding byte follows the current member's data.
    padded: bool,
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl<R: Read> Archive<R> {
    /// Reads the global header; an error when `reader` is not an `ar` archive.
    pub fn new(mut reader: R) -> io::Result<Archive<R>> {
        let mut magic = [0u8; 8];
        reader.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(invalid("not an ar archive (no `!<arch>` header)".into()));
        }
        Ok(Archive {
            reader,
            long_names: Vec::new(),
            remaining: 0,
            padded: false,
        })
    }

    /// The next member's name, after skipping what is left of the current one; `None` at the
    /// end of the archive.
    pub fn next_member(&mut self) -> io::Result<Option<String>> {
        loop {
            self.skip_rest()?;
            let mut header = [0u8; HEADER_BYTES];
            match read_full(&mut self.reader, &mut header)? {
                0 => return Ok(None),
                HEADER_BYTES => {}
                read => return Err(invalid(format!("a member header cut short ({read} bytes)"))),
            }
            let size = member_size(&header).map_err(invalid)?;
            (self.remaining, self.padded) = (size, size % 2 == 1);
            let raw = String::from_utf8_lossy(&header[..16]).trim_end().to_owned();
            match raw.as_str() {
                "/" | "/SYM64/" | "__.SYMDEF" | "__.SYMDEF SORTED" | "/SYM64" => continue,
                "//" => {
                    if size > MAX_NAME_TABLE_BYTES {
                        return Err(invalid(format!("a long-name table of {size} bytes")));
                    }
                    let mut table = Vec::new();
                    self.read_to_end(&mut table)?;
                    self.long_names = table;
                    continue;
                }
                _ => {}
            }
            if let Some(length) = raw.strip_prefix("#1/") {
                let length: u64 = length.parse().map_err(|_| {
                    invalid(format!("a BSD name length that is not a number: {raw:?}"))
                })?;
                if length > MAX_BSD_NAME_BYTES || length > size {
                    return Err(invalid(format!("a BSD name of {length} bytes")));
                }
                let mut name = Vec::new();
                self.by_ref().take(length).read_to_end(&mut name)?;
                let name = String::from_utf8_lossy(&name)
                    .trim_end_matches('\0')
                    .to_owned();
                if name.starts_with("__.SYMDEF") {
                    continue;
                }
                return Ok(Some(name));
            }
            if let Some(offset) = raw.strip_prefix('/') {
                let offset: usize = offset.parse().map_err(|_| {
                    invalid(format!(
                        "a member name that is not a long-name offset: {raw:?}"
                    ))
                })?;
                let rest = self.long_names.get(offset..).ok_or_else(|| {
                    invalid(format!("a long-name offset past the table: {raw:?}"))
                })?;
                let end = rest
                    .windows(2)
                    .position(|pair| pair == b"/\n")
                    .or_else(|| rest.iter().position(|&byte| byte == b'\n'))
                    .unwrap_or(rest.len());
                return Ok(Some(String::from_utf8_lossy(&rest[..end]).into_owned()));
            }
            return Ok(Some(raw.strip_suffix('/').unwrap_or(&raw).to_owned()));
        }
    }

    /// Reads past the rest of the current member and its padding byte.
    fn skip_rest(&mut self) -> io::Result<()> {
        io::copy(&mut self.by_ref(), &mut io::sink())?;
        if self.remaining > 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if std::mem::take(&mut self.padded) {
            let mut pad = [0u8; 1];
            // The last member's padding byte may be missing.
            read_full(&mut self.reader, &mut pad)?;
        }
        Ok(())
    }
}

/// The data size a member header declares; why it is no member header otherwise.
fn member_size(header: &[u8; HEADER_BYTES]) -> Result<u64, String> {
    if &header[58..60] != b"`\n" {
        return Err("a member header without its `\\n terminator".into());
    }
    let size_field = String::from_utf8_lossy(&header[48..58]);
    (size_field.trim_end().parse())
        .map_err(|_| format!("a member size that is not a number: {size_field:?}"))
}

/// Whether every member of the archive `file` lies inside it: each header, and the bytes its
/// size declares. Seeks from header to header, reading nothing else: a library cut short would
/// read as one with no device code (its fatbin section's name in the part cut).
pub fn members_fit(file: &mut std::fs::File) -> Result<(), String> {
    use std::io::{Seek, SeekFrom};
    let len = file.metadata().map_err(|error| error.to_string())?.len();
    let mut header = [0u8; HEADER_BYTES];
    let mut at = MAGIC.len() as u64;
    while at < len {
        if at + HEADER_BYTES as u64 > len {
            return Err(format!("the member header at byte {at} runs past its end"));
        }
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut header))
            .map_err(|error| error.to_string())?;
        let size = member_size(&header)
            .map_err(|why| format!("the member header at byte {at} is not one: {why}"))?;
        let end = (at + HEADER_BYTES as u64)
            .checked_add(size)
            .filter(|end| *end <= len)
            .ok_or_else(|| {
                format!("the member at byte {at} declares {size} bytes, past its end")
            })?;
        at = end + (end & 1);
    }
    Ok(())
}

impl<R: Read> Read for Archive<R> {
    /// The current member's data; an error when the archive ends inside it.
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let wanted = buffer
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        if wanted == 0 {
            return Ok(0);
        }
        let read = self.reader.read(&mut buffer[..wanted])?;
        if read == 0 {
            return Err(invalid(format!(
                "the archive ends {} bytes inside a member",
                self.remaining
            )));
        }
        self.remaining -= read as u64;
        Ok(read)
    }
}

/// Streams each member of the static library at `path` to `visit` (its name, then its data
/// as a reader), in archive order; an error naming what is damaged.
pub fn for_each_member(
    path: &std::path::Path,
    visit: &mut dyn FnMut(&str, &mut dyn Read) -> io::Result<()>,
) -> io::Result<()> {
    let file = io::BufReader::new(std::fs::File::open(path)?);
    let mut archive = Archive::new(file)?;
    while let Some(name) = archive.next_member()? {
        visit(&name, &mut archive)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str, size: usize) -> Vec<u8> {
        let header = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644);
        assert_eq!(header.len(), HEADER_BYTES);
        header.into_bytes()
    }

    fn member(name: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = header(name, data.len());
        bytes.extend_from_slice(data);
        if data.len() % 2 == 1 {
            bytes.push(b'\n');
        }
        bytes
    }

    fn members(bytes: &[u8]) -> io::Result<Vec<(String, Vec<u8>)>> {
        let mut archive = Archive::new(bytes)?;
        let mut found = Vec::new();
        while let Some(name) = archive.next_member()? {
            let mut data = Vec::new();
            archive.read_to_end(&mut data)?;
            found.push((name, data));
        }
        Ok(found)
    }

    #[test]
    fn members_of_a_gnu_archive_with_a_symbol_table_long_names_and_one_name_twice() {
        let table = b"a_rather_long_object_name.o/\nk.o/\n";
        let mut bytes = MAGIC.to_vec();
        bytes.extend(member("/", b"\0\0\0\0symbols"));
        bytes.extend(member("//", table));
        bytes.extend(member("/0", b"odd"));
        bytes.extend(member("k.o/", b"first"));
        bytes.extend(member("k.o/", b"second!!"));
        bytes.extend(member("/29", b"long-name offset"));
        assert_eq!(
            members(&bytes).unwrap(),
            [
                ("a_rather_long_object_name.o".into(), b"odd".to_vec()),
                ("k.o".into(), b"first".to_vec()),
                ("k.o".into(), b"second!!".to_vec()),
                ("k.o".into(), b"long-name offset".to_vec()),
            ]
        );
    }

    #[test]
    fn members_of_a_bsd_archive_and_a_member_skipped_unread() {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(member("#1/20", b"__.SYMDEF SORTED\0\0\0\0table"));
        bytes.extend(member("#1/12", b"kernels.cu.obytes"));
        bytes.extend(member("plain.o", b"x"));
        let mut archive = Archive::new(&bytes[..]).unwrap();
        assert_eq!(
            archive.next_member().unwrap().as_deref(),
            Some("kernels.cu.o")
        );
        // Not read: the next call skips its data and the padding byte.
        assert_eq!(archive.next_member().unwrap().as_deref(), Some("plain.o"));
        let mut data = Vec::new();
        archive.read_to_end(&mut data).unwrap();
        assert_eq!(data, b"x");
        assert_eq!(archive.next_member().unwrap(), None);
    }

    proptest::proptest! {
        /// Any bytes behind the archive header give members or an error, never a panic.
        #[test]
        fn any_bytes_are_read_or_refused_without_panicking(
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
        ) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend(tail);
            let _ = members(&bytes);
        }
    }

    #[test]
    fn a_malformed_archive_is_an_error_not_a_panic() {
        assert!(Archive::new(&b"!<thin>\n"[..]).is_err());
        let mut cut = MAGIC.to_vec();
        cut.extend(header("k.o/", 100));
        cut.extend(b"only part");
        assert!(members(&cut).is_err());
        let mut short_header = MAGIC.to_vec();
        short_header.extend(&header("k.o/", 4)[..30]);
        assert!(members(&short_header).is_err());
        let mut bad_offset = MAGIC.to_vec();
        bad_offset.extend(member("/999", b"data"));
        assert!(members(&bad_offset).is_err());
        let mut huge_table = MAGIC.to_vec();
        huge_table.extend(header("//", 9_999_999_999));
        assert!(members(&huge_table).is_err());
    }
}
