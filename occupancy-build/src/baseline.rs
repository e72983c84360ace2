//! The committed baseline (`occupancy.lock`): each kernel's registers, spills, stack, static
//! shared memory and occupancy per architecture, and the toolchain that produced them. JSON with
//! sorted keys, so a diff of the file reads like the change.
//!
//! The baseline is two-way: worse than the file is the `regression` lint, anything else that
//! differs (better numbers, a new or vanished kernel, another toolchain) is `baseline_stale`, so
//! the committed file always equals what the code compiles to. When the toolchain changed, a
//! summary says so first and each regression says whether the toolchain or the source moved.
//! `OCCUPANCY_BLESS=1` rewrites the entries of the archs it rebuilt and keeps every other one.
//!
//! The numbers are a committed excerpt of the build's report, not a second computation: they are
//! read from the report's rows ([`Baseline::of_report`], [`numbers_of`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::lint::evaluate::{self, BaselineNumbers, Finding};
use occupancy_core::report::{KernelRow, Report};
use serde::{Deserialize, Serialize};

use crate::toolchain::Toolchain;
use crate::Error;

/// The baseline file's contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    /// Arch -> the toolchain whose output the arch's numbers are (absent in files written before
    /// toolchains were recorded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub toolchains: BTreeMap<String, ToolchainStamp>,
    /// Kernel name -> arch -> numbers.
    pub kernels: BTreeMap<String, BTreeMap<String, BaselineNumbers>>,
}

/// What decides the compiled code besides the source: the compiler versions and the flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolchainStamp {
    /// `13.0.88` from nvcc's `V13.0.88`.
    pub nvcc: String,
    /// `13.0.88` from ptxas's `V13.0.88`.
    pub ptxas: String,
    /// The builder's flags and defines, then `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS`
    /// (include paths are left out: they name the machine, not the code).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

impl ToolchainStamp {
    /// The stamp of this build: versions asked from the tools, and the flags the build
    /// resolved (`Context::stamped_flags`).
    pub fn of(flags: &[String], toolchain: &Toolchain) -> ToolchainStamp {
        ToolchainStamp {
            nvcc: toolchain.nvcc_version(),
            ptxas: toolchain.ptxas_version(),
            flags: flags.to_vec(),
        }
    }

    /// `nvcc 13.0.88 -> 13.5.37, flags [-O3] -> [-O2]`: what differs from `earlier` to `self`.
    pub fn change_from(&self, earlier: &ToolchainStamp) -> String {
        let mut parts = Vec::new();
        if earlier.nvcc != self.nvcc {
            parts.push(format!("nvcc {} -> {}", earlier.nvcc, self.nvcc));
        }
        if earlier.ptxas != self.ptxas && (earlier.ptxas != earlier.nvcc || self.ptxas != self.nvcc)
        {
            parts.push(format!("ptxas {} -> {}", earlier.ptxas, self.ptxas));
        }
        if earlier.flags != self.flags {
            parts.push(format!(
                "flags [{}] -> [{}]",
                earlier.flags.join(" "),
                self.flags.join(" ")
            ));
        }
        parts.join(", ")
    }
}

/// The numbers the baseline keeps of one report row.
pub fn numbers_of(row: &KernelRow) -> BaselineNumbers {
    BaselineNumbers {
        registers: row.registers,
        spill_store_bytes: row.spill_store_bytes,
        spill_load_bytes: row.spill_load_bytes,
        stack_frame_bytes: row.stack_frame_bytes,
        static_smem_bytes: row.static_smem_bytes,
        occupancy: row.occupancy,
    }
}

impl Baseline {
    /// The baseline of a build's report: every entry kernel on every architecture it was
    /// checked on, each arch stamped with the build's toolchain.
    pub fn of_report(report: &Report, stamp: &ToolchainStamp) -> Baseline {
        let mut baseline = Baseline {
            schema_version: 1,
            toolchains: BTreeMap::new(),
            kernels: BTreeMap::new(),
        };
        for arch in &report.archs {
            baseline.toolchains.insert(arch.clone(), stamp.clone());
        }
        for row in report.kernels.iter().filter(|row| row.entry) {
            baseline
                .kernels
                .entry(row.name.clone())
                .or_default()
                .insert(row.arch.clone(), numbers_of(row));
            baseline
                .toolchains
                .entry(row.arch.clone())
                .or_insert_with(|| stamp.clone());
        }
        baseline
    }

