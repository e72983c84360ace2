//! The device code a build script left in its `OUT_DIR`: PTX modules (bindgen_cuda, cudaforge,
//! a direct `nvcc --ptx`), cubins and fatbins, host objects and libraries that embed fatbins
//! (cc's CUDA mode, CMake, cudaforge's `build_lib`). Host-only objects are passed over (named
//! in a count), and so are loose objects beside a static library the package links: the
//! library holds them (cc, cudaforge and CMake archive every object they compile).
//!
//! A file older than the build script's last run (`invoked.timestamp`, which cargo writes as
//! the script starts) and named by nothing the build wrote or links is *stale*: left by an
//! earlier build that this one no longer makes (a kernel file removed since). It is still read,
//! and said to be stale; its findings do not gate. An older file some current file names (the
//! `ptx.rs` that `include_str!`s it, a path in the script's output, a linked library) is the
//! builder's own up-to-date copy (bindgen_cuda skips unchanged sources) and counts as current.
//!
//! Byte-identical copies of one product are read once (CMake's build-tree library beside the
//! copy `install` put in `lib/`): the copy in a directory the package links from is kept, else
//! a current one, else the first in path order; the others are counted.
//!
//! The walk visits each directory once, follows no link to a directory, and takes only regular
//! files. Every file named like a product is read or is an error naming it (issue #35: a check
//! reads every file it selects): a FIFO, device or socket, a link that cannot be followed, a
//! directory that cannot be listed, a PTX module without a `.target`, a file named like a
//! cubin or fatbin that is neither, a damaged ELF file, a GNU thin archive, and a file larger
//! than any binary read (`MAX_BINARY_BYTES`, 16 GiB: a sparse 64 GiB one was scanned to its
//! end) are errors, never passed over.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use occupancy_binary::{BinaryKind, PtxTarget};

use super::cargo_run::BuiltPackage;

/// One file of device code.
#[derive(Debug, Clone)]
pub struct Product {
    pub path: PathBuf,
    pub kind: ProductKind,
    /// Left by an earlier build (see the module docs).
    pub stale: bool,
}

#[derive(Debug, Clone)]
pub enum ProductKind {
    /// A PTX module, with its `.target`.
    Ptx(PtxTarget),
    /// A cubin, fatbin, object or library.
    Binary(BinaryKind),
}

/// What an `OUT_DIR` holds.
#[derive(Debug, Default)]
pub struct Products {
    pub products: Vec<Product>,
    /// Objects and libraries with no device code.
    pub host_only: usize,
    /// Loose objects a linked static library holds.
    pub archived_objects: usize,
    /// Byte-identical copies of a product that is read elsewhere.
    pub identical_copies: usize,
    /// Libraries the package links from a search path outside `OUT_DIR` (candle's
    /// `*_BUILD_DIR`): not read, named.
    pub linked_outside: Vec<PathBuf>,
    /// ptxas's reports the nvcc tap kept beside the outputs (`<output>.ptxas`) during the build
    /// script's last run.
    pub tap_reports: Vec<PathBuf>,
    /// Files the package's own occupancy-build report covers: taken from it, not read here.
    pub covered: Vec<PathBuf>,
    /// The text read to learn which files the build names.
    pub texts_read: TextsRead,
    /// Reports of the tap older than the build script's last run (a later build without the
    /// tap compiled again): not read.
    pub stale_tap_reports: usize,
}

/// Directories of a CMake build that hold its own probes (the compiler identification's
/// `a.out`), never the project's code.
const CMAKE_PROBES: [&str; 4] = [
    "CompilerIdCUDA",
    "CompilerIdC",
    "CompilerIdCXX",
    "CMakeScratch",
];

/// Names of text files that may name a product (`ptx.rs`, a header, a manifest).
const NAMING_EXTENSIONS: [&str; 6] = ["rs", "h", "hpp", "json", "txt", "toml"];

/// An error naming the product `path` and why it was not read.
fn not_read(path: &Path, why: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {why}", occupancy_build::cli::shown_path(path)),
    )
}

