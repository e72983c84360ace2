//! One product's build against the committed baseline: `regression` (worse numbers) and
//! `baseline_stale` (better, new, vanished, another toolchain), with the toolchain changes said
//! first. Only what the product can judge is judged: its sources' entries on the archs it built,
//! and the entries of sources that no longer exist when the caller asks (`deleted`).

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::lint::evaluate::{self, BaselineNumbers, Finding};

use super::{Baseline, ToolchainStamp};

/// The kernel a finding concerns: its symbol and the source it is compiled from (`None`: a
/// schema-1 entry, or a row without a source).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelAt {
    pub source: Option<String>,
    pub kernel: String,
}

/// What comparing a build with the baseline found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// One line per toolchain change (`nvcc 13.0.88 -> 13.5.37 on sm_90: 12 kernels changed, 3
    /// worse, 9 better`, `flags [-O3] -> [-O2] for kernels/a.cu on sm_90: ...`), to show before
    /// any finding.
    pub toolchain_changes: Vec<String>,
    /// `regression` and `baseline_stale` findings, with the kernel each concerns (`None` for a
    /// whole arch).
    pub findings: Vec<(Option<KernelAt>, Finding)>,
}

/// A toolchain change between a committed entry and the build, in words: the arch's versions
/// and the entries' flags (either may be empty, not both).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Change {
    versions: String,
    flags: String,
}

impl Change {
    fn between(before: Option<&ToolchainStamp>, now: Option<&ToolchainStamp>) -> Option<Change> {
        let now = now?;
        let Some(before) = before else {
            return Some(Change {
                versions: format!(
                    "no recorded toolchain -> nvcc {}, ptxas {}",
                    now.nvcc, now.ptxas
                ),
                flags: String::new(),
            });
        };
        let change = Change {
            versions: now.versions_change_from(before),
            flags: now.flags_change_from(before),
        };
        (!change.versions.is_empty() || !change.flags.is_empty()).then_some(change)
    }
}

/// The kernels compared under one toolchain change.
#[derive(Debug, Default)]
struct Under<'a> {
    sources: BTreeSet<&'a str>,
    archs: BTreeSet<&'a str>,
    changed: BTreeSet<(Option<&'a str>, &'a str)>,
    worse: BTreeSet<(Option<&'a str>, &'a str)>,
}

/// One kernel of the build on one arch.
struct Item<'a> {
    source: Option<&'a str>,
    arch: &'a str,
    kernel: &'a str,
    now: &'a BaselineNumbers,
}

/// Compares one product (`current`, from [`Baseline::of_report`]) with the committed baseline:
/// each kernel it compiled with its entry (its source's, else a schema-1 entry of its name);
/// the committed entries of the sources it compiled, on the archs it built, that it did not
/// compile; and every entry of the `deleted` sources (files that no longer exist).
pub fn compare(baseline: &Baseline, current: &Baseline, deleted: &BTreeSet<String>) -> Comparison {
    let mut comparison = Comparison::default();
    let mut changes: BTreeMap<Change, Under<'_>> = BTreeMap::new();
    for (source, arch, entries) in current.groups() {
        for (kernel, now) in &entries.kernels {
            let item = Item {
                source,
                arch,
                kernel,
                now,
            };
            compare_kernel(baseline, current, &item, &mut changes, &mut comparison);
        }
    }
    vanished_kernels(baseline, current, deleted, &mut comparison);
    toolchain_changes(baseline, current, changes, &mut comparison);
    comparison
}

/// One kernel's numbers against its entry: new, better or worse, and under which toolchain
/// change it was compared.
fn compare_kernel<'a>(
    baseline: &'a Baseline,
    current: &'a Baseline,
    item: &Item<'a>,
    changes: &mut BTreeMap<Change, Under<'a>>,
    comparison: &mut Comparison,
) {
    let Item {
        source,
        arch,
        kernel,
        now,
    } = *item;
    let at = Some(KernelAt {
        source: source.map(str::to_string),
        kernel: kernel.to_string(),
    });
    let Some((committed_under, before)) = baseline.committed(source, arch, kernel) else {
        let message = format!("kernel `{kernel}` on {arch} is not in the baseline");
        let notes = source
            .map(|source| vec![format!("compiled from {source}")])
            .unwrap_or_default();
        comparison
            .findings
            .push((at, evaluate::baseline_stale(arch, message, notes)));
        return;
    };
    let before_stamp = baseline.stamp(committed_under, arch);
    let now_stamp = current.stamp(source, arch);
    let mut under = Change::between(before_stamp.as_ref(), now_stamp.as_ref()).map(|change| {
        let under = changes.entry(change.clone()).or_default();
        under.archs.insert(arch);
        if !change.flags.is_empty() {
            under
                .sources
                .insert(source.unwrap_or("kernels of unknown source"));
        }
        under
    });
    if before == now {
        return;
    }
    if let Some(under) = under.as_mut() {
        under.changed.insert((source, kernel));
    }
    let cause = attribution(before_stamp.as_ref(), now_stamp.as_ref());
    let finding = match evaluate::regression(kernel, arch, before, now) {
        Some(mut finding) => {
            if let Some(under) = under {
                under.worse.insert((source, kernel));
            }
            finding.notes.push(cause);
            if before.chosen_bounds != now.chosen_bounds {
                finding
                    .notes
                    .extend(differences(before, now).into_iter().take(1));
            }
            finding
        }
        None if before.chosen_bounds != now.chosen_bounds => evaluate::baseline_stale(
            arch,
            format!("the bounds the build chose for kernel `{kernel}` on {arch} changed"),
            differences(before, now),
        ),
        None => evaluate::baseline_stale(
            arch,
            format!("kernel `{kernel}` is better than the baseline on {arch}"),
            differences(before, now),
        ),
    };
    comparison.findings.push((at, finding));
}