    /// What blessing writes: `current` for the archs this build checked, `previous` for every
    /// other arch (a build for sm_80 only keeps the sm_90 baseline as it was).
    pub fn blessed(previous: Option<Baseline>, current: Baseline) -> Baseline {
        let Some(mut merged) = previous else {
            return current;
        };
        let rebuilt: BTreeSet<&String> = current.toolchains.keys().collect();
        for archs in merged.kernels.values_mut() {
            archs.retain(|arch, _| !rebuilt.contains(arch));
        }
        merged.kernels.retain(|_, archs| !archs.is_empty());
        for (kernel, archs) in current.kernels {
            merged.kernels.entry(kernel).or_default().extend(archs);
        }
        merged.toolchains.extend(current.toolchains);
        merged.schema_version = current.schema_version;
        merged
    }

    /// Reads the baseline; `None` when the file does not exist (no regression checks).
    pub fn load(path: &Path) -> Result<Option<Baseline>, Error> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    error,
                })
            }
        };
        let baseline: Baseline =
            serde_json::from_str(&text).map_err(|error| Error::UnreadableBaseline {
                path: path.to_path_buf(),
                error,
            })?;
        if baseline.schema_version != 1 {
            return Err(Error::UnsupportedBaselineSchema {
                path: path.to_path_buf(),
                schema_version: baseline.schema_version,
            });
        }
        Ok(Some(baseline))
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the baseline is plain data");
        text.push('\n');
        text
    }
}

/// `OCCUPANCY_BLESS`: writes the crate's numbers (`report`, every product so far) as the
/// package's baseline, keeping the entries of archs the build did not check.
pub(crate) fn bless_file(
    context: &crate::context::Context,
    report: &Report,
    stamp: ToolchainStamp,
    cargo: &mut crate::cargo_lines::CargoLines,
) -> Result<(), Error> {
    let path = baseline_path(context);
    let previous = Baseline::load(&path)?;
    let blessed = Baseline::blessed(previous, Baseline::of_report(report, &stamp));
    crate::fsutil::write_atomic(&path, blessed.to_text().as_bytes())?;
    cargo.warning(&format!(
        "occupancy: OCCUPANCY_BLESS is set: wrote the baseline {}",
        crate::fsutil::display_path(&context.manifest_dir, &path)
    ));
    Ok(())
}

/// The package's baseline file: `baseline = ...` under `[package.metadata.occupancy]`, else
/// `occupancy.lock`, relative to the package root.
pub(crate) fn baseline_path(context: &crate::context::Context) -> std::path::PathBuf {
    context.manifest_dir.join(
        context
            .settings
            .baseline
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("occupancy.lock")),
    )
}

/// What comparing a build with the baseline found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// One line per toolchain change (`nvcc 13.0.88 -> 13.5.37 on sm_90: 12 kernels changed, 3
    /// worse, 9 better`), to show before any finding.
    pub toolchain_changes: Vec<String>,
    /// `regression` and `baseline_stale` findings, with the kernel each concerns (`None` for a
    /// whole arch).
    pub findings: Vec<(Option<String>, Finding)>,
}

/// Compares the build (`current`, from [`Baseline::of_report`]) with the committed baseline on
/// the archs the build checked; archs it did not check are not compared.
pub fn compare(baseline: &Baseline, current: &Baseline) -> Comparison {
    let mut comparison = Comparison::default();
    let mut changed: BTreeMap<&str, KernelCounts> = BTreeMap::new();
    for (kernel, archs) in &current.kernels {
        for (arch, now) in archs {
            let before = baseline
                .kernels
                .get(kernel)
                .and_then(|archs| archs.get(arch));
            let Some(before) = before else {
                comparison.findings.push((
                    Some(kernel.clone()),
                    evaluate::baseline_stale(
                        arch,
                        format!("kernel `{kernel}` on {arch} is not in the baseline"),
                        Vec::new(),
                    ),
                ));
                continue;
            };
            if before == now {
                continue;
            }
            let attribution = attribution(baseline, current, arch);
            let counts = changed.entry(arch).or_default();
            counts.changed.insert(kernel);
            match evaluate::regression(kernel, arch, before, now) {
                Some(mut finding) => {
                    counts.worse.insert(kernel);
                    finding.notes.push(attribution);
                    comparison.findings.push((Some(kernel.clone()), finding));
                }
                None => comparison.findings.push((
                    Some(kernel.clone()),
                    evaluate::baseline_stale(
                        arch,
                        format!("kernel `{kernel}` is better than the baseline on {arch}"),
                        differences(before, now),
                    ),
                )),
            }
        }
    }
    vanished_kernels(baseline, current, &mut comparison);
    toolchain_changes(baseline, current, &changed, &mut comparison);
    comparison
}

/// Kernels that changed on one arch, and which of them got worse.
#[derive(Debug, Default)]
struct KernelCounts<'a> {
    changed: BTreeSet<&'a String>,
    worse: BTreeSet<&'a String>,
}