/// The products of `package`'s `OUT_DIR`; an error naming the first file named like a product
/// that cannot be read (see the module docs).
pub fn find(package: &BuiltPackage, covered: &Covered) -> std::io::Result<Products> {
    let mut files = Vec::new();
    let mut found = Products::default();
    let mut visited = covered.private_dir.iter().cloned().collect();
    walk(&package.out_dir, &mut visited, &mut files)?;
    let (files, covered_files) = files
        .into_iter()
        .partition(|path| !covered.files.contains(path));
    found.covered = covered_files;
    let started = script_started(&package.out_dir);
    let linked = linked_libraries(package);
    let is_current = |path: &Path| touched_since(path, started);
    let named = names_in_current_files(package, &files, &is_current, &mut found.texts_read);
    let archived = archived_members(&files, &linked)?;
    for dir in (package.linked_paths.iter()).filter(|dir| !dir.starts_with(&package.out_dir)) {
        let libraries = linked.iter().map(|name| dir.join(name));
        found
            .linked_outside
            .extend(libraries.filter(|path| path.is_file()));
    }
    for path in files {
        let name = file_name(&path);
        if name.ends_with(crate::tap::REPORT_SUFFIX) {
            match is_current(&path) {
                true => found.tap_reports.push(path),
                false => found.stale_tap_reports += 1,
            }
            continue;
        }
        let Some(kind) = kind_of(&path)? else {
            continue;
        };
        if let ProductKind::Binary(_) = kind {
            if is_object(&name) && archived.contains(&content_digest(&path)?) {
                found.archived_objects += 1;
                continue;
            }
            if !holds_device_code(&path)? {
                found.host_only += 1;
                continue;
            }
        }
        let stale = !is_current(&path) && !named.contains(&name) && !linked.contains(&name);
        found.products.push(Product { path, kind, stale });
    }
    found.identical_copies = drop_identical_copies(&mut found.products, &package.linked_paths)?;
    Ok(found)
}

/// What a package's own occupancy-build report covers (`build.rs`'s `this_builds_report`): the
/// files it names, and its private directory (`OUT_DIR/occupancy`: its compile cache and
/// probes), which the walk does not enter. Empty when no report of this build was taken.
#[derive(Debug, Default)]
pub struct Covered {
    pub files: BTreeSet<PathBuf>,
    pub private_dir: Option<PathBuf>,
}

/// Whether the name is a loose object's (`.o`, `.obj`).
fn is_object(name: &str) -> bool {
    name.ends_with(".o") || name.ends_with(".obj")
}

/// The digests of every member of the static libraries of `OUT_DIR` the package links: a loose
/// object is passed over only when one of them holds its very bytes (cc, cudaforge and CMake
/// archive the objects they compile unchanged), never because some library is linked. An error
/// names a linked library that cannot be read.
fn archived_members(
    files: &[PathBuf],
    linked: &BTreeSet<String>,
) -> std::io::Result<BTreeSet<[u8; 32]>> {
    use sha2::Digest;
    let mut digests = BTreeSet::new();
    let libraries = files.iter().filter(|path| {
        let name = file_name(path);
        linked.contains(&name) && (name.ends_with(".a") || name.ends_with(".lib"))
    });
    for library in libraries {
        let mut digest_member = |_: &str, data: &mut dyn Read| {
            let mut hasher = sha2::Sha256::new();
            std::io::copy(data, &mut hasher)?;
            digests.insert(hasher.finalize().into());
            Ok(())
        };
        occupancy_binary::for_each_member(library, &mut digest_member).map_err(|error| {
            not_read(
                library,
                format!("a linked static library that cannot be read: {error}"),
            )
        })?;
    }
    Ok(digests)
}

