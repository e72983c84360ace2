//! The hand-written readers of occupancy-binary against the ecosystem's crates (`object` for
//! `ar` archives and ELF section tables, `zip` for wheels), on the same file, one reader per
//! process (so that its max RSS is its own): `scripts/bench-readers.sh` builds and runs it.
//! Each mode prints what it read, one line per item, then `items N bytes B`; the script holds
//! both readers' lines equal and times them side by side.
//!
//! The hand-written readers are the crate's own files, copied beside this one by the script
//! (`fatbin.rs` with `blobs_in` appended, its walk of one section; `wheel.rs` with its rules of
//! which members to keep made public), so what is measured is what `cargo occupancy check` runs.

#[allow(dead_code)]
mod archive;
#[allow(dead_code)]
mod fatbin;
#[allow(dead_code)]
mod wheel;

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// What `archive.rs` and `fatbin.rs` take from their parent module.
pub(crate) fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// What `wheel.rs` names files with (occupancy-build's, less its relative paths).
pub(crate) fn shown_path(path: &Path) -> String {
    path.display().to_string()
}

/// Copies `reader` to nowhere through a 64 KiB buffer, as the front end copies a member out
/// (to a file there); the bytes copied and a checksum of them.
fn drain(reader: &mut impl Read) -> io::Result<(u64, u32)> {
    let mut buffer = vec![0u8; 64 << 10];
    let (mut total, mut sum) = (0u64, 0u32);
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            return Ok((total, sum));
        }
        total += read as u64;
        sum = buffer[..read]
            .iter()
            .fold(sum, |sum, &byte| sum.rotate_left(5) ^ u32::from(byte));
    }
}

fn ar_hand(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let mut archive = archive::Archive::new(BufReader::new(File::open(path)?))?;
    while let Some(name) = archive.next_member()? {
        let (bytes, sum) = drain(&mut archive)?;
        writeln!(out, "{name} {bytes} {sum:08x}")?;
    }
    Ok(())
}

/// `object`'s archive reader over a `ReadCache` (what it reads is cached, so only headers and
/// name tables are read through it); each member's data streamed from its file range.
fn ar_object(path: &Path, out: &mut impl Write) -> io::Result<()> {
    let cache = object::ReadCache::new(File::open(path)?);
    let archive = object::read::archive::ArchiveFile::parse(&cache).map_err(io::Error::other)?;
    let mut data = BufReader::new(File::open(path)?);
    for member in archive.members() {
        let member = member.map_err(io::Error::other)?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        let (offset, size) = member.file_range();
        data.seek(SeekFrom::Start(offset))?;
        let (bytes, sum) = drain(&mut (&mut data).take(size))?;
        writeln!(out, "{name} {bytes} {sum:08x}")?;
    }
    Ok(())
}

fn elf_hand(path: &Path, out: &mut impl Write) -> io::Result<()> {
    for blob in fatbin::blobs(path)?.unwrap_or_default() {
        writeln!(out, "fatbin at {} of {}", blob.offset, blob.len)?;
    }
    Ok(())
}

/// `object`'s ELF reader over a `ReadCache`: the section headers and their names only (no
/// symbols), the `.nv_fatbin` sections else the `__nv_relfatbin` ones, then the same walk of
/// the fatbins in them as `fatbin.rs`.
fn elf_object(path: &Path, out: &mut impl Write) -> io::Result<()> {
    use object::read::elf::{FileHeader, SectionHeader};
    let cache = object::ReadCache::new(File::open(path)?);
    let header = object::elf::FileHeader64::<object::LittleEndian>::parse(&cache)
        .map_err(io::Error::other)?;
    let endian = header.endian().map_err(io::Error::other)?;
    let sections = header.sections(endian, &cache).map_err(io::Error::other)?;
    let (mut executable, mut relocatable) = (Vec::new(), Vec::new());
    for section in sections.iter() {
        let name = sections.section_name(endian, section).map_err(io::Error::other)?;
        let list = match name {
            b".nv_fatbin" => &mut executable,
            b"__nv_relfatbin" => &mut relocatable,
            _ => continue,
        };
        if let Some(range) = section.file_range(endian) {
            list.push(range);
        }
    }
    let ranges = if executable.is_empty() { relocatable } else { executable };
    // The fatbins in each section: the same walk as the hand-written reader's (not timed apart).
    for (offset, size) in ranges {
        for blob in fatbin::blobs_in(path, offset, size)?.unwrap_or_default() {
            writeln!(out, "fatbin at {} of {}", blob.offset, blob.len)?;
        }
    }
    Ok(())
}

fn wheel_hand(path: &Path, dir: &Path, out: &mut impl Write) -> io::Result<()> {
    let members = wheel::extract_cuda_members(path, dir).map_err(io::Error::other)?;
    for member in members {
        let (bytes, sum) = drain(&mut File::open(&member.path)?)?;
        writeln!(out, "{} {bytes} {sum:08x}", member.name_in_archive)?;
    }
    Ok(())
}

/// The `zip` crate: the members `wheel.rs` takes (its own rules, by name and first bytes), each
/// streamed to `dir` as `<index>-<basename>`; the rules of `wheel.rs` that the crate does not keep
/// (overlapping members, total declared size) are not applied here: this measures reading.
fn wheel_zip(path: &Path, dir: &Path, out: &mut impl Write) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut zip = zip::ZipArchive::new(BufReader::new(File::open(path)?)).map_err(io::Error::other)?;
    for index in 0..zip.len() {
        let mut member = zip.by_index(index).map_err(io::Error::other)?;
        let name = member.name().map_err(io::Error::other)?.into_owned();
        if member.is_dir() || !wheel::candidate(&name) {
            continue;
        }
        let base = name.rsplit(['/', '\\']).next().unwrap_or(&name);
        let file = dir.join(format!("{index}-{base}"));
        let mut sink = io::BufWriter::with_capacity(64 << 10, File::create(&file)?);
        io::copy(&mut member, &mut sink)?;
        sink.flush()?;
        drop(sink);
        let mut head = vec![0u8; 4096];
        let filled = read_full(&mut File::open(&file)?, &mut head)?;
        let cuda = wheel::cuda_content(&name, &head[..filled]);
        if !cuda {
            std::fs::remove_file(&file)?;
            continue;
        }
        let (bytes, sum) = drain(&mut File::open(&file)?)?;
        writeln!(out, "{name} {bytes} {sum:08x}")?;
    }
    Ok(())
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, path) = (args[1].as_str(), Path::new(&args[2]));
    let dir = args.get(3).map(Path::new);
    let mut out = io::BufWriter::new(io::stdout().lock());
    match mode {
        "ar-hand" => ar_hand(path, &mut out),
        "ar-object" => ar_object(path, &mut out),
        "elf-hand" => elf_hand(path, &mut out),
        "elf-object" => elf_object(path, &mut out),
        "wheel-hand" => wheel_hand(path, dir.expect("a directory"), &mut out),
        "wheel-zip" => wheel_zip(path, dir.expect("a directory"), &mut out),
        _ => panic!("unknown mode {mode}"),
    }
}
