//! What the candidates of one kernel on one arch measured, kept beside the compile cache: a
//! build whose kernel and toolchain did not change assembles no candidate again.
//!
//! One file per kernel and arch, `<cache root>/auto/<kernel>-<arch>-<key>.json`, keyed by
//! everything a candidate's compile and measurement depend on: the kernel's PTX without bounds
//! (cut to the kernel), the arch, the knob, the launch, nvcc's arguments, the toolkit's
//! fingerprint and this schema. Like the compile cache, a file another user owns or may
//! write is not read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_core::tune::{Bound, Candidate};
use sha2::{Digest, Sha256};

use crate::cache::hex;
use crate::fsutil::write_atomic;

/// Bumped when what a memo holds or how it is measured changes. 3: a tool that failed is no
/// longer a candidate's verdict, so a memo of 2 may hold a crash as "compile failed". 4: each
/// candidate with the digest of the PTX it was assembled from, the source's compile at its
/// bound (both were 3 on their own branches: a memo of either 3 is measured again). 5: ptxas's
/// refusal (`ptxas error`) is no longer a candidate's verdict either, so a memo of 4 may hold
/// one as "compile failed" (issue #42, class 14).
const MEMO_SCHEMA: u32 = 5;

/// The candidates measured for one key.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    path: Option<PathBuf>,
    key: String,
    pub(crate) candidates: BTreeMap<Bound, Candidate>,
    /// Per candidate, the digest ([`memo_key`]) of the PTX it was assembled from.
    digests: BTreeMap<Bound, String>,
    /// Whether a candidate was added since it was read.
    changed: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct MemoFile {
    schema: u32,
    key: String,
    candidates: Vec<Candidate>,
    digests: Vec<(Bound, String)>,
}

/// What a memo's key is made of, each part length-prefixed.
pub(crate) fn memo_key(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(MEMO_SCHEMA.to_le_bytes());
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

impl Memo {
    /// The memo of `key` under `root` (`None`: kept for this run only); empty when there is
    /// none, it is not ours alone, or it is of another key or schema.
    pub(crate) fn open(root: Option<&Path>, kernel: &str, arch: &str, key: String) -> Memo {
        let path = root.map(|root| {
            let name = file_name_of(kernel);
            root.join(format!("{name}-{arch}-{}.json", &key[..16]))
        });
        let (candidates, digests) = path
            .as_deref()
            .and_then(|path| read(path, &key))
            .unwrap_or_default();
        Memo {
            path,
            key,
            candidates,
            digests,
            changed: false,
        }
    }

    /// Whether the memo holds `bound`'s candidate assembled from the PTX of digest `digest`.
    pub(crate) fn holds(&self, bound: Bound, digest: &str) -> bool {
        self.candidates.contains_key(&bound)
            && self.digests.get(&bound).is_some_and(|held| held == digest)
    }

    /// Records a candidate measured now, from the PTX of digest `digest` (`None`: there was no
    /// PTX to assemble; measured again next time).
    pub(crate) fn insert(&mut self, candidate: Candidate, digest: Option<String>) {
        self.changed = true;
        match digest {
            Some(digest) => self.digests.insert(candidate.bound, digest),
            None => self.digests.remove(&candidate.bound),
        };
        self.candidates.insert(candidate.bound, candidate);
    }

    /// Writes the memo when a candidate was added (a memo that cannot be written is only not
    /// kept: the next build measures again).
    pub(crate) fn save(&self) {
        let Some(path) = self.path.as_deref().filter(|_| self.changed) else {
            return;
        };
        let file = MemoFile {
            schema: MEMO_SCHEMA,
            key: self.key.clone(),
            candidates: self.candidates.values().cloned().collect(),
            digests: (self.digests.iter())
                .map(|(bound, digest)| (*bound, digest.clone()))
                .collect(),
        };
        if let Some(parent) = path.parent() {
            let _ = crate::trust::create_private_dir(parent);
        }
        if let Ok(text) = serde_json::to_vec_pretty(&file) {
            let _ = write_atomic(path, &text);
        }
    }
}

/// The candidates of the memo at `path` and their PTX's digests, if it is ours alone and of
/// `key`.
type Held = (BTreeMap<Bound, Candidate>, BTreeMap<Bound, String>);

fn read(path: &Path, key: &str) -> Option<Held> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if crate::trust::distrust(&metadata).is_some() {
        return None;
    }
    let file: MemoFile = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    (file.schema == MEMO_SCHEMA && file.key == key).then(|| {
        let candidates = (file.candidates.into_iter())
            .map(|candidate| (candidate.bound, candidate))
            .collect();
        (candidates, file.digests.into_iter().collect())
    })
}

/// A kernel's name as a file name: its first 60 characters, each but a letter, digit or `_`
/// made `-` (a C++ symbol holds `<`, `:`, `*`).
pub(super) fn file_name_of(kernel: &str) -> String {
    (kernel.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect()
}
