//! Whether the files a compile read stayed as they were while it ran.
//!
//! The compile cache names an entry by the content of the files nvcc read, and that list is
//! only known after nvcc ran (its dependency file, or the line markers of its preprocessed
//! output). A file saved while nvcc runs would then put the old compile's numbers under the
//! new text's key, and every later run would trust them. So the key's inputs are looked at
//! twice: before the compile, the source and every file its previous compile read (content,
//! size, modification time), and after it, again, next to every file nvcc reported. A file
//! that differs, or that nvcc reported and that was modified after the compile started, means
//! the key may not describe what nvcc read: the result serves this run and is not stored.
//!
//! Files first read by this compile (a new `#include`) are judged by their modification time
//! alone, on the file system's clock; a write in the same clock tick as the compile's start
//! can slip through, as can one on a file system whose timestamps are coarser than that.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// What a file was when it was looked at. Two looks that differ mean it changed in between.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InputState {
    len: u64,
    modified: Option<SystemTime>,
    /// The content's SHA-256, for files the key hashes by content (not the toolkit's and the
    /// system's headers, which it takes by size and modification time).
    digest: Option<[u8; 32]>,
}

/// The inputs of one compile as they were before it started.
#[derive(Debug)]
pub struct InputWatch {
    /// Each file looked at, and what it was (`None`: it did not exist).
    before: BTreeMap<PathBuf, Option<InputState>>,
    /// When the compile started: after the looks, before nvcc ran.
    started: SystemTime,
    /// Headers under here (and the system's) are taken by size and time, as the key takes them.
    cuda_home: PathBuf,
}

impl InputWatch {
    /// Looks at `paths` (the source and what its previous compile read) just before a compile.
    pub fn before(cuda_home: &Path, paths: impl IntoIterator<Item = PathBuf>) -> InputWatch {
        let before = paths
            .into_iter()
            .map(|path| {
                let state = state(cuda_home, &path);
                (path, state)
            })
            .collect();
        InputWatch {
            before,
            started: SystemTime::now(),
            cuda_home: cuda_home.to_path_buf(),
        }
    }

    /// The first input that changed while the compile ran, if any: a file looked at before
    /// that is not what it was, or a file nvcc reported (`dependencies`) that was modified
    /// after the compile started or is gone.
    pub fn changed(&self, dependencies: &[PathBuf]) -> Option<PathBuf> {
        for (path, before) in &self.before {
            if state(&self.cuda_home, path) != *before {
                return Some(path.clone());
            }
        }
        dependencies
            .iter()
            .filter(|path| !self.before.contains_key(*path))
            .find(|path| {
                std::fs::metadata(path)
                    .and_then(|metadata| metadata.modified())
                    .map_or(true, |modified| modified > self.started)
            })
            .cloned()
    }
}

/// A file's size, modification time and (unless a system header) content digest; `None` when
/// it cannot be read.
fn state(cuda_home: &Path, path: &Path) -> Option<InputState> {
    let metadata = std::fs::metadata(path).ok()?;
    let digest = match crate::toolchain::is_system_header(cuda_home, path) {
        true => None,
        false => Some(Sha256::digest(std::fs::read(path).ok()?).into()),
    };
    Some(InputState {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-watch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_input_edited_or_touched_during_the_compile_is_named() {
        let dir = scratch("edited");
        let source = dir.join("k.cu");
        let header = dir.join("k.cuh");
        std::fs::write(&source, "__global__ void k() {}\n").unwrap();
        std::fs::write(&header, "#define N 1\n").unwrap();
        let cuda = dir.join("cuda");
        let watch = || InputWatch::before(&cuda, [source.clone(), header.clone()]);
        let unchanged = watch();
        assert_eq!(unchanged.changed(&[source.clone(), header.clone()]), None);
        let edited = watch();
        std::fs::write(&source, "__global__ void k() { spill(); }\n").unwrap();
        assert_eq!(
            edited.changed(std::slice::from_ref(&source)),
            Some(source.clone())
        );
        // The same text written again (an editor's save): nvcc may have read it half written.
        let rewritten = watch();
        let text = std::fs::read(&header).unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&header)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(std::fs::read(&header).unwrap(), text);
        assert_eq!(rewritten.changed(&[]), Some(header.clone()));
        let removed = watch();
        std::fs::remove_file(&header).unwrap();
        assert_eq!(
            removed.changed(std::slice::from_ref(&source)),
            Some(header.clone())
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_file_first_read_by_this_compile_counts_by_its_modification_time() {
        let dir = scratch("new-header");
        let source = dir.join("k.cu");
        let old_header = dir.join("old.cuh");
        let new_header = dir.join("new.cuh");
        std::fs::write(&source, "").unwrap();
        std::fs::write(&old_header, "").unwrap();
        let watch = InputWatch::before(&dir.join("cuda"), [source.clone()]);
        // Saved before the compile started: nvcc read what is there now.
        assert_eq!(watch.changed(&[source.clone(), old_header.clone()]), None);
        std::fs::write(&new_header, "#define N 2\n").unwrap();
        let after_start = SystemTime::now() + std::time::Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&new_header)
            .unwrap()
            .set_modified(after_start)
            .unwrap();
        assert_eq!(
            watch.changed(&[source.clone(), new_header.clone()]),
            Some(new_header.clone())
        );
        let gone = dir.join("gone.cuh");
        assert_eq!(watch.changed(std::slice::from_ref(&gone)), Some(gone));
        let _ = std::fs::remove_dir_all(dir);
    }
}