/// `registers: 48 -> 40` for every number that differs.
fn differences(before: &BaselineNumbers, now: &BaselineNumbers) -> Vec<String> {
    let mut notes = Vec::new();
    let pairs = [
        (
            "registers",
            u64::from(before.registers),
            u64::from(now.registers),
        ),
        (
            "spill store bytes",
            before.spill_store_bytes,
            now.spill_store_bytes,
        ),
        (
            "spill load bytes",
            before.spill_load_bytes,
            now.spill_load_bytes,
        ),
        (
            "stack frame bytes",
            before.stack_frame_bytes,
            now.stack_frame_bytes,
        ),
        (
            "static shared memory bytes",
            before.static_smem_bytes,
            now.static_smem_bytes,
        ),
    ];
    for (what, before, now) in pairs {
        if before != now {
            notes.push(format!("{what}: {before} -> {now}"));
        }
    }
    if (before.occupancy - now.occupancy).abs() > 1e-9 {
        notes.push(format!(
            "occupancy: {:.1}% -> {:.1}%",
            before.occupancy * 100.0,
            now.occupancy * 100.0
        ));
    }
    notes
}

/// Whether a change on `arch` comes with a toolchain change, in words.
fn attribution(baseline: &Baseline, current: &Baseline, arch: &str) -> String {
    let now = current.toolchains.get(arch);
    match (baseline.toolchains.get(arch), now) {
        (Some(before), Some(now)) if before != now => format!(
            "cause: the toolchain changed since the baseline ({}); the same source may compile differently now. Rebuild with the baseline's toolchain to tell the two apart, or bless to accept the compiler's numbers",
            now.change_from(before)
        ),
        (Some(before), _) => format!(
            "cause: the source or the declaration changed (the toolchain is the baseline's: nvcc {}, ptxas {}, the same flags)",
            before.nvcc, before.ptxas
        ),
        (None, _) => "cause: unknown (the baseline does not record the toolchain it was made with; bless it to record one)".to_string(),
    }
}

/// Baseline entries on checked archs whose kernel was not compiled.
fn vanished_kernels(baseline: &Baseline, current: &Baseline, comparison: &mut Comparison) {
    for (kernel, archs) in &baseline.kernels {
        for arch in archs.keys() {
            let checked = current.toolchains.contains_key(arch);
            let compiled = current
                .kernels
                .get(kernel)
                .is_some_and(|archs| archs.contains_key(arch));
            if checked && !compiled {
                comparison.findings.push((
                    Some(kernel.clone()),
                    evaluate::baseline_stale(
                        arch,
                        format!(
                            "kernel `{kernel}` is in the baseline for {arch} but was not compiled"
                        ),
                        Vec::new(),
                    ),
                ));
            }
        }
    }
}

/// The summary lines and one `baseline_stale` finding per arch whose toolchain differs.
fn toolchain_changes(
    baseline: &Baseline,
    current: &Baseline,
    changed: &BTreeMap<&str, KernelCounts<'_>>,
    comparison: &mut Comparison,
) {
    // Archs with the same change are summarised together.
    let mut by_change: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (arch, now) in &current.toolchains {
        let change = match baseline.toolchains.get(arch) {
            Some(before) if before == now => continue,
            Some(before) => now.change_from(before),
            None if baseline
                .kernels
                .values()
                .any(|archs| archs.contains_key(arch)) =>
            {
                format!(
                    "no recorded toolchain -> nvcc {}, ptxas {}",
                    now.nvcc, now.ptxas
                )
            }
            None => continue,
        };
        by_change.entry(change).or_default().push(arch);
    }
    for (change, archs) in by_change {
        let mut kernels_changed = BTreeSet::new();
        let mut kernels_worse = BTreeSet::new();
        for arch in &archs {
            if let Some(counts) = changed.get(arch) {
                kernels_changed.extend(counts.changed.iter().copied());
                kernels_worse.extend(counts.worse.iter().copied());
            }
        }
        let worse = kernels_worse.len();
        let line = format!(
            "{change} on {}: {} kernel{} changed, {worse} worse, {} better",
            archs.join(", "),
            kernels_changed.len(),
            if kernels_changed.len() == 1 { "" } else { "s" },
            kernels_changed.len() - worse
        );
        for arch in &archs {
            comparison.findings.push((
                None,
                evaluate::baseline_stale(
                    arch,
                    format!("the baseline for {arch} was made with another toolchain"),
                    vec![line.clone()],
                ),
            ));
        }
        comparison.toolchain_changes.push(line);
    }
}

#[cfg(test)]
mod tests;
