//! Reports: the model of what a build or a check found ([`Report`]: kernels × architectures and
//! findings), and its renderers: a text table for terminals, JSON, Markdown, SARIF 2.1.0 and a
//! single-file HTML page with the occupancy curves of every kernel; plus `explain`, the reasoning
//! an expert does by hand about one kernel, computed with the calculator.
//!
//! The build helper's engine fills the model (one [`KernelRow`] per kernel and arch, made by
//! [`crate::kernel::KernelOnArch::new`]) and writes it as JSON; `cargo occupancy report` reads those files back
//! with [`Report::from_json`]; `cargo occupancy check` renders what the engine returns.
//!
//! This module must not do I/O (it returns strings), must not evaluate lints (findings arrive
//! made), and must not compute occupancy any other way than through [`crate::calc`].

mod curves;
pub(crate) mod digest;
pub mod explain;
mod html;
mod index;
mod markdown;
mod markup;
mod model;
mod query;
mod sarif;
pub(crate) mod sass;
mod table;
mod tuning;
mod validate;

pub use curves::{Axis, Curve, CurveInput, CurvePoint, Step};
pub use digest::ReportDigest;
pub use html::render_html;
pub use index::{FindingIndex, RowIndex};
pub use markdown::render_markdown;
pub use model::{
    readable_kernel_name, BaselineChange, BaselineChangeKind, Finding, Headroom, KernelRow,
    Location, LocationKind, Report, RowClusters, SourceFile, SCHEMA_VERSION,
};
pub use query::{parse_sort_key, Column, Query, UnknownColumn};
pub use sarif::{render_sarif, sarif_result};
pub use table::{program_note, render_text};
pub use validate::{InvalidValue, ReadError};

pub(crate) use curves::carveout_from_percent;

use crate::arch::ArchFacts;
use crate::calc::{self, KernelFacts, Launch};

/// The report as JSON (`{"schema_version": 1, "kernels": [...], "findings": [...]}`), pretty
/// printed, ending with a newline. This is the text the build writes and `report` reads.
pub fn render_json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".to_string());
    text.push('\n');
    text
}

/// Saturates a byte count into the calculator's `u32`.
pub(crate) fn bytes_u32(bytes: u64) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

/// The launch a row is evaluated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLaunch {
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block.
    pub dynamic_smem_bytes: u64,
    /// Carveout preference in percent; `None`: the driver's default.
    pub carveout_percent: Option<u32>,
}

impl KernelRow {
    /// A row of an entry kernel `name` on `arch` launched with `block` threads, with no
    /// resources (0 registers, 1 barrier, no shared memory, stack or spills), no bounds and no
    /// locations, and nothing computed: callers set what they know with struct-update syntax,
    /// then call [`KernelRow::compute`].
    pub fn new(name: &str, arch: &str, block: u32) -> KernelRow {
        KernelRow {
            crate_name: None,
            name: name.to_string(),
            demangled: name.to_string(),
            arch: arch.to_string(),
            ptx_target: None,
            entry: true,
            registers: 0,
            barriers: 1,
            static_smem_bytes: 0,
            smem_spill_bytes: None,
            stack_frame_bytes: 0,
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            max_threads_per_block: None,
            min_blocks_per_sm: None,
            max_registers: None,
            block,
            dynamic_smem_bytes: 0,
            carveout_percent: None,
            max_dynamic_smem_bytes: None,
            blocks_per_sm: 0,
            warps_per_sm: 0,
            occupancy: 0.0,
            limiters: Vec::new(),
            headroom: Headroom::default(),
            source: None,
            compiled_from: None,
            declaration: None,
            rust_name: None,
            sass: None,
            cluster: None,
            non_portable_cluster: false,
            clusters: Vec::new(),
            tuning: None,
        }
    }

    /// The row of what the compiler reported for one function on `arch` (`record`, with the
    /// compiled launch bounds of its `.entry` directives `ptx` when known) at `launch`, its
    /// computed columns not yet filled: [`crate::kernel::KernelOnArch::new`] fills them from the
    /// answer it keeps.
    pub(crate) fn of_record(
        record: &crate::ptxas::KernelRecord,
        ptx: Option<&crate::ptxas::PtxEntry>,
        launch: RowLaunch,
        arch: &ArchFacts,
    ) -> KernelRow {
        let max_threads_per_block = ptx.and_then(crate::ptxas::PtxEntry::max_threads_per_block);
        KernelRow {
            demangled: record
                .demangled
                .clone()
                .unwrap_or_else(|| record.name.clone()),
            entry: record.entry,
            registers: record.registers.unwrap_or(0),
            barriers: record.barriers.unwrap_or(u32::from(record.entry)),
            static_smem_bytes: record.static_smem_bytes,
            smem_spill_bytes: crate::ptxas::smem_spill_bytes(record, ptx),
            stack_frame_bytes: record.stack_frame_bytes.unwrap_or(0),
            spill_store_bytes: record.spill_store_bytes.unwrap_or(0),
            spill_load_bytes: record.spill_load_bytes.unwrap_or(0),
            max_threads_per_block,
            min_blocks_per_sm: ptx.and_then(|entry| entry.minnctapersm),
            max_registers: ptx.and_then(|entry| entry.maxnreg),
            cluster: ptx
                .and_then(|entry| entry.reqnctapercluster.as_deref())
                .map(|dims| std::array::from_fn(|index| dims.get(index).copied().unwrap_or(1))),
            dynamic_smem_bytes: launch.dynamic_smem_bytes,
            carveout_percent: launch.carveout_percent,
            ..KernelRow::new(&record.name, arch.name, launch.block)
        }
    }

