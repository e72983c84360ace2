//! The package a CUDA source belongs to, for `cargo occupancy check` and `tune`: the nearest
//! directory above the source whose `Cargo.toml` has a `[package]` table, when that package's
//! Rust sources (`src/`) declare at least one `#[occupancy::kernel]`. Such a source is compiled
//! and checked as its package's build does: with the `occupancy_bounds.h` of its declarations,
//! at their launches, under the package's `[package.metadata.occupancy]`. A source in no
//! package, or in one that declares nothing, is checked at the command line's launch.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The declaring package of `source` (a file), as a canonical directory; `None` when the
/// nearest `Cargo.toml` above it is no package's or its package declares no kernel. For many
/// sources, [`package_of`] then [`declares_kernels`] once per package.
pub fn declaring_package(source: &Path) -> Option<PathBuf> {
    package_of(source).filter(|package| declares_kernels(package))
}

/// The canonical directory of the nearest `Cargo.toml` above `source` that has a `[package]`
/// table; `None` when that manifest is a virtual one (`[workspace]` alone owns no source) or
/// there is none. Settings are read later through `cargo metadata`; this only tells a
/// package's manifest from one that is not.
pub fn package_of(source: &Path) -> Option<PathBuf> {
    let source = std::fs::canonicalize(source).ok()?;
    let manifest_dir = source
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").is_file())?;
    let manifest = std::fs::read_to_string(manifest_dir.join("Cargo.toml")).ok()?;
    manifest
        .lines()
        .any(|line| line.trim() == "[package]")
        .then(|| manifest_dir.to_path_buf())
}

/// Whether a Rust file under the `package`'s `src/` has an `#[occupancy::kernel]` (or one the
/// spec grammar refuses, which the check then reports as the build would).
pub fn declares_kernels(package: &Path) -> bool {
    let src = package.join("src");
    let mut files = Vec::new();
    crate::declarations::collect_rust_files(&src, &mut files);
    files.iter().any(|file| {
        std::fs::read_to_string(file).is_ok_and(|text| {
            text.contains("kernel")
                && occupancy_core::spec::scan_source(&text).map_or(true, |found| !found.is_empty())
        })
    })
}

/// The output directory of a package's check under the command's `cache_dir`: one per package,
/// so the `occupancy_bounds.h` written for one is on no other compile's include path.
pub fn package_out_dir(cache_dir: &Path, package: &Path) -> PathBuf {
    let digest = Sha256::digest(package.as_os_str().as_encoded_bytes());
    let hex: String = digest[..6]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let name = package
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    cache_dir.join("packages").join(format!("{name}-{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(dir: &Path, manifest: &str, lib_rs: &str) {
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("kernels")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(dir.join("src/lib.rs"), lib_rs).unwrap();
        std::fs::write(dir.join("kernels/k.cu"), "").unwrap();
    }

    #[test]
    fn a_source_belongs_to_the_nearest_package_that_declares_kernels() {
        let root = std::env::temp_dir().join(format!("occupancy-pkg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let manifest = "[package]\nname = \"p\"\nversion = \"0.1.0\"\n";
        let declared = "#[occupancy::kernel(block = 128)]\nfn k();\n";
        package(&root.join("declaring"), manifest, declared);
        package(
            &root.join("plain"),
            manifest,
            "fn main() {} // a kernel of corn\n",
        );
        package(
            &root.join("virtual"),
            "[workspace]\nmembers = []\n",
            declared,
        );
        package(
            &root.join("refused"),
            manifest,
            "#[occupancy::kernel(block = 0)]\nfn k();\n",
        );
        let found = |name: &str| declaring_package(&root.join(name).join("kernels/k.cu"));
        let canonical = std::fs::canonicalize(root.join("declaring")).unwrap();
        assert_eq!(found("declaring"), Some(canonical.clone()));
        assert_eq!(found("plain"), None);
        assert_eq!(found("virtual"), None);
        assert!(
            found("refused").is_some(),
            "its error is the check's to report"
        );
        assert_eq!(
            declaring_package(&root.join("declaring/kernels/none.cu")),
            None
        );
        let out = package_out_dir(Path::new("/cache"), &canonical);
        assert!(
            out.to_string_lossy()
                .starts_with("/cache/packages/declaring-"),
            "{out:?}"
        );
        assert_ne!(
            out,
            package_out_dir(Path::new("/cache"), &root.join("plain"))
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
