//! The report model: what one build (or one `cargo occupancy check`) found, as plain serde types.
//!
//! This is the schema of `$OUT_DIR/occupancy.json` and `target/occupancy/<crate>.json`, of
//! `cargo occupancy check --json`, and the input of every renderer in [`crate::report`]. It is
//! versioned by [`SCHEMA_VERSION`]; readers reject other versions with an error that says which
//! tool version wrote the file. Keys are stable: scripts read them.
//!
//! A [`Report`] holds one [`KernelRow`] per kernel and architecture (what ptxas reported plus what
//! the calculator made of it for the declared or requested launch) and the [`Finding`]s of the
//! lints. Sizes are bytes, counts are plain integers, occupancy is a fraction in 0..=1.

use serde::{Deserialize, Serialize};

pub use crate::finding::{Finding, Location, LocationKind};
use crate::lint::Level;

/// The version of the report schema written and read by this crate.
///
/// History: 1: first version.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one build or check found: kernels × architectures, and findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The package whose build wrote the report (`CARGO_PKG_NAME`); absent for
    /// `cargo occupancy check` and for merged reports.
    #[serde(rename = "crate", default, skip_serializing_if = "Option::is_none")]
    pub crate_name: Option<String>,
    /// nvcc's release (`13.0`), when something was compiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_release: Option<String>,
    /// The target architectures of the build (`sm_90`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archs: Vec<String>,
    /// Where the build's architectures came from (`builder`, `occupancy_archs`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch_source: Option<String>,
    /// Why nothing was checked (`OCCUPANCY_SKIP`, docs.rs); absent when the checks ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why the build that wrote this report failed (nvcc failed, a setting is wrong, ...):
    /// then nothing was checked and `kernels` is empty; absent when the build got as far as
    /// its checks. A reader must not take a failed build's report for a clean one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Every compiled source of the build.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceFile>,
    /// The files of `OUT_DIR` this report covers (`kernels.ptx`, `libmoe.a`), relative to it:
    /// what the build checked and wrote there. `cargo occupancy build` takes the report for
    /// these files and reads every other product of `OUT_DIR` itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// One row per kernel and architecture.
    pub kernels: Vec<KernelRow>,
    /// The findings: `check` keeps allowed ones (renderers decide what to show); a build's
    /// report keeps warn and deny ones.
    pub findings: Vec<Finding>,
    /// What an `OCCUPANCY_BLESS=1` build changed in the baseline (`occupancy.lock`): every entry
    /// it added, changed, removed, attributed to its source or restamped, since the build
    /// script's first bless in this run; absent when the build did not bless or changed nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_changes: Vec<BaselineChange>,
}

impl Default for Report {
    fn default() -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            crate_name: None,
            cuda_release: None,
            archs: Vec::new(),
            arch_source: None,
            skipped: None,
            failed: None,
            sources: Vec::new(),
            outputs: Vec::new(),
            kernels: Vec::new(),
            findings: Vec::new(),
            baseline_changes: Vec::new(),
        }
    }
}

/// One compiled source file of a build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// Relative to the package root.
    pub path: String,
    /// True when the result was replayed from the per-file cache.
    pub from_cache: bool,
    /// The product the source was compiled into (`PTX`, ``library `moe` ``), when the build
    /// script made several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
}

/// One entry of the baseline (a kernel's numbers on one arch, from one compiled source) that a
/// bless added, changed or removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineChange {
    /// What happened to the entry.
    pub change: BaselineChangeKind,
    /// The compiled source the entry is under, as the report's `sources` name it; absent for an
    /// entry of a schema-1 baseline, which did not record sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The kernel's symbol.
    pub kernel: String,
    /// The architecture.
    pub arch: String,
    /// The numbers before (absent for an added entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<crate::lint::evaluate::BaselineNumbers>,
    /// The numbers after (absent for a removed entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<crate::lint::evaluate::BaselineNumbers>,
    /// What differs, one item each (`registers: 24 -> 40`, `flags [-O3] -> [-O2]`), or why an
    /// entry was removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What a bless did to one baseline entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineChangeKind {
    /// A kernel, source or arch the baseline did not have.
    Added,
    /// Other numbers.
    Changed,
    /// Gone from the baseline: its kernel is no longer compiled on a rebuilt arch, or its source
    /// no longer exists.
    Removed,
    /// A schema-1 entry moved under the source that compiles its kernel now (its numbers as
    /// they were, or the new ones on a rebuilt arch).
    Attributed,
    /// The same numbers, made with another toolchain or other flags.
    Restamped,
}

impl BaselineChangeKind {
    /// `added`, `changed`, ...: as the report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineChangeKind::Added => "added",
            BaselineChangeKind::Changed => "changed",
            BaselineChangeKind::Removed => "removed",
            BaselineChangeKind::Attributed => "attributed",
            BaselineChangeKind::Restamped => "restamped",
        }
    }
}

