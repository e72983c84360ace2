//! The CLI's environment, read in one place: [`Environment::read`], which `main` calls once per
//! run, after the command line is parsed and before the command runs. Commands and their
//! helpers take what they need from it; none reads a variable itself, so what a run depends on
//! is listed here, and a test hands a command the environment it wants.
//!
//! The build helper's engine (`check`'s compiles, finding nvcc) reads its own variables
//! (`OCCUPANCY_ARCHS`, `NVCC`, `CUDA_HOME`, ...) through the `TrackedEnv` it is handed, as in a
//! build; those handles are made here too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use occupancy_build::cli::ToolTimeouts;
use occupancy_build::TrackedEnv;
use occupancy_core::lint::{Level, LintId};

use crate::archs::ArchNames;

/// What a run takes from its environment.
#[derive(Debug)]
pub struct Environment {
    /// `OCCUPANCY_LINT_<ID>`: lint levels that `check`'s `--allow/--warn/--deny` override.
    pub lint_levels: BTreeMap<LintId, Level>,
    /// `OCCUPANCY_TOOL_TIMEOUT`: how long a child process may run, or why the value is refused
    /// (an error only for a command that runs one: `cargo metadata`, nvcc).
    pub tool_timeouts: Result<ToolTimeouts, occupancy_build::Error>,
    /// `$XDG_CACHE_HOME` when absolute, else `$HOME/.cache` (`%LOCALAPPDATA%` on Windows): the
    /// home of `check`'s compile cache; else why there is none (neither is set, or `HOME` names
    /// no directory: it is never created).
    pub cache_home: Result<PathBuf, String>,
    /// `$CARGO` (cargo running this subcommand), else `cargo` on `PATH`: what runs
    /// `cargo metadata`.
    pub cargo: PathBuf,
    /// The system's temporary directory (`$TMPDIR`): `check`'s spools, and its private compile
    /// directory when the cache cannot be used.
    pub temp_dir: PathBuf,
    /// Whether `TMPDIR` set [`Environment::temp_dir`] (else it is the system's default).
    pub temp_dir_from_tmpdir: bool,
    /// [`BUILD_VARIABLES`] that are set, by name.
    pub build_vars: BTreeMap<&'static str, OsString>,
    /// Architecture names, with nvcc (looked for as a build does) asked about a name the table
    /// lacks. Only an explanation depends on nvcc, so a bad `OCCUPANCY_TOOL_TIMEOUT` keeps the
    /// default limits here (`check`, which runs tools for real, refuses it).
    pub archs: ArchNames,
}