    /// The calculator's view of the kernel.
    pub fn kernel_facts(&self) -> KernelFacts {
        KernelFacts {
            registers_per_thread: self.registers,
            static_smem_bytes: bytes_u32(self.static_smem_bytes),
            barriers: self.barriers,
            max_threads_per_block: self.max_threads_per_block,
            max_dynamic_smem_bytes: self.max_dynamic_smem_bytes.map(bytes_u32),
        }
    }

    /// The calculator's view of the launch.
    pub fn launch(&self) -> Launch {
        Launch {
            block_threads: self.block,
            dynamic_smem_bytes: bytes_u32(self.dynamic_smem_bytes),
            carveout: carveout_from_percent(self.carveout_percent),
        }
    }

    /// The calculator's answer for the row's launch on `arch` (what [`KernelRow::compute`]
    /// stores); a kernel's is kept by [`crate::kernel::KernelOnArch::occupancy`].
    pub fn occupancy_on(&self, arch: &ArchFacts) -> calc::Occupancy {
        calc::occupancy(arch, &self.kernel_facts(), &self.launch())
    }

    /// The input of the curves.
    pub fn curve_input(&self) -> CurveInput {
        CurveInput {
            kernel: self.kernel_facts(),
            launch: self.launch(),
        }
    }

    /// Fills the computed columns (blocks, warps, occupancy, limiters, headroom) from the row's
    /// inputs (registers, shared memory, barriers, bounds, launch) with the calculator, for a
    /// row no compiler record stands behind (`calc`, `explain`'s what-ifs); a kernel's row is
    /// computed once, by [`crate::kernel::KernelOnArch::new`]. Device functions (not `entry`)
    /// get zeros and no limiters.
    pub fn compute(&mut self, arch: &ArchFacts) {
        let answer = self.occupancy_on(arch);
        self.fill_computed(arch, &answer);
    }

    /// Fills the computed columns from `answer`, the calculator's answer for the row's inputs
    /// on `arch` ([`KernelRow::occupancy_on`]); nothing else writes these fields.
    pub(crate) fn fill_computed(&mut self, arch: &ArchFacts, answer: &calc::Occupancy) {
        if !self.entry {
            self.blocks_per_sm = 0;
            self.warps_per_sm = 0;
            self.occupancy = 0.0;
            self.limiters.clear();
            self.headroom = Headroom::default();
            return;
        }
        self.blocks_per_sm = answer.blocks_per_sm;
        self.warps_per_sm = answer.warps_per_sm;
        self.occupancy = answer.occupancy;
        self.limiters = answer
            .limiters
            .iter()
            .map(|limiter| limiter.name().to_string())
            .collect();
        self.headroom = headroom_of(arch, &self.kernel_facts(), &self.launch(), answer);
        self.compute_clusters(arch);
    }

    /// Fills [`KernelRow::clusters`] from the row's cluster and blocks per SM: one entry per GPU
    /// preset of the architecture (none without a cluster, or for a device function).
    pub fn compute_clusters(&mut self, arch: &ArchFacts) {
        self.clusters.clear();
        let Some(dims) = self.cluster.filter(|_| self.entry) else {
            return;
        };
        let size = dims.iter().product();
        for gpu in crate::arch::presets()
            .iter()
            .filter(|gpu| gpu.arch == arch.name)
        {
            let answer = calc::clusters::max_active_clusters(
                gpu,
                self.blocks_per_sm,
                size,
                self.non_portable_cluster,
            );
            self.clusters.push(RowClusters {
                gpu: gpu.name.to_string(),
                max_active_clusters: answer.max_active_clusters,
                exact: answer.exact,
                problem: answer.problem.map(|problem| problem.to_string()),
            });
        }
    }
}

/// The calculator's headroom, with `None` where the resource never costs a block in that
/// direction (checked by evaluating one step beyond the margin).
fn headroom_of(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &calc::Occupancy,
) -> Headroom {
    if answer.blocks_per_sm == 0 {
        return Headroom::default();
    }
    let current = answer.blocks_per_sm;
    let margin = answer.headroom;
    let more_registers = kernel
        .registers_per_thread
        .saturating_add(margin.registers_addable)
        .saturating_add(1);
    let register_cliff = more_registers <= arch.max_regs_per_thread_accepted
        && calc::blocks_per_sm(
            arch,
            &KernelFacts {
                registers_per_thread: more_registers,
                ..*kernel
            },
            launch,
        ) < current;
    let more_smem = Launch {
        dynamic_smem_bytes: launch
            .dynamic_smem_bytes
            .saturating_add(margin.smem_addable_bytes)
            .saturating_add(1),
        ..*launch
    };
    let opted_in = KernelFacts {
        max_dynamic_smem_bytes: None,
        ..*kernel
    };
    let smem_cliff = calc::blocks_per_sm(arch, &opted_in, &more_smem) < current;
    Headroom {
        spare_registers_per_thread: register_cliff.then_some(margin.registers_addable),
        registers_per_thread_to_gain_block: margin.registers_to_gain_block,
        spare_smem_bytes: smem_cliff.then_some(u64::from(margin.smem_addable_bytes)),
        smem_bytes_to_gain_block: margin.smem_to_gain_block_bytes,
    }
}

mod example;
pub use example::example_report;

#[cfg(test)]
mod tests;