impl Report {
    /// Puts several reports (one per crate) into one: kernels and findings (which name their
    /// crate) are kept; the per-build fields (crate, release, archs, sources) are not.
    pub fn merge(reports: impl IntoIterator<Item = Report>) -> Report {
        let mut merged = Report::default();
        for report in reports {
            merged.kernels.extend(report.kernels);
            merged.findings.extend(report.findings);
        }
        merged
    }

    /// The findings a reader is shown: warn and deny, and the accepted exceptions (allowed or
    /// expected with a `reason = "..."`, shown with it in every rendering). Other allowed ones are
    /// kept in the model for scripts, and left out of every rendering.
    pub fn shown_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.level != Level::Allow || finding.reason.is_some())
    }

    /// The findings at deny level.
    pub fn denied(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.level == Level::Deny)
    }

    /// Whether a finding at level deny stands: the gate fails.
    pub fn has_deny(&self) -> bool {
        self.findings
            .iter()
            .any(|finding| finding.level == Level::Deny)
    }

    /// Number of findings at `level`.
    pub fn count(&self, level: Level) -> usize {
        self.findings
            .iter()
            .filter(|finding| finding.level == level)
            .count()
    }

    /// The findings that concern `row` (same crate, kernel and architecture, or the kernel on
    /// every architecture when the finding names none).
    pub fn findings_for<'a>(
        &'a self,
        row: &'a KernelRow,
    ) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings
            .iter()
            .filter(move |finding| finding.concerns(row))
    }
}

/// One kernel on one architecture: what the compiler decided and what the calculator made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    /// The Rust crate whose build compiled the kernel; absent for `cargo occupancy check`.
    #[serde(rename = "crate", default, skip_serializing_if = "Option::is_none")]
    pub crate_name: Option<String>,
    /// The symbol (mangled for C++ kernels): the name the driver and cudarc look up.
    pub name: String,
    /// The demangled name (equal to `name` for `extern "C"` kernels).
    pub demangled: String,
    /// Canonical architecture name, `"sm_90"`: the SASS this row's numbers are ptxas's for.
    pub arch: String,
    /// The PTX the SASS was assembled from (`"compute_80"`): with a lower target than `arch`,
    /// the row is what the driver's JIT makes of shipped PTX on that GPU, which can differ from
    /// a native compile (other registers; code behind `__CUDA_ARCH__ >= ...` absent). `None`
    /// when unknown (rows read from a ptxas log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ptx_target: Option<String>,
    /// Whether this is an entry (`__global__`) function; device functions have no occupancy.
    pub entry: bool,
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers the kernel uses (1 for a plain `__syncthreads`).
    pub barriers: u32,
    /// Static shared memory per block.
    pub static_smem_bytes: u64,
    /// Of `static_smem_bytes`, ptxas's register spill area (`enable_smem_spilling`): what the
    /// kernel does not declare itself; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smem_spill_bytes: Option<u64>,
    /// Stack frame per thread.
    pub stack_frame_bytes: u64,
    /// Register spill stores per thread.
    pub spill_store_bytes: u64,
    /// Register spill loads per thread.
    pub spill_load_bytes: u64,
    /// The compiled max threads per block (`.maxntid`/`.reqntid`, from `__launch_bounds__`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_threads_per_block: Option<u32>,
    /// The compiled min blocks per SM (`.minnctapersm`, from `__launch_bounds__`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_blocks_per_sm: Option<u32>,
    /// The compiled register limit (`.maxnreg`, from `__maxnreg__`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_registers: Option<u32>,
    /// The launch evaluated: threads per block.
    pub block: u32,
    /// The launch evaluated: dynamic shared memory per block.
    pub dynamic_smem_bytes: u64,
    /// The launch evaluated: shared memory carveout preference in percent; `None` is the
    /// driver's default.
    #[serde(default)]
    pub carveout_percent: Option<u32>,
    /// The dynamic shared memory the kernel opted into
    /// (`cudaFuncAttributeMaxDynamicSharedMemorySize`); `None`: exactly what the launch needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dynamic_smem_bytes: Option<u64>,
    /// Resident blocks per SM for this launch (0: the launch cannot start).
    pub blocks_per_sm: u32,
    /// Resident warps per SM.
    pub warps_per_sm: u32,
    /// Theoretical occupancy: resident warps / the SM's maximum, 0..=1.
    pub occupancy: f64,
    /// The resources that bind (`warps`, `blocks`, `registers`, `shared_memory`, `barriers`,
    /// `launch_bounds`), as the calculator names them.
    pub limiters: Vec<String>,
    /// How far the next occupancy cliff is.
    pub headroom: Headroom,
    /// Where the kernel is defined (the .cu file or the PTX `.entry`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Location>,
    /// The source whose compile made this row, as the report's `sources` name it (a kernel
    /// defined in a header has its header in `source` and the `.cu` that compiled it here);
    /// absent for rows read from a log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled_from: Option<String>,
    /// Where the kernel is declared (the `#[occupancy::kernel]` attribute), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration: Option<Location>,
    /// The Rust item the declaration is attached to, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust_name: Option<String>,
    /// What the kernel's SASS on this architecture says (local loads and stores per loop and
    /// source line, calls, FP64, `setmaxnreg`), when the build read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sass: Option<crate::sass::SassFacts>,
    /// Blocks per thread-block cluster of the launch as x, y, z: the declared `cluster`, else the
    /// compiled `__cluster_dims__` (`.reqnctapercluster`); absent without a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<[u32; 3]>,
    /// Whether the launch opts into clusters above 8 blocks (`non_portable_cluster`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub non_portable_cluster: bool,
    /// With a cluster: how many are resident at once on each GPU of the architecture
    /// (`cudaOccupancyMaxActiveClusters`; `cargo occupancy arch --gpus` lists them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<RowClusters>,
    /// For a declaration with a bound written `"auto"`: what the build chose on this
    /// architecture, every bound it tried and why (`crate::tune`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<crate::tune::Tuning>,
}