impl Environment {
    /// The process's environment.
    pub fn read() -> Environment {
        let tool_timeouts = ToolTimeouts::from_env(&TrackedEnv::new());
        let probe_timeouts = tool_timeouts.as_ref().copied().unwrap_or_default();
        Environment {
            lint_levels: lint_levels(),
            tool_timeouts,
            cache_home: user_cache_home(),
            cargo: text_variable("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from),
            temp_dir: std::env::temp_dir(),
            temp_dir_from_tmpdir: variable("TMPDIR").is_some_and(|value| !value.is_empty()),
            build_vars: BUILD_VARIABLES
                .iter()
                .filter_map(|name| Some((*name, variable(name)?)))
                .collect(),
            archs: ArchNames::new(TrackedEnv::new(), probe_timeouts),
        }
    }

    /// The temporary directory, when it is an existing directory; else an error naming the
    /// variable that chose it (`TMPDIR`) and what is wrong, rather than a scratch path under it
    /// (issue #35, class 7).
    /// A directory that takes no new directory (no write permission, a read-only file system)
    /// is refused too: nvcc and the binary reader make their scratch there, and their errors
    /// would name a scratch path instead.
    pub fn scratch(&self) -> Result<&Path, crate::error::CliError> {
        let why = match std::fs::metadata(&self.temp_dir) {
            Ok(metadata) if metadata.is_dir() => {
                let probe = self
                    .temp_dir
                    .join(format!(".occupancy-probe-{}", std::process::id()));
                match std::fs::create_dir(&probe) {
                    Ok(()) => {
                        let _ = std::fs::remove_dir(&probe);
                        return Ok(&self.temp_dir);
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Ok(&self.temp_dir)
                    }
                    Err(error) => format!("takes no new file ({error})"),
                }
            }
            Ok(_) => "is not a directory".to_owned(),
            Err(error) => format!("cannot be used ({error})"),
        };
        let chosen_by = match self.temp_dir_from_tmpdir {
            true => "TMPDIR",
            false => "the system's temporary directory (TMPDIR is unset)",
        };
        Err(crate::error::CliError::Input(format!(
            "{chosen_by}: {} {why}, and this command needs scratch space there; set TMPDIR to a writable directory",
            occupancy_build::cli::shown_path(&self.temp_dir)
        )))
    }

    /// The environment a build helper's engine reads its own variables from: the process's.
    pub fn for_build(&self) -> TrackedEnv {
        TrackedEnv::new()
    }
}

/// What `cargo occupancy build` reads: the variables it sets for a crate's builders unless
/// the user did (`--arch`'s, `cmd/build/arch_env.rs`), the toolkit's root variables, cargo's
/// terminal settings, `PATH` (where `nvidia-smi` is looked for), and the nvcc the builders run
/// and CMake's launcher (`--tap`).
pub const BUILD_VARIABLES: [&str; 14] = [
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_ROOT",
    "CUDA_TOOLKIT_ROOT_DIR",
    "CUDA_COMPUTE_CAP",
    "CUDA_ARCH",
    "CUDAARCHS",
    "CMAKE_CUDA_ARCHITECTURES",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_PROGRESS_WHEN",
    "CARGO_TERM_PROGRESS_WIDTH",
    "PATH",
    "NVCC",
    "CMAKE_CUDA_COMPILER_LAUNCHER",
];

/// The `OCCUPANCY_LINT_<ID>` variables that name a level; others are ignored, as in a build.
fn lint_levels() -> BTreeMap<LintId, Level> {
    LintId::ALL
        .into_iter()
        .filter_map(|lint| {
            let value = text_variable(&lint.env_var())?;
            Some((lint, value.trim().parse::<Level>().ok()?))
        })
        .collect()
}

/// `$XDG_CACHE_HOME` when absolute, else `$HOME/.cache` (`%LOCALAPPDATA%` on Windows); a
/// `HOME` that names no directory is refused, never created (with the cache under it, on
/// whatever file system holds its parent: issue #35, class 7).
fn user_cache_home() -> Result<PathBuf, String> {
    let absolute = |name: &str| {
        variable(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    if cfg!(windows) {
        return absolute("LOCALAPPDATA").ok_or_else(|| {
            "no cache directory: LOCALAPPDATA is not set (give --cache-dir)".to_owned()
        });
    }
    if let Some(home) = absolute("XDG_CACHE_HOME") {
        return Ok(home);
    }
    let home = absolute("HOME").ok_or_else(|| {
        "no cache directory: neither XDG_CACHE_HOME nor HOME is set (give --cache-dir)".to_owned()
    })?;
    if !home.is_dir() {
        return Err(format!(
            "no cache directory: HOME ({}) is not an existing directory, and occupancy does not create it (set HOME or XDG_CACHE_HOME, or give --cache-dir)",
            occupancy_build::cli::shown_path(&home)
        ));
    }
    Ok(home.join(".cache"))
}

/// A variable of the process's environment: the CLI's one read of it (the `disallowed-methods`
/// of the root `clippy.toml` refuse `std::env::var*` everywhere else).
// The reading place itself: every other module gets what `Environment::read` found.
#[allow(clippy::disallowed_methods)]
fn variable(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// [`variable`] when it is Unicode (as `std::env::var` reads it: a value that is not is unset).
fn text_variable(name: &str) -> Option<String> {
    variable(name)?.into_string().ok()
}
