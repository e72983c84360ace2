//! `cargo occupancy build --tap`: the nvcc tap's directory and the build's variables (the tap
//! itself, this binary started as `nvcc`, is `crate::tap`; the reports it keeps are read and
//! joined to the binaries' rows by `cmd::ptxas_reports`).
//!
//! **The directory.** `<cache>/occupancy/nvcc-tap/<key>/`, one per executable path (`key`
//! hashes it: concurrent runs of different builds of this tool never point each other's links
//! away), kept between runs: CMake caches the compiler and launcher it found, so a directory
//! removed after the run would break the next plain build. It holds `bin/nvcc` and
//! `bin/nvcc-launcher`, links to this executable, and `include` and `lib64`, links to the real
//! toolkit's (cudaforge derives its include directory from `NVCC`'s grandparent). A tap run
//! with no `OCCUPANCY_REAL_NVCC` (a plain build with that cached) only runs the real nvcc.
//!
//! **The build's variables.** `NVCC` (cc-rs, cudaforge) names `bin/nvcc`; `PATH` has `bin`
//! first (bindgen_cuda, a direct `nvcc` Command, CMake's compiler search);
//! `CMAKE_CUDA_COMPILER_LAUNCHER` names `bin/nvcc-launcher` unless the user set one;
//! `OCCUPANCY_REAL_NVCC` names the nvcc the build would have run: `NVCC`, else `nvcc` on
//! `PATH`, else `$CUDA_HOME/bin/nvcc`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::env::Environment;
use crate::error::CliError;

/// The tap's directory, ready: its `bin` and the variables the build gets.
#[derive(Debug)]
pub struct Tap {
    pub bin: PathBuf,
    pub real_nvcc: PathBuf,
}

impl Tap {
    /// Makes (or refreshes) the tap's directory for this executable, and finds the real nvcc.
    pub fn prepare(env: &Environment) -> Result<Tap, CliError> {
        let real_nvcc = real_nvcc(env).ok_or_else(|| {
            CliError::CouldNotCheck(
                "--tap: no nvcc to tap (NVCC, nvcc on PATH, CUDA_HOME/bin/nvcc)".into(),
            )
        })?;
        let home = (env.cache_home.as_ref())
            .map_err(|why| CliError::CouldNotCheck(format!("--tap: {why}")))?;
        let me = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|error| CliError::CouldNotCheck(format!("--tap: this executable: {error}")))?;
        let root = home.join("occupancy").join("nvcc-tap").join(key(&me));
        let bin = root.join("bin");
        let made = std::fs::create_dir_all(&bin).and_then(|()| {
            point(&bin.join(crate::tap::NVCC), &me)?;
            point(&bin.join(crate::tap::LAUNCHER), &me)?;
            let toolkit = real_nvcc.parent().and_then(Path::parent);
            for dir in ["include", "lib64"] {
                match toolkit
                    .map(|root| root.join(dir))
                    .filter(|dir| dir.is_dir())
                {
                    Some(target) => point(&root.join(dir), &target)?,
                    None => drop(std::fs::remove_file(root.join(dir))),
                }
            }
            Ok(())
        });
        made.map_err(|error| {
            CliError::CouldNotCheck(format!(
                "--tap: making the tap's directory {}: {error}",
                root.display()
            ))
        })?;
        Ok(Tap { bin, real_nvcc })
    }

    /// The variables the build gets (`PATH` apart: the caller puts `bin` first).
    pub fn variables(&self, env: &Environment) -> Vec<(String, OsString)> {
        let mut vars = vec![
            ("NVCC".to_owned(), self.bin.join(crate::tap::NVCC).into()),
            (
                crate::tap::REAL_NVCC.to_owned(),
                self.real_nvcc.clone().into(),
            ),
        ];
        if !env.build_vars.contains_key("CMAKE_CUDA_COMPILER_LAUNCHER") {
            let launcher = self.bin.join(crate::tap::LAUNCHER);
            vars.push(("CMAKE_CUDA_COMPILER_LAUNCHER".into(), launcher.into()));
        }
        vars
    }
}

/// A short stable name of an executable's path.
fn key(me: &Path) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(me.as_os_str().as_encoded_bytes());
    digest[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Makes `link` a symbolic link to `target`, replacing what it was in one rename.
fn point(link: &Path, target: &Path) -> std::io::Result<()> {
    if std::fs::read_link(link).is_ok_and(|current| current == target) {
        return Ok(());
    }
    let mut temporary = link.as_os_str().to_owned();
    temporary.push(format!(".{}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let _ = std::fs::remove_file(&temporary);
    #[cfg(unix)]
    std::os::unix::fs::symlink(target, &temporary)?;
    #[cfg(not(unix))]
    std::fs::copy(target, &temporary).map(drop)?;
    std::fs::rename(&temporary, link)
}

/// The nvcc the build's builders would have run: `NVCC`, else `nvcc` on `PATH`, else
/// `$CUDA_HOME/bin/nvcc`; never a tap (this executable).
fn real_nvcc(env: &Environment) -> Option<PathBuf> {
    let me = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let var = |name: &str| env.build_vars.get(name).filter(|value| !value.is_empty());
    let on_path = var("PATH").into_iter().flat_map(std::env::split_paths);
    let candidates = (var("NVCC").map(PathBuf::from).into_iter())
        .chain(on_path.map(|dir| dir.join(crate::tap::NVCC)))
        .chain(var("CUDA_HOME").map(|home| Path::new(home).join("bin").join(crate::tap::NVCC)));
    candidates
        .filter(|path| path.is_file())
        .find(|path| me.is_none() || std::fs::canonicalize(path).ok() != me)
}
