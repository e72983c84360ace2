//! Reading what the compiler decided: ptxas's `-v` report, `nvcc --resource-usage`,
//! `cuobjdump --dump-resource-usage` and the launch directives written into PTX.
//!
//! This module turns compiler output (text handed in by the caller) into one [`KernelRecord`]
//! per function and architecture. It is exact or it says so: every field ptxas prints is kept,
//! a line that looks like ptxas's but is not understood becomes a [`Diagnostic`] naming the line,
//! a record that is cut off is a [`ParseError`] naming the kernel. It never guesses a value and
//! never drops a line silently.
//!
//! It must not do I/O (callers read files and run tools) and must not interpret the numbers
//! (occupancy lives in `calc`, judgement in `lint`). The formats are described, with the
//! evidence for each, in `docs/ptxas-formats.md`.
//!
//! * [`parse_log`] / [`LogParser`]: `nvcc -Xptxas -v`, `ptxas -v`, `nvcc --resource-usage`
//!   (the same report), streaming, memory in proportion to the number of kernels.
//! * [`parse_cuobjdump_resource_usage`]: `cuobjdump --dump-resource-usage` of a cubin, fatbin
//!   or object.
//! * [`parse_ptx_directives`]: `.entry` performance-tuning directives (`.maxntid`, ...).
//! * [`strip_line_info`]: PTX without `-lineinfo`'s `.loc`/`.file`/`.section .debug_*`.
//! * [`subset_ptx`]: a PTX module cut down to some kernels and the functions they reach.
//! * [`demangle`]: a symbol as its author wrote it, C++ (Itanium) or Rust (legacy and v0).

mod cuobjdump;
mod demangle;
mod lineinfo;
mod log;
mod ptx;
mod ptx_shared;
mod subset;
pub(crate) mod text;

pub use cuobjdump::{
    cuobjdump_reserved_shared_bytes, parse_cuobjdump_resource_usage, CuobjdumpFunction,
};
pub use demangle::{demangle, may_be_mangled};
pub use lineinfo::strip_line_info;
pub use log::{parse_log, LineKind, LogParser};
pub(crate) use ptx::closing_quote;
pub use ptx::{
    entry_declared_on, entry_source_lines, ignores_minimum_without_block, parse_ptx_directives,
    EntrySourceLine, PtxEntry,
};
pub(crate) use ptx::{smem_spill_bytes, WITHOUT_BLOCK_WARNING};
pub use ptx_shared::SmemSpilling;
pub use subset::{subset_ptx, SubsetError};
pub use text::unescape_quoted;

use serde::Serialize;

/// Which tool's output a record was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum RecordSource {
    /// `ptxas -v` / `nvcc -Xptxas -v` output.
    PtxasLog,
    /// `nvcc --resource-usage` output (the same report as `-Xptxas -v`, asked for through nvcc).
    NvccResourceUsage,
    /// `cuobjdump --dump-resource-usage`.
    Cuobjdump,
    /// The cubin itself: its `.nv.info` attributes, sections and spill-marked instructions
    /// (`occupancy-build`'s binary reader).
    Cubin,
}

/// A kernel's whole stack (its frame and every callee's), as the compiler sized it: a number
/// of bytes, or unknown. Unknown is never zero: the driver then sizes the stack at launch from
/// `cudaLimitStackSize` (issue #42, class 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackSize {
    /// Sized at compile time: this many bytes per thread.
    Bytes(u64),
    /// Not statically determined: the call graph has recursion or an indirect call.
    Unknown,
}

impl StackSize {
    /// The words ptxas's and nvlink's warning end with: `Stack size for entry function 'K'
    /// cannot be statically determined`.
    pub const UNKNOWN_WARNING: &'static str = "cannot be statically determined";

    /// The one rule of every reader: a ptxas (or nvlink) warning about the entry that says its
    /// stack cannot be statically determined.
    pub fn unknown_in_warning(text: &str) -> bool {
        text.contains("Stack size for entry function") && text.contains(Self::UNKNOWN_WARNING)
    }

    /// `EIATTR_MIN_STACK_SIZE` of a cubin: `0xffffffff` is unknown (cuobjdump prints it
    /// `STACK:UNKNOWN`), `0` reported as nothing, anything else bytes.
    pub fn from_attribute(value: u32) -> Option<StackSize> {
        match value {
            0 => None,
            u32::MAX => Some(StackSize::Unknown),
            bytes => Some(StackSize::Bytes(u64::from(bytes))),
        }
    }