/// Clusters of a row's launch resident at once on one GPU ([`crate::calc::clusters`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowClusters {
    /// The GPU preset (`h100`).
    pub gpu: String,
    /// Clusters resident at once; an upper bound when `exact` is false.
    pub max_active_clusters: u32,
    /// Whether the GPU's GPC layout is recorded (the driver's answer) or not (an upper bound).
    pub exact: bool,
    /// Why no cluster runs, when none does for a reason the tool can name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl KernelRow {
    /// The name people read: the demangled one.
    pub fn display_name(&self) -> &str {
        if self.demangled.is_empty() {
            &self.name
        } else {
            &self.demangled
        }
    }

    /// The name as a CUDA engineer writes it in a sentence: the demangled name without its
    /// return type and parameters ([`readable_kernel_name`]).
    pub fn readable_name(&self) -> &str {
        readable_kernel_name(self.display_name())
    }

    /// Total spill bytes (stores + loads) per thread.
    pub fn spill_bytes(&self) -> u64 {
        self.spill_store_bytes + self.spill_load_bytes
    }

    /// Where a finding about this kernel should point: the Rust declaration, else the source.
    pub fn primary_location(&self) -> Option<&Location> {
        self.declaration.as_ref().or(self.source.as_ref())
    }
}

/// How far the kernel is from the next occupancy cliff, at its launch, computed with the
/// calculator. `None`: that resource cannot change the block count in that direction (for
/// example, registers do not bind anywhere up to the architecture's maximum, or nothing can be
/// removed to gain a block because another resource binds).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Headroom {
    /// Registers per thread that can be added before a resident block is lost.
    pub spare_registers_per_thread: Option<u32>,
    /// Registers per thread that must be removed to gain a resident block.
    pub registers_per_thread_to_gain_block: Option<u32>,
    /// Bytes of shared memory per block that can be added before a resident block is lost.
    pub spare_smem_bytes: Option<u64>,
    /// Bytes of shared memory per block that must be removed to gain a resident block.
    pub smem_bytes_to_gain_block: Option<u64>,
}

/// A kernel's name as a CUDA engineer writes it: the demangled name without its return type
/// and parameter list, namespaces and template arguments kept (`mul_mat_q<(ggml_type)2, 112>`
/// for `void mul_mat_q<(ggml_type)2, 112>(char const*, float*)`); a name that is not a
/// function signature (an `extern "C"` symbol) as it is.
pub fn readable_kernel_name(demangled: &str) -> &str {
    let text = demangled.trim();
    let mut end = text.len();
    if text.ends_with(')') {
        let mut depth = 0usize;
        for (index, c) in text.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = index;
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let head = &text[..end];
    // The return type ends at the last space outside template arguments and parentheses.
    let mut depth = 0usize;
    let mut start = 0;
    for (index, c) in head.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => start = index + 1,
            _ => {}
        }
    }
    match head[start..].trim() {
        "" => text,
        name => name,
    }
}

impl Finding {
    /// Whether the finding is about `row`.
    pub fn concerns(&self, row: &KernelRow) -> bool {
        let same_crate = match (&self.crate_name, &row.crate_name) {
            (Some(finding_crate), Some(row_crate)) => finding_crate == row_crate,
            _ => true,
        };
        let same_kernel = self.kernel.as_deref() == Some(row.name.as_str());
        let same_arch = self.arch.as_deref().is_none_or(|arch| arch == row.arch);
        same_crate && same_kernel && same_arch
    }
}