/// Keeps one of each set of byte-identical products (see the module docs); how many went. Only
/// files of equal size are hashed, as a stream.
fn drop_identical_copies(
    products: &mut Vec<Product>,
    linked_paths: &[PathBuf],
) -> std::io::Result<usize> {
    let mut by_size: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (index, product) in products.iter().enumerate() {
        let size = std::fs::metadata(&product.path)?.len();
        by_size.entry(size).or_default().push(index);
    }
    let mut copies = BTreeSet::new();
    for same_size in by_size.values().filter(|indices| indices.len() > 1) {
        let mut by_content: BTreeMap<[u8; 32], Vec<usize>> = BTreeMap::new();
        for &index in same_size {
            let digest = content_digest(&products[index].path)?;
            by_content.entry(digest).or_default().push(index);
        }
        for same in by_content.values().filter(|indices| indices.len() > 1) {
            let linked = |index: &&usize| {
                let dir = products[**index].path.parent();
                dir.is_some_and(|dir| linked_paths.iter().any(|linked| linked == dir))
            };
            let current = |index: &&usize| !products[**index].stale;
            let kept = *(same.iter().find(linked))
                .or_else(|| same.iter().find(current))
                .unwrap_or(&same[0]);
            copies.extend(same.iter().copied().filter(|&index| index != kept));
        }
    }
    let kept = std::mem::take(products).into_iter().enumerate();
    *products = (kept.filter(|(index, _)| !copies.contains(index)))
        .map(|(_, product)| product)
        .collect();
    Ok(copies.len())
}

fn content_digest(path: &Path) -> std::io::Result<[u8; 32]> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hasher.finalize().into())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn walk(
    dir: &Path,
    visited: &mut BTreeSet<PathBuf>,
    files: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    let listed = |error| not_read(dir, format!("the directory cannot be listed: {error}"));
    if !visited.insert(std::fs::canonicalize(dir).map_err(listed)?) {
        return Ok(());
    }
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .and_then(|entries| entries.collect::<Result<_, _>>())
        .map_err(listed)?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type().map_err(|error| not_read(&path, error))?;
        if file_type.is_dir() {
            if !CMAKE_PROBES.contains(&file_name(&path).as_str()) {
                walk(&path, visited, files)?;
            }
        } else if file_type.is_file() {
            files.push(path);
        } else if file_type.is_symlink() {
            // A link to a file is read as the file; a link to a directory is not followed; one
            // named like a product that leads nowhere readable is an error.
            match std::fs::metadata(&path) {
                Ok(target) if target.is_file() => files.push(path),
                Ok(target) if target.is_dir() || !kind_by_name(&path) => {}
                Ok(_) => return Err(not_a_file(&path)),
                Err(error) if kind_by_name(&path) => {
                    return Err(not_read(
                        &path,
                        format!(
                            "named like a product, it is a link that cannot be followed ({error})"
                        ),
                    ))
                }
                Err(_) => {}
            }
        } else if kind_by_name(&path) {
            return Err(not_a_file(&path));
        }
    }
    Ok(())
}

fn not_a_file(path: &Path) -> std::io::Error {
    not_read(
        path,
        "named like a product, it is not a regular file (a FIFO, device or socket): not read, since it need not end; a check reads every file it selects, so nothing was checked",
    )
}

/// Whether the name is a product's (`.ptx`, `.cubin`, `.fatbin`, `.o`, `.obj`, `.a`, `.so`,
/// `.so.N`).
fn kind_by_name(path: &Path) -> bool {
    name_is_a_product(&file_name(path))
}

/// [`kind_by_name`] of a file name.
fn name_is_a_product(name: &str) -> bool {
    [".ptx", ".cubin", ".fatbin", ".o", ".obj", ".a", ".so"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains(".so.")
}

/// A product's kind: PTX by its `.target`, a binary by its first bytes; `None` for a file not
/// named like a product, or named like a host object or library that is none (a `.so` linker
/// script); an error naming a file named like a product that cannot be read as one.
fn kind_of(path: &Path) -> std::io::Result<Option<ProductKind>> {
    if !kind_by_name(path) {
        return Ok(None);
    }
    let len = std::fs::metadata(path)
        .map_err(|error| not_read(path, error))?
        .len();
    let cap = occupancy_binary::MAX_BINARY_BYTES;
    if len > cap {
        return Err(not_read(
            path,
            format!("{len} bytes, more than any build product ({cap} bytes): not read"),
        ));
    }
    if file_name(path).ends_with(".ptx") {
        let mut head = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(64 * 1024).read_to_end(&mut head))
            .map_err(|error| not_read(path, error))?;
        // Bytes, not text: a character cut at 64 KiB, or one byte that is not UTF-8, must not
        // hide the module.
        let head = String::from_utf8_lossy(&head);
        return match occupancy_binary::ptx_target(&head) {
            // A target no GPU has is checked on no arch: its kernels were passed over.
            Some(target) if occupancy_core::arch::lookup(&target.arch).is_err() => Err(not_read(
                path,
                format!(
                    "its `.target {}` is no architecture this version of occupancy knows: damaged, or newer than it",
                    target.arch
                ),
            )),
            Some(target) => Ok(Some(ProductKind::Ptx(target))),
            None => Err(not_read(
                path,
                "a PTX module without a `.target` the driver knows in its first 64 KiB: damaged, or not PTX",
            )),
        };
    }
    match occupancy_binary::sniff(path).map_err(|error| not_read(path, error))? {
        Some(kind) => Ok(Some(ProductKind::Binary(kind))),
        None => match crate::inputs::not_a_binary(path) {
            Some(why) => Err(not_read(path, why)),
            None => Ok(None),
        },
    }
}