    /// The bytes, or `None` when unknown.
    pub fn bytes(self) -> Option<u64> {
        match self {
            StackSize::Bytes(bytes) => Some(bytes),
            StackSize::Unknown => None,
        }
    }
}

impl Serialize for StackSize {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StackSize::Bytes(bytes) => serializer.serialize_u64(*bytes),
            StackSize::Unknown => serializer.serialize_str("unknown"),
        }
    }
}

/// What the compiler decided for one function compiled for one architecture.
///
/// All sizes are bytes. A field is `None` when the report it came from does not carry it
/// (older CUDA versions print no barrier count; a device function's report has no register line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRecord {
    /// The mangled name: the key the driver (`cuModuleGetFunction`) and cudarc use.
    pub name: String,
    /// The demangled name, when `name` is a mangled C++ or Rust symbol ([`demangle`]).
    pub demangled: Option<String>,
    /// The architecture the code was compiled for, as ptxas prints it (`sm_90`, `sm_90a`).
    pub arch: String,
    /// `true` for `__global__` entry functions, `false` for device functions with their own frame.
    pub entry: bool,
    /// `Used N registers`; `None` for device functions (ptxas prints no register line for them).
    pub registers: Option<u32>,
    /// `used N barriers`; `None` where ptxas did not print it (CUDA 10 and older, device functions).
    pub barriers: Option<u32>,
    /// `N bytes stack frame`: this function's own frame.
    pub stack_frame_bytes: Option<u64>,
    /// `N bytes spill stores`.
    pub spill_store_bytes: Option<u64>,
    /// `N bytes spill loads`.
    pub spill_load_bytes: Option<u64>,
    /// `N bytes cumulative stack size`: the frame including callees (printed when non-zero and
    /// final), or [`StackSize::Unknown`] where the compiler could not size it (recursion, an
    /// indirect call). JSON: the bytes, `"unknown"`, or `null` when not reported.
    #[serde(rename = "cumulative_stack_bytes")]
    pub cumulative_stack: Option<StackSize>,
    /// `N bytes smem`: static shared memory (dynamic shared memory is a launch parameter).
    pub static_smem_bytes: u64,
    /// `N bytes lmem` (old ptxas versions printed local memory in the register line).
    pub local_memory_bytes: Option<u64>,
    /// `N bytes cmem[B]` of this function, as `(bank, bytes)`.
    pub cmem: Vec<(u32, u64)>,
    /// Module-wide constant banks (`N bytes cmem[3]` on the `gmem` line) of the module the
    /// function was compiled in, as `(bank, bytes)`.
    pub module_cmem: Vec<(u32, u64)>,
    /// Module-wide `N bytes gmem` of the module the function was compiled in, when printed.
    pub global_memory_bytes: Option<u64>,
    /// `N textures` (bound texture references; bindless texture objects are not counted by ptxas).
    pub textures: u32,
    /// `N samplers`.
    pub samplers: u32,
    /// `N surfaces`.
    pub surfaces: u32,
    /// `Compile time = X ms`, when printed.
    pub compile_time_ms: Option<f64>,
    /// ptxas warnings about this function, verbatim (spills, local memory, C7xxx advice).
    pub warnings: Vec<String>,
    /// ptxas errors about this function, verbatim (e.g. too much shared data).
    pub errors: Vec<String>,
    /// Which tool's output this record was read from.
    pub source: RecordSource,
    /// 1-based line of the log where the record starts.
    pub line_number: usize,
}

impl KernelRecord {
    /// A record of `name` on `arch` from `source` with nothing reported yet: every figure
    /// `None` or empty, for a reader to fill in.
    pub fn new(
        name: &str,
        demangled: Option<String>,
        arch: String,
        entry: bool,
        source: RecordSource,
    ) -> KernelRecord {
        KernelRecord {
            name: name.to_owned(),
            demangled,
            arch,
            entry,
            registers: None,
            barriers: None,
            stack_frame_bytes: None,
            spill_store_bytes: None,
            spill_load_bytes: None,
            cumulative_stack: None,
            static_smem_bytes: 0,
            local_memory_bytes: None,
            cmem: Vec::new(),
            module_cmem: Vec::new(),
            global_memory_bytes: None,
            textures: 0,
            samplers: 0,
            surfaces: 0,
            compile_time_ms: None,
            warnings: Vec::new(),
            errors: Vec::new(),
            source,
            line_number: 0,
        }
    }
}

