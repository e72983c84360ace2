//! Reads a Python wheel (a zip archive) and writes out the members that may hold CUDA machine
//! code (shared objects, static archives, objects, cubins, fatbins, PTX), so that
//! `cargo occupancy check some.whl` can hand them to the readers of those formats.
//!
//! The archive is read the way a zip reader must be to take untrusted input:
//!
//! * **From the central directory.** The end-of-central-directory record is searched for in the
//!   last 64 KiB + 22 bytes only (the most a comment can push it back); a ZIP64 locator and
//!   record, and ZIP64 extra fields, give sizes and offsets past 4 GiB. Sizes and CRCs come from
//!   the central directory, never from a local header (which may defer them to a data
//!   descriptor); a local header gives only where the member's data starts.
//! * **Streaming, in bounded memory.** A member is copied (method 0, stored) or inflated
//!   (method 8, deflate, with `miniz_oxide`'s streaming API) through fixed 64 KiB buffers, so
//!   memory does not grow with a member's size; every member is checked against its CRC-32 and
//!   declared size. Other methods, and encrypted members, are refused with an error naming them.
//! * **Bounded by what it declares.** A member declaring more than [`MAX_MEMBER_BYTES`], or
//!   inflating past its declared size (a zip bomb), is refused. Nothing is allocated by a size
//!   read from the file beyond a 16-bit field's 64 KiB.
//! * **Inside the destination only.** A member is written as `<index>-<basename>` (its index in
//!   the central directory, its name's last component with anything but `[A-Za-z0-9._+-]`
//!   replaced), created new, directly in the destination directory: `../` or absolute names
//!   cannot reach outside it, and an existing file (or link) is never written through.
//!
//! Which members: names ending in `.so` or `.so.<digits>[.<digits>...]`, `.a`, `.o`, `.cubin`,
//! `.fatbin` and `.ptx` are extracted; of those, only files that start like an ELF file, an ar
//! archive or a fatbin (or, for `.ptx`, like PTX text) are kept, and the others deleted.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

use occupancy_build::cli::shown_path;

/// The largest uncompressed size of a member that is extracted: 16 GiB, far above any shared
/// object a wheel ships (the largest CUDA libraries are a few GiB).
const MAX_MEMBER_BYTES: u64 = 16 << 30;
/// The most bytes all the members extracted from one wheel may declare together: 32 GiB, twice
/// the largest member, far above the CUDA libraries of the largest wheels (a few GiB together).
const MAX_TOTAL_BYTES: u64 = 32 << 30;

/// The end-of-central-directory record without its comment.
const EOCD_BYTES: usize = 22;
/// The longest comment the end-of-central-directory record can carry (a 16-bit length).
const MAX_COMMENT_BYTES: usize = 0xFFFF;
/// The ZIP64 end-of-central-directory locator, which sits right before the record.
const ZIP64_LOCATOR_BYTES: u64 = 20;
/// The ZIP64 end-of-central-directory record's fixed part.
const ZIP64_EOCD_BYTES: usize = 56;
/// A central directory file header's fixed part.
const CENTRAL_HEADER_BYTES: usize = 46;
/// A local file header's fixed part.
const LOCAL_HEADER_BYTES: usize = 30;
/// The buffers a member is copied or inflated through.
const CHUNK_BYTES: usize = 64 * 1024;
/// How much of a member's start is kept to decide what it is.
const HEAD_BYTES: usize = 4096;

const EOCD_SIGNATURE: u32 = 0x0605_4b50;
const ZIP64_LOCATOR_SIGNATURE: u32 = 0x0706_4b50;
const ZIP64_EOCD_SIGNATURE: u32 = 0x0606_4b50;
const CENTRAL_HEADER_SIGNATURE: u32 = 0x0201_4b50;
const LOCAL_HEADER_SIGNATURE: u32 = 0x0403_4b50;
/// The extra field holding a member's 64-bit sizes and offset.
const ZIP64_EXTRA_TAG: u16 = 0x0001;
/// A 32-bit size or offset saying "see the ZIP64 extra field".
const ZIP64_SATURATED: u32 = u32::MAX;
/// General purpose flags: bit 0, encrypted; bit 6, strong encryption.
const ENCRYPTED_FLAGS: u16 = 0x0001 | 0x0040;
const METHOD_STORED: u16 = 0;
const METHOD_DEFLATE: u16 = 8;
/// WinZip's AES encryption: the real method is inside an extra field.
const METHOD_AES: u16 = 99;

const ELF_MAGIC: &[u8] = b"\x7fELF";
const AR_MAGIC: &[u8] = b"!<arch>\n";
/// A fatbin's magic, `0xBA55ED50` little-endian.
const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50_u32.to_le_bytes();

/// One member written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExtractedMember {
    /// The member's name in the archive, as stored (e.g. `torch/lib/libtorch_cuda.so`).
    pub(crate) name_in_archive: String,
    /// Where it was written: `<dest_dir>/<index>-<basename>`.
    pub(crate) path: PathBuf,
}

