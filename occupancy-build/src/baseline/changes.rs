//! What a bless did to the baseline, entry by entry: every entry (a kernel's numbers on one
//! arch under one source) it added, changed, removed, moved from a schema-1 lock under its
//! source, or restamped (the same numbers under another toolchain or other flags). The bless
//! says the counts and the first few of each in one warning; the report lists every one
//! (`baseline_changes`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::lint::evaluate::BaselineNumbers;
use occupancy_core::report::{BaselineChange, BaselineChangeKind};

use super::compare::differences;
use super::{Baseline, ToolchainStamp, Versions};

/// How many entries of each kind the warning names.
const NAMED_PER_KIND: usize = 3;

/// One entry as the baseline has it: its numbers and what they were made with.
struct Entry<'a> {
    numbers: &'a BaselineNumbers,
    flags: &'a [String],
    versions: Option<&'a Versions>,
}

/// (kernel, arch) -> source (`None`: unattributed) -> entry.
type Keyed<'a> = BTreeMap<(&'a str, &'a str), BTreeMap<Option<&'a str>, Entry<'a>>>;

fn keyed(baseline: &Baseline) -> Keyed<'_> {
    let mut keyed: Keyed<'_> = BTreeMap::new();
    for (source, arch, entries) in baseline.groups() {
        for (kernel, numbers) in &entries.kernels {
            let entry = Entry {
                numbers,
                flags: &entries.flags,
                versions: baseline.toolchains.get(arch),
            };
            keyed
                .entry((kernel.as_str(), arch))
                .or_default()
                .insert(source, entry);
        }
    }
    keyed
}

/// Every entry that differs from `before` (absent: no file) to `after`, by kind, then source,
/// kernel and arch. A removed entry says why: its source no longer exists under `root`, or its
/// kernel is no longer compiled there.
pub fn between(before: Option<&Baseline>, after: &Baseline, root: &Path) -> Vec<BaselineChange> {
    let nothing = Baseline::default();
    let before = keyed(before.unwrap_or(&nothing));
    let after = keyed(after);
    let keys: BTreeSet<(&str, &str)> = before.keys().chain(after.keys()).copied().collect();
    let empty = BTreeMap::new();
    let mut gone: BTreeMap<String, bool> = BTreeMap::new();
    let mut changes = Vec::new();
    for key in keys {
        let was = before.get(&key).unwrap_or(&empty);
        let is = after.get(&key).unwrap_or(&empty);
        let mut is_gone = |source: &str| match gone.get(source) {
            Some(gone) => *gone,
            None => {
                let missing = matches!(root.join(source).try_exists(), Ok(false));
                gone.insert(source.to_string(), missing);
                missing
            }
        };
        entry_changes(key, was, is, &mut is_gone, &mut changes);
    }
    changes.sort_by(|a, b| {
        (a.change, &a.source, &a.kernel, &a.arch).cmp(&(b.change, &b.source, &b.kernel, &b.arch))
    });
    changes
}

/// The changes of one kernel on one arch, over its sources.
fn entry_changes(
    (kernel, arch): (&str, &str),
    was: &BTreeMap<Option<&str>, Entry<'_>>,
    is: &BTreeMap<Option<&str>, Entry<'_>>,
    is_gone: &mut impl FnMut(&str) -> bool,
    changes: &mut Vec<BaselineChange>,
) {
    let change = |kind,
                  source: Option<&str>,
                  before: Option<&Entry<'_>>,
                  after: Option<&Entry<'_>>,
                  notes| BaselineChange {
        change: kind,
        source: source.map(str::to_string),
        kernel: kernel.to_string(),
        arch: arch.to_string(),
        before: before.map(|entry| *entry.numbers),
        after: after.map(|entry| *entry.numbers),
        notes,
    };
    // A schema-1 entry that left the unattributed ones moved under a source that compiles it.
    let legacy = was.get(&None).filter(|_| !is.contains_key(&None));
    let mut attributed = false;
    for (source, now) in is {
        let (kind, before) = match (was.get(source), legacy) {
            (Some(before), _) => (None, before),
            (None, Some(legacy)) if source.is_some() => {
                attributed = true;
                (Some(BaselineChangeKind::Attributed), legacy)
            }
            (None, _) => {
                changes.push(change(
                    BaselineChangeKind::Added,
                    *source,
                    None,
                    Some(now),
                    Vec::new(),
                ));
                continue;
            }
        };
        let mut notes = differences(before.numbers, now.numbers);
        notes.extend(provenance(before, now));
        let kind = kind.or(match (before.numbers != now.numbers, notes.is_empty()) {
            (true, _) => Some(BaselineChangeKind::Changed),
            (false, false) => Some(BaselineChangeKind::Restamped),
            (false, true) => None,
        });
        if let Some(kind) = kind {
            changes.push(change(kind, *source, Some(before), Some(now), notes));
        }
    }
    for (source, before) in was {
        if is.contains_key(source) || (source.is_none() && attributed) {
            continue;
        }
        let why = match source {
            Some(source) if is_gone(source) => format!("its source {source} no longer exists"),
            Some(_) => format!("no longer compiled on {arch}"),
            None => format!("a schema-1 entry whose kernel is no longer compiled on {arch}"),
        };
        changes.push(change(
            BaselineChangeKind::Removed,
            *source,
            Some(before),
            None,
            vec![why],
        ));
    }
}

