//! The scratch package the integration tests build: a cargo-like layout with `<dir>/pkg`
//! (Cargo.toml, src/lib.rs, kernels/) and OUT_DIR at `<dir>/target/debug/build/pkg-0/out`
//! (with the target dir's CACHEDIR.TAG, as cargo leaves it).

use std::path::{Path, PathBuf};

/// A private scratch directory named `<prefix><random>` under the temporary directory, removed
/// when the returned value is dropped: when the test ends, passed or failed. (Not every test
/// crate that includes this module calls it.)
#[allow(dead_code)]
pub fn scratch_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(prefix).tempdir().unwrap()
}

/// Writes the package under `dir` (emptied first): `manifest_tail` goes after `[package]`
/// (metadata tables, `[workspace]`), `lib_rs` is its src/lib.rs. Returns (package, OUT_DIR).
pub fn scratch_package(dir: &Path, manifest_tail: &str, lib_rs: &str) -> (PathBuf, PathBuf) {
    let _ = std::fs::remove_dir_all(dir);
    let pkg = dir.join("pkg");
    let out = dir.join("target/debug/build/pkg-0/out");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::create_dir_all(pkg.join("kernels")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        dir.join("target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("Cargo.toml"),
        format!("[package]\nname = \"pkg\"\nversion = \"0.0.0\"\n{manifest_tail}"),
    )
    .unwrap();
    std::fs::write(pkg.join("src/lib.rs"), lib_rs).unwrap();
    (pkg, out)
}

/// The build a crate's build.rs would run on the package: OUT_DIR and the manifest dir set,
/// no `cargo:` lines printed. The caller adds sources, archs and settings.
pub fn package_build(pkg: &Path, out: &Path) -> occupancy_build::Build {
    let mut build = occupancy_build::Build::new();
    build.out_dir(out).manifest_dir(pkg).cargo_metadata(false);
    build
}
