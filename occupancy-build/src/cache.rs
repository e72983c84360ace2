//! The compile cache on disk: entries published whole and atomically, verified when read.
//!
//! Layout, under `$OUT_DIR/occupancy/cache` (or the CLI's `--cache-dir`):
//!
//! ```text
//! <stem>-<slot>/          one slot per source and configuration (flags, defines, archs, toolkit)
//!   current               the name of the entry published last (written atomically)
//!   <key>/                an entry: manifest.json + the products, named by its full key
//!   tmp-<pid>-<n>/        a compile in progress; renamed to <key>/ in one step when complete
//! ```
//!
//! The full key covers the slot's configuration and the content of the source and every header
//! it read; two configurations never share a slot, and an entry's name is its key, so a reader
//! can only ever see one whole compile. The manifest records each product's size and
//! modification time, which publishing sets to a fixed past instant ([`PRODUCT_STAMP_AGE`]
//! before the publish): a product written, truncated or emptied afterwards has today's time,
//! however fine the filesystem's clock, so an entry whose products do not match is not used and
//! the caller recompiles. Checking a hit is a `stat` per product, not a read: hashing the
//! megabytes of PTX and fatbin on every build-script run cost a debug build script (how cargo
//! builds it) about a second on a 935-kernel crate. This module knows nothing about nvcc; it
//! moves and verifies files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::fsutil::write_atomic;
use crate::Error;

/// Bumped when the layout or the manifest changes: older entries are then ignored.
const MANIFEST_SCHEMA: u32 = 3;
const POINTER: &str = "current";
const MANIFEST: &str = "manifest.json";
/// Entries not used for this long are removed when a newer one is published in their slot.
const UNUSED_ENTRY_AGE: Duration = Duration::from_secs(600);
/// Staging directories older than this belong to a process that died mid-compile.
const ABANDONED_STAGING_AGE: Duration = Duration::from_secs(3600);
/// How far before the publish a product's modification time is set: any later write gives it
/// the current time, which then differs from the recorded one.
const PRODUCT_STAMP_AGE: Duration = Duration::from_secs(24 * 3600);

/// One product file of an entry, as recorded in its manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProductFile {
    /// What the file is: `ptx`, `binary` or `log`.
    pub role: String,
    /// The file's name inside the entry.
    pub name: String,
    pub size_bytes: u64,
    /// The modification time publishing gave the file, in nanoseconds since the Unix epoch.
    pub modified_ns: u64,
}

/// What an entry holds and what it was compiled from.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub schema: u32,
    /// The full cache key (configuration + the content of every dependency).
    pub key: String,
    /// Every file the compile read (the source and its headers), absolute.
    pub dependencies: Vec<PathBuf>,
    pub products: Vec<ProductFile>,
}

impl Manifest {
    /// The product with this role, if the entry has one.
    pub fn product(&self, role: &str) -> Option<&ProductFile> {
        self.products.iter().find(|product| product.role == role)
    }
}

/// A verified entry: every product matched its recorded size and modification time.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The `log` product's text (nvcc's stderr), already read for the verification.
    pub log: String,
}

impl Entry {
    /// The path of the product with this role.
    pub fn path(&self, role: &str) -> Option<PathBuf> {
        self.manifest
            .product(role)
            .map(|product| self.dir.join(&product.name))
    }
}

/// The directory of one source under one configuration.
#[derive(Debug, Clone)]
pub struct Slot {
    dir: PathBuf,
}

