//! The binary readers' fuzz corpus (issue #35): real files nvcc made from `fuzz_corpus/k.cu`
//! (`fuzz_corpus/regenerate.sh`: a cubin, a fatbin of a cubin and PTX, a host object, a static
//! library and a wheel), each read unchanged, then mutated (bytes replaced, most of them in the
//! headers the readers trust, and the file cut) and read by every reader that takes its kind:
//! the kind sniffer, the fatbin walker, the cubin's kernel reader, the archive reader and the
//! wheel extractor. No case may panic or loop; what each reader accepts must be consistent (a
//! fatbin inside its file; a wheel extracting no more than deflate's ratio allows of its size).
//!
//! Bounded properties in the normal suite (256 cases each); `PROPTEST_CASES` raises the count,
//! as `scripts/test.sh` does for a longer bounded run in CI (`OCCUPANCY_FUZZ_CASES`).

use std::io::Read;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::archive::Archive;
use super::{extract, fatbin, sniff, wheel, BinaryKind};

/// The corpus: each file's name and bytes.
const CORPUS: [(&str, &[u8]); 5] = [
    ("k.sm_90.cubin", include_bytes!("fuzz_corpus/k.sm_90.cubin")),
    ("k.fatbin", include_bytes!("fuzz_corpus/k.fatbin")),
    ("k.o", include_bytes!("fuzz_corpus/k.o")),
    ("libk.a", include_bytes!("fuzz_corpus/libk.a")),
    (
        "k-1.0-py3-none-linux_x86_64.whl",
        include_bytes!("fuzz_corpus/k-1.0-py3-none-linux_x86_64.whl"),
    ),
];

/// A fresh private directory for one case.
fn scratch(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "occupancy-binary-fuzz-{name}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every reader that takes a file of `kind` on `path`; what they found, for the caller's checks.
fn read_with_every_reader(path: &Path, dir: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).unwrap();
    let kind = sniff(path).map_err(|error| error.to_string())?;
    if let Ok(Some(blobs)) = fatbin::blobs(path) {
        for blob in blobs {
            let end = blob.offset.checked_add(blob.len).ok_or("a blob past u64")?;
            if end > bytes.len() as u64 || blob.len < 16 {
                return Err(format!("a fatbin outside its file: {blob:?}"));
            }
        }
    }
    if kind == Some(BinaryKind::Cubin) {
        let _ = extract::cubin_kernels(&bytes, path, "fuzz");
        let _ = extract::code_marks(&bytes);
    }
    if bytes.starts_with(super::archive::MAGIC) {
        if let Ok(mut archive) = Archive::new(&bytes[..]) {
            let mut members = 0;
            while let Ok(Some(_)) = archive.next_member() {
                let mut data = Vec::new();
                if archive.read_to_end(&mut data).is_err() || data.len() > bytes.len() {
                    break;
                }
                members += 1;
                if members > bytes.len() {
                    return Err("more members than bytes".into());
                }
            }
        }
    }
    if kind == Some(BinaryKind::Wheel) {
        let out = dir.join("out");
        let _ = wheel::extract_cuda_members(path, &out);
        let written: u64 = std::fs::read_dir(&out)
            .map(|entries| {
                (entries.flatten())
                    .filter_map(|entry| entry.metadata().ok())
                    .map(|metadata| metadata.len())
                    .sum()
            })
            .unwrap_or(0);
        // Deflate expands at most 1032:1; overlapping members are refused.
        if written > 1100 * bytes.len() as u64 {
            return Err(format!("{written} bytes extracted from {}", bytes.len()));
        }
    }
    Ok(())
}

/// Each corpus file, unchanged, is read as what it is.
#[test]
fn the_corpus_is_read_whole() {
    let dir = scratch("whole");
    for (name, bytes) in CORPUS {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        read_with_every_reader(&path, &dir).unwrap();
        let kind = sniff(&path).unwrap();
        match name {
            "k.sm_90.cubin" => {
                let kernels = extract::cubin_kernels(bytes, &path, name).unwrap();
                assert!(
                    kernels
                        .iter()
                        .any(|(kernel, _)| kernel.record.name == "window"),
                    "{name}"
                );
            }
            "k.fatbin" | "k.o" => {
                let blobs = fatbin::blobs(&path).unwrap().unwrap();
                assert!(blobs.iter().any(|blob| blob.elf), "{name}: {blobs:?}");
            }
            "libk.a" => assert_eq!(kind, Some(BinaryKind::Container)),
            _ => {
                let members = wheel::extract_cuda_members(&path, &dir.join("members")).unwrap();
                assert_eq!(members.len(), 2, "{members:?}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

proptest! {
    /// A corpus file with bytes replaced (half of them in its first 256 bytes, where the
    /// headers are) and perhaps cut short: every reader answers or refuses, never panics.
    #[test]
    fn mutated_corpus_files_are_read_or_refused_without_panicking(
        file in 0..CORPUS.len(),
        edits in proptest::collection::vec((any::<bool>(), any::<u32>(), any::<u8>()), 1..12),
        cut in proptest::option::of(any::<u32>()),
    ) {
        let (name, original) = CORPUS[file];
        let mut bytes = original.to_vec();
        for (in_header, at, byte) in edits {
            let span = if in_header { bytes.len().min(256) } else { bytes.len() };
            let at = at as usize % span;
            bytes[at] = byte;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut as usize % (bytes.len() + 1));
        }
        let dir = scratch("mutated");
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let read = read_with_every_reader(&path, &dir);
        std::fs::remove_dir_all(&dir).unwrap();
        prop_assert!(read.is_ok(), "{name}: {read:?}");
    }

    /// A fatbin's entry headers damaged word by word: the walker refuses or reads a layout
    /// inside the file, never reads it as one without device code when its header is intact.
    #[test]
    fn a_fatbin_with_a_damaged_entry_header_is_refused_or_read_inside_its_file(
        word in 0..4usize,
        value in any::<u32>(),
    ) {
        let (name, original) = CORPUS[1];
        let mut bytes = original.to_vec();
        // The first entry's header starts after the 16-byte fatbin header.
        let at = 16 + word * 4;
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let dir = scratch("entry");
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let read = fatbin::blobs(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        if let Ok(Some(blobs)) = read {
            prop_assert!(blobs.iter().all(|blob| blob.elf || blob.ptx || blob.lto), "{blobs:?}");
            prop_assert!(
                blobs.iter().all(|blob| blob.offset + blob.len <= bytes.len() as u64),
                "{blobs:?}"
            );
        }
    }
}