/// Why a wheel's members could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WheelError {
    /// The archive could not be opened or read.
    #[error("cannot read `{}`: {source}", shown_path(archive))]
    Read {
        archive: PathBuf,
        #[source]
        source: io::Error,
    },
    /// No end-of-central-directory record: not a zip file, or cut short at its end.
    #[error(
        "`{}` is not a zip archive (no end-of-central-directory record in its last {searched_bytes} bytes): \
         a wheel is a zip file; check that the path names the .whl itself and that its download or build finished",
        shown_path(archive)
    )]
    NotZip {
        archive: PathBuf,
        searched_bytes: u64,
    },
    /// The archive's directory structures are inconsistent or cut short.
    #[error(
        "`{}` is a damaged zip archive: {detail}; download or build the wheel again",
        shown_path(archive)
    )]
    Damaged { archive: PathBuf, detail: String },
    /// One member's local header or data is inconsistent or cut short.
    #[error(
        "member `{}` of `{}` is damaged: {detail}; download or build the wheel again",
        shown_name(member),
        shown_path(archive)
    )]
    DamagedMember {
        archive: PathBuf,
        member: String,
        detail: String,
    },
    /// A member compressed with a method other than stored (0) or deflate (8).
    #[error(
        "member `{}` of `{}` is compressed with method {method} ({}), which cannot be read here: \
         only methods 0 (stored) and 8 (deflate) can; build the wheel with the default compression (deflate)",
        shown_name(member), shown_path(archive), method_name(*method)
    )]
    UnsupportedMethod {
        archive: PathBuf,
        member: String,
        method: u16,
    },
    /// A member with the encrypted flag, or WinZip AES (method 99).
    #[error(
        "member `{}` of `{}` is encrypted, which cannot be read here: build the wheel without a password",
        shown_name(member), shown_path(archive)
    )]
    Encrypted { archive: PathBuf, member: String },
    /// A member declaring more than the limit ([`MAX_MEMBER_BYTES`]) uncompressed.
    #[error(
        "member `{}` of `{}` declares {declared_bytes} bytes uncompressed, over the limit of {limit_bytes} bytes \
         a member may have; it was not extracted (a damaged archive or a zip bomb)",
        shown_name(member), shown_path(archive)
    )]
    TooLarge {
        archive: PathBuf,
        member: String,
        declared_bytes: u64,
        limit_bytes: u64,
    },
    /// Two members whose data overlap (a central directory pointing several entries at one
    /// member's bytes, so a small file extracts to many times its size): refused before any is
    /// written.
    #[error(
        "members `{}` and `{}` of `{}` overlap (their data starts at bytes {first_offset} and {second_offset} of the file): \
         a zip archive stores each member's bytes once, so this is a damaged archive or a zip bomb; nothing was extracted",
        shown_name(first), shown_name(second), shown_path(archive)
    )]
    Overlapping {
        archive: PathBuf,
        first: String,
        second: String,
        first_offset: u64,
        second_offset: u64,
    },
    /// Members declaring more than [`MAX_TOTAL_BYTES`] together: refused before any is written.
    #[error(
        "the members of `{}` that may hold device code declare {declared_bytes} bytes uncompressed together, over the \
         limit of {limit_bytes} bytes one wheel may extract; nothing was extracted (a damaged archive or a zip bomb)",
        shown_path(archive)
    )]
    TooLargeTogether {
        archive: PathBuf,
        declared_bytes: u64,
        limit_bytes: u64,
    },
    /// A member producing more bytes than it declares (a zip bomb): stopped at the declared size.
    #[error(
        "member `{}` of `{}` inflates past the {declared_bytes} bytes it declares (a damaged archive or a zip bomb); \
         extraction stopped there and the partial file was removed",
        shown_name(member), shown_path(archive)
    )]
    InflatesPastDeclared {
        archive: PathBuf,
        member: String,
        declared_bytes: u64,
    },
    /// A member producing fewer bytes than it declares.
    #[error(
        "member `{}` of `{}` is {actual_bytes} bytes uncompressed, but the archive declares {declared_bytes}; \
         download or build the wheel again",
        shown_name(member), shown_path(archive)
    )]
    SizeMismatch {
        archive: PathBuf,
        member: String,
        declared_bytes: u64,
        actual_bytes: u64,
    },
    /// A member whose contents do not match the CRC-32 the central directory gives.
    #[error(
        "member `{}` of `{}` fails its CRC-32 check (the archive says {expected:08x}, its contents give {actual:08x}); \
         download or build the wheel again",
        shown_name(member), shown_path(archive)
    )]
    CrcMismatch {
        archive: PathBuf,
        member: String,
        expected: u32,
        actual: u32,
    },
    /// An output file could not be created (it exists already), written or removed.
    #[error(
        "cannot write `{}` (member `{}` of `{}`): {source}; check that the directory is writable, has space, \
         and holds no earlier extraction",
        shown_path(path), shown_name(member), shown_path(archive)
    )]
    Write {
        archive: PathBuf,
        member: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The destination directory could not be created.
    #[error(
        "cannot create the directory `{}` to extract `{}` into: {source}",
        shown_path(dest_dir),
        shown_path(archive)
    )]
    CreateDir {
        archive: PathBuf,
        dest_dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A member's name as shown in a message: escaped where it holds control characters.
fn shown_name(name: &str) -> String {
    if name.chars().any(char::is_control) {
        format!("{name:?}")
    } else {
        name.to_owned()
    }
}

/// The name of a zip compression method, for a message.
fn method_name(method: u16) -> &'static str {
    match method {
        METHOD_STORED => "stored",
        1 => "shrink",
        2..=5 => "reduce",
        6 => "implode",
        METHOD_DEFLATE => "deflate",
        9 => "deflate64",
        12 => "bzip2",
        14 => "LZMA",
        93 => "zstd",
        95 => "xz",
        METHOD_AES => "AES-encrypted",
        _ => "unknown",
    }
}

