//! The builder: [`Build`], a CUDA build in the style of `cc::Build` (add sources, flags and
//! archs, then `compile_ptx`/`compile_lib`), and its run: resolve (`resolve.rs`) -> pipeline
//! (`pipeline.rs`) -> the cargo lines. `check_sources.rs` adds the entry for checking sources
//! outside a package.

use std::path::{Path, PathBuf};

use crate::builder::Build;
use crate::cargo_lines::CargoLines;
use crate::compile::Product;
use crate::context::{Context, Cudart};
use crate::env::TrackedEnv;
use crate::launch_check::{SourceCheck, SourceCheckOutput};
use crate::pipeline::{self, Output};
use crate::targets::SmArch;
use crate::toolchain::Toolchain;
use crate::{report, Error};

impl Build {
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

    /// Adds a target architecture in [`Arch`](occupancy_core::arch::Arch)'s grammar (`"sm_90"`, `"sm_90a"`, `"sm_100f"`,
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
    pub fn compile_ptx(&self) -> Output {
        finish(self.try_compile_ptx())
    }

    /// [`compile_ptx`](Build::compile_ptx), returning errors instead of exiting.
    pub fn try_compile_ptx(&self) -> Result<Output, Error> {
        self.run(Product::Ptx, None)
    }

    /// Compiles to a static library `lib<name>.a` linked into the crate (for `extern "C"`
    /// launchers), with `cargo:rustc-link-lib` lines for it and the CUDA runtime; then runs the
    /// checks. Fails the build script with rustc-style diagnostics on error.
    pub fn compile_lib(&self, name: &str) -> Output {
        finish(self.try_compile_lib(name))
    }

    /// [`compile_lib`](Build::compile_lib), returning errors instead of exiting.
    pub fn try_compile_lib(&self, name: &str) -> Result<Output, Error> {
        self.run(Product::Object, Some(name))
    }

    /// Compiles this builder's sources (`.file`, `.source_dir`, `.ptx_file`, flags, archs) into
    /// the compile cache under `.out_dir(...)`, without a package: no Cargo.toml, no
    /// declarations, no reports written; then checks every kernel at `request`'s launch, as
    /// `cargo occupancy check` does. Paths are shown relative to `.manifest_dir(...)` (default:
    /// the current directory). Deny findings are in the report (`Report::has_deny`), not an
    /// error.
    pub fn check_sources(&self, request: &SourceCheck) -> Result<SourceCheckOutput, Error> {
        pipeline::check_sources(self, request)
    }

    /// Compiles the sources like [`Build::check_sources`] and tunes one kernel's launch bounds
    /// with the engine of `min_blocks_per_sm = "auto"`: every bound that changes its resident
    /// blocks assembled and measured, and the objective's choice (`cargo occupancy tune`).
    /// A `block_threads` of 0 takes the kernel's `__launch_bounds__` maximum.
    #[doc(hidden)]
    pub fn tune_kernel(
        &self,
        query: &crate::cli::TuneQuery,
    ) -> Result<crate::cli::TuneAnswer, Error> {
        pipeline::tune_kernel(self, query)
    }

    /// Resolves the build, runs the pipeline, and, whatever happened, says in the report when
    /// the build failed and prints the `cargo:` lines (every input read reruns the script).
    /// A resolution error is returned as it is, after the `cargo:` lines.
    fn run(&self, product: Product, library_name: Option<&str>) -> Result<Output, Error> {
        let mut cargo = CargoLines::new(self.cargo_metadata);
        let context = match self.resolve() {
            Ok(context) => context,
            Err(error) => {
                self.watch_inputs(None, &mut cargo);
                cargo.flush();
                return Err(error);
            }
        };
        let toolchain = Toolchain::find(&self.env, true, &context.tool_timeouts);
        let result = pipeline::run(&context, toolchain, product, library_name, &mut cargo);
        if let Err(error) = &result {
            // A denied build wrote its report with the findings; any other failure checked
            // nothing, and the report must say so rather than keep the last good run's numbers.
            if !matches!(error, Error::Denied { .. }) {
                let _ = report::write_failed(&context, &report::failure_summary(error));
            }
        }
        self.watch_inputs(Some(&context), &mut cargo);
        cargo.flush();
        result
    }

    /// `rerun-if-changed` for the manifests read and `rerun-if-env-changed` for every variable
    /// read that cargo does not already watch.
    fn watch_inputs(&self, context: Option<&Context>, cargo: &mut CargoLines) {
        match context {
            Some(context) => {
                for path in &context.settings.manifest_paths {
                    cargo.rerun_if_changed(path);
                }
            }
            None => {
                if let Some(dir) = self
                    .manifest_dir
                    .clone()
                    .or_else(|| self.env.get("CARGO_MANIFEST_DIR").map(PathBuf::from))
                {
                    cargo.rerun_if_changed(&dir.join("Cargo.toml"));
                }
            }
        }
        for name in self.env.read_names() {
            if !set_by_cargo(&name) {
                cargo.line(&format!("cargo:rerun-if-env-changed={name}"));
            }
        }
    }
}

/// The output, or the error on stderr and exit code 1 (a build script's failure).
fn finish(result: Result<Output, Error>) -> Output {
    match result {
        Ok(output) => output,
        Err(error) => {
            // The cargo: lines are already out (`Build::run` prints them whatever happens).
            eprintln!("{error}");
            std::process::exit(1)
        }
    }
}

/// Variables cargo itself sets for a build script: a change to one already reruns it.
fn set_by_cargo(name: &str) -> bool {
    name.starts_with("CARGO_")
        || matches!(
            name,
            "CARGO"
                | "OUT_DIR"
                | "NUM_JOBS"
                | "TARGET"
                | "HOST"
                | "PROFILE"
                | "OPT_LEVEL"
                | "DEBUG"
        )
}