/// A private directory to compile into; becomes an entry by [`Slot::publish`], or stays a
/// result of this run only by [`Slot::keep_unpublished`].
#[derive(Debug)]
pub struct Staging {
    pub dir: PathBuf,
    /// Kept for this run (unpublished): not removed when dropped.
    kept: bool,
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Published staging dirs were renamed away; anything left is a failed compile, unless
        // this run still reads it (a later publish in the slot collects it after an hour).
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Slot {
    /// The slot for a source named `stem` under the configuration hashed as `config_key`.
    pub fn new(cache_root: &Path, stem: &str, config_key: &str) -> Slot {
        let short = config_key.get(..12).unwrap_or(config_key);
        Slot {
            dir: cache_root.join(format!("{stem}-{short}")),
        }
    }

    /// The entry published last, if its key is still `current_key(dependencies)` and every
    /// product verifies. `None` means: compile.
    pub fn lookup(&self, current_key: impl Fn(&[PathBuf]) -> Option<String>) -> Option<Entry> {
        let (name, dir, manifest) = self.published()?;
        if manifest.schema != MANIFEST_SCHEMA
            || manifest.dependencies.is_empty()
            || entry_name(&manifest.key) != name
            || current_key(&manifest.dependencies)? != manifest.key
        {
            return None;
        }
        let entry = self.verify(&name, manifest)?;
        // Mark it used, so a concurrent publish in this slot does not collect it.
        if let Ok(file) = std::fs::File::open(dir.join(MANIFEST)) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(entry)
    }

    /// A product of the entry published last, whatever its key: the previous compile of a source
    /// that changed since. A hint for how to compile it again (`crate::line_info`), never a
    /// result: it is not verified. `None` when there is none.
    pub fn previous_product(&self, role: &str) -> Option<PathBuf> {
        let (_, dir, manifest) = self.published()?;
        Some(dir.join(&manifest.product(role)?.name))
    }

    /// The files the entry published last was compiled from, whatever its key: the files a
    /// compile of the source will most likely read again, to look at before it runs.
    pub fn previous_dependencies(&self) -> Vec<PathBuf> {
        self.published()
            .map(|(_, _, manifest)| manifest.dependencies)
            .unwrap_or_default()
    }

    /// The entry `current` points at: its name, directory and manifest, unchecked.
    fn published(&self) -> Option<(String, PathBuf, Manifest)> {
        let name = std::fs::read_to_string(self.dir.join(POINTER)).ok()?;
        if name.is_empty() || !name.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        let dir = self.dir.join(&name);
        let manifest = read_manifest(&dir)?;
        Some((name, dir, manifest))
    }

    /// A fresh, empty staging directory inside the slot (unique per process and call).
    pub fn staging(&self) -> Result<Staging, Error> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = self.dir.join(format!(
            "tmp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|error| Error::Io {
            path: dir.clone(),
            error,
        })?;
        Ok(Staging { dir, kept: false })
    }

    /// Records `products` (files already inside the staging dir) in a manifest and renames the
    /// staging dir into place as one entry, then points `current` at it. When another process
    /// published the same key first, its (verified) entry is used instead.
    pub fn publish(
        &self,
        staging: Staging,
        key: String,
        dependencies: Vec<PathBuf>,
        products: &[(&str, &str)],
    ) -> Result<Entry, Error> {
        let (manifest, log) = record(&staging, key, dependencies, products)?;
        let name = entry_name(&manifest.key);
        let dir = self.dir.join(&name);
        if std::fs::rename(&staging.dir, &dir).is_err() {
            // Published by someone else meanwhile (rename onto a non-empty directory fails):
            // theirs is the same key, so the same compile; use it if it verifies.
            let key = manifest.key.clone();
            if let Some(entry) = self.lookup_named(&name, &key) {
                write_atomic(&self.dir.join(POINTER), name.as_bytes())?;
                return Ok(entry);
            }
            // A damaged entry under our name: replace it with ours.
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::rename(&staging.dir, &dir).map_err(|error| Error::Io {
                path: dir.clone(),
                error,
            })?;
        }
        write_atomic(&self.dir.join(POINTER), name.as_bytes())?;
        self.collect_garbage(&name);
        Ok(Entry { dir, manifest, log })
    }

    /// Records `products` like [`Slot::publish`] but leaves them where they are, out of every
    /// lookup: the result of a compile whose inputs changed while it ran, which this run uses
    /// and no later run may (its key would name text the compiler may not have read).
    pub fn keep_unpublished(
        &self,
        mut staging: Staging,
        key: String,
        dependencies: Vec<PathBuf>,
        products: &[(&str, &str)],
    ) -> Result<Entry, Error> {
        let (manifest, log) = record(&staging, key, dependencies, products)?;
        staging.kept = true;
        Ok(Entry {
            dir: staging.dir.clone(),
            manifest,
            log,
        })
    }

    /// The entry `name` when its manifest has `key` and every product verifies.
    fn lookup_named(&self, name: &str, key: &str) -> Option<Entry> {
        let manifest = read_manifest(&self.dir.join(name))?;
        (manifest.schema == MANIFEST_SCHEMA && manifest.key == key).then_some(())?;
        self.verify(name, manifest)
    }

    /// Compares every product's size and modification time with the manifest's, and reads the
    /// log.
    fn verify(&self, name: &str, manifest: Manifest) -> Option<Entry> {
        let dir = self.dir.join(name);
        let mut log = None;
        for product in &manifest.products {
            let path = dir.join(&product.name);
            let metadata = std::fs::metadata(&path).ok()?;
            if metadata.len() != product.size_bytes
                || modified_ns(&metadata)? != product.modified_ns
            {
                return None;
            }
            if product.role == "log" {
                log = Some(String::from_utf8(std::fs::read(&path).ok()?).ok()?);
            }
        }
        Some(Entry {
            dir,
            manifest,
            log: log?,
        })
    }