/// Writes the members of the wheel `archive` that may hold CUDA machine code into `dest_dir`
/// (created if missing), each as `<index>-<basename>`, and returns those kept, in archive order.
///
/// On an error, members already written stay in `dest_dir` (the caller owns it, typically a
/// temporary directory); the member being written when it happened is removed.
pub(crate) fn extract_cuda_members(
    archive: &Path,
    dest_dir: &Path,
) -> Result<Vec<ExtractedMember>, WheelError> {
    extract_with_limit(archive, dest_dir, MAX_MEMBER_BYTES)
}

/// [`extract_cuda_members`] with the per-member limit given (tests use a small one).
fn extract_with_limit(
    archive: &Path,
    dest_dir: &Path,
    limit_bytes: u64,
) -> Result<Vec<ExtractedMember>, WheelError> {
    extract_with_limits(archive, dest_dir, limit_bytes, MAX_TOTAL_BYTES)
}

/// [`extract_with_limit`] with the limit of all members together given too.
fn extract_with_limits(
    archive: &Path,
    dest_dir: &Path,
    limit_bytes: u64,
    total_limit_bytes: u64,
) -> Result<Vec<ExtractedMember>, WheelError> {
    let mut zip = Zip::open(archive)?;
    let directory = zip.find_directory()?;
    let candidates = zip.read_candidates(&directory)?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    refuse_amplification(archive, &candidates, total_limit_bytes)?;
    std::fs::create_dir_all(dest_dir).map_err(|source| WheelError::CreateDir {
        archive: archive.to_path_buf(),
        dest_dir: dest_dir.to_path_buf(),
        source,
    })?;
    let mut buffers = Buffers::new();
    let mut kept = Vec::new();
    for entry in &candidates {
        let path = dest_dir.join(output_name(entry.index, &entry.name));
        let mut member = MemberTarget {
            zip: &mut zip,
            entry,
            path: &path,
            limit_bytes,
        };
        if member.extract(&mut buffers)? {
            kept.push(ExtractedMember {
                name_in_archive: entry.name.clone(),
                path,
            });
        }
    }
    Ok(kept)
}

/// Refuses, before anything is written, members whose data overlap (each member's bytes lie
/// after its local header, of at least 30 bytes, and run for its compressed size: the next
/// member cannot start before that) and members declaring more than `total_limit_bytes`
/// together (issue #35, class 3: 40 entries pointing at one 50 MB member wrote 2 GB).
fn refuse_amplification(
    archive: &Path,
    candidates: &[CentralEntry],
    total_limit_bytes: u64,
) -> Result<(), WheelError> {
    let declared_bytes = candidates.iter().fold(0u64, |sum, entry| {
        sum.saturating_add(entry.uncompressed_bytes)
    });
    if declared_bytes > total_limit_bytes {
        return Err(WheelError::TooLargeTogether {
            archive: archive.to_path_buf(),
            declared_bytes,
            limit_bytes: total_limit_bytes,
        });
    }
    let mut by_offset: Vec<&CentralEntry> = candidates.iter().collect();
    by_offset.sort_by_key(|entry| entry.local_header_offset);
    for pair in by_offset.windows(2) {
        let (first, second) = (pair[0], pair[1]);
        let first_end = (first.local_header_offset)
            .saturating_add(LOCAL_HEADER_BYTES as u64)
            .saturating_add(first.compressed_bytes);
        if second.local_header_offset < first_end {
            return Err(WheelError::Overlapping {
                archive: archive.to_path_buf(),
                first: first.name.clone(),
                second: second.name.clone(),
                first_offset: first.local_header_offset,
                second_offset: second.local_header_offset,
            });
        }
    }
    Ok(())
}

/// Whether a member's name says it may hold CUDA machine code: `.so`, `.so.<digits>...`, `.a`,
/// `.o`, `.cubin`, `.fatbin`, `.ptx` (ASCII case ignored).
fn is_candidate_name(name: &str) -> bool {
    let base = basename(name).to_ascii_lowercase();
    let mut stem = base.as_str();
    // libcudart.so.12.4.127: strip the version's numeric components.
    while let Some((head, tail)) = stem.rsplit_once('.') {
        if !tail.is_empty() && tail.bytes().all(|byte| byte.is_ascii_digit()) {
            stem = head;
        } else {
            break;
        }
    }
    if stem.len() > ".so".len() && stem.ends_with(".so") {
        return true;
    }
    [".a", ".o", ".cubin", ".fatbin", ".ptx"]
        .iter()
        .any(|suffix| base.len() > suffix.len() && base.ends_with(suffix))
}