/// A line that looks like ptxas output but was not understood, or was out of place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Diagnostic {
    /// 1-based line number in the log.
    pub line_number: usize,
    /// The line, verbatim.
    pub line: String,
    /// What was wrong with it.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {}: `{}`",
            self.line_number, self.message, self.line
        )
    }
}

/// Everything read from one log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ParseOutput {
    /// One record per entry function (`__global__` kernel) and architecture, in log order.
    /// A streaming reader that took records with [`LogParser::take_finished_kernels`] finds
    /// only the rest here.
    pub kernels: Vec<KernelRecord>,
    /// Device functions (callees, `.func` in PTX) with their own stack frame, per architecture,
    /// in log order: not kernels (nothing launches them, they have no occupancy), kept so that
    /// later stages can name a callee's frame. A record equal to an earlier one (same name,
    /// arch, frame and spills: the same code compiled again) is kept once.
    pub callees: Vec<KernelRecord>,
    /// ptxas-looking lines that were not understood or out of place (the first 1000).
    pub diagnostics: Vec<Diagnostic>,
    /// Diagnostics past the first 1000, counted and not kept.
    pub diagnostics_not_kept: usize,
    /// ptxas warnings that concern no single function found in the log, verbatim, each once.
    pub warnings: Vec<String>,
    /// The compiler's errors (ptxas `error`/`fatal`, nvcc `error`/`fatal`, front-end
    /// `FILE(LINE): error:`): the compile failed. An error that names a function is also
    /// attached to that function's record.
    pub errors: Vec<CompilerError>,
    /// Lines from other tools (nvcc, the host compiler, make): counted, passed through by
    /// [`LogParser::feed_line`]'s return value, not stored.
    pub context_lines: usize,
    /// Lines that were not valid UTF-8 and were read with U+FFFD in place of the bad bytes
    /// (one policy for every command: lossy per line, with a note).
    pub invalid_utf8_lines: usize,
    /// Lines longer than [`MAX_LINE_BYTES`], skipped unread (no ptxas line is that long); a
    /// [`Diagnostic`] names each one that looked like ptxas's or came inside a record.
    pub long_lines_skipped: usize,
    /// The 1-based number of the first line skipped for its length, if any.
    pub first_long_line: Option<usize>,
    /// Lines that say the build failed (`FAILED:`, `make: *** ... Error 1`, `Segmentation
    /// fault`, ...), the first `MAX_BUILD_FAILURES` (100): the kernels of what failed were never
    /// compiled, so the log cannot show that every kernel passed.
    pub build_failures: Vec<BuildFailure>,
    /// Build failure lines past the first `MAX_BUILD_FAILURES`, counted and not kept.
    pub build_failures_not_kept: usize,
    /// Lines read.
    pub lines: usize,
}

/// Build failure lines kept per log; more are counted.
pub(crate) const MAX_BUILD_FAILURES: usize = 100;

/// A line of a build driver (ninja, make, MSBuild, bazel, cargo, a shell) saying that the build
/// failed, found among the other tools' lines of a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BuildFailure {
    /// 1-based line number in the log.
    pub line_number: usize,
    /// The marker found, as a user would look for it (``ninja's `FAILED:` (a build step failed)``).
    pub marker: &'static str,
    /// The line, trimmed (its CI prefix stripped).
    pub line: String,
}

impl std::fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {}: `{}`",
            self.line_number, self.marker, self.line
        )
    }
}

/// The longest line the streaming reader holds: longer lines are skipped in bounded chunks.
/// ptxas's longest lines carry one mangled name (templates reach tens of kilobytes).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One error of the compiler found in a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CompilerError {
    /// 1-based line of the log.
    pub line_number: usize,
    /// The line, verbatim (trimmed).
    pub text: String,
    /// The function it names (`Entry function 'too_big' uses too much shared data`), if any.
    pub function: Option<String>,
    /// The architecture of the record of that function, when the log has one.
    pub arch: Option<String>,
}

impl std::fmt::Display for CompilerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line_number, self.text)?;
        match (&self.function, &self.arch) {
            (Some(function), Some(arch)) => write!(f, " (kernel `{function}` on {arch})"),
            (Some(function), None) => write!(f, " (kernel `{function}`)"),
            _ => Ok(()),
        }
    }
}

