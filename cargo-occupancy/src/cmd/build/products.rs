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
//! The walk visits each directory once, follows no link to a directory, and takes only regular
//! files: a FIFO or device where a product could be is named, never opened.

use std::collections::BTreeSet;
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
    /// Paths that are not regular files where a product could be (FIFOs, devices, sockets).
    pub not_files: Vec<PathBuf>,
    /// Libraries the package links from a search path outside `OUT_DIR` (candle's
    /// `*_BUILD_DIR`): not read, named.
    pub linked_outside: Vec<PathBuf>,
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

/// The products of `package`'s `OUT_DIR`.
pub fn find(package: &BuiltPackage) -> std::io::Result<Products> {
    let mut files = Vec::new();
    let mut found = Products::default();
    walk(
        &package.out_dir,
        &mut BTreeSet::new(),
        &mut files,
        &mut found.not_files,
    )?;
    let started = script_started(&package.out_dir);
    let linked = linked_libraries(package);
    let archive_linked = files.iter().any(|path| linked.contains(&file_name(path)));
    let is_current = |path: &Path| match (started, modified(path)) {
        (Some(started), Some(modified)) => modified >= started,
        _ => true,
    };
    let named = names_in_current_files(package, &files, &is_current);
    for dir in (package.linked_paths.iter()).filter(|dir| !dir.starts_with(&package.out_dir)) {
        let libraries = linked.iter().map(|name| dir.join(name));
        found
            .linked_outside
            .extend(libraries.filter(|path| path.is_file()));
    }
    for path in files {
        let name = file_name(&path);
        let Some(kind) = kind_of(&path) else { continue };
        if let ProductKind::Binary(_) = kind {
            if archive_linked && name.ends_with(".o") && !linked.contains(&name) {
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
    Ok(found)
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
    not_files: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    if !visited.insert(std::fs::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            if !CMAKE_PROBES.contains(&file_name(&path).as_str()) {
                walk(&path, visited, files, not_files)?;
            }
        } else if file_type.is_file() {
            files.push(path);
        } else if file_type.is_symlink() {
            // A link to a file is read as the file; a link to a directory is not followed.
            if std::fs::metadata(&path).is_ok_and(|target| target.is_file()) {
                files.push(path);
            }
        } else if kind_by_name(&path) {
            not_files.push(path);
        }
    }
    Ok(())
}

/// Whether the name is a product's (`.ptx`, `.cubin`, `.fatbin`, `.o`, `.obj`, `.a`, `.so`,
/// `.so.N`).
fn kind_by_name(path: &Path) -> bool {
    let name = file_name(path);
    [".ptx", ".cubin", ".fatbin", ".o", ".obj", ".a", ".so"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains(".so.")
}

/// A product's kind: PTX by its `.target`, a binary by its first bytes; `None` for anything
/// else.
fn kind_of(path: &Path) -> Option<ProductKind> {
    if !kind_by_name(path) {
        return None;
    }
    if file_name(path).ends_with(".ptx") {
        let mut head = String::new();
        std::fs::File::open(path)
            .ok()?
            .take(64 * 1024)
            .read_to_string(&mut head)
            .ok()?;
        return occupancy_binary::ptx_target(&head).map(ProductKind::Ptx);
    }
    occupancy_binary::sniff(path)
        .ok()
        .flatten()
        .map(ProductKind::Binary)
}

/// Whether a binary may hold device code: a cubin or fatbin does; a host object or library
/// only with a fatbin section (`.nv_fatbin`, or `__nv_relfatbin` for `-rdc`), whose name its
/// section string table holds. Read in blocks, never whole.
fn holds_device_code(path: &Path) -> std::io::Result<bool> {
    const NEEDLES: [&[u8]; 3] = [b".nv_fatbin", b"__nv_relfatbin", b".nvFatBinSegment"];
    let mut file = std::fs::File::open(path)?;
    let mut head = [0u8; 20];
    let filled = file.read(&mut head)?;
    let is_cubin = filled >= 20 && head.starts_with(b"\x7fELF") && head[18] == 190;
    if is_cubin || head.starts_with(&0xBA55_ED50u32.to_le_bytes()) {
        return Ok(true);
    }
    let finders: Vec<memchr::memmem::Finder<'_>> =
        NEEDLES.iter().map(memchr::memmem::Finder::new).collect();
    let mut block = head[..filled].to_vec();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        if finders.iter().any(|finder| finder.find(&block).is_some()) {
            return Ok(true);
        }
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(false);
        }
        // Keep the end of the last block: a name may straddle two.
        let keep = block.len().min(32);
        block.drain(..block.len() - keep);
        block.extend_from_slice(&buffer[..read]);
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

/// When the build script last started: cargo writes `invoked.timestamp` beside `out/` then.
fn script_started(out_dir: &Path) -> Option<SystemTime> {
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

/// Every file name the build script's output (`output` beside `out/`) or a current text file
/// of `OUT_DIR` mentions: what the build still uses.
fn names_in_current_files(
    package: &BuiltPackage,
    files: &[PathBuf],
    is_current: &dyn Fn(&Path) -> bool,
) -> BTreeSet<String> {
    let mut texts: Vec<String> = Vec::new();
    if let Some(output) = package.out_dir.parent().map(|dir| dir.join("output")) {
        texts.extend(std::fs::read_to_string(output).ok());
    }
    for path in files {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= 4 << 20);
        if NAMING_EXTENSIONS.contains(&extension) && small && is_current(path) {
            texts.extend(std::fs::read_to_string(path).ok());
        }
    }
    let mut names = BTreeSet::new();
    for path in files {
        let name = file_name(path);
        if texts.iter().any(|text| text.contains(&name)) {
            names.insert(name);
        }
    }
    names
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
        }
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
        std::fs::write(out.join("kept.ptx"), PTX).unwrap();
        std::fs::write(out.join("gone.ptx"), PTX).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.join("invoked.timestamp"), "").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(out.join("new.ptx"), PTX).unwrap();
        std::fs::write(out.join("ptx.rs"), "include_str!(\"kept.ptx\");").unwrap();
        let found = find(&package(&out, &[])).unwrap();
        let stale: Vec<(String, bool)> = (found.products.iter())
            .map(|p| (file_name(&p.path), p.stale))
            .collect();
        assert_eq!(
            stale,
            [
                ("gone.ptx".into(), true),
                ("kept.ptx".into(), false),
                ("new.ptx".into(), false)
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Self-links and a link loop do not make the walk go round; FIFOs are named, not opened.
    #[cfg(unix)]
    #[test]
    fn links_to_directories_are_not_followed_and_fifos_are_named() {
        let dir = scratch("links");
        let out = dir.join("out");
        std::fs::create_dir(out.join("sub")).unwrap();
        std::os::unix::fs::symlink(&out, out.join("sub/up")).unwrap();
        std::os::unix::fs::symlink(&out, out.join("self")).unwrap();
        std::fs::write(out.join("sub/k.ptx"), PTX).unwrap();
        let fifo = out.join("k.fatbin");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let found = find(&package(&out, &[])).unwrap();
        assert_eq!(found.products.len(), 1, "{found:?}");
        if made.is_ok_and(|status| status.success()) {
            assert_eq!(found.not_files, [fifo]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
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