/// A member name's last component (after the last `/` or `\`).
fn basename(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

/// The longest basename kept in an output name, in bytes (its end), well within a file name's 255.
const MAX_BASENAME_BYTES: usize = 200;

/// `<index>-<basename>`, with anything in the basename but `[A-Za-z0-9._+-]` replaced by `_`:
/// one path component that names no directory and, with the index, no other member.
fn output_name(index: u64, name: &str) -> String {
    let safe: String = basename(name)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // All ASCII now: any byte is a boundary. A long name keeps its end, where the suffix is.
    let kept = safe
        .get(safe.len().saturating_sub(MAX_BASENAME_BYTES)..)
        .unwrap_or("");
    let kept = if kept.is_empty() { "member" } else { kept };
    format!("{index}-{kept}")
}

/// Whether a member's first bytes are code a CUDA reader takes: ELF, an ar archive, a fatbin,
/// or (for a `.ptx` name) PTX text.
fn is_cuda_content(name: &str, head: &[u8]) -> bool {
    head.starts_with(ELF_MAGIC)
        || head.starts_with(AR_MAGIC)
        || head.starts_with(&FATBIN_MAGIC)
        || (basename(name).to_ascii_lowercase().ends_with(".ptx") && looks_like_ptx(head))
}

/// Whether `head` (a file's first bytes) reads as PTX: text whose first directive, past
/// blank lines and comments, is `.version`. A head that is comments to its end is taken as PTX.
fn looks_like_ptx(head: &[u8]) -> bool {
    if head.is_empty() || head.contains(&0) {
        return false;
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // Cut inside a character at the head's end: the text before it.
        Err(error) if error.error_len().is_none() => head
            .get(..error.valid_up_to())
            .and_then(|valid| std::str::from_utf8(valid).ok())
            .unwrap_or(""),
        Err(_) => return false,
    };
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("//") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    rest.starts_with(".version") || (rest.is_empty() && head.len() == HEAD_BYTES)
}

/// Reads a little-endian `u16` at `at`, if `bytes` holds it.
fn le_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let field = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes(field.try_into().ok()?))
}

/// Reads a little-endian `u32` at `at`, if `bytes` holds it.
fn le_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let field = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(field.try_into().ok()?))
}

/// Reads a little-endian `u64` at `at`, if `bytes` holds it.
fn le_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let field = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(field.try_into().ok()?))
}

/// The archive being read: its file, its path (for messages) and its length.
#[derive(Debug)]
struct Zip {
    path: PathBuf,
    file: File,
    len_bytes: u64,
}

/// Where the central directory is, from the end-of-central-directory record or its ZIP64 form.
#[derive(Debug, Clone, Copy)]
struct Directory {
    entries: u64,
    offset: u64,
    size_bytes: u64,
}

/// The end-of-central-directory record's fields that are read.
#[derive(Debug)]
struct Eocd {
    disk: u16,
    directory_disk: u16,
    entries: u16,
    size_bytes: u32,
    offset: u32,
}

/// A central directory entry whose name makes it a candidate.
#[derive(Debug)]
struct CentralEntry {
    /// Its position in the central directory, from 0: what makes its output name unique.
    index: u64,
    name: String,
    flags: u16,
    method: u16,
    crc32: u32,
    compressed_bytes: u64,
    uncompressed_bytes: u64,
    local_header_offset: u64,
}

/// Why a central directory entry could not be read.
#[derive(Debug)]
enum EntryFault {
    Io(io::Error),
    Damaged(String),
}

fn damaged(archive: &Path, detail: String) -> WheelError {
    WheelError::Damaged {
        archive: archive.to_path_buf(),
        detail,
    }
}

impl Zip {
    fn open(path: &Path) -> Result<Self, WheelError> {
        let read_error = |source| WheelError::Read {
            archive: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(read_error)?;
        let len_bytes = file.metadata().map_err(read_error)?.len();
        Ok(Zip {
            path: path.to_path_buf(),
            file,
            len_bytes,
        })
    }

    /// Fills `buf` from `offset`.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.read_exact(buf)
    }

