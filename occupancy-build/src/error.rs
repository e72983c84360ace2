//! The errors of a build, one variant per cause, each saying what to edit or install.
//!
//! Every message names the setting, file or declaration to change; an underlying error (I/O,
//! an unknown lint or arch, a JSON syntax error, `cc`'s archiver, the package settings' own
//! [`SettingsError`](crate::SettingsError)) is kept as the variant's `source`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use occupancy_core::report::Location;

use crate::words::NVCC_WHEELS;
use occupancy_core::arch::Arch as SmArch;

/// Why a build could not compile or check its kernels.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No nvcc anywhere we looked.
    #[error(
        "occupancy-build: nvcc, the CUDA compiler, was not found (looked at: {looked}).\n\
         Install it with either\n  \
         - the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), then set CUDA_HOME (e.g. /usr/local/cuda), or\n  \
         - the compiler wheels from PyPI: `pip install {NVCC_WHEELS}`, then set CUDA_HOME=<site-packages>/nvidia/cu13\n\
         or point NVCC at the nvcc executable.\n\
         To build without compiling or checking kernels, set OCCUPANCY_SKIP=1 (a warning will say that nothing was checked)."
    )]
    NvccNotFound { looked: String },
    /// The program found as nvcc does not answer `--version` like nvcc.
    #[error(
        "occupancy-build: `{} --version` did not answer like nvcc ({status}); point NVCC at the nvcc executable:\n{output}",
        crate::words::shown_path(nvcc)
    )]
    NotNvcc {
        nvcc: PathBuf,
        /// How it exited (`exit status: 1`).
        status: String,
        /// Its stdout and stderr.
        output: String,
    },
    /// A program (nvcc, its compiler cache, cuobjdump, nvdisasm) could not be started.
    #[error("occupancy-build: could not run `{command}`: {error}")]
    ToolNotStarted {
        /// The command line, as a shell would take it.
        command: String,
        #[source]
        error: std::io::Error,
    },
    /// A program (nvcc, ptxas, cuobjdump, nvdisasm, `cargo metadata`, nvidia-smi, a `--version`
    /// probe) ran past its time limit and was killed with every process it started.
    #[error(
        "occupancy-build: `{command}` did not finish within {} and was killed, with every process it started; {hint}",
        crate::words::seconds(*.limit)
    )]
    ToolTimedOut {
        /// The command line, as a shell would take it.
        command: String,
        limit: std::time::Duration,
        /// Which setting sets the limit and how to raise it.
        hint: String,
    },
    /// `OCCUPANCY_TOOL_TIMEOUT` is not a number of seconds above 0.
    #[error("occupancy-build: OCCUPANCY_TOOL_TIMEOUT={value:?}: give the seconds a tool may run before it is killed, a number above 0 (e.g. 3600)")]
    BadToolTimeout { value: String },
    /// nvcc ran and failed; its own diagnostics are in `diagnostics`, and `notes` say what
    /// occupancy knows of the cause (an `OCCUPANCY_BOUNDS_<name>` no declaration defines).
    #[error(
        "nvcc failed to compile {} ({status}):\n{diagnostics}\ncommand: {command}{}",
        crate::words::shown_path(file),
        notes.iter().map(|note| format!("\nnote: {note}")).collect::<String>()
    )]
    NvccFailed {
        file: PathBuf,
        status: String,
        diagnostics: String,
        command: String,
        notes: Vec<String>,
    },
    /// Several sources failed to compile: every failure, in source order.
    #[error("{}", several(.0))]
    Several(Vec<Error>),
    /// nvcc or ptxas produced something we cannot read: the build fails rather than pass unchecked.
    #[error(
        "occupancy-build: could not read the compiler's output for {}: {message}",
        crate::words::shown_path(file)
    )]
    UnreadableOutput { file: PathBuf, message: String },
    /// `cc` could not archive the compiled objects into `lib<library>.a`.
    #[error("occupancy-build: archiving lib{library}.a failed: {error}")]
    ArchiveFailed {
        library: String,
        #[source]
        error: cc::Error,
    },
    /// An architecture name the table does not know, in the setting that gave it; `explanation`
    /// says whether the installed nvcc knows it (then occupancy needs an update).
    #[error("occupancy-build: {setting}: {explanation}")]
    UnknownArch {
        setting: String,
        explanation: String,
        #[source]
        unknown: occupancy_core::arch::UnknownArch,
    },
    /// A target arch occupancy-core has no facts for (the table knows the name, not the GPU).
    #[error("occupancy-build: {unknown}: occupancy-core has no facts for {arch}; remove it from the target archs")]
    NoArchFacts {
        arch: String,
        #[source]
        unknown: occupancy_core::arch::UnknownArch,
    },
    /// An arch setting (`OCCUPANCY_ARCHS`, `CUDA_COMPUTE_CAP`, `archs` in the metadata) that is
    /// set to no architecture at all.
    #[error("occupancy-build: {setting} is set but names no architecture; write e.g. `sm_80,sm_90` or remove it")]
    EmptyArchList { setting: &'static str },
    /// A JIT arch older than the lowest target arch, whose PTX is the one that ships.
    #[error(
        "occupancy-build: {setting}: {jit_arch} is older than the lowest target arch {lowest}, whose PTX ({}) ships; that PTX cannot be JIT-compiled for {jit_arch}: add {jit_arch} to the target archs instead",
        .lowest.virtual_name()
    )]
    JitArchBelowTargets {
        /// `.jit_arch(...)` or `jit_archs` in the metadata.
        setting: &'static str,
        jit_arch: SmArch,
        lowest: SmArch,
    },
    /// A directory cargo gives build scripts, outside a build script and not given to the
    /// builder either.
    #[error("occupancy-build: {variable} is not set: call occupancy-build from build.rs, or give `.{method}(...)`")]
    DirectoryNotSet {
        /// `OUT_DIR` or `CARGO_MANIFEST_DIR`.
        variable: &'static str,
        /// The builder method that sets it instead.
        method: &'static str,
    },
    /// `Build::check_sources` without `.out_dir(...)`.
    #[error("occupancy-build: checking sources needs `.out_dir(...)`: the directory of the compile cache")]
    SourceCheckWithoutOutDir,
    /// `OCCUPANCY_SASS` is neither `all` nor `needed`.
    #[error("occupancy-build: OCCUPANCY_SASS={value:?}: use `all` (every kernel's SASS) or `needed` (the default)")]
    BadSassSetting { value: String },
    /// A lint level that is not `allow`, `warn` or `deny`, in `setting` (`OCCUPANCY_LINT_SPILLS`,
    /// or a lints table and key).
    #[error("occupancy-build: {setting}: {error}")]
    BadLintLevel {
        setting: String,
        #[source]
        error: occupancy_core::lint::UnknownLevel,
    },
    /// A lint name the registry does not know, in a lints `table`.
    #[error("occupancy-build: {table}: {unknown}")]
    UnknownLint {
        table: String,
        #[source]
        unknown: occupancy_core::lint::UnknownLint,
    },
    /// A source given to the builder that is not a file.
    #[error(
        "occupancy-build: source {} does not exist (paths are relative to the package root)",
        crate::words::shown_path(path)
    )]
    SourceMissing { path: PathBuf },
    /// The builder was given no source at all.
    #[error("occupancy-build: no CUDA sources: add some with `.file(...)`, `.files(...)`, `.source_dir(...)` or `.ptx_file(...)`")]
    NoSources,
    /// Two sources with one stem, whose outputs would collide in `OUT_DIR`; `path` is the second.
    #[error("occupancy-build: two sources are named `{stem}`: their outputs would collide in OUT_DIR; rename one ({})", crate::words::shown_path(path))]
    DuplicateStem { stem: String, path: PathBuf },
    /// One compiled kernel declared by two `#[occupancy::kernel]` attributes.
    #[error(
        "occupancy-build: kernel `{kernel}` is declared twice ({}:{}:{} and {}:{}:{}); keep one declaration per compiled kernel",
        .first.path, .first.line, .first.column, .second.path, .second.line, .second.column
    )]
    DeclaredTwice {
        kernel: String,
        first: Location,
        second: Location,
    },
    /// A kernel matched by two `family = "..."` patterns.
    #[error(
        "occupancy-build: kernel `{kernel}` matches two family declarations, {} and {}: make the patterns disjoint, or declare `{kernel}` on its own (an exact declaration beats every pattern)",
        .families[0], .families[1]
    )]
    AmbiguousFamily {
        kernel: String,
        families: Box<[FamilyDeclaration; 2]>,
    },
    /// A declaration's `archs = [...]` names archs the build does not target.
    #[error(
        "occupancy-build: {}:{}:{}: kernel `{kernel}` declares `archs` {declared:?}, but the build does not target {:?} (it targets {}); add them to the crate's archs or drop them from the attribute",
        .declaration.path, .declaration.line, .declaration.column,
        not_built(.declared, .built), .built.join(", ")
    )]
    DeclaredArchNotBuilt {
        /// The declaration's attribute.
        declaration: Location,
        kernel: String,
        /// The archs the attribute names.
        declared: BTreeSet<String>,
        /// The archs the kernel was compiled for.
        built: Vec<String>,
    },
    /// Two `[package.metadata.occupancy.kernels."<pattern>"]` tables whose patterns both name
    /// one kernel.
    #[error(
        "occupancy-build: kernel `{kernel}` matches two kernel tables, [package.metadata.occupancy.kernels.{:?}] and [package.metadata.occupancy.kernels.{:?}]: neither pattern is more specific; narrow one, or add a table named for the kernel (it beats both)",
        .tables[0], .tables[1]
    )]
    AmbiguousKernelTables { kernel: String, tables: [String; 2] },
    /// A `[package.metadata.occupancy.kernels.<name>]` table whose name matches no kernel.
    #[error(
        "occupancy-build: [package.metadata.occupancy.kernels.{name}] names no compiled kernel and no declaration{} (a kernel table is keyed by the compiled symbol or the Rust name)",
        kernel_table_hint(.suggestions, *.compiled_kernels)
    )]
    UnknownKernelTable {
        name: String,
        /// Known names close to `name`, closest first.
        suggestions: Vec<String>,
        /// How many kernels the build compiled.
        compiled_kernels: usize,
    },
    /// The baseline file is not exactly a baseline: not JSON, an unknown or repeated key, a
    /// value out of range. `error` names the line and column and what is wrong.
    #[error(
        "occupancy-build: the baseline {} is not a valid baseline: {error}. A bless never writes this, and a lock that is not exactly well-formed is not read with a guess: correct that line, or restore the committed file (`git checkout -- {}`); a bless refuses this file too. To regenerate it from the code instead, remove it and run `OCCUPANCY_BLESS=1 cargo build` (the numbers it held are then forgotten: no regression is found against them)",
        crate::words::shown_path(path),
        crate::words::shown_path(path)
    )]
    UnreadableBaseline {
        path: PathBuf,
        #[source]
        error: serde_json::Error,
    },
    /// The baseline file has a schema this version does not read.
    #[error(
        "occupancy-build: the baseline {} has schema_version {schema_version}; this occupancy-build reads schema 1 and 2 and writes 2. {}",
        crate::words::shown_path(path),
        crate::lock_schema::unsupported_hint(*schema_version)
    )]
    UnsupportedBaselineSchema { path: PathBuf, schema_version: u32 },
    /// `[package.metadata.occupancy]` / `[workspace.metadata.occupancy]` could not be read or
    /// holds a wrong value: the message names the file and the key.
    #[error("occupancy-build: {0}")]
    Settings(#[from] settings::SettingsError),
    /// A file could not be read or written.
    #[error("occupancy-build: {}: {error}", crate::words::shown_path(path))]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// A compiled binary (cubin, fatbin, object, library, wheel) that cannot be read: nothing
    /// of it is checked.
    #[error(
        "occupancy: cannot read the kernels of `{}`: {reason}",
        crate::words::shown_path(path)
    )]
    UnreadableBinary { path: PathBuf, reason: String },
    /// A compile-cache directory another user owns or may write: its entries could make a
    /// spilling kernel pass, so it is not used.
    #[error("occupancy-build: the compile cache in {} is not used: it {reason}; another user could put results in it that pass a kernel that spills. Make it yours and private (`chmod go-w`), remove it, or use another directory", crate::words::shown_path(path))]
    UntrustedCache { path: PathBuf, reason: String },
    /// An output path that cannot be written safely: a directory, a socket, a link to a
    /// directory that does not exist. `reason` says which.
    #[error(
        "occupancy-build: {} cannot be written: it {reason}",
        crate::words::shown_path(path)
    )]
    Unwritable { path: PathBuf, reason: String },
    /// A bound written `"auto"` could not be chosen (a tool is missing, the kernel without
    /// bounds does not assemble): the build does not guess one.
    #[error("occupancy-build: `{knob} = \"auto\"` could not choose the bounds of kernel `{kernel}`: {message}")]
    AutoBounds {
        kernel: String,
        knob: &'static str,
        message: String,
    },
    /// One or more deny-level findings; `rendered` holds the rustc-style diagnostics.
    #[error("{rendered}")]
    Denied { rendered: String, count: usize },
}

