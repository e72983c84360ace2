//! `occupancy-build`: compile a crate's CUDA kernels in `build.rs` and fail the build, like rustc
//! would, when a kernel spills registers or misses its declared occupancy.
//!
//! ```no_run
//! // build.rs: $OUT_DIR/saxpy.ptx + $OUT_DIR/occupancy_ptx.rs, checked against the
//! // `#[occupancy::kernel(...)]` declarations in src/
//! occupancy_build::Build::new().file("kernels/saxpy.cu").compile_ptx();
//! ```
//!
//! The builder drives nvcc through the `cc` crate's view of the toolchain (so `NVCC`, the host
//! compiler and `RUSTC_WRAPPER=sccache` are honoured as `cc` honours them), compiles every source
//! once, in parallel within cargo's jobserver, reads ptxas's `-v` report from that same compile,
//! and hands it to [`engine`], the one place that parses, calculates and lints (the
//! `cargo occupancy` CLI calls the same engine). See `docs/build.md` and `docs/configuration.md`.
//!
//! What this crate must not do: re-implement parsing, arch facts or the calculator (those live in
//! `occupancy-core`), or print anything outside the `cargo:` protocol and the failure diagnostics.

mod baseline;
mod cache;
mod check;
mod compile;
mod config;
#[cfg(test)]
mod config_fuzz;
mod diagnostics;
pub mod engine;
mod env;
mod error;
mod expectations;
mod facts;
mod fsutil;
mod jobs;
mod nvcc_archs;
pub mod report;
mod sass;
pub mod targets;
mod toolchain;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use compile::{CompiledSource, Product, Program, SourceKind};
pub use config::{OccupancySettings, SettingsError, TableName};
pub use env::TrackedEnv;
pub use error::Error;
pub use nvcc_archs::{explain_unknown, NvccArchs};
pub use targets::{Arch, ArchSource, SmArch};
pub use toolchain::{Toolchain, NVCC_WHEELS};

/// How the CUDA runtime is linked into a crate that uses [`Build::compile_lib`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cudart {
    /// `libcudart_static.a` (plus `dl`, `rt`, `pthread` on Linux): the nvcc default.
    Static,
    /// `libcudart.so`.
    Shared,
    /// Nothing: the launcher code does not call the runtime, or the crate links it itself.
    None,
}

/// A CUDA build in the style of `cc::Build`: add sources and flags, then call
/// [`compile_ptx`](Build::compile_ptx) and/or [`compile_lib`](Build::compile_lib).
#[derive(Debug, Clone)]
pub struct Build {
    cuda_files: Vec<PathBuf>,
    source_dirs: Vec<PathBuf>,
    ptx_files: Vec<PathBuf>,
    archs: Vec<SmArch>,
    jit_archs: Vec<String>,
    ptx_per_arch: Option<bool>,
    arch_errors: Vec<occupancy_core::arch::UnknownArch>,
    flags: Vec<OsString>,
    includes: Vec<PathBuf>,
    defines: Vec<(String, Option<String>)>,
    cudart: Cudart,
    check: bool,
    cargo_metadata: bool,
    out_dir: Option<PathBuf>,
    manifest_dir: Option<PathBuf>,
    rust_sources: Vec<PathBuf>,
    env: std::sync::Arc<TrackedEnv>,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

/// What a successful [`Build::compile_ptx`] or [`Build::compile_lib`] produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// PTX files in OUT_DIR, by kernel-file stem (`saxpy` for `saxpy.cu`).
    pub ptx_files: Vec<(String, PathBuf)>,
    /// The generated Rust module of `include_str!` constants (PTX builds).
    pub ptx_module: Option<PathBuf>,
    /// The static library (library builds).
    pub library: Option<PathBuf>,
    /// The per-kernel x per-arch report with every finding.
    pub report: engine::Report,
}

impl Build {
    /// An empty build: no sources, architectures from the environment (see [`targets`]).
    pub fn new() -> Build {
        Build {
            cuda_files: Vec::new(),
            source_dirs: Vec::new(),
            ptx_files: Vec::new(),
            archs: Vec::new(),
            jit_archs: Vec::new(),
            ptx_per_arch: None,
            arch_errors: Vec::new(),
            flags: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            cudart: Cudart::Static,
            check: true,
            cargo_metadata: true,
            out_dir: None,
            manifest_dir: None,
            rust_sources: Vec::new(),
            env: std::sync::Arc::new(TrackedEnv::new()),
        }
    }