/// A log that cannot give trustworthy records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// No kernel record at all.
    #[error("{}", no_kernels_message(*.lines, *.modules, errors, failed_build.as_ref()))]
    NoKernels {
        /// Lines read.
        lines: usize,
        /// Module lines (`ptxas info : N bytes gmem`) read: ptxas ran with `-v` on that many
        /// modules, and none had an entry function.
        modules: usize,
        /// ptxas errors seen, if the compile failed.
        errors: Vec<String>,
        /// The first line that says the build failed, if one does.
        failed_build: Option<BuildFailure>,
    },
    /// A record that starts but does not finish.
    #[error("the ptxas record of `{name}` for {arch} (starting at line {line_number}) is cut off: {missing}; the log is truncated or lines of two compilations are interleaved")]
    Truncated {
        /// Mangled name of the function.
        name: String,
        /// Architecture, or `unknown architecture`.
        arch: String,
        /// 1-based line where the record starts.
        line_number: usize,
        /// What is missing.
        missing: String,
    },
    /// A resource line (`Used N registers`, `N bytes stack frame, ...`, a ptxas record line
    /// behind other text) that belongs to no kernel record: some kernel of the log was never
    /// read.
    #[error("line {line_number}: {what}: `{line}`; {help}")]
    Orphan {
        /// 1-based line.
        line_number: usize,
        /// The line (its CI prefix stripped).
        line: String,
        /// What the line is, and why it belongs to no record.
        what: String,
        /// What to do.
        help: String,
    },
    /// A figure of a record's line that cannot be read: a number past its type, a negative
    /// one, text ptxas does not print after it.
    #[error("line {line_number}: {problem}, in the ptxas record of `{name}` for {arch}: `{line}`; the record's figures cannot be read, so its kernel is not checked (if a newer ptxas prints this form, report it with this line)")]
    Unreadable {
        /// Mangled name of the function whose record holds the line.
        name: String,
        /// Architecture, or `unknown architecture`.
        arch: String,
        /// 1-based line.
        line_number: usize,
        /// The line (its CI prefix stripped).
        line: String,
        /// What in the line was not understood.
        problem: String,
    },
    /// cuobjdump output that has no resource-usage section.
    #[error("no `Resource usage:` section with functions in the cuobjdump output ({lines} lines read); run `cuobjdump --dump-resource-usage FILE`")]
    NoCuobjdumpFunctions {
        /// Lines read.
        lines: usize,
    },
    /// A cuobjdump line that does not parse.
    #[error("cuobjdump output line {line_number} not understood: {message}: `{line}`")]
    CuobjdumpLine {
        /// 1-based line.
        line_number: usize,
        /// The line.
        line: String,
        /// What is wrong.
        message: String,
    },
}

fn errors_suffix(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!("; ptxas reported errors: {}", errors.join(" | "))
    }
}

impl ParseError {
    /// A log of compiles that succeeded and had no entry function: ptxas reported its modules
    /// (`-v` was given) and no error, and no line says the build failed.
    pub fn is_compile_without_kernels(&self) -> bool {
        matches!(self, ParseError::NoKernels { modules, errors, failed_build, .. }
            if compiled_without_kernels(*modules, errors, failed_build.as_ref()))
    }
}

/// What [`ParseError::is_compile_without_kernels`] asks of a log without a kernel record.
fn compiled_without_kernels(
    modules: usize,
    errors: &[String],
    failed_build: Option<&BuildFailure>,
) -> bool {
    modules > 0 && errors.is_empty() && failed_build.is_none()
}

/// Why a log held no record: a failed build says so; modules without an entry function say
/// so; otherwise ptxas was not asked.
fn no_kernels_message(
    lines: usize,
    modules: usize,
    errors: &[String],
    failed_build: Option<&BuildFailure>,
) -> String {
    if compiled_without_kernels(modules, errors, failed_build) {
        return format!(
            "no kernel record in the log ({lines} lines read): ptxas reported {modules} module(s) and no entry function (`__global__`) in them; check the log of the compiles that hold the kernels"
        );
    }
    let errors = errors_suffix(errors);
    match failed_build {
        Some(failure) => format!(
            "no kernel record in the log ({lines} lines read){errors}, and it shows a failed build ({failure}): the kernels of what failed were never compiled; fix the build and check the log of one that succeeded"
        ),
        None => format!(
            "no kernel record in the log ({lines} lines read){errors}: ptxas prints its report only when asked; compile with `nvcc -Xptxas -v` (or `nvcc --resource-usage`, or `ptxas -v`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_to_do() {
        let error = ParseError::NoKernels {
            lines: 3,
            modules: 0,
            errors: vec![],
            failed_build: None,
        };
        assert!(error.to_string().contains("-Xptxas -v"), "{error}");
        assert!(!error.is_compile_without_kernels());
    }
}
