//! One kernel on one architecture, as every path checks it ([`KernelOnArch`]), and the one
//! evaluation of a kernel's values ([`evaluate`]: the launch lints and the machine-code lints,
//! each at its level), which the build, `check` (sources, logs and binaries), `explain` and
//! `cargo occupancy build` call alike ([`evaluate_at_launch`] groups a check's rows by kernel).
//!
//! Pure: the kernels arrive read; nothing here reads a file or runs a tool.

use std::collections::BTreeMap;

use crate::arch::{self, ArchFacts, UnknownArch};
use crate::calc::Occupancy;
use crate::finding::Finding;
use crate::lint::evaluate::{
    check_kernel, evaluate_sass, hottest_spill_note, resolve_level, resolve_undeclared_level,
    CompiledOnArch, Launch, LevelSources, SassLintInputs, SmemSpillRoom,
};
use crate::lint::{Level, LintId};
use crate::ptxas::{KernelRecord, PtxEntry};
use crate::report::{KernelRow, RowLaunch};
use crate::spec::{BlockDim, KernelSpec};
use crate::tune::Bound;

/// One kernel on one architecture: the architecture's facts, looked up once; the calculator's
/// answer at the kernel's launch, computed once; the report's row made from the two (the
/// kernel's names and places, what it compiled to, the launch, its SASS facts when read); the
/// compiler's record the row was made from (ptxas's report or the binary's, with ptxas's
/// warnings); the kernel's `.entry` directives when known; what the machine-code lints need to
/// know of its compile; and the bound the build chose for `"auto"`.
///
/// The row's resources and launch are fixed at [`KernelOnArch::new`]: front ends add names,
/// places and SASS facts to `row`, never registers, memory or the launch.
#[derive(Debug, Clone)]
pub struct KernelOnArch {
    /// The architecture's facts (the table's row: `sm_90` for ptxas's `sm_90a`).
    pub arch: &'static ArchFacts,
    /// The kernel as the report shows it, computed at its launch.
    pub row: KernelRow,
    /// What the compiler reported for the kernel on this architecture.
    pub record: KernelRecord,
    /// The kernel's `.entry` directives in the PTX its SASS was assembled from (for a binary,
    /// those its cubin keeps), when known.
    pub ptx: Option<PtxEntry>,
    /// What the machine-code lints need to know of the compile besides `row.sass`.
    pub compile: CompileNotes,
    /// The bound the build chose on this arch for a key written `"auto"` (`crate::tune`);
    /// `None` when no key of the kernel's declaration is `"auto"`.
    pub chosen: Option<Bound>,
    /// The calculator's answer at the row's launch: the one the row's columns show.
    occupancy: Occupancy,
}

/// What the machine-code lints need to know of a kernel's compile besides its SASS facts.
#[derive(Debug, Clone, Default)]
pub struct CompileNotes {
    /// The kernel's PTX has `setmaxnreg` (unknown for a binary without PTX: `false`).
    pub ptx_has_setmaxnreg: bool,
    /// ptxas's warnings that it ignored `setmaxnreg` (C7504, C7505, C7508) in the kernel's
    /// compile, verbatim (none for a binary, which keeps no compiler log).
    pub setmaxnreg_warnings: Vec<String>,
    /// The toolkit and the compile let ptxas spill to shared memory (`enable_smem_spilling`).
    pub smem_spilling: bool,
}

impl KernelOnArch {
    /// The kernel of `record` (its `.entry` directives `ptx`) at `launch`: the arch looked up,
    /// the occupancy computed and the row made from them, once. An arch the table does not know
    /// is an error.
    pub fn new(
        record: KernelRecord,
        ptx: Option<PtxEntry>,
        launch: RowLaunch,
    ) -> Result<KernelOnArch, UnknownArch> {
        let arch = arch::lookup(&record.arch)?;
        let mut row = KernelRow::of_record(&record, ptx.as_ref(), launch, arch);
        let occupancy = row.occupancy_on(arch);
        row.fill_computed(arch, &occupancy);
        Ok(KernelOnArch {
            arch,
            row,
            record,
            ptx,
            compile: CompileNotes::default(),
            chosen: None,
            occupancy,
        })
    }

    /// The calculator's answer at the row's launch.
    pub fn occupancy(&self) -> &Occupancy {
        &self.occupancy
    }

    /// What the launch lints read of the kernel.
    fn compiled_on(&self) -> CompiledOnArch<'_> {
        CompiledOnArch {
            arch: self.arch,
            record: &self.record,
            ptx: self.ptx.as_ref(),
            occupancy: &self.occupancy,
            chosen: self.chosen,
        }
    }

    /// The `.entry` directives that compile the kernel with the bounds `spec` asks for on this
    /// arch (the help of a `bounds_mismatch` in a PTX source).
    pub fn entry_directives(&self, spec: &KernelSpec) -> String {
        self.compiled_on().entry_directives(spec)
    }

    /// The machine-code lints' findings (none without SASS facts), unleveled.
    fn sass_findings(&self) -> Vec<Finding> {
        let Some(facts) = &self.row.sass else {
            return Vec::new();
        };
        let row = &self.row;
        let smem_spill_room = self.compile.smem_spilling.then(|| {
            let sizes = (row.stack_frame_bytes, row.static_smem_bytes);
            SmemSpillRoom::of(self.arch, sizes, self.ptx.as_ref(), &self.occupancy)
        });
        evaluate_sass(&SassLintInputs {
            facts,
            kernel: row.display_name(),
            arch: &row.arch,
            block_threads: row.block,
            registers: row.registers,
            ptx_has_setmaxnreg: self.compile.ptx_has_setmaxnreg,
            setmaxnreg_warnings: &self.compile.setmaxnreg_warnings,
            smem_spill_room: smem_spill_room.flatten(),
        })
    }
}