    /// Adds a CUDA source (`.cu`).
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.cuda_files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds several CUDA sources.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut Build {
        for path in paths {
            self.file(path);
        }
        self
    }

    /// Adds every `.cu` file under `dir` (recursively, sorted).
    pub fn source_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        // Expanded when the build runs, relative to the package root (see `cuda_sources`).
        self.source_dirs.push(dir.as_ref().to_path_buf());
        self
    }

    /// Adds PTX produced elsewhere (Rust-CUDA, Triton, NVRTC dumps): it is assembled by ptxas for
    /// every target architecture to read its resources, and shipped as is.
    pub fn ptx_file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.ptx_files.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds a target architecture in [`Arch`]'s grammar (`"sm_90"`, `"sm_90a"`, `"sm_100f"`,
    /// `"compute_90"`, `"90"`, `"9.0"`); an unknown name fails the build naming `.arch(...)`.
    /// Calling this overrides `OCCUPANCY_ARCHS`, `CUDA_COMPUTE_CAP` and Cargo.toml metadata.
    pub fn arch(&mut self, arch: &str) -> &mut Build {
        match SmArch::parse(arch) {
            Ok(arch) => self.archs.push(arch),
            Err(error) => self.arch_errors.push(error),
        }
        self
    }

    /// Names a GPU the shipped PTX must also run on (`"sm_120"`): ptxas assembles the PTX for it
    /// as the driver's JIT will, and the kernels are checked there like on a target arch (a
    /// launch that fits sm_90 may not fit sm_120's shared memory). It must not be older than
    /// the lowest target arch, whose PTX ships. Overrides `jit_archs` in Cargo.toml metadata.
    pub fn jit_arch(&mut self, arch: &str) -> &mut Build {
        self.jit_archs.push(arch.to_string());
        self
    }

    /// Whether each target arch gets its own PTX, compiled for it (default false: one PTX, for
    /// the lowest target arch, which ptxas assembles for every arch as the driver's JIT would).
    ///
    /// With `true`, `sm_90` rows describe a `compute_90` compile: code behind
    /// `__CUDA_ARCH__ >= 900` exists there and register counts are those of a native build;
    /// [`compile_ptx`](Build::compile_ptx) then ships one PTX per arch (`SAXPY_SM_90`) and a
    /// picker, `fn saxpy(major, minor)`, and [`compile_lib`](Build::compile_lib) embeds each
    /// arch's SASS from its own PTX. A [`jit_arch`](Build::jit_arch) is checked on the highest
    /// PTX not above it, the one the driver loads there. Overrides `ptx_per_arch` in Cargo.toml
    /// metadata. (Not `native`: nvcc's `-arch=native` means the GPUs of the build machine.)
    pub fn ptx_per_arch(&mut self, ptx_per_arch: bool) -> &mut Build {
        self.ptx_per_arch = Some(ptx_per_arch);
        self
    }

    /// Adds an nvcc flag (`"-O3"`, `"--use_fast_math"`, `"-Xptxas=-O3"`).
    pub fn flag(&mut self, flag: impl AsRef<std::ffi::OsStr>) -> &mut Build {
        self.flags.push(flag.as_ref().to_os_string());
        self
    }

    /// Adds an include directory.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a preprocessor macro (`-DNAME` or `-DNAME=VALUE`).
    pub fn define<'a>(&mut self, name: &str, value: impl Into<Option<&'a str>>) -> &mut Build {
        self.defines
            .push((name.to_string(), value.into().map(str::to_string)));
        self
    }

    /// How [`compile_lib`](Build::compile_lib) links the CUDA runtime (default [`Cudart::Static`]).
    pub fn cudart(&mut self, cudart: Cudart) -> &mut Build {
        self.cudart = cudart;
        self
    }

    /// Whether to run the occupancy checks after compiling (default true). With `false` the
    /// builder is a plain nvcc driver and still writes the report.
    pub fn check(&mut self, check: bool) -> &mut Build {
        self.check = check;
        self
    }

    /// Whether to print `cargo:` lines (default true; false outside build scripts).
    pub fn cargo_metadata(&mut self, cargo_metadata: bool) -> &mut Build {
        self.cargo_metadata = cargo_metadata;
        self
    }

    /// Where outputs go (default `OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The package root holding Cargo.toml and `src/` (default `CARGO_MANIFEST_DIR`).
    pub fn manifest_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.manifest_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Adds a Rust file or directory to scan for `#[occupancy::kernel]` (default: `src/`).
    pub fn declarations(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.rust_sources.push(path.as_ref().to_path_buf());
        self
    }

    /// Replaces the environment the build reads (tests, and the CLI describing a build).
    pub fn env(&mut self, env: TrackedEnv) -> &mut Build {
        self.env = std::sync::Arc::new(env);
        self
    }

    /// Compiles to PTX for runtime loading: `$OUT_DIR/<stem>.ptx` for each source and
    /// `$OUT_DIR/occupancy_ptx.rs` with one `pub const <STEM>: &str = include_str!(...)` each;
    /// then runs the checks. Fails the build script with rustc-style diagnostics on error.
    pub fn compile_ptx(&mut self) -> Output {
        let result = self.try_compile_ptx();
        self.finish(result)
    }

    /// [`compile_ptx`](Build::compile_ptx), returning errors instead of exiting.
    pub fn try_compile_ptx(&mut self) -> Result<Output, Error> {
        engine::run(self, Product::Ptx, None)
    }

    /// Compiles to a static library `lib<name>.a` linked into the crate (for `extern "C"`
    /// launchers), with `cargo:rustc-link-lib` lines for it and the CUDA runtime; then runs the
    /// checks. Fails the build script with rustc-style diagnostics on error.
    pub fn compile_lib(&mut self, name: &str) -> Output {
        let result = self.try_compile_lib(name);
        self.finish(result)
    }

    /// [`compile_lib`](Build::compile_lib), returning errors instead of exiting.
    pub fn try_compile_lib(&mut self, name: &str) -> Result<Output, Error> {
        engine::run(self, Product::Object, Some(name))
    }

    fn finish(&self, result: Result<Output, Error>) -> Output {
        match result {
            Ok(output) => output,
            Err(error) => {
                // The cargo: lines are already out (engine::run prints them whatever happens).
                eprintln!("{error}");
                std::process::exit(1)
            }
        }
    }

    /// The CUDA sources: `.file`s, then the `.cu` files of each `.source_dir` (sorted), with
    /// relative paths taken from the package root.
    fn cuda_sources(&self, manifest_dir: &Path) -> Vec<PathBuf> {
        let mut sources = self.cuda_files.clone();
        for dir in &self.source_dirs {
            let dir = if dir.is_absolute() {
                dir.clone()
            } else {
                manifest_dir.join(dir)
            };
            let mut found = Vec::new();
            collect_files(&dir, "cu", &mut found);
            found.sort();
            sources.extend(found);
        }
        sources
    }

    /// The nvcc arguments from includes, defines and flags, in that order.
    fn user_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        for include in &self.includes {
            args.push(OsString::from("-I"));
            args.push(include.as_os_str().to_owned());
        }
        for (name, value) in &self.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}").into(),
                None => format!("-D{name}").into(),
            });
        }
        args.extend(self.flags.iter().cloned());
        args
    }
}

fn collect_files(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, extension, found);
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_dirs_expand_from_the_package_root_in_order() {
        let root = std::env::temp_dir().join(format!("occupancy-sources-{}", std::process::id()));
        std::fs::create_dir_all(root.join("kernels/nested")).unwrap();
        for file in [
            "kernels/b.cu",
            "kernels/a.cu",
            "kernels/nested/c.cu",
            "kernels/readme.md",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let mut build = Build::new();
        build.file("extra.cu").source_dir("kernels");
        let sources = build.cuda_sources(&root);
        assert_eq!(
            sources,
            vec![
                PathBuf::from("extra.cu"),
                root.join("kernels/a.cu"),
                root.join("kernels/b.cu"),
                root.join("kernels/nested/c.cu")
            ]
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