/// `registers: 48 -> 40` for every number that differs.
pub(crate) fn differences(before: &BaselineNumbers, now: &BaselineNumbers) -> Vec<String> {
    let mut notes = Vec::new();
    if before.chosen_bounds != now.chosen_bounds {
        let words = |bound: Option<occupancy_core::tune::Bound>| {
            bound.map_or(
                "none recorded (no bound written \"auto\")".to_string(),
                |bound| bound.to_string(),
            )
        };
        notes.push(format!(
            "chosen bounds: {} -> {}",
            words(before.chosen_bounds),
            words(now.chosen_bounds)
        ));
    }
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

/// Whether a change comes with a toolchain change (the arch's versions, the source's flags), in
/// words.
fn attribution(before: Option<&ToolchainStamp>, now: Option<&ToolchainStamp>) -> String {
    match (before, now) {
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

/// Committed entries this product should have compiled and did not: of a source it compiled,
/// on an arch it built; and every entry of a `deleted` source.
fn vanished_kernels(
    baseline: &Baseline,
    current: &Baseline,
    deleted: &BTreeSet<String>,
    comparison: &mut Comparison,
) {
    for (source, archs) in &baseline.sources {
        let gone = deleted.contains(source);
        let compiled = current.sources.get(source);
        if !gone && compiled.is_none() {
            continue;
        }
        for (arch, entries) in archs {
            if !gone && !current.toolchains.contains_key(arch) {
                continue;
            }
            let now = compiled.and_then(|archs| archs.get(arch));
            for kernel in entries.kernels.keys() {
                if now.is_some_and(|now| now.kernels.contains_key(kernel)) {
                    continue;
                }
                let (message, notes) = match gone {
                    true => (
                        format!("kernel `{kernel}` is in the baseline for {arch} but its source {source} no longer exists"),
                        Vec::new(),
                    ),
                    false => (
                        format!("kernel `{kernel}` is in the baseline for {arch} but was not compiled"),
                        vec![format!("the baseline has it under {source}, which this build compiled")],
                    ),
                };
                let at = KernelAt {
                    source: Some(source.clone()),
                    kernel: kernel.clone(),
                };
                comparison
                    .findings
                    .push((Some(at), evaluate::baseline_stale(arch, message, notes)));
            }
        }
    }
}

/// The summary lines and one `baseline_stale` finding per arch of each toolchain change. An
/// arch whose versions changed is said even when no kernel of this product was compared there.
fn toolchain_changes<'a>(
    baseline: &'a Baseline,
    current: &'a Baseline,
    mut changes: BTreeMap<Change, Under<'a>>,
    comparison: &mut Comparison,
) {
    for (arch, now) in &current.toolchains {
        let Some(before) = baseline.toolchains.get(arch) else {
            continue;
        };
        let stamp = |versions: &super::Versions| ToolchainStamp {
            nvcc: versions.nvcc.clone(),
            ptxas: versions.ptxas.clone(),
            flags: Vec::new(),
        };
        let versions = stamp(now).versions_change_from(&stamp(before));
        let said = changes.iter().any(|(change, under)| {
            change.versions == versions && under.archs.contains(arch.as_str())
        });
        if !versions.is_empty() && !said {
            let change = Change {
                versions,
                flags: String::new(),
            };
            changes.entry(change).or_default().archs.insert(arch);
        }
    }
    for (change, under) in changes {
        let sources: Vec<&str> = under.sources.iter().copied().collect();
        let mut parts = Vec::new();
        if !change.versions.is_empty() {
            parts.push(change.versions.clone());
        }
        if !change.flags.is_empty() {
            parts.push(format!("{} for {}", change.flags, sources.join(", ")));
        }
        let archs: Vec<&str> = under.archs.iter().copied().collect();
        let changed = under.changed.len();
        let worse = under.worse.len();
        let line = format!(
            "{} on {}: {changed} kernel{} changed, {worse} worse, {} better",
            parts.join(", "),
            archs.join(", "),
            if changed == 1 { "" } else { "s" },
            changed - worse
        );
        for arch in archs {
            let message = match change.versions.is_empty() {
                false => format!("the baseline for {arch} was made with another toolchain"),
                true => format!(
                    "the baseline for {arch} was made with other flags for {}",
                    sources.join(", ")
                ),
            };
            comparison.findings.push((
                None,
                evaluate::baseline_stale(arch, message, vec![line.clone()]),
            ));
        }
        comparison.toolchain_changes.push(line);
    }
}