    /// An error reading `what` at `offset`: running off the end is damage, anything else I/O.
    fn read_fault(&self, error: io::Error, what: &str, offset: u64) -> WheelError {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            damaged(
                &self.path,
                format!("{what} at byte {offset} runs past the end of the file ({} bytes): the file is truncated", self.len_bytes),
            )
        } else {
            WheelError::Read {
                archive: self.path.clone(),
                source: error,
            }
        }
    }

    /// Finds the central directory through the end-of-central-directory record, searched for in
    /// the file's last 64 KiB + 22 bytes, and the ZIP64 record where a locator precedes it.
    fn find_directory(&mut self) -> Result<Directory, WheelError> {
        let tail_bytes = self.len_bytes.min((EOCD_BYTES + MAX_COMMENT_BYTES) as u64);
        let tail_start = self.len_bytes.saturating_sub(tail_bytes);
        // At most 64 KiB + 22 bytes, whatever the file says.
        let mut tail = vec![0; usize::try_from(tail_bytes).unwrap_or(0)];
        self.read_exact_at(tail_start, &mut tail)
            .map_err(|error| self.read_fault(error, "the last 64 KiB", tail_start))?;
        let not_zip = || WheelError::NotZip {
            archive: self.path.clone(),
            searched_bytes: tail_bytes,
        };
        let eocd_at = find_eocd(&tail).ok_or_else(not_zip)?;
        let eocd = tail
            .get(eocd_at..)
            .and_then(parse_eocd)
            .ok_or_else(not_zip)?;
        if eocd.disk != 0 || eocd.directory_disk != 0 {
            let detail = "it is one part of a multi-part (spanned) archive, which a wheel never is";
            return Err(damaged(&self.path, detail.to_owned()));
        }
        let eocd_offset = tail_start.saturating_add(eocd_at as u64);
        let directory = match self.zip64_directory(eocd_offset)? {
            Some(directory) => directory,
            None => Directory {
                entries: eocd.entries.into(),
                offset: eocd.offset.into(),
                size_bytes: eocd.size_bytes.into(),
            },
        };
        let fits = directory
            .offset
            .checked_add(directory.size_bytes)
            .is_some_and(|end| end <= eocd_offset);
        if !fits {
            let detail = format!(
                "its central directory ({} bytes at byte {}) runs past the end-of-central-directory record at byte {eocd_offset}: \
                 the file is truncated or has bytes cut from its start",
                directory.size_bytes, directory.offset
            );
            return Err(damaged(&self.path, detail));
        }
        Ok(directory)
    }

    /// The ZIP64 end-of-central-directory record's directory, where a ZIP64 locator sits right
    /// before the end-of-central-directory record at `eocd_offset`.
    fn zip64_directory(&mut self, eocd_offset: u64) -> Result<Option<Directory>, WheelError> {
        let Some(locator_offset) = eocd_offset.checked_sub(ZIP64_LOCATOR_BYTES) else {
            return Ok(None);
        };
        let mut locator = [0; ZIP64_LOCATOR_BYTES as usize];
        self.read_exact_at(locator_offset, &mut locator)
            .map_err(|error| self.read_fault(error, "the ZIP64 locator", locator_offset))?;
        if le_u32(&locator, 0) != Some(ZIP64_LOCATOR_SIGNATURE) {
            return Ok(None);
        }
        let record_offset = le_u64(&locator, 8).unwrap_or(u64::MAX);
        let before_locator = record_offset
            .checked_add(ZIP64_EOCD_BYTES as u64)
            .is_some_and(|end| end <= locator_offset);
        let mut record = [0; ZIP64_EOCD_BYTES];
        if before_locator {
            self.read_exact_at(record_offset, &mut record)
                .map_err(|error| {
                    self.read_fault(
                        error,
                        "the ZIP64 end-of-central-directory record",
                        record_offset,
                    )
                })?;
        }
        match parse_zip64_eocd(&record) {
            Some(directory) if before_locator => Ok(Some(directory)),
            _ => Err(damaged(
                &self.path,
                format!("no ZIP64 end-of-central-directory record at byte {record_offset}, where its locator (at byte {locator_offset}) points"),
            )),
        }
    }

    /// Reads the central directory and returns the entries whose names make them candidates.
    fn read_candidates(&mut self, directory: &Directory) -> Result<Vec<CentralEntry>, WheelError> {
        let Zip { path, file, .. } = self;
        let read_error = |source| WheelError::Read {
            archive: path.clone(),
            source,
        };
        file.seek(SeekFrom::Start(directory.offset))
            .map_err(read_error)?;
        let mut reader = BufReader::with_capacity(CHUNK_BYTES, file.take(directory.size_bytes));
        let mut candidates = Vec::new();
        // Each entry takes at least 46 bytes of a directory no longer than the file: the count
        // read from the file bounds nothing else.
        for index in 0..directory.entries {
            match read_central_entry(&mut reader, index) {
                Ok(Some(entry)) => candidates.push(entry),
                Ok(None) => {}
                Err(EntryFault::Io(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                    let detail = format!(
                        "its central directory ({} bytes) ends inside entry {index} of the {} it declares",
                        directory.size_bytes, directory.entries
                    );
                    return Err(damaged(path, detail));
                }
                Err(EntryFault::Io(error)) => return Err(read_error(error)),
                Err(EntryFault::Damaged(detail)) => {
                    return Err(damaged(
                        path,
                        format!("central directory entry {index}: {detail}"),
                    ));
                }
            }
        }
        Ok(candidates)
    }
}

/// Where the end-of-central-directory record starts in `tail` (the file's last bytes): the last
/// signature whose record, comment included, fits before the end.
fn find_eocd(tail: &[u8]) -> Option<usize> {
    let last_start = tail.len().checked_sub(EOCD_BYTES)?;
    (0..=last_start).rev().find(|&at| {
        let record = tail.get(at..).unwrap_or_default();
        le_u32(record, 0) == Some(EOCD_SIGNATURE)
            && le_u16(record, 20).is_some_and(|comment_bytes| {
                EOCD_BYTES + usize::from(comment_bytes) <= record.len()
            })
    })
}

fn parse_eocd(record: &[u8]) -> Option<Eocd> {
    (le_u32(record, 0)? == EOCD_SIGNATURE).then_some(())?;
    Some(Eocd {
        disk: le_u16(record, 4)?,
        directory_disk: le_u16(record, 6)?,
        entries: le_u16(record, 10)?,
        size_bytes: le_u32(record, 12)?,
        offset: le_u32(record, 16)?,
    })
}

fn parse_zip64_eocd(record: &[u8]) -> Option<Directory> {
    (le_u32(record, 0)? == ZIP64_EOCD_SIGNATURE).then_some(())?;
    Some(Directory {
        entries: le_u64(record, 32)?,
        size_bytes: le_u64(record, 40)?,
        offset: le_u64(record, 48)?,
    })
}

