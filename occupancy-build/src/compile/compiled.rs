//! The result of compiling one source, fresh or from the cache: [`CompiledSource`] and its
//! PTX [`Program`]s, what every later stage reads. Types only.

pub use crate::context::SourceKind;
use std::path::PathBuf;

/// One PTX program of a source and the archs whose SASS ptxas assembled from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The PTX's virtual arch (`compute_90`); for a `.ptx_file`, its `.target` if readable.
    pub ptx_target: Option<String>,
    /// The PTX text's path.
    pub ptx: PathBuf,
    /// `sm_90` (and any JIT arch that loads this PTX), as ptxas names them in its report.
    pub archs: Vec<String>,
    /// Where the PTX's summary is cached (`crate::ptx_summary`): in the compile's cache entry,
    /// never beside a source; `None`: scanned each time it is needed.
    pub summary: Option<PathBuf>,
}

/// The result of compiling one source (fresh or from the cache).
#[derive(Debug, Clone)]
pub struct CompiledSource {
    pub source: PathBuf,
    pub kind: SourceKind,
    /// The PTX (for `.cu`, cicc's output; for `.ptx_file`, the file itself).
    pub ptx: PathBuf,
    /// The fatbin (PTX product) or object (library product) in the cache.
    pub binary: Option<PathBuf>,
    /// nvcc's complete stderr: ptxas's `-v` report interleaved with any warnings.
    pub compiler_log: String,
    /// Every file nvcc read (the source and all its headers), from `-MD`.
    pub dependencies: Vec<PathBuf>,
    /// True when nothing ran and the entry was replayed.
    pub from_cache: bool,
    /// Set when the compiler cache in front of nvcc (`RUSTC_WRAPPER`, e.g. sccache) failed this
    /// compile and nvcc alone succeeded: what the cache printed, for a warning.
    pub wrapper_failure: Option<String>,
    /// What the user should know about how this source was compiled (an input changed during
    /// the compile, a cache entry not trusted), one line each, for warnings.
    pub notes: Vec<String>,
    /// The virtual arch of the shipped PTX `ptx` (`compute_80`): the lowest target for a
    /// `.cu`, the `.target` of a `.ptx_file`.
    pub ptx_target: Option<String>,
    /// Every PTX program and the archs whose rows come from it: one for a `.ptx_file` or a
    /// default build (the lowest target's PTX for every arch), one per target arch with
    /// `ptx_per_arch`. The first is `ptx`.
    pub programs: Vec<Program>,
    /// The `-lineinfo` PTX that `ptx` was stripped from, when the binary was assembled from the
    /// stripped PTX and so has no line tables: the SASS stage assembles line-table cubins of the
    /// kernels it reads that use local memory from it (`crate::line_table_cubins`). `None` when the
    /// binary has line tables or there is no such PTX.
    pub lineinfo_ptx: Option<PathBuf>,
    /// Where each kernel is defined (JSON, from the `-lineinfo` PTX's `.file`/`.loc`), when the
    /// shipped `ptx` was stripped of them; `None`: `ptx` itself says (or nothing does).
    pub kernel_lines: Option<PathBuf>,
}

#[cfg(test)]
impl CompiledSource {
    /// A compiled `.cu` with only its path and binary, for tests of the stages after compiling.
    pub fn for_tests(source: PathBuf, binary: PathBuf) -> CompiledSource {
        CompiledSource {
            ptx: source.with_extension("ptx"),
            source,
            kind: SourceKind::Cuda,
            binary: Some(binary),
            compiler_log: String::new(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
            notes: Vec::new(),
            ptx_target: None,
            programs: Vec::new(),
            lineinfo_ptx: None,
            kernel_lines: None,
        }
    }
}
