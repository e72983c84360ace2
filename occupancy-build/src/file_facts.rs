//! What a compile's cache key needs of a file it read (the SHA-256 of its bytes and the
//! `OCCUPANCY_` names it uses), remembered by path, size and modification time, so that a
//! rerun after a Rust-only edit reads no header again to find that nothing changed.
//!
//! A record is used only while the file's size and modification time (to the nanosecond) are
//! the recorded ones and the file was already that old when it was recorded: a file written in
//! the same instant it was read could change again within its time stamp's resolution (the
//! "racy" case `git` guards against the same way), so it is read again until it is older. The
//! records live beside the compile cache (`<cache>/files.json`), trusted as the cache is; a
//! record that cannot be read is simply not there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How old a file must have been when it was recorded for the record to be trusted.
const SETTLED: Duration = Duration::from_secs(2);

/// What the key needs of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Facts {
    size: u64,
    modified_ns: u128,
    /// When it was recorded (nanoseconds since the epoch).
    recorded_ns: u128,
    /// Hex SHA-256 of the bytes.
    pub(crate) digest: String,
    /// Every identifier starting with `OCCUPANCY_` in the text (empty for a non-UTF-8 file).
    pub(crate) identifiers: Vec<String>,
    /// Whether the file is text (UTF-8).
    pub(crate) text: bool,
}

/// The records of one cache, read once and written back once per build.
#[derive(Debug)]
pub(crate) struct FileFacts {
    path: PathBuf,
    records: Mutex<HashMap<PathBuf, Facts>>,
    changed: Mutex<bool>,
}

impl FileFacts {
    /// The records kept under `cache_root`, none if there are none (or they cannot be read).
    pub(crate) fn load(cache_root: &Path) -> FileFacts {
        let path = cache_root.join("files.json");
        let records = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        FileFacts {
            path,
            records: Mutex::new(records),
            changed: Mutex::new(false),
        }
    }

    /// The facts of `path`: recorded ones while the file is as recorded, else read now.
    pub(crate) fn of(&self, path: &Path) -> std::io::Result<Facts> {
        let meta = std::fs::metadata(path)?;
        let (size, modified_ns) = (meta.len(), nanos(meta.modified()?));
        let known = self.lock().get(path).cloned();
        if let Some(facts) = known.filter(|facts| {
            facts.size == size
                && facts.modified_ns == modified_ns
                && facts.recorded_ns >= modified_ns.saturating_add(SETTLED.as_nanos())
        }) {
            return Ok(facts);
        }
        let bytes = std::fs::read(path)?;
        let text = std::str::from_utf8(&bytes).ok();
        let facts = Facts {
            // The size and time looked at before reading: a write in between makes the record
            // stale at once, never wrongly current.
            size,
            modified_ns,
            recorded_ns: nanos(SystemTime::now()),
            digest: crate::cache::hex(&Sha256::digest(&bytes)),
            identifiers: text.map(occupancy_identifiers).unwrap_or_default(),
            text: text.is_some(),
        };
        self.lock().insert(path.to_path_buf(), facts.clone());
        *self
            .changed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = true;
        Ok(facts)
    }

    /// Writes the records back when a file was read; best effort (without them the next run
    /// reads the files again).
    pub(crate) fn save(&self) {
        if !*self
            .changed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
        {
            return;
        }
        let records = self.lock();
        if let Ok(json) = serde_json::to_vec(&*records) {
            let _ = crate::fsutil::write_atomic(&self.path, &json);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Facts>> {
        self.records
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn nanos(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .map(|duration| duration.as_nanos())
        .unwrap_or(0)
}

/// Every identifier starting with `OCCUPANCY_` in a source text.
pub(crate) fn occupancy_identifiers(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut index = 0;
    while let Some(offset) = text[index..].find("OCCUPANCY_") {
        let start = index + offset;
        let preceded_by_identifier =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        if !preceded_by_identifier && !found.iter().any(|known| known == &text[start..end]) {
            found.push(text[start..end].to_string());
        }
        index = end;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "occupancy-file-facts-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Sets a file's modification time `seconds` in the past.
    fn age(path: &Path, seconds: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds))
            .unwrap();
    }

    #[test]
    fn a_settled_file_is_read_once_and_a_changed_one_again() {
        let dir = scratch("settled");
        let header = dir.join("k.cuh");
        std::fs::write(&header, "#define A OCCUPANCY_BOUNDS_saxpy\n").unwrap();
        age(&header, 60);
        let facts = FileFacts::load(&dir);
        let first = facts.of(&header).unwrap();
        assert_eq!(first.identifiers, ["OCCUPANCY_BOUNDS_saxpy"]);
        facts.save();
        // Another run: the record stands while the file is as it was.
        let again = FileFacts::load(&dir);
        assert_eq!(again.of(&header).unwrap(), first);
        // The same size and an older time is still another file: read again.
        std::fs::write(&header, "#define B OCCUPANCY_BOUNDS_scale1\n").unwrap();
        age(&header, 30);
        let changed = again.of(&header).unwrap();
        assert_ne!(changed.digest, first.digest);
        assert_eq!(changed.identifiers, ["OCCUPANCY_BOUNDS_scale1"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_file_as_new_as_its_record_is_read_every_time() {
        let dir = scratch("racy");
        let header = dir.join("k.cuh");
        std::fs::write(&header, "one\n").unwrap();
        let facts = FileFacts::load(&dir);
        facts.of(&header).unwrap();
        // Rewritten within the time stamp's resolution: same size, same time as recorded.
        let modified = std::fs::metadata(&header).unwrap().modified().unwrap();
        std::fs::write(&header, "two\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&header)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(
            facts.of(&header).unwrap().digest,
            crate::cache::hex(&Sha256::digest(b"two\n")),
            "a record taken while the file was new must not be trusted"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