/// `nvcc 12.9.41 -> 13.0.88`, `flags [-O3] -> [-O2]`: what the entry was made with, when it
/// differs.
fn provenance(before: &Entry<'_>, now: &Entry<'_>) -> Vec<String> {
    let stamp = |entry: &Entry<'_>, versions: &Versions| ToolchainStamp {
        nvcc: versions.nvcc.clone(),
        ptxas: versions.ptxas.clone(),
        flags: entry.flags.to_vec(),
    };
    match (before.versions, now.versions) {
        (Some(old), Some(new)) => {
            let change = stamp(now, new).change_from(&stamp(before, old));
            (!change.is_empty()).then_some(change).into_iter().collect()
        }
        (None, Some(new)) => vec![format!(
            "toolchain recorded: nvcc {}, ptxas {}",
            new.nvcc, new.ptxas
        )],
        _ => Vec::new(),
    }
}

/// The bless's one warning: where it wrote, how many entries of each kind and the first few of
/// each, and where the whole list is.
pub fn warning_line(
    lock: &str,
    converted: bool,
    changes: &[BaselineChange],
    report: &str,
) -> String {
    let converted = match converted {
        true => " (a schema-1 baseline, rewritten as schema 2)",
        false => "",
    };
    let mut line =
        format!("occupancy: OCCUPANCY_BLESS is set: wrote the baseline {lock}{converted}: ");
    if changes.is_empty() {
        line.push_str("no entry changed");
        return line;
    }
    let kinds = [
        BaselineChangeKind::Added,
        BaselineChangeKind::Changed,
        BaselineChangeKind::Removed,
        BaselineChangeKind::Attributed,
        BaselineChangeKind::Restamped,
    ];
    let mut counts = Vec::new();
    let mut named = Vec::new();
    for kind in kinds {
        let of_kind: Vec<&BaselineChange> = changes
            .iter()
            .filter(|change| change.change == kind)
            .collect();
        let always = matches!(
            kind,
            BaselineChangeKind::Added | BaselineChangeKind::Changed | BaselineChangeKind::Removed
        );
        if of_kind.is_empty() && !always {
            continue;
        }
        counts.push(format!("{} {}", of_kind.len(), kind.as_str()));
        if of_kind.is_empty() {
            continue;
        }
        let mut first: Vec<String> = of_kind
            .iter()
            .take(NAMED_PER_KIND)
            .map(|change| describe(change))
            .collect();
        if of_kind.len() > NAMED_PER_KIND {
            first.push(format!("{} more", of_kind.len() - NAMED_PER_KIND));
        }
        named.push(format!("{}: {}", kind.as_str(), first.join(", ")));
    }
    line.push_str(&format!(
        "{} ({}); every entry under `baseline_changes` in {report}",
        counts.join(", "),
        named.join("; ")
    ));
    line
}

/// `` `moe_gemm` on sm_90 in kernels/lib/moe.cu (registers: 24 -> 40) ``.
fn describe(change: &BaselineChange) -> String {
    // The kernel as written in C++ (`mul_mat_vec_q<1>`); the report's change keeps the symbol.
    let demangled = occupancy_core::ptxas::demangle(&change.kernel);
    let name = demangled.as_deref().map_or(
        change.kernel.as_str(),
        occupancy_core::report::readable_kernel_name,
    );
    let mut text = format!("`{name}` on {}", change.arch);
    if let Some(source) = &change.source {
        text.push_str(&format!(" in {source}"));
    }
    let notes = match change.change {
        BaselineChangeKind::Added | BaselineChangeKind::Attributed => &[][..],
        _ => &change.notes[..],
    };
    if !notes.is_empty() {
        text.push_str(&format!(" ({})", notes.join(", ")));
    }
    text
}
