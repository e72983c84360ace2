//! One kernel on one architecture, as every path checks it ([`KernelOnArch`]), and the
//! evaluation of such kernels at the launch their rows were computed at
//! ([`evaluate_at_launch`]), which `check` (sources, logs and binaries), `explain` and
//! `cargo occupancy build` call alike.
//!
//! Pure: the kernels arrive read and computed; nothing here reads a file or runs a tool.

use std::collections::BTreeMap;

use crate::arch::{self, ArchFacts, UnknownArch};
use crate::calc::Occupancy;
use crate::finding::Finding;
use crate::lint::evaluate::{check_kernel, CompiledOnArch, Launch, LevelSources};
use crate::lint::{Level, LintId};
use crate::ptxas::{KernelRecord, PtxEntry};
use crate::report::KernelRow;
use crate::spec::{BlockDim, KernelSpec};
use crate::tune::Bound;

/// One kernel on one architecture: the architecture's facts, looked up once; the report's row
/// (the kernel's names and places, what it compiled to, the launch it is checked at and the
/// calculator's answer there, its SASS facts when read); the compiler's record the row was made
/// from (ptxas's report or the binary's, with ptxas's warnings); and the kernel's `.entry`
/// directives when known.
#[derive(Debug, Clone)]
pub struct KernelOnArch {
    /// The architecture's facts (the table's row: `sm_90` for ptxas's `sm_90a`).
    pub arch: &'static ArchFacts,
    /// The kernel as the report shows it, computed at its launch.
    pub row: KernelRow,
    /// What the compiler reported for the kernel on this architecture.
    pub record: KernelRecord,
    /// The kernel's `.entry` directives in the PTX its SASS was assembled from, when known.
    pub ptx: Option<PtxEntry>,
}

impl KernelOnArch {
    /// The kernel whose `row` (computed at its launch by `KernelRow::from_record`) was made from
    /// `record`; the arch is the row's.
    pub fn of_row(
        row: KernelRow,
        record: KernelRecord,
        ptx: Option<PtxEntry>,
    ) -> Result<KernelOnArch, UnknownArch> {
        Ok(KernelOnArch {
            arch: arch::lookup(&row.arch)?,
            row,
            record,
            ptx,
        })
    }

    /// The calculator's answer at the row's launch, for the lints.
    pub fn occupancy(&self) -> Occupancy {
        self.row.occupancy_on(self.arch)
    }

    /// What the lints read of the kernel: `occupancy` is [`KernelOnArch::occupancy`]'s answer,
    /// `chosen` the bound the build chose on this arch for a key written `"auto"`.
    pub fn compiled_on<'a>(
        &'a self,
        occupancy: &'a Occupancy,
        chosen: Option<Bound>,
    ) -> CompiledOnArch<'a> {
        CompiledOnArch {
            arch: self.arch,
            record: &self.record,
            ptx: self.ptx.as_ref(),
            occupancy,
            chosen,
        }
    }
}

/// The lints of every kernel at the launch of its rows (a kernel's rows adjacent, as
/// `check` sorts and streams them): the gate's evaluation (`check_kernel`, worded for a launch
/// from the command line) with the defaults of every limit (no spills, no stack, no minimum
/// occupancy). `bounds_mismatch` is left out: there is no declaration for compiled bounds to
/// disagree with.
pub fn evaluate_at_launch(
    kernels: &[KernelOnArch],
    levels: &BTreeMap<LintId, Level>,
) -> Vec<Finding> {
    let sources = LevelSources {
        attribute: None,
        kernel_config: None,
        environment: None,
        crate_config: Some(levels),
    };
    let mut findings = Vec::new();
    for group in kernels.chunk_by(|a, b| {
        a.row.name == b.row.name
            && a.row.source.as_ref().map(|source| &source.path)
                == b.row.source.as_ref().map(|source| &source.path)
    }) {
        let first = &group[0].row;
        if !first.entry {
            continue;
        }
        let mut spec = KernelSpec::with_block(BlockDim::linear(first.block));
        spec.dynamic_smem_bytes = u32::try_from(first.dynamic_smem_bytes).unwrap_or(u32::MAX);
        let occupancies: Vec<Occupancy> = group.iter().map(KernelOnArch::occupancy).collect();
        let on: Vec<CompiledOnArch<'_>> = (group.iter().zip(&occupancies))
            .map(|(kernel, occupancy)| kernel.compiled_on(occupancy, None))
            .collect();
        for finding in check_kernel(Launch::CommandLine(&spec), &on, &sources) {
            findings.push(report_finding(first, finding));
        }
    }
    findings
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