/// Every finding of one kernel (`kernel`: its values, an arch each) at `launch`, each at its
/// level from `levels`, allowed ones dropped: the gate's launch lints on the entry's archs
/// (`check_kernel`; a `spills` finding carries the hottest spill's line when the SASS was
/// read), then the machine-code lints of each arch's SASS (for an undeclared kernel at the levels
/// [`resolve_undeclared_level`] gives: intent lints are `allow` unless set). The one route from
/// a kernel to its findings.
pub fn evaluate(
    launch: Launch<'_>,
    kernel: &[KernelOnArch],
    levels: &LevelSources<'_>,
) -> Vec<Finding> {
    let entries: Vec<CompiledOnArch<'_>> = (kernel.iter())
        .filter(|on| on.row.entry)
        .map(KernelOnArch::compiled_on)
        .collect();
    let mut findings = if entries.is_empty() {
        Vec::new()
    } else {
        check_kernel(launch, &entries, levels)
    };
    for finding in findings.iter_mut().filter(|f| f.lint == LintId::Spills) {
        note_hottest_spill(finding, kernel);
    }
    let machine_code_level = match launch {
        Launch::Undeclared(_) => resolve_undeclared_level,
        _ => resolve_level,
    };
    for on in kernel {
        for finding in on.sass_findings() {
            let level = machine_code_level(finding.lint, levels);
            if level != Level::Allow {
                findings.push(Finding { level, ..finding });
            }
        }
    }
    findings
}

/// Adds to a `spills` finding the line of the hottest spill on its architecture.
fn note_hottest_spill(finding: &mut Finding, kernel: &[KernelOnArch]) {
    let facts = (kernel.iter())
        .filter(|on| {
            finding
                .arch
                .as_deref()
                .is_none_or(|arch| arch == on.row.arch)
        })
        .find_map(|on| on.row.sass.as_ref());
    if let Some(note) = facts.and_then(hottest_spill_note) {
        finding.notes.push(note);
    }
}

/// The findings of every kernel at the launch of its rows (a kernel's rows adjacent, as
/// `check` sorts and streams them): [`evaluate`] at a launch from the command line, with the
/// defaults of every limit (no spills, no stack, no minimum occupancy) and `levels` over the
/// lints' defaults, each made a report's finding ([`report_finding`]). `bounds_mismatch` is
/// left out: there is no declaration for compiled bounds to disagree with.
pub fn evaluate_at_launch(
    kernels: &[KernelOnArch],
    levels: &BTreeMap<LintId, Level>,
) -> Vec<Finding> {
    let sources = LevelSources {
        crate_config: Some(levels),
        ..LevelSources::default()
    };
    let mut findings = Vec::new();
    for group in kernels.chunk_by(|a, b| {
        a.row.name == b.row.name
            && a.row.source.as_ref().map(|source| &source.path)
                == b.row.source.as_ref().map(|source| &source.path)
    }) {
        let first = &group[0].row;
        let spec = launch_spec(BlockDim::linear(first.block), first.dynamic_smem_bytes);
        for finding in evaluate(Launch::CommandLine(&spec), group, &sources) {
            findings.push(report_finding(first, finding));
        }
    }
    findings
}

/// The spec a kernel nothing declares is evaluated at: `block` and `dynamic_smem_bytes` (per
/// block, saturated), with the default limits (no spills, no stack, no minimum occupancy).
pub fn launch_spec(block: BlockDim, dynamic_smem_bytes: u64) -> KernelSpec {
    let mut spec = KernelSpec::with_block(block);
    spec.dynamic_smem_bytes = u32::try_from(dynamic_smem_bytes).unwrap_or(u32::MAX);
    spec
}

/// A finding of `row`'s kernel, for the report: people read the demangled name, the symbol
/// stays in `kernel` (and SARIF's logical location); located at the kernel's definition.
pub fn report_finding(row: &KernelRow, finding: Finding) -> Finding {
    let readable = |text: &str| {
        if row.demangled != row.name && !row.demangled.is_empty() {
            text.replace(&format!("`{}`", row.name), &format!("`{}`", row.demangled))
        } else {
            text.to_string()
        }
    };
    Finding {
        crate_name: None,
        kernel: Some(row.name.clone()),
        message: readable(&finding.message),
        notes: finding.notes.iter().map(|note| readable(note)).collect(),
        location: row.source.clone(),
        reason: None,
        ..finding
    }
}
