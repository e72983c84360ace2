//! Where `cargo occupancy check` keeps its compile cache: `--cache-dir DIR`, else the user's own
//! cache directory, `$XDG_CACHE_HOME/occupancy` (an absolute `XDG_CACHE_HOME`) or
//! `~/.cache/occupancy` (`%LOCALAPPDATA%\occupancy` on Windows), created private (0700).
//!
//! A cache entry decides whether a kernel passes, so the directory must be the user's alone: it
//! and (for the default) the cache home above it must belong to the current user and be
//! writable by nobody else (`occupancy_build::cli::check_private_dir`; the build checks everything
//! inside it, entry by entry). One that is not (a shared directory, another user's, a
//! group-writable one) is not used at all, with a one-line warning: the run compiles in a
//! private temporary directory, removed when it ends. The default once was one fixed directory
//! under the shared `/tmp`, which another local user could fill with entries that pass a
//! spilling kernel (and in which every other user got "Permission denied").

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// The cache directory of one run; a temporary one is removed when this is dropped.
#[derive(Debug)]
pub struct CacheDir {
    pub path: PathBuf,
    temporary: bool,
}

impl Drop for CacheDir {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

impl CacheDir {
    /// Points `build` at where its sources compile: for a declaring `package`, a directory of
    /// its own under the cache (its `occupancy_bounds.h` on no other compile's include path)
    /// with paths shown from the package; else the cache, with paths from the current directory.
    pub fn place(&self, build: &mut occupancy_build::Build, package: Option<&Path>) {
        match package {
            Some(package) => build
                .manifest_dir(package)
                .out_dir(occupancy_build::cli::package_out_dir(&self.path, package)),
            None => build
                .manifest_dir(
                    std::env::current_dir()
                        .and_then(std::fs::canonicalize)
                        .unwrap_or_default(),
                )
                .out_dir(&self.path),
        };
    }

    /// `given` (`--cache-dir`), else `occupancy` in the user's cache home (`cache_home`, from
    /// the environment), when it may hold a cache; else, with a warning on stderr, a private
    /// directory in `temp_dir`.
    pub fn choose(
        given: Option<&Path>,
        cache_home: Result<&Path, &String>,
        temp_dir: &Path,
    ) -> Result<CacheDir, CliError> {
        let chosen = match given {
            Some(dir) => private(dir).map(|()| dir.to_path_buf()),
            None => match cache_home {
                Ok(home) => {
                    let dir = home.join("occupancy");
                    private(home).and_then(|()| private(&dir)).map(|()| dir)
                }
                Err(why) => Err(why.to_owned()),
            },
        };
        match chosen {
            Ok(path) => Ok(CacheDir {
                path,
                temporary: false,
            }),
            Err(why) => {
                eprintln!(
                    "warning: {why}; compiling in a private temporary directory instead (removed after this run)"
                );
                CacheDir::temporary(temp_dir)
            }
        }
    }

    /// A new private directory under the system's temporary directory `base` (never one that
    /// already exists there).
    fn temporary(base: &Path) -> Result<CacheDir, CliError> {
        let mut last_error = None;
        for attempt in 0..100 {
            let path = base.join(format!("cargo-occupancy-{}-{attempt}", std::process::id()));
            match create_new_private_dir(&path) {
                Ok(()) => {
                    return Ok(CacheDir {
                        path,
                        temporary: true,
                    })
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(CliError::Output(format!(
            "cannot create a private directory to compile in under the temporary directory {} ({}): set TMPDIR to a writable directory, or give --cache-dir",
            occupancy_build::cli::shown_path(base),
            last_error.map_or_else(String::new, |error| error.to_string())
        )))
    }
}

/// `Ok` when `dir` exists (created private when missing), is the user's and nobody else may
/// write it; else why not, as one clause.
fn private(dir: &Path) -> Result<(), String> {
    occupancy_build::cli::check_private_dir(dir).map_err(|error| {
        let text = error.to_string();
        text.strip_prefix("occupancy-build: ")
            .unwrap_or(&text)
            .to_string()
    })
}

/// Creates `dir` (its parent exists), private, failing when it exists: never one someone made
/// beforehand in the shared temporary directory.
fn create_new_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