/// Whether a binary may hold device code (`occupancy_binary::holds_device_code`); an error
/// naming the file when it cannot tell.
fn holds_device_code(path: &Path) -> std::io::Result<bool> {
    occupancy_binary::holds_device_code(path).map_err(|error| not_read(path, error))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

/// Whether the file at `path` was written, copied, linked or renamed into place since the build
/// script started (`None`: when is not known, so it counts as current). Evidence, not the age
/// its bytes claim: a prebuilt file copied in with its old modification time (`cp -p`) or hard
/// linked keeps that time, but its inode's change time (`ctime`, which no program can set back)
/// is of the copy or link.
pub fn touched_since(path: &Path, started: Option<SystemTime>) -> bool {
    let Some(started) = started else {
        return true;
    };
    let Ok(metadata) = std::fs::metadata(path) else {
        return true;
    };
    let modified = metadata
        .modified()
        .is_ok_and(|modified| modified >= started);
    modified || changed(&metadata).is_some_and(|changed| changed >= started)
}

/// The inode's change time (Unix), when the platform has one.
#[cfg(unix)]
fn changed(metadata: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let seconds = u64::try_from(metadata.ctime()).ok()?;
    let nanos = u32::try_from(metadata.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(seconds, nanos))
}

#[cfg(not(unix))]
fn changed(_: &std::fs::Metadata) -> Option<SystemTime> {
    None
}

/// When the build script last started: cargo writes `invoked.timestamp` beside `out/` then.
pub fn script_started(out_dir: &Path) -> Option<SystemTime> {
    modified(&out_dir.parent()?.join("invoked.timestamp"))
}

/// The file names of the static and dynamic libraries the package links (`lib{name}.a`,
/// `lib{name}.so`).
fn linked_libraries(package: &BuiltPackage) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for lib in &package.linked_libs {
        let name = lib.rsplit('=').next().unwrap_or(lib);
        let name = name.split(':').next().unwrap_or(name);
        names.insert(format!("lib{name}.a"));
        names.insert(format!("lib{name}.so"));
        names.insert(format!("{name}.lib"));
    }
    names
}

/// The text of `OUT_DIR` read to learn what the build names: files and bytes, each byte once.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TextsRead {
    pub files: usize,
    pub bytes: u64,
}

/// Every product file name the build script's output (`output` beside `out/`: its
/// `rerun-if-changed` and link lines) or a current text file of `OUT_DIR` names as a path: what
/// the build still uses. A name counts only as a whole path component (`"k.ptx"`, `/k.ptx`,
/// `dir\\k.ptx`), never as a part of a longer name (`k.ptx` inside `bk.ptx`). Each text is read
/// once and split into its path-like words once: linear in the bytes, whatever the file count.
fn names_in_current_files(
    package: &BuiltPackage,
    files: &[PathBuf],
    is_current: &dyn Fn(&Path) -> bool,
    read: &mut TextsRead,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut take = |text: &str| {
        read.files += 1;
        read.bytes += text.len() as u64;
        names.extend(named_products(text));
    };
    if let Some(output) = package.out_dir.parent().map(|dir| dir.join("output")) {
        if let Ok(text) = std::fs::read_to_string(output) {
            take(&text);
        }
    }
    for path in files {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 4 << 20);
        if NAMING_EXTENSIONS.contains(&extension) && small && is_current(path) {
            if let Ok(text) = std::fs::read_to_string(path) {
                take(&text);
            }
        }
    }
    names
}