/// One `family = "..."` declaration: its pattern and its attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyDeclaration {
    pub pattern: String,
    pub declaration: Location,
}

impl FamilyDeclaration {
    pub(crate) fn new(pattern: String, declaration: Location) -> FamilyDeclaration {
        FamilyDeclaration {
            pattern,
            declaration,
        }
    }
}

impl std::fmt::Display for FamilyDeclaration {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = &self.declaration;
        write!(
            formatter,
            "`family = \"{}\"` ({}:{}:{})",
            self.pattern, at.path, at.line, at.column
        )
    }
}

/// Every failure's message, a blank line between them.
fn several(errors: &[Error]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The declared archs the build does not target.
fn not_built<'a>(declared: &'a BTreeSet<String>, built: &[String]) -> Vec<&'a String> {
    declared
        .iter()
        .filter(|arch| !built.contains(arch))
        .collect()
}

/// `: did you mean ...?` when names are close, else how many kernels there are.
fn kernel_table_hint(suggestions: &[String], compiled_kernels: usize) -> String {
    match suggestions {
        [] => format!(
            "; the build compiled {compiled_kernels} kernel{}",
            if compiled_kernels == 1 { "" } else { "s" }
        ),
        [one] => format!(": did you mean `{one}`?"),
        more => format!(
            ": did you mean one of {}?",
            more.iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(crate) mod settings;

#[cfg(test)]
mod tests;