/// Reads one central directory entry (header, name, extra field, comment), and returns it if
/// its name makes it a candidate. Names, extra fields and comments are at most 64 KiB each.
fn read_central_entry(
    reader: &mut impl Read,
    index: u64,
) -> Result<Option<CentralEntry>, EntryFault> {
    let mut header = [0; CENTRAL_HEADER_BYTES];
    reader.read_exact(&mut header).map_err(EntryFault::Io)?;
    // Every offset below lies within the fixed-size header.
    let u16_at = |at| le_u16(&header, at).unwrap_or(0);
    let u32_at = |at| le_u32(&header, at).unwrap_or(0);
    if u32_at(0) != CENTRAL_HEADER_SIGNATURE {
        return Err(EntryFault::Damaged(
            "no entry signature where the entry should start".to_owned(),
        ));
    }
    let name_bytes = read_field(reader, u16_at(28))?;
    let extra = read_field(reader, u16_at(30))?;
    let comment_bytes = u64::from(u16_at(32));
    let skipped_bytes = io::copy(&mut reader.by_ref().take(comment_bytes), &mut io::sink())
        .map_err(EntryFault::Io)?;
    if skipped_bytes != comment_bytes {
        return Err(EntryFault::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    let name = String::from_utf8_lossy(&name_bytes).into_owned();
    if name.ends_with('/') || !is_candidate_name(&name) {
        return Ok(None);
    }
    let [uncompressed_bytes, compressed_bytes, local_header_offset] =
        zip64_values(&extra, [u32_at(24), u32_at(20), u32_at(42)]).map_err(EntryFault::Damaged)?;
    Ok(Some(CentralEntry {
        index,
        name,
        flags: u16_at(8),
        method: u16_at(10),
        crc32: u32_at(16),
        compressed_bytes,
        uncompressed_bytes,
        local_header_offset,
    }))
}

/// Reads a name or extra field of `len_bytes` (a 16-bit length, so at most 64 KiB).
fn read_field(reader: &mut impl Read, len_bytes: u16) -> Result<Vec<u8>, EntryFault> {
    let mut field = vec![0; usize::from(len_bytes)];
    reader.read_exact(&mut field).map_err(EntryFault::Io)?;
    Ok(field)
}

/// A member's uncompressed size, compressed size and local header offset: the 32-bit values,
/// or, for each one saturated at `0xFFFFFFFF`, the next 64-bit value of the ZIP64 extra field
/// (which holds only those, in that order). Without a ZIP64 field the 32-bit values stand.
fn zip64_values(extra: &[u8], values_32: [u32; 3]) -> Result<[u64; 3], String> {
    let mut values = values_32.map(u64::from);
    if !values_32.contains(&ZIP64_SATURATED) {
        return Ok(values);
    }
    let Some(field) = find_extra_field(extra, ZIP64_EXTRA_TAG) else {
        return Ok(values);
    };
    let mut at = 0;
    for (value, value_32) in values.iter_mut().zip(values_32) {
        if value_32 == ZIP64_SATURATED {
            *value = le_u64(field, at).ok_or_else(|| {
                format!(
                    "its ZIP64 extra field ({} bytes) is too short for the sizes it stands for",
                    field.len()
                )
            })?;
            at += 8;
        }
    }
    Ok(values)
}

/// The data of the extra field tagged `tag`, if the extra fields hold one.
fn find_extra_field(extra: &[u8], tag: u16) -> Option<&[u8]> {
    let mut rest = extra;
    while let (Some(field_tag), Some(len_bytes)) = (le_u16(rest, 0), le_u16(rest, 2)) {
        let (data, after) = rest.get(4..)?.split_at_checked(usize::from(len_bytes))?;
        if field_tag == tag {
            return Some(data);
        }
        rest = after;
    }
    None
}

/// The fixed buffers every member is streamed through, and the inflater's state (about 40 KiB),
/// allocated once per archive.
struct Buffers {
    input: Vec<u8>,
    output: Vec<u8>,
    inflater: Box<InflateState>,
}

impl Buffers {
    fn new() -> Self {
        Buffers {
            input: vec![0; CHUNK_BYTES],
            output: vec![0; CHUNK_BYTES],
            inflater: InflateState::new_boxed(DataFormat::Raw),
        }
    }
}

/// Why streaming a member's data stopped.
#[derive(Debug)]
enum Fault {
    Read(io::Error),
    Write(io::Error),
    /// The compressed data ended before the deflate stream did.
    Truncated,
    /// The data is not a deflate stream.
    Corrupt,
    /// More data than the member declares.
    PastDeclared,
}

/// Where a member's bytes go: the output file, with their count, CRC-32 and first bytes.
struct Sink {
    file: File,
    crc: Crc32,
    written_bytes: u64,
    declared_bytes: u64,
    /// The first [`HEAD_BYTES`], which say what the member is.
    head: Vec<u8>,
}

impl Sink {
    fn new(file: File, declared_bytes: u64) -> Self {
        Sink {
            file,
            crc: Crc32::new(),
            written_bytes: 0,
            declared_bytes,
            head: Vec::with_capacity(HEAD_BYTES),
        }
    }

    /// Writes `bytes`, refusing any that would take the member past its declared size.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        let written_bytes = u64::try_from(bytes.len())
            .ok()
            .and_then(|len_bytes| self.written_bytes.checked_add(len_bytes))
            .filter(|&total_bytes| total_bytes <= self.declared_bytes)
            .ok_or(Fault::PastDeclared)?;
        self.crc.update(bytes);
        let head_room = HEAD_BYTES.saturating_sub(self.head.len()).min(bytes.len());
        self.head
            .extend_from_slice(bytes.get(..head_room).unwrap_or_default());
        self.file.write_all(bytes).map_err(Fault::Write)?;
        self.written_bytes = written_bytes;
        Ok(())
    }
}

/// One candidate member being written to `path`.
struct MemberTarget<'a> {
    zip: &'a mut Zip,
    entry: &'a CentralEntry,
    path: &'a Path,
    limit_bytes: u64,
}

