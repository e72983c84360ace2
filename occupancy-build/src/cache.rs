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
    /// The cache root: where compiles go when the slot is not ours.
    root: PathBuf,
    /// Why nothing in the slot is used (it is another user's), naming it.
    untrusted: Option<String>,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// A verified entry of today's key.
    Hit(Entry),
    /// Nothing usable (no entry, another key, a damaged one): compile.
    Miss,
    /// An entry, or the slot, that another user owns or may write: compile, and say why.
    Untrusted(String),
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
    /// The slot for a source named `stem` under the configuration hashed as `config_key`. A
    /// slot of ours that the umask left writable by others is made private; one that is another
    /// user's is never read or written.
    pub fn new(cache_root: &Path, stem: &str, config_key: &str) -> Slot {
        let short = config_key.get(..12).unwrap_or(config_key);
        let dir = cache_root.join(format!("{stem}-{short}"));
        let untrusted = crate::trust::open_slot(&dir)
            .err()
            .map(|reason| format!("{} {reason}", dir.display()));
        Slot {
            dir,
            root: cache_root.to_path_buf(),
            untrusted,
        }
    }

    /// The entry published last, if its key is still `current_key(dependencies)`, every
    /// product verifies and everything is the current user's alone. `None` means: compile.
    #[cfg(test)]
    pub fn lookup(&self, current_key: impl Fn(&[PathBuf]) -> Option<String>) -> Option<Entry> {
        match self.find(current_key) {
            Lookup::Hit(entry) => Some(entry),
            Lookup::Miss | Lookup::Untrusted(_) => None,
        }
    }

    /// [`Slot::lookup`], saying why when something is not trusted.
    pub fn find(&self, current_key: impl Fn(&[PathBuf]) -> Option<String>) -> Lookup {
        if let Some(reason) = &self.untrusted {
            return Lookup::Untrusted(reason.clone());
        }
        let (name, dir, manifest) = match self.published() {
            Ok(Some(published)) => published,
            Ok(None) => return Lookup::Miss,
            Err(reason) => return Lookup::Untrusted(reason),
        };
        if manifest.schema != MANIFEST_SCHEMA
            || manifest.dependencies.is_empty()
            || entry_name(&manifest.key) != name
            || current_key(&manifest.dependencies) != Some(manifest.key.clone())
        {
            return Lookup::Miss;
        }
        match self.verify(&name, manifest) {
            Ok(Some(entry)) => {
                // Mark it used, so a concurrent publish in this slot does not collect it.
                if let Ok(file) = std::fs::File::open(dir.join(MANIFEST)) {
                    let _ = file.set_modified(SystemTime::now());
                }
                Lookup::Hit(entry)
            }
            Ok(None) => Lookup::Miss,
            Err(reason) => Lookup::Untrusted(reason),
        }
    }

    /// Whether compiles may be published here: the slot is not another user's.
    pub fn accepts_entries(&self) -> bool {
        self.untrusted.is_none()
    }

    /// A product of the entry published last, whatever its key: the previous compile of a source
    /// that changed since. A hint for how to compile it again (`crate::compile::two_step`), never a
    /// result: it is not verified. `None` when there is none.
    pub fn previous_product(&self, role: &str) -> Option<PathBuf> {
        let (_, dir, manifest) = self.published().ok()??;
        Some(dir.join(&manifest.product(role)?.name))
    }

    /// The files the entry published last was compiled from, whatever its key: the files a
    /// compile of the source will most likely read again, to look at before it runs.
    pub fn previous_dependencies(&self) -> Vec<PathBuf> {
        match self.published() {
            Ok(Some((_, _, manifest))) => manifest.dependencies,
            _ => Vec::new(),
        }
    }

    /// The entry `current` points at: its name, directory and manifest, not verified; `Err`
    /// naming what is not to be trusted (the pointer, the entry, its manifest).
    fn published(&self) -> Result<Option<(String, PathBuf, Manifest)>, String> {
        if self.untrusted.is_some() {
            return Ok(None);
        }
        let pointer = self.dir.join(POINTER);
        let Ok(name) = std::fs::read_to_string(&pointer) else {
            return Ok(None);
        };
        trusted(&pointer)?;
        if name.is_empty() || !name.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let dir = self.dir.join(&name);
        trusted(&dir)?;
        trusted(&dir.join(MANIFEST))?;
        Ok(read_manifest(&dir).map(|manifest| (name, dir, manifest)))
    }

    /// A fresh, empty, private staging directory inside the slot (in the cache root when the
    /// slot is another user's), unique per process and call.
    pub fn staging(&self) -> Result<Staging, Error> {
        let parent = match self.untrusted {
            None => &self.dir,
            Some(_) => &self.root,
        };
        let dir = parent.join(format!("tmp-{}", unique_suffix()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::trust::create_private_dir(&dir).map_err(|error| Error::Io {
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
                self.point_at(&name)?;
                return Ok(entry);
            }
            // A damaged or untrusted entry under our name: replace it with ours. One of another
            // user's that cannot be removed is moved aside (a rename within our own slot).
            if std::fs::remove_dir_all(&dir).is_err() {
                let aside = self.dir.join(format!("untrusted-{}", unique_suffix()));
                let _ = std::fs::rename(&dir, aside);
            }
            std::fs::rename(&staging.dir, &dir).map_err(|error| Error::Io {
                path: dir.clone(),
                error,
            })?;
        }
        self.point_at(&name)?;
        self.collect_garbage(&name);
        Ok(Entry { dir, manifest, log })
    }

    /// Points `current` at the entry `name` (a private file).
    fn point_at(&self, name: &str) -> Result<(), Error> {
        let pointer = self.dir.join(POINTER);
        write_atomic(&pointer, name.as_bytes())?;
        crate::trust::make_private(&pointer).map_err(|error| Error::Io {
            path: pointer,
            error,
        })
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

    /// The entry `name` when it is ours alone, its manifest has `key` and every product
    /// verifies.
    fn lookup_named(&self, name: &str, key: &str) -> Option<Entry> {
        let dir = self.dir.join(name);
        trusted(&dir)
            .and_then(|()| trusted(&dir.join(MANIFEST)))
            .ok()?;
        let manifest = read_manifest(&dir)?;
        (manifest.schema == MANIFEST_SCHEMA && manifest.key == key).then_some(())?;
        self.verify(name, manifest).ok()?
    }

    /// Compares every product's size and modification time with the manifest's, checks that it
    /// is ours alone, and reads the log. `Ok(None)`: damaged; `Err`: a product not to be
    /// trusted, named.
    fn verify(&self, name: &str, manifest: Manifest) -> Result<Option<Entry>, String> {
        let dir = self.dir.join(name);
        let mut log = None;
        for product in &manifest.products {
            let path = dir.join(&product.name);
            let Ok(metadata) = std::fs::symlink_metadata(&path) else {
                return Ok(None);
            };
            if let Some(reason) = crate::trust::distrust(&metadata) {
                return Err(format!("{} {reason}", path.display()));
            }
            if metadata.len() != product.size_bytes
                || modified_ns(&metadata) != Some(product.modified_ns)
            {
                return Ok(None);
            }
            if product.role == "log" {
                log = std::fs::read(&path)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok());
            }
        }
        Ok(log.map(|log| Entry { dir, manifest, log }))
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

/// `Err` naming `path` and why when it exists and another user owns or may write it (a missing
/// one is a damaged entry, which the lookup misses on).
fn trusted(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) => match crate::trust::distrust(&metadata) {
            None => Ok(()),
            Some(reason) => Err(format!("{} {reason}", path.display())),
        },
        Err(_) => Ok(()),
    }
}

/// `<pid>-<n>`: unique per process and call.
fn unique_suffix() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
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
    let manifest_path = staging.dir.join(MANIFEST);
    write_atomic(&manifest_path, &json)?;
    crate::trust::make_private(&manifest_path).map_err(|error| Error::Io {
        path: manifest_path,
        error,
    })?;
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
    // Ours alone: a lookup trusts nothing another user may write.
    crate::trust::make_private(path)?;
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

    /// Another local user's entry in the cache (issue 23, item 3b) must not decide a check:
    /// an entry, its manifest, a product or the pointer that is theirs, or that group or
    /// others may write, is a lookup that says so, and the recompile replaces it.
    #[cfg(unix)]
    #[test]
    fn an_entry_another_user_owns_or_may_write_is_never_used_and_is_replaced() {
        use crate::trust::tests::give_to_another_user;
        use std::os::unix::fs::PermissionsExt;
        let root = scratch("planted");
        type Plant = (&'static str, fn(&Path, &Path) -> bool);
        let plants: [Plant; 6] = [
            ("group-writable product", |entry, _| {
                let path = entry.join("k.ptx");
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
                true
            }),
            ("world-writable entry", |entry, _| {
                std::fs::set_permissions(entry, std::fs::Permissions::from_mode(0o777)).unwrap();
                true
            }),
            ("another user's entry", |entry, _| {
                give_to_another_user(entry)
            }),
            ("another user's manifest", |entry, _| {
                give_to_another_user(&entry.join(MANIFEST))
            }),
            ("another user's log", |entry, _| {
                give_to_another_user(&entry.join("nvcc.log"))
            }),
            ("another user's pointer", |_, slot| {
                give_to_another_user(&slot.join(POINTER))
            }),
        ];
        for (what, plant) in plants {
            let (slot, key) = published(&root, ".entry k { planted; }");
            let entry = slot.lookup(|_| Some(key.clone())).expect("a hit before");
            if !plant(&entry.dir, &slot.dir) {
                continue; // needs root: chown
            }
            let Lookup::Untrusted(reason) = slot.find(|_| Some(key.clone())) else {
                panic!("{what} was used");
            };
            assert!(
                reason.contains(&slot.dir.display().to_string()),
                "{what}: {reason}"
            );
            assert!(
                reason.contains("belongs to uid 12345") || reason.contains("writable by group"),
                "{what}: {reason}"
            );
            // The recompile of the same key replaces it.
            let (again, _) = published(&root, ".entry k { planted; }");
            let mine = again
                .lookup(|_| Some(key.clone()))
                .expect("ours replaced theirs");
            assert_eq!(mine.log, "ptxas info : Used 8 registers", "{what}");
            let _ = std::fs::remove_dir_all(&slot.dir);
        }
        let _ = std::fs::remove_dir_all(root);
    }

    /// Everything a publish leaves is private, whatever mode the compiler and the umask gave it.
    #[cfg(unix)]
    #[test]
    fn published_files_and_directories_are_private() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let root = scratch("private");
        let slot = Slot::new(&root, "k", "0123456789abcdef");
        let staging = slot.staging().unwrap();
        for name in ["k.ptx", "k.fatbin", "nvcc.log"] {
            let path = staging.dir.join(name);
            std::fs::write(&path, "ptxas info : Used 8 registers").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        let key = format!("{:064x}", 7);
        let entry = slot
            .publish(
                staging,
                key,
                vec![root.join("k.cu")],
                &[
                    ("ptx", "k.ptx"),
                    ("binary", "k.fatbin"),
                    ("log", "nvcc.log"),
                ],
            )
            .unwrap();
        for path in [
            slot.dir.clone(),
            slot.dir.join(POINTER),
            entry.dir.clone(),
            entry.dir.join(MANIFEST),
            entry.dir.join("k.ptx"),
            entry.dir.join("nvcc.log"),
        ] {
            let mode = std::fs::metadata(&path).unwrap().mode();
            assert_eq!(mode & 0o022, 0, "{} has mode {mode:o}", path.display());
        }
        let _ = std::fs::remove_dir_all(root);
    }

    /// A slot that is another user's is neither read nor written: the compile goes to a private
    /// directory of the cache root and is not published.
    #[cfg(unix)]
    #[test]
    fn a_slot_another_user_owns_is_left_alone() {
        let root = scratch("their-slot");
        let (slot, key) = published(&root, ".entry k { theirs; }");
        if !crate::trust::tests::give_to_another_user(&slot.dir) {
            return; // needs root: chown
        }
        let theirs = Slot::new(&root, "k", "0123456789abcdef");
        assert!(matches!(
            theirs.find(|_| Some(key.clone())),
            Lookup::Untrusted(reason) if reason.contains("belongs to uid 12345")
        ));
        assert!(!theirs.accepts_entries());
        let staging = theirs.staging().unwrap();
        assert_eq!(staging.dir.parent(), Some(root.as_path()));
        let _ = std::fs::remove_dir_all(root);
    }
}