/// The file names of the paths `text` writes that are named like products: each word between
/// quotes, spaces and punctuation no path of a build holds, cut after its last `/` or `\\`.
fn named_products(text: &str) -> impl Iterator<Item = String> + '_ {
    let separator = |c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\''
                    | '`'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '<'
                    | '>'
                    | ','
                    | ';'
                    | '='
                    | ':'
                    | '|'
                    | '*'
                    | '?'
            )
    };
    text.split(separator)
        .map(|word| word.rsplit(['/', '\\']).next().unwrap_or(word))
        .filter(|name| !name.is_empty() && name_is_a_product(name))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(out_dir: &Path, libs: &[&str]) -> BuiltPackage {
        BuiltPackage {
            name: "k".into(),
            id: "path+file:///k#0.1.0".into(),
            out_dir: out_dir.to_path_buf(),
            linked_libs: libs.iter().map(ToString::to_string).collect(),
            linked_paths: Vec::new(),
            manifest_path: None,
            optimized: None,
            lock_key: "k@0.1.0".into(),
        }
    }

    /// Each product's file name and whether it is stale, in path order.
    fn stale_marks(found: &Products) -> Vec<(String, bool)> {
        (found.products.iter())
            .map(|p| (file_name(&p.path), p.stale))
            .collect()
    }

    fn find_all(package: &BuiltPackage) -> std::io::Result<Products> {
        find(package, &Covered::default())
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-products-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("out")).unwrap();
        dir
    }

    const PTX: &str =
        "//\n.version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";

    /// A PTX module older than the script's last start is stale unless a current file names it.
    #[test]
    fn old_files_named_by_nothing_current_are_stale() {
        let dir = scratch("stale");
        let out = dir.join("out");
        // Each module its own bytes: identical copies are read once (the test below).
        std::fs::write(out.join("kept.ptx"), PTX.replace("k()", "kept()")).unwrap();
        std::fs::write(out.join("gone.ptx"), PTX.replace("k()", "gone()")).unwrap();
        // A stale copy of a current module: the current one is read.
        std::fs::write(out.join("a_copy.ptx"), PTX).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("invoked.timestamp"), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(out.join("new.ptx"), PTX).unwrap();
        std::fs::write(out.join("ptx.rs"), "include_str!(\"kept.ptx\");").unwrap();
        let found = find_all(&package(&out, &[])).unwrap();
        assert_eq!(
            stale_marks(&found),
            [
                ("gone.ptx".into(), true),
                ("kept.ptx".into(), false),
                ("new.ptx".into(), false)
            ]
        );
        assert_eq!(found.identical_copies, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue #42, class 4: a name is a reference only as a whole path component, and a
    /// prebuilt file copied or linked in with its old modification time is this build's (its
    /// inode's change time is of the copy), not stale.
    #[cfg(unix)]
    #[test]
    fn stale_is_decided_by_evidence_not_by_a_substring_or_an_old_time() {
        let dir = scratch("evidence");
        let out = dir.join("out");
        let prebuilt = dir.join("prebuilt.ptx");
        std::fs::write(&prebuilt, PTX.replace("k()", "pre()")).unwrap();
        let file = std::fs::File::options()
            .write(true)
            .open(&prebuilt)
            .unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        std::fs::write(out.join("k.ptx"), PTX).unwrap();
        std::fs::write(out.join("ref.ptx"), PTX.replace("k()", "r()")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("invoked.timestamp"), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::hard_link(&prebuilt, out.join("linked.ptx")).unwrap();
        let text =
            "include_str!(\"bk.ptx\"); include_str!(concat!(env!(\"OUT_DIR\"), \"/ref.ptx\"));";
        std::fs::write(out.join("ptx.rs"), text).unwrap();
        let found = find_all(&package(&out, &[])).unwrap();
        assert_eq!(
            stale_marks(&found),
            [
                ("k.ptx".into(), true),
                ("linked.ptx".into(), false),
                ("ref.ptx".into(), false)
            ]
        );
        assert_eq!(found.texts_read.files, 1);
        assert_eq!(found.texts_read.bytes, text.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An `ar` archive of `members` (name, bytes).
    fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut bytes = b"!<arch>\n".to_vec();
        for (name, data) in members {
            let header = format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                format!("{name}/"),
                "0",
                "0",
                "0",
                "644",
                data.len()
            );
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend_from_slice(data);
            if data.len() % 2 == 1 {
                bytes.push(b'\n');
            }
        }
        bytes
    }

    /// Issue #42, class 2: a loose object is passed over only when the linked library holds
    /// its very bytes; one it does not hold is read, though a library is linked.
    #[test]
    fn a_loose_object_the_linked_library_does_not_hold_is_read() {
        let dir = scratch("archived");
        let out = dir.join("out");
        let object = |tag: &[u8]| {
            let mut bytes = 0xBA55_ED50u32.to_le_bytes().to_vec();
            bytes.extend_from_slice(tag);
            bytes
        };
        let (held, loose) = (object(b"held object"), object(b"another object"));
        std::fs::write(out.join("libk.a"), ar(&[("held.o", &held)])).unwrap();
        std::fs::write(out.join("held.o"), &held).unwrap();
        std::fs::write(out.join("loose.o"), &loose).unwrap();
        let found = find_all(&package(&out, &["static=k"])).unwrap();
        let read: Vec<String> = found.products.iter().map(|p| file_name(&p.path)).collect();
        // The library itself names no fatbin section: host-only here.
        assert_eq!(read, ["loose.o"], "{found:?}");
        assert_eq!((found.archived_objects, found.host_only), (1, 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Self-links and a link loop do not make the walk go round; a FIFO is named in an error,
    /// never opened.
    #[cfg(unix)]
    #[test]
    fn links_to_directories_are_not_followed_and_fifos_are_named() {
        let dir = scratch("links");
        let out = dir.join("out");
        std::fs::create_dir(out.join("sub")).unwrap();
        std::os::unix::fs::symlink(&out, out.join("sub/up")).unwrap();
        std::os::unix::fs::symlink(&out, out.join("self")).unwrap();
        std::fs::write(out.join("sub/k.ptx"), PTX).unwrap();
        let found = find_all(&package(&out, &[])).unwrap();
        assert_eq!(found.products.len(), 1, "{found:?}");
        let fifo = out.join("k.fatbin");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            let error = find_all(&package(&out, &[])).unwrap_err().to_string();
            assert!(
                error.contains("k.fatbin") && error.contains("not a regular file"),
                "{error}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// CMake's build-tree library and the copy `install` put where the package links from: one
    /// is read, the linked one; a library of other bytes stays.
    #[test]
    fn identical_copies_are_read_once_preferring_the_linked_directory() {
        let dir = scratch("copies");
        let out = dir.join("out");
        for sub in ["build", "lib", "other"] {
            std::fs::create_dir(out.join(sub)).unwrap();
        }
        let mut fatbin = 0xBA55_ED50u32.to_le_bytes().to_vec();
        fatbin.extend_from_slice(b"same bytes");
        std::fs::write(out.join("build/k.fatbin"), &fatbin).unwrap();
        std::fs::write(out.join("lib/k.fatbin"), &fatbin).unwrap();
        fatbin.push(b'!');
        std::fs::write(out.join("other/k.fatbin"), &fatbin).unwrap();
        let mut linking = package(&out, &[]);
        linking.linked_paths = vec![out.join("lib")];
        let found = find_all(&linking).unwrap();
        let kept: Vec<&Path> = found.products.iter().map(|p| p.path.as_path()).collect();
        assert_eq!(kept, [out.join("lib/k.fatbin"), out.join("other/k.fatbin")]);
        assert_eq!(found.identical_copies, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fresh OUT_DIR holding `good.ptx` and what `make` makes there: the error of reading it.
    fn refused(make: &dyn Fn(&Path)) -> String {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("good.ptx"), PTX).unwrap();
        make(&out);
        let found = find_all(&package(&out, &[])).map(|found| found.products.len());
        found.expect_err("refused").to_string()
    }

    /// Writes `bytes` as `name` in the directory it is given.
    fn write(name: &'static str, bytes: impl AsRef<[u8]>) -> impl Fn(&Path) {
        let bytes = bytes.as_ref().to_vec();
        move |out: &Path| std::fs::write(out.join(name), &bytes).unwrap()
    }

    /// Issue #35's third pass: every file named like a product is read or an error naming it;
    /// each of these was passed over (exit 0 beside the good PTX), or read to its end.
    #[cfg(unix)]
    #[test]
    fn every_file_named_like_a_product_is_read_or_an_error_naming_it() {
        let link = |name: &'static str, to: &'static str| {
            move |out: &Path| std::os::unix::fs::symlink(to, out.join(name)).unwrap()
        };
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "k.o/", "0", "0", "0", "644", "1000"
        );
        let huge = |out: &Path| {
            let file = std::fs::File::create(out.join("huge.cubin")).unwrap();
            let cubin_head = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0\xbe\0";
            std::io::Write::write_all(&mut &file, cubin_head).unwrap();
            file.set_len(occupancy_binary::MAX_BINARY_BYTES + 1)
                .unwrap();
        };
        let elf_cut = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0\x3e\0";
        for (name, error, said) in [
            (
                "gone.a",
                refused(&link("gone.a", "nowhere.a")),
                "cannot be followed",
            ),
            (
                "loop.so",
                refused(&link("loop.so", "loop.so")),
                "cannot be followed",
            ),
            (
                "bare.ptx",
                refused(&write("bare.ptx", ".version 9.0\n.address_size 64\n")),
                "without a `.target`",
            ),
            (
                "empty.cubin",
                refused(&write("empty.cubin", "")),
                "it is empty",
            ),
            (
                "text.fatbin",
                refused(&write("text.fatbin", "not a fatbin")),
                "it is none",
            ),
            (
                "cut.o",
                refused(&write("cut.o", elf_cut)),
                "a damaged ELF file",
            ),
            (
                "libthin.a",
                refused(&write("libthin.a", "!<thin>\n")),
                "thin archive",
            ),
            (
                "libcut.a",
                refused(&write("libcut.a", format!("!<arch>\n{header}\x7fELF"))),
                "past its end",
            ),
            (
                "future.ptx",
                refused(&write("future.ptx", PTX.replace("sm_80", "sm_9999"))),
                "no architecture",
            ),
            ("huge.cubin", refused(&huge), "more than any build product"),
        ] {
            assert!(
                error.contains(name) && error.contains(said),
                "{name}: {error}"
            );
        }
    }

    /// A linker script named like a library is no product, and a character cut at the end of
    /// the 64 KiB a PTX module's `.target` is looked for in does not hide the module.
    #[test]
    fn a_linker_script_is_no_product_and_a_cut_character_hides_no_ptx() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(
            out.join("libc.so"),
            "/* GNU ld script */\nGROUP ( libc.so.6 )\n",
        )
        .unwrap();
        let mut cut = PTX.as_bytes().to_vec();
        cut.extend(format!("//{}\u{e9}\n", "a".repeat(65535 - PTX.len() - 2)).into_bytes());
        std::fs::write(out.join("long.ptx"), &cut).unwrap();
        let found = find_all(&package(&out, &[])).unwrap();
        assert_eq!(found.products.len(), 1, "{found:?}");
    }

    #[test]
    fn host_objects_are_told_from_device_objects_by_their_fatbin_section() {
        let dir = scratch("host");
        let host = dir.join("host.o");
        let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x01\0\x3e\0".to_vec();
        elf.extend(std::iter::repeat_n(0u8, 3 << 20));
        std::fs::write(&host, &elf).unwrap();
        assert!(!holds_device_code(&host).unwrap());
        // The section name across a block boundary of the reader.
        elf.truncate((1 << 20) + 20 - 5);
        elf.extend_from_slice(b".nv_fatbin\0");
        std::fs::write(&host, &elf).unwrap();
        assert!(holds_device_code(&host).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