impl MemberTarget<'_> {
    /// Writes the member to its path, checks it, and keeps it if its first bytes are code a
    /// CUDA reader takes (returns whether it was kept; a member not kept is deleted).
    fn extract(&mut self, buffers: &mut Buffers) -> Result<bool, WheelError> {
        self.check_readable()?;
        let data_offset = self.data_offset()?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path)
            .map_err(|error| self.write_error(error))?;
        let mut sink = Sink::new(file, self.entry.uncompressed_bytes);
        let streamed = self
            .stream(&mut sink, data_offset, buffers)
            .and_then(|()| self.verify(&sink));
        let keep = streamed.is_ok() && is_cuda_content(&self.entry.name, &sink.head);
        drop(sink);
        if !keep {
            let removed = std::fs::remove_file(self.path);
            streamed?;
            removed.map_err(|error| self.write_error(error))?;
        }
        Ok(keep)
    }

    /// Refuses an encrypted member, a method other than stored or deflate, a declared size over
    /// the limit, and a stored member whose two sizes differ.
    fn check_readable(&self) -> Result<(), WheelError> {
        let (archive, member) = (self.zip.path.clone(), self.entry.name.clone());
        let entry = self.entry;
        if entry.flags & ENCRYPTED_FLAGS != 0 || entry.method == METHOD_AES {
            return Err(WheelError::Encrypted { archive, member });
        }
        if entry.method != METHOD_STORED && entry.method != METHOD_DEFLATE {
            return Err(WheelError::UnsupportedMethod {
                archive,
                member,
                method: entry.method,
            });
        }
        if entry.uncompressed_bytes > self.limit_bytes {
            let (declared_bytes, limit_bytes) = (entry.uncompressed_bytes, self.limit_bytes);
            return Err(WheelError::TooLarge {
                archive,
                member,
                declared_bytes,
                limit_bytes,
            });
        }
        if entry.method == METHOD_STORED && entry.compressed_bytes != entry.uncompressed_bytes {
            return Err(self.damaged(format!(
                "it is stored uncompressed, yet declares {} bytes compressed and {} uncompressed",
                entry.compressed_bytes, entry.uncompressed_bytes
            )));
        }
        Ok(())
    }

    /// Where the member's data starts, past its local header, checked to end within the file.
    fn data_offset(&mut self) -> Result<u64, WheelError> {
        let header_offset = self.entry.local_header_offset;
        let past_end = format!(
            "its local header at byte {header_offset} lies past the end of the file ({} bytes): the file is truncated",
            self.zip.len_bytes
        );
        // Checked before seeking: a seek past i64::MAX fails with an unhelpful "invalid argument".
        if header_offset
            .checked_add(LOCAL_HEADER_BYTES as u64)
            .is_none_or(|end| end > self.zip.len_bytes)
        {
            return Err(self.damaged(past_end));
        }
        let mut header = [0; LOCAL_HEADER_BYTES];
        if let Err(error) = self.zip.read_exact_at(header_offset, &mut header) {
            return Err(match error.kind() {
                io::ErrorKind::UnexpectedEof => self.damaged(past_end),
                _ => WheelError::Read {
                    archive: self.zip.path.clone(),
                    source: error,
                },
            });
        }
        if le_u32(&header, 0) != Some(LOCAL_HEADER_SIGNATURE) {
            return Err(self.damaged(format!(
                "no local header at byte {header_offset}, where the central directory says it starts"
            )));
        }
        let variable_bytes = u64::from(le_u16(&header, 26).unwrap_or(0))
            + u64::from(le_u16(&header, 28).unwrap_or(0));
        let data_offset = header_offset.checked_add(LOCAL_HEADER_BYTES as u64 + variable_bytes);
        let data_end =
            data_offset.and_then(|offset| offset.checked_add(self.entry.compressed_bytes));
        match (data_offset, data_end) {
            (Some(offset), Some(end)) if end <= self.zip.len_bytes => Ok(offset),
            _ => Err(self.damaged(format!(
                "its {} bytes of data after the local header at byte {header_offset} run past the end of the file ({} bytes): \
                 the file is truncated",
                self.entry.compressed_bytes, self.zip.len_bytes
            ))),
        }
    }

    /// Copies or inflates the member's data into `sink`.
    fn stream(
        &mut self,
        sink: &mut Sink,
        data_offset: u64,
        buffers: &mut Buffers,
    ) -> Result<(), WheelError> {
        let streamed = match self.zip.file.seek(SeekFrom::Start(data_offset)) {
            Err(error) => Err(Fault::Read(error)),
            Ok(_) => {
                let mut data = (&mut self.zip.file).take(self.entry.compressed_bytes);
                if self.entry.method == METHOD_DEFLATE {
                    inflate_into(&mut data, sink, buffers)
                } else {
                    copy_into(&mut data, sink, &mut buffers.input)
                }
            }
        };
        streamed.map_err(|fault| self.fault_error(fault))
    }

    /// Checks the member's size and CRC-32 against the central directory's.
    fn verify(&self, sink: &Sink) -> Result<(), WheelError> {
        let (archive, member) = (self.zip.path.clone(), self.entry.name.clone());
        if sink.written_bytes != self.entry.uncompressed_bytes {
            let (declared_bytes, actual_bytes) =
                (self.entry.uncompressed_bytes, sink.written_bytes);
            return Err(WheelError::SizeMismatch {
                archive,
                member,
                declared_bytes,
                actual_bytes,
            });
        }
        let actual = sink.crc.finish();
        if actual != self.entry.crc32 {
            return Err(WheelError::CrcMismatch {
                archive,
                member,
                expected: self.entry.crc32,
                actual,
            });
        }
        Ok(())
    }

    fn fault_error(&self, fault: Fault) -> WheelError {
        match fault {
            Fault::Read(source) => WheelError::Read {
                archive: self.zip.path.clone(),
                source,
            },
            Fault::Write(error) => self.write_error(error),
            Fault::Truncated => {
                self.damaged("its compressed data ends before its deflate stream does".to_owned())
            }
            Fault::Corrupt => {
                self.damaged("its compressed data is not a valid deflate stream".to_owned())
            }
            Fault::PastDeclared => WheelError::InflatesPastDeclared {
                archive: self.zip.path.clone(),
                member: self.entry.name.clone(),
                declared_bytes: self.entry.uncompressed_bytes,
            },
        }
    }

    fn damaged(&self, detail: String) -> WheelError {
        WheelError::DamagedMember {
            archive: self.zip.path.clone(),
            member: self.entry.name.clone(),
            detail,
        }
    }

    fn write_error(&self, source: io::Error) -> WheelError {
        WheelError::Write {
            archive: self.zip.path.clone(),
            member: self.entry.name.clone(),
            path: self.path.to_path_buf(),
            source,
        }
    }
}