    /// Removes entries of this slot not used for a while and abandoned staging dirs.
    fn collect_garbage(&self, keep: &str) {
        let Ok(children) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for child in children.flatten() {
            let name = child.file_name().to_string_lossy().into_owned();
            let path = child.path();
            let staging = name.starts_with("tmp-");
            let (stamp, limit) = if staging {
                (path.clone(), ABANDONED_STAGING_AGE)
            } else if name != keep && path.is_dir() {
                (path.join(MANIFEST), UNUSED_ENTRY_AGE)
            } else {
                continue;
            };
            let modified = std::fs::metadata(&stamp).and_then(|metadata| metadata.modified());
            if expired(modified.ok(), now, limit, staging) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
}

/// Stamps each of `products` (files in the staging dir) and writes the manifest recording them;
/// returns it and the `log` product's text.
fn record(
    staging: &Staging,
    key: String,
    dependencies: Vec<PathBuf>,
    products: &[(&str, &str)],
) -> Result<(Manifest, String), Error> {
    let mut records = Vec::new();
    let mut log = String::new();
    let stamp = SystemTime::now() - PRODUCT_STAMP_AGE;
    for (role, name) in products {
        let path = staging.dir.join(name);
        if *role == "log" {
            log = String::from_utf8_lossy(&crate::fsutil::read(&path)?).into_owned();
        }
        let (size_bytes, modified_ns) =
            stamp_product(&path, stamp).map_err(|error| Error::Io { path, error })?;
        records.push(ProductFile {
            role: (*role).to_string(),
            name: (*name).to_string(),
            size_bytes,
            modified_ns,
        });
    }
    let manifest = Manifest {
        schema: MANIFEST_SCHEMA,
        key,
        dependencies,
        products: records,
    };
    let json = serde_json::to_vec_pretty(&manifest).expect("the manifest is plain data");
    write_atomic(&staging.dir.join(MANIFEST), &json)?;
    Ok((manifest, log))
}

/// Whether a slot child last modified at `modified` (read at `now`) is old enough to remove.
///
/// Another process may be writing into it at this very moment: a time after `now` is a child
/// touched since this collection began, never an old one (removing it deleted a concurrent
/// run's staging dir under it). A staging dir whose time cannot be read is gone or going;
/// an entry without a readable manifest is damaged and may go.
fn expired(modified: Option<SystemTime>, now: SystemTime, limit: Duration, staging: bool) -> bool {
    match modified {
        Some(modified) => now.duration_since(modified).is_ok_and(|age| age > limit),
        None => !staging,
    }
}

/// The manifest of the entry in `dir`, unchecked; `None` when it cannot be read or parsed.
fn read_manifest(dir: &Path) -> Option<Manifest> {
    serde_json::from_slice(&std::fs::read(dir.join(MANIFEST)).ok()?).ok()
}

/// Sets a product's modification time to `stamp`; returns its size and its time as the file
/// system keeps it (rounded to its clock). A file system that refuses to set times keeps the
/// time of the write: still a miss after any later write, except one in the same clock tick.
fn stamp_product(path: &Path, stamp: SystemTime) -> std::io::Result<(u64, u64)> {
    let file = std::fs::File::options().write(true).open(path)?;
    let _ = file.set_modified(stamp);
    let metadata = file.metadata()?;
    let modified = modified_ns(&metadata).ok_or_else(|| {
        std::io::Error::other("its modification time cannot be read or lies outside 1970-2554")
    })?;
    Ok((metadata.len(), modified))
}

/// Which file this is, without reading it: its size and modification time. For a product of an
/// entry, whose time publishing set to a past instant, a file compiled again or written over
/// has another stamp: what the caches kept beside products (SASS facts, PTX summaries) are keyed
/// by.
pub(crate) fn file_stamp(path: &Path) -> Result<String, Error> {
    let io = |error| Error::Io {
        path: path.to_path_buf(),
        error,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    let modified =
        modified_ns(&metadata).ok_or_else(|| io(std::io::Error::other("no modification time")))?;
    Ok(format!("{} bytes, modified {modified} ns", metadata.len()))
}

/// A file's modification time in nanoseconds since the Unix epoch (`None`: not readable, or
/// outside 1970..2554).
pub(crate) fn modified_ns(metadata: &std::fs::Metadata) -> Option<u64> {
    let since_epoch = metadata
        .modified()
        .ok()?
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?;
    u64::try_from(since_epoch.as_nanos()).ok()
}

/// An entry's directory name: its key, shortened (still 128 bits).
fn entry_name(key: &str) -> String {
    key.get(..32).unwrap_or(key).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Publishes an entry with a PTX, a binary and a log; returns the slot and the key.
    fn published(root: &Path, ptx: &str) -> (Slot, String) {
        let slot = Slot::new(root, "k", "0123456789abcdef");
        let staging = slot.staging().unwrap();
        std::fs::write(staging.dir.join("k.ptx"), ptx).unwrap();
        std::fs::write(staging.dir.join("k.fatbin"), b"\x00fatbin").unwrap();
        std::fs::write(
            staging.dir.join("nvcc.log"),
            "ptxas info : Used 8 registers",
        )
        .unwrap();
        let key = format!("{:064x}", ptx.len());
        slot.publish(
            staging,
            key.clone(),
            vec![root.join("k.cu")],
            &[
                ("ptx", "k.ptx"),
                ("binary", "k.fatbin"),
                ("log", "nvcc.log"),
            ],
        )
        .unwrap();
        (slot, key)
    }

    #[test]
    fn a_published_entry_is_found_whole_and_staging_is_gone() {
        let root = scratch("hit");
        let (slot, key) = published(&root, ".entry k {}");
        let entry = slot.lookup(|_| Some(key.clone())).expect("a hit");
        assert_eq!(
            std::fs::read_to_string(entry.path("ptx").unwrap()).unwrap(),
            ".entry k {}"
        );
        assert_eq!(entry.log, "ptxas info : Used 8 registers");
        let names: Vec<String> = std::fs::read_dir(&slot.dir)
            .unwrap()
            .flatten()
            .map(|child| child.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|name| name.starts_with("tmp-")),
            "{names:?}"
        );
        assert!(
            slot.lookup(|_| Some("other".into())).is_none(),
            "a changed key misses"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_damaged_entry_is_never_used() {
        let root = scratch("damaged");
        type Damage = (&'static str, fn(&Path));
        let damages: [Damage; 5] = [
            ("truncated ptx", |path| {
                let text = std::fs::read(path.join("k.ptx")).unwrap();
                std::fs::write(path.join("k.ptx"), &text[..text.len() / 2]).unwrap();
            }),
            ("emptied ptx", |path| {
                std::fs::write(path.join("k.ptx"), "").unwrap()
            }),
            ("edited log, same size", |path| {
                std::fs::write(path.join("nvcc.log"), "ptxas info : Used 9 registers").unwrap()
            }),
            ("missing binary", |path| {
                std::fs::remove_file(path.join("k.fatbin")).unwrap()
            }),
            ("manifest cut", |path| {
                let text = std::fs::read(path.join(MANIFEST)).unwrap();
                std::fs::write(path.join(MANIFEST), &text[..text.len() / 2]).unwrap();
            }),
        ];
        for (what, damage) in damages {
            let (slot, key) = published(&root, ".entry k { ret; }");
            let entry = slot.lookup(|_| Some(key.clone())).expect("a hit before");
            damage(&entry.dir);
            assert!(
                slot.lookup(|_| Some(key.clone())).is_none(),
                "{what} was used"
            );
            let _ = std::fs::remove_dir_all(&slot.dir);
        }
        let (slot, key) = published(&root, ".entry k {}");
        std::fs::write(slot.dir.join(POINTER), "../../elsewhere").unwrap();
        assert!(
            slot.lookup(|_| Some(key.clone())).is_none(),
            "a pointer out of the slot"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn only_children_older_than_the_limit_are_collected() {
        let now = SystemTime::now();
        let limit = Duration::from_secs(600);
        let second = Duration::from_secs(1);
        // Touched after the collection read the clock: a concurrent run is writing it.
        assert!(!expired(Some(now + second), now, limit, true));
        assert!(!expired(Some(now + second), now, limit, false));
        assert!(!expired(Some(now - limit), now, limit, true));
        assert!(expired(Some(now - limit - second), now, limit, true));
        assert!(expired(Some(now - limit - second), now, limit, false));
        // No time: a staging dir is being renamed or removed by its owner; an entry is damaged.
        assert!(!expired(None, now, limit, true));
        assert!(expired(None, now, limit, false));
    }

    #[test]
    fn a_staging_dir_made_during_a_collection_survives_it() {
        let root = scratch("young-staging");
        let (slot, _) = published(&root, ".entry k { old; }");
        let staging = slot.staging().unwrap();
        std::fs::write(staging.dir.join("k.ptx"), "in progress").unwrap();
        slot.collect_garbage("none");
        assert!(
            staging.dir.join("k.ptx").exists(),
            "a live staging dir was collected"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn concurrent_publishers_of_one_key_leave_one_whole_entry() {
        let root = scratch("race");
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let (slot, key) = published(&root, ".entry k { race; }");
                    assert!(slot.lookup(|_| Some(key.clone())).is_some());
                });
            }
        });
        let slot = Slot::new(&root, "k", "0123456789abcdef");
        let key = format!("{:064x}", ".entry k { race; }".len());
        assert!(slot.lookup(|_| Some(key.clone())).is_some());
        let _ = std::fs::remove_dir_all(root);
    }
}