/// Reads into `buf`, retrying when interrupted; 0 at the end of the data.
fn read_some(data: &mut impl Read, buf: &mut [u8]) -> Result<usize, Fault> {
    loop {
        match data.read(buf) {
            Ok(read_bytes) => return Ok(read_bytes),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(Fault::Read(error)),
        }
    }
}

/// Copies a stored member's data into `sink` through `chunk`.
fn copy_into(data: &mut impl Read, sink: &mut Sink, chunk: &mut [u8]) -> Result<(), Fault> {
    loop {
        let read_bytes = read_some(data, chunk)?;
        if read_bytes == 0 {
            return Ok(());
        }
        sink.write(chunk.get(..read_bytes).unwrap_or_default())?;
    }
}

/// Calls of the inflater in a row that may consume and produce nothing before the stream is
/// taken as stuck (corrupt); a healthy stream makes progress on every call.
const MAX_IDLE_INFLATE_CALLS: u32 = 2;

/// Inflates a raw deflate stream from `data` into `sink`, through the fixed buffers.
fn inflate_into(data: &mut impl Read, sink: &mut Sink, buffers: &mut Buffers) -> Result<(), Fault> {
    let Buffers {
        input,
        output,
        inflater,
    } = buffers;
    inflater.reset(DataFormat::Raw);
    let (mut input_start, mut input_end, mut input_done) = (0, 0, false);
    let mut idle_calls = 0;
    loop {
        if input_start == input_end && !input_done {
            input_end = read_some(data, input)?;
            input_start = 0;
            input_done = input_end == 0;
        }
        let pending = input.get(input_start..input_end).unwrap_or_default();
        let result = inflate(inflater, pending, output, MZFlush::None);
        input_start = input_start
            .saturating_add(result.bytes_consumed)
            .min(input_end);
        sink.write(output.get(..result.bytes_written).unwrap_or_default())?;
        match result.status {
            Ok(MZStatus::StreamEnd) => return Ok(()),
            Ok(_) if result.bytes_consumed == 0 && result.bytes_written == 0 => {
                if input_done && input_start == input_end {
                    return Err(Fault::Truncated);
                }
                idle_calls += 1;
                if idle_calls > MAX_IDLE_INFLATE_CALLS {
                    return Err(Fault::Corrupt);
                }
            }
            Ok(_) => idle_calls = 0,
            // The inflater wanted more input and there is none.
            Err(MZError::Buf) if input_done && input_start == input_end => {
                return Err(Fault::Truncated)
            }
            Err(_) => return Err(Fault::Corrupt),
        }
    }
}

/// The CRC-32 of zip (IEEE 802.3, reflected polynomial `0xEDB88320`), by `crc32fast` (the
/// checksum of the `zip` crate and of flate2): a byte-at-a-time table made this reader take twice
/// the CPU of the `zip` crate on a 439 MB wheel, the whole difference (CONTRIBUTING.md, "The
/// binary readers: hand-written or crates").
#[derive(Debug, Clone)]
struct Crc32(crc32fast::Hasher);

impl Crc32 {
    fn new() -> Self {
        Crc32(crc32fast::Hasher::new())
    }

    fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u32 {
        self.0.clone().finalize()
    }
}

#[cfg(test)]
mod tests;
