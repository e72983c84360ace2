use super::compare::Comparison;
use super::*;
use occupancy_core::lint::LintId;
use occupancy_core::report::BaselineChangeKind;

/// The one source of the single-product baselines below.
const SOURCE: &str = "kernels/k.cu";

fn numbers(registers: u32, occupancy: f64) -> BaselineNumbers {
    BaselineNumbers {
        registers,
        spill_store_bytes: 0,
        spill_load_bytes: 0,
        stack_frame_bytes: 0,
        static_smem_bytes: 0,
        occupancy,
        chosen_bounds: None,
    }
}

fn stamp(nvcc: &str) -> ToolchainStamp {
    ToolchainStamp {
        nvcc: nvcc.into(),
        ptxas: nvcc.into(),
        flags: vec!["-O3".into()],
    }
}

/// A product compiling `source` with `flags` under nvcc `version` on `archs`: `kernels` (name,
/// arch, registers). The source is a key even without kernels, as [`Baseline::of_report`] makes
/// it for every compiled source.
fn product(
    version: &str,
    source: &str,
    flags: &[&str],
    archs: &[&str],
    kernels: &[(&str, &str, u32)],
) -> Baseline {
    let mut baseline = Baseline::default();
    for arch in archs {
        baseline
            .toolchains
            .insert(arch.to_string(), stamp(version).versions());
    }
    let groups = baseline.sources.entry(source.to_string()).or_default();
    for (kernel, arch, registers) in kernels {
        groups
            .entry(arch.to_string())
            .or_insert_with(|| ArchEntries {
                flags: flags.iter().map(|flag| flag.to_string()).collect(),
                kernels: BTreeMap::new(),
            })
            .kernels
            .insert(kernel.to_string(), numbers(*registers, 0.5));
    }
    baseline
}

/// A baseline of `kernels` (name, arch, registers) of [`SOURCE`] made with nvcc `version` on
/// `archs`.
fn baseline(version: &str, archs: &[&str], kernels: &[(&str, &str, u32)]) -> Baseline {
    product(version, SOURCE, &["-O3"], archs, kernels)
}

/// `source`'s entry of `kernel` on `arch`.
fn entry<'a>(
    baseline: &'a Baseline,
    source: &str,
    kernel: &str,
    arch: &str,
) -> &'a BaselineNumbers {
    &baseline.sources[source][arch].kernels[kernel]
}

/// Two products merged as a bless of both writes them.
fn merged(products: &[Baseline]) -> Baseline {
    Baseline::blessed(None, products, &BTreeSet::new())
}

fn nothing_deleted() -> BTreeSet<String> {
    BTreeSet::new()
}

fn lints(comparison: &Comparison) -> Vec<(Option<&str>, LintId, Option<&str>)> {
    comparison
        .findings
        .iter()
        .map(|(at, finding)| {
            (
                at.as_ref().map(|at| at.kernel.as_str()),
                finding.lint,
                finding.arch.as_deref(),
            )
        })
        .collect()
}

#[test]
fn blessing_one_arch_keeps_every_other_arch() {
    let committed = baseline(
        "13.0.88",
        &["sm_80", "sm_90"],
        &[("k", "sm_80", 32), ("k", "sm_90", 12), ("old", "sm_90", 8)],
    );
    let sm_80_build = baseline("13.0.88", &["sm_80"], &[("k", "sm_80", 40)]);
    let blessed = Baseline::blessed(Some(committed.clone()), &[sm_80_build], &nothing_deleted());
    assert_eq!(entry(&blessed, SOURCE, "k", "sm_80").registers, 40);
    assert_eq!(
        entry(&blessed, SOURCE, "k", "sm_90"),
        entry(&committed, SOURCE, "k", "sm_90")
    );
    assert_eq!(
        entry(&blessed, SOURCE, "old", "sm_90"),
        entry(&committed, SOURCE, "old", "sm_90")
    );
    assert_eq!(blessed.toolchains.len(), 2);
    // The next sm_90 regression (12 to 32 registers) still fails against the blessed file.
    let regressed = baseline(
        "13.0.88",
        &["sm_90"],
        &[("k", "sm_90", 32), ("old", "sm_90", 8)],
    );
    assert_eq!(
        lints(&compare(&blessed, &regressed, &nothing_deleted())),
        [(Some("k"), LintId::Regression, Some("sm_90"))]
    );
}

#[test]
fn blessing_drops_kernels_gone_from_a_rebuilt_arch_only() {
    let committed = baseline(
        "13.0.88",
        &["sm_80", "sm_90"],
        &[("gone", "sm_80", 8), ("gone", "sm_90", 8)],
    );
    let blessed = Baseline::blessed(
        Some(committed),
        &[baseline("13.0.88", &["sm_80"], &[])],
        &nothing_deleted(),
    );
    assert!(!blessed.sources[SOURCE].contains_key("sm_80"));
    assert!(blessed.sources[SOURCE]["sm_90"]
        .kernels
        .contains_key("gone"));
}

#[test]
fn equal_builds_find_nothing_and_better_ones_are_stale() {
    let committed = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 48)]);
    assert_eq!(
        compare(&committed, &committed, &nothing_deleted()),
        Comparison::default()
    );
    let better = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 40)]);
    let comparison = compare(&committed, &better, &nothing_deleted());
    assert_eq!(
        lints(&comparison),
        [(Some("k"), LintId::BaselineStale, Some("sm_90"))]
    );
    let finding = &comparison.findings[0].1;
    assert_eq!(
        finding.message,
        "kernel `k` is better than the baseline on sm_90"
    );
    assert_eq!(finding.notes, ["registers: 48 -> 40"]);
    assert!(comparison.toolchain_changes.is_empty());
}

#[test]
fn new_and_vanished_kernels_are_stale_on_checked_archs_only() {
    let committed = baseline(
        "13.0.88",
        &["sm_80", "sm_90"],
        &[("gone", "sm_80", 8), ("gone", "sm_90", 8)],
    );
    let build = baseline("13.0.88", &["sm_90"], &[("new", "sm_90", 8)]);
    let comparison = compare(&committed, &build, &nothing_deleted());
    let mut found = lints(&comparison);
    found.sort();
    assert_eq!(
        found,
        [
            (Some("gone"), LintId::BaselineStale, Some("sm_90")),
            (Some("new"), LintId::BaselineStale, Some("sm_90")),
        ]
    );
    let vanished = comparison
        .findings
        .iter()
        .find(|(at, _)| at.as_ref().is_some_and(|at| at.kernel == "gone"))
        .map(|(_, finding)| finding)
        .unwrap();
    assert_eq!(
        vanished.message,
        "kernel `gone` is in the baseline for sm_90 but was not compiled"
    );
}

#[test]
fn a_toolchain_change_is_summarised_first_and_named_as_the_cause() {
    let committed = baseline(
        "13.0.88",
        &["sm_90"],
        &[("a", "sm_90", 32), ("b", "sm_90", 64), ("c", "sm_90", 40)],
    );
    let build = baseline(
        "13.5.37",
        &["sm_90"],
        &[("a", "sm_90", 40), ("b", "sm_90", 56), ("c", "sm_90", 40)],
    );
    let comparison = compare(&committed, &build, &nothing_deleted());
    assert_eq!(
        comparison.toolchain_changes,
        ["nvcc 13.0.88 -> 13.5.37 on sm_90: 2 kernels changed, 1 worse, 1 better"]
    );
    let regression = comparison
        .findings
        .iter()
        .find(|(_, finding)| finding.lint == LintId::Regression)
        .map(|(_, finding)| finding)
        .unwrap();
    assert!(
        regression.notes.last().unwrap().starts_with(
            "cause: the toolchain changed since the baseline (nvcc 13.0.88 -> 13.5.37)"
        ),
        "{:?}",
        regression.notes
    );
    // The same regression under the same toolchain is the source's doing.
    let same_toolchain = baseline("13.0.88", &["sm_90"], &[("a", "sm_90", 40)]);
    let comparison = compare(&committed, &same_toolchain, &nothing_deleted());
    let (_, regression) = comparison
        .findings
        .iter()
        .find(|(_, finding)| finding.lint == LintId::Regression)
        .unwrap();
    assert!(
        regression
            .notes
            .last()
            .unwrap()
            .starts_with("cause: the source or the declaration changed"),
        "{:?}",
        regression.notes
    );
}

#[test]
fn changed_flags_are_a_toolchain_change() {
    let before = stamp("13.0.88");
    let after = ToolchainStamp {
        flags: vec!["-O2".into()],
        ..before.clone()
    };
    assert_eq!(after.change_from(&before), "flags [-O3] -> [-O2]");
    let ptxas_only = ToolchainStamp {
        ptxas: "13.1.2".into(),
        ..before.clone()
    };
    assert_eq!(ptxas_only.change_from(&before), "ptxas 13.0.88 -> 13.1.2");
}

/// A scratch directory for one test, removed by the test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("occupancy-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_without_toolchains_still_load_and_say_the_cause_is_unknown() {
    let dir = scratch("baseline");
    let path = dir.join("occupancy.lock");
    std::fs::write(
        &path,
        r#"{"schema_version":1,"kernels":{"k":{"sm_90":{"registers":12,"spill_store_bytes":0,"spill_load_bytes":0,"stack_frame_bytes":0,"static_smem_bytes":0,"occupancy":1.0}}}}"#,
    )
    .unwrap();
    let old = Baseline::load(&path).unwrap().unwrap();
    assert_eq!(old.schema_version, 1);
    assert!(old.baseline.toolchains.is_empty());
    let mut build = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 32)]);
    build
        .sources
        .get_mut(SOURCE)
        .and_then(|archs| archs.get_mut("sm_90"))
        .and_then(|entries| entries.kernels.get_mut("k"))
        .unwrap()
        .occupancy = 1.0;
    let comparison = compare(&old.baseline, &build, &nothing_deleted());
    assert_eq!(
        comparison.toolchain_changes,
        ["no recorded toolchain -> nvcc 13.0.88, ptxas 13.0.88 on sm_90: 1 kernel changed, 1 worse, 0 better"]
    );
    let (_, regression) = &comparison.findings[0];
    assert!(regression
        .notes
        .last()
        .unwrap()
        .starts_with("cause: unknown"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_text_round_trips() {
    let committed = baseline("13.0.88", &["sm_80"], &[("k", "sm_80", 32)]);
    let parsed = parse(committed.to_text().as_bytes()).unwrap();
    assert_eq!(parsed.baseline, committed);
    assert_eq!(parsed.schema_version, SCHEMA_VERSION);
}

#[test]
fn an_unreadable_or_newer_baseline_is_an_error_naming_the_file() {
    let dir = scratch("bad-baseline");
    let path = dir.join("occupancy.lock");
    std::fs::write(&path, "{\"schema_version\":1,").unwrap();
    let error = Baseline::load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::UnreadableBaseline { path: named, error } if *named == path && error.is_eof()),
        "{error:?}"
    );
    std::fs::write(&path, r#"{"schema_version":3,"kernels":{}}"#).unwrap();
    let error = Baseline::load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::UnsupportedBaselineSchema { path: named, schema_version: 3 } if *named == path),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("A newer occupancy-build wrote it"),
        "{error}"
    );
    // Schema 2 with schema 1's keys: refused, not read as an empty baseline.
    std::fs::write(&path, r#"{"schema_version":2,"kernels":{}}"#).unwrap();
    let error = Baseline::load(&path).unwrap_err().to_string();
    assert!(
        error.contains(&path.display().to_string())
            && error.contains("unknown field `kernels`")
            && error.contains("line 1 column"),
        "{error}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// candle's shape: PTX from `affine.cu` and `copy.cu`, a library from `moe.cu` with other
/// flags and only sm_90.
fn ptx_product(affine_registers: u32) -> Baseline {
    let mut ptx = product(
        "13.0.88",
        "kernels/affine.cu",
        &["-O3"],
        &["sm_80", "sm_90"],
        &[
            ("affine_f32", "sm_80", affine_registers),
            ("affine_f32", "sm_90", 16),
        ],
    );
    ptx.sources.extend(
        product(
            "13.0.88",
            "kernels/copy.cu",
            &["-O3"],
            &["sm_80", "sm_90"],
            &[("copy", "sm_80", 8), ("copy", "sm_90", 8)],
        )
        .sources,
    );
    ptx
}

fn library_product(moe_registers: u32) -> Baseline {
    product(
        "13.0.88",
        "kernels/moe.cu",
        &["-O3", "-DMOE"],
        &["sm_90"],
        &[("moe_gemm", "sm_90", moe_registers)],
    )
}

#[test]
fn each_product_is_judged_on_its_own_sources_only() {
    let lock = merged(&[ptx_product(24), library_product(32)]);
    // (a) The PTX build does not call the library's kernels vanished, nor the reverse.
    assert_eq!(
        compare(&lock, &ptx_product(24), &nothing_deleted()),
        Comparison::default()
    );
    assert_eq!(
        compare(&lock, &library_product(32), &nothing_deleted()),
        Comparison::default()
    );
    // (b) Each product's flags are its own: no toolchain change either way.
    let comparison = compare(&lock, &library_product(40), &nothing_deleted());
    assert!(comparison.toolchain_changes.is_empty(), "{comparison:?}");
    assert_eq!(
        comparison.findings.len(),
        1,
        "the library's kernel only: {comparison:?}"
    );
    let (at, regression) = &comparison.findings[0];
    assert_eq!(
        at,
        &Some(KernelAt {
            source: Some("kernels/moe.cu".into()),
            kernel: "moe_gemm".into()
        })
    );
    assert_eq!(regression.lint, LintId::Regression);
    assert!(
        regression
            .notes
            .last()
            .unwrap()
            .starts_with("cause: the source or the declaration changed"),
        "{regression:?}"
    );
}

#[test]
fn two_sources_may_each_define_a_kernel_of_one_name() {
    let mut both = product(
        "13.0.88",
        "kernels/a.cu",
        &["-O3"],
        &["sm_90"],
        &[("k", "sm_90", 32)],
    );
    both.sources.extend(
        product(
            "13.0.88",
            "kernels/b.cu",
            &["-O3"],
            &["sm_90"],
            &[("k", "sm_90", 64)],
        )
        .sources,
    );
    let lock = merged(std::slice::from_ref(&both));
    assert_eq!(entry(&lock, "kernels/a.cu", "k", "sm_90").registers, 32);
    assert_eq!(entry(&lock, "kernels/b.cu", "k", "sm_90").registers, 64);
    assert_eq!(
        compare(&lock, &both, &nothing_deleted()),
        Comparison::default()
    );
    // a.cu's `k` at b.cu's numbers is worse than a.cu's entry, not equal to b.cu's.
    let mut worse = both.clone();
    worse
        .sources
        .get_mut("kernels/a.cu")
        .and_then(|archs| archs.get_mut("sm_90"))
        .and_then(|entries| entries.kernels.get_mut("k"))
        .unwrap()
        .registers = 64;
    let comparison = compare(&lock, &worse, &nothing_deleted());
    assert_eq!(
        comparison.findings[0]
            .0
            .as_ref()
            .and_then(|at| at.source.as_deref()),
        Some("kernels/a.cu")
    );
    assert_eq!(
        lints(&comparison),
        [(Some("k"), LintId::Regression, Some("sm_90"))]
    );
}

#[test]
fn changed_flags_are_said_per_source() {
    let lock = merged(&[ptx_product(24), library_product(32)]);
    let mut o2 = library_product(40);
    for entries in o2.sources.values_mut().flat_map(|archs| archs.values_mut()) {
        entries.flags = vec!["-O2".into()];
    }
    let comparison = compare(&lock, &o2, &nothing_deleted());
    assert_eq!(
        comparison.toolchain_changes,
        ["flags [-O3 -DMOE] -> [-O2] for kernels/moe.cu on sm_90: 1 kernel changed, 1 worse, 0 better"]
    );
    let messages: Vec<&str> = comparison
        .findings
        .iter()
        .map(|(_, finding)| finding.message.as_str())
        .collect();
    assert!(
        messages.contains(&"the baseline for sm_90 was made with other flags for kernels/moe.cu"),
        "{messages:?}"
    );
    let regression = comparison
        .findings
        .iter()
        .find(|(_, finding)| finding.lint == LintId::Regression)
        .map(|(_, finding)| finding)
        .unwrap();
    assert!(
        regression.notes.last().unwrap().starts_with(
            "cause: the toolchain changed since the baseline (flags [-O3 -DMOE] -> [-O2])"
        ),
        "{regression:?}"
    );
}

#[test]
fn a_deleted_source_is_judged_when_the_caller_asks() {
    let lock = merged(&[ptx_product(24), library_product(32)]);
    // moe.cu is gone and no product compiles it: only the run's first comparing build says so.
    assert_eq!(
        compare(&lock, &ptx_product(24), &nothing_deleted()),
        Comparison::default()
    );
    let deleted = BTreeSet::from(["kernels/moe.cu".to_string()]);
    let comparison = compare(&lock, &ptx_product(24), &deleted);
    assert_eq!(
        lints(&comparison),
        [(Some("moe_gemm"), LintId::BaselineStale, Some("sm_90"))]
    );
    assert_eq!(
        comparison.findings[0].1.message,
        "kernel `moe_gemm` is in the baseline for sm_90 but its source kernels/moe.cu no longer exists"
    );
    // A bless removes its entries, and says so.
    let blessed = Baseline::blessed(Some(lock.clone()), &[ptx_product(24)], &deleted);
    assert!(!blessed.sources.contains_key("kernels/moe.cu"));
    let root = scratch("deleted-source");
    let changes = changes::between(Some(&lock), &blessed, &root);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].change, BaselineChangeKind::Removed);
    assert_eq!(
        changes[0].notes,
        ["its source kernels/moe.cu no longer exists"]
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_bless_per_product_keeps_the_other_products_entries() {
    let lock = merged(&[ptx_product(24), library_product(32)]);
    // (d) The PTX Build's bless, before the library's Build ran: nothing of the library's is
    // removed, so the library's bless re-adds nothing.
    let after_ptx = Baseline::blessed(Some(lock.clone()), &[ptx_product(24)], &nothing_deleted());
    assert_eq!(after_ptx, lock);
    let after_both = Baseline::blessed(
        Some(after_ptx.clone()),
        &[ptx_product(24), library_product(32)],
        &nothing_deleted(),
    );
    assert_eq!(after_both, lock);
    let root = scratch("bless-per-product");
    assert!(changes::between(Some(&lock), &after_ptx, &root).is_empty());
    // A changed library kernel is the one change of the library's bless.
    let changed = Baseline::blessed(
        Some(after_ptx),
        &[ptx_product(24), library_product(40)],
        &nothing_deleted(),
    );
    let changes = changes::between(Some(&lock), &changed, &root);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(
        (
            changes[0].change,
            changes[0].source.as_deref(),
            changes[0].kernel.as_str()
        ),
        (
            BaselineChangeKind::Changed,
            Some("kernels/moe.cu"),
            "moe_gemm"
        )
    );
    assert_eq!(changes[0].notes, ["registers: 32 -> 40"]);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn every_entry_a_bless_touches_is_listed_and_said() {
    let root = scratch("bless-listed");
    std::fs::create_dir_all(root.join("kernels")).unwrap();
    std::fs::write(root.join(SOURCE), "").unwrap();
    let lock = baseline(
        "13.0.88",
        &["sm_90"],
        &[
            ("kept", "sm_90", 8),
            ("worse", "sm_90", 16),
            ("gone", "sm_90", 8),
        ],
    );
    let build = baseline(
        "13.0.88",
        &["sm_90"],
        &[
            ("kept", "sm_90", 8),
            ("worse", "sm_90", 24),
            ("new", "sm_90", 8),
        ],
    );
    let blessed = Baseline::blessed(Some(lock.clone()), &[build], &nothing_deleted());
    let changes = changes::between(Some(&lock), &blessed, &root);
    let listed: Vec<(BaselineChangeKind, &str)> = changes
        .iter()
        .map(|change| (change.change, change.kernel.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (BaselineChangeKind::Added, "new"),
            (BaselineChangeKind::Changed, "worse"),
            (BaselineChangeKind::Removed, "gone"),
        ]
    );
    assert_eq!(changes[2].notes, ["no longer compiled on sm_90"]);
    let line = changes::warning_line("occupancy.lock", false, &changes, "target/occupancy/k.json");
    assert_eq!(
        line,
        "occupancy: OCCUPANCY_BLESS is set: wrote the baseline occupancy.lock: 1 added, 1 changed, 1 removed (added: `new` on sm_90 in kernels/k.cu; changed: `worse` on sm_90 in kernels/k.cu (registers: 16 -> 24); removed: `gone` on sm_90 in kernels/k.cu (no longer compiled on sm_90)); every entry under `baseline_changes` in target/occupancy/k.json"
    );
    // Another toolchain with the same numbers restamps every entry, and says so.
    let newer = baseline(
        "13.5.37",
        &["sm_90"],
        &[
            ("kept", "sm_90", 8),
            ("worse", "sm_90", 24),
            ("new", "sm_90", 8),
        ],
    );
    let restamped = Baseline::blessed(Some(blessed.clone()), &[newer], &nothing_deleted());
    let changes = changes::between(Some(&blessed), &restamped, &root);
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(changes
        .iter()
        .all(|change| change.change == BaselineChangeKind::Restamped
            && change.notes == ["nvcc 13.0.88 -> 13.5.37"]));
    let line = changes::warning_line("occupancy.lock", false, &[], "r.json");
    assert!(
        line.ends_with("wrote the baseline occupancy.lock: no entry changed"),
        "{line}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

/// A schema-1 lock: `moe_gemm` and `affine_f32` on sm_80 and sm_90, `old` on sm_90, with flags.
pub(super) const SCHEMA_1: &str = r#"{
  "schema_version": 1,
  "toolchains": {
    "sm_80": { "nvcc": "13.0.88", "ptxas": "13.0.88", "flags": ["-O3"] },
    "sm_90": { "nvcc": "13.0.88", "ptxas": "13.0.88", "flags": ["-O3"] }
  },
  "kernels": {
    "affine_f32": {
      "sm_80": { "registers": 24, "spill_store_bytes": 0, "spill_load_bytes": 0, "stack_frame_bytes": 0, "static_smem_bytes": 0, "occupancy": 0.5 },
      "sm_90": { "registers": 16, "spill_store_bytes": 0, "spill_load_bytes": 0, "stack_frame_bytes": 0, "static_smem_bytes": 0, "occupancy": 0.5 }
    },
    "moe_gemm": {
      "sm_80": { "registers": 30, "spill_store_bytes": 0, "spill_load_bytes": 0, "stack_frame_bytes": 0, "static_smem_bytes": 0, "occupancy": 0.5 },
      "sm_90": { "registers": 32, "spill_store_bytes": 0, "spill_load_bytes": 0, "stack_frame_bytes": 0, "static_smem_bytes": 0, "occupancy": 0.5 }
    },
    "old": {
      "sm_90": { "registers": 8, "spill_store_bytes": 0, "spill_load_bytes": 0, "stack_frame_bytes": 0, "static_smem_bytes": 0, "occupancy": 0.5 }
    }
  }
}"#;

#[test]
fn a_schema_1_lock_is_compared_by_name_and_migrated_by_a_bless() {
    let parsed = parse(SCHEMA_1.as_bytes()).unwrap();
    assert_eq!(parsed.schema_version, 1);
    let lock = parsed.baseline;
    assert!(lock.sources.is_empty());
    assert_eq!(lock.unattributed["sm_90"].flags, ["-O3"]);
    // Compared by name; the kernels it does not compile (the library's, `old`) are not judged.
    let mut ptx = product(
        "13.0.88",
        "kernels/affine.cu",
        &["-O3"],
        &["sm_80", "sm_90"],
        &[("affine_f32", "sm_80", 24), ("affine_f32", "sm_90", 20)],
    );
    let comparison = compare(&lock, &ptx, &nothing_deleted());
    assert_eq!(
        lints(&comparison),
        [(Some("affine_f32"), LintId::Regression, Some("sm_90"))]
    );
    // The PTX Build's bless (sm_90 only) moves `affine_f32` under its source; the library's
    // `moe_gemm` and `old` stay unattributed until a product compiles them.
    ptx.toolchains.remove("sm_80");
    for archs in ptx.sources.values_mut() {
        archs.remove("sm_80");
    }
    let blessed = Baseline::blessed(Some(lock.clone()), &[ptx], &nothing_deleted());
    assert_eq!(
        entry(&blessed, "kernels/affine.cu", "affine_f32", "sm_90").registers,
        20
    );
    assert_eq!(
        entry(&blessed, "kernels/affine.cu", "affine_f32", "sm_80").registers,
        24,
        "the entry of an arch the bless did not build moves as it is"
    );
    assert_eq!(blessed.sources["kernels/affine.cu"]["sm_80"].flags, ["-O3"]);
    assert!(blessed.unattributed["sm_90"]
        .kernels
        .contains_key("moe_gemm"));
    assert!(!blessed.unattributed["sm_80"]
        .kernels
        .contains_key("affine_f32"));
    let root = scratch("schema-1");
    let changes = changes::between(Some(&lock), &blessed, &root);
    let listed: Vec<(BaselineChangeKind, &str, &str)> = changes
        .iter()
        .map(|change| (change.change, change.kernel.as_str(), change.arch.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            (BaselineChangeKind::Attributed, "affine_f32", "sm_80"),
            (BaselineChangeKind::Attributed, "affine_f32", "sm_90"),
        ]
    );
    assert_eq!(changes[1].notes, ["registers: 16 -> 20"]);
    // The library's bless moves the rest it compiles; `old`, compiled by nobody, stays.
    let library = product(
        "13.0.88",
        "kernels/moe.cu",
        &["-O3"],
        &["sm_80", "sm_90"],
        &[("moe_gemm", "sm_80", 30), ("moe_gemm", "sm_90", 32)],
    );
    let both = Baseline::blessed(Some(blessed), &[library], &nothing_deleted());
    assert_eq!(both.unattributed.keys().collect::<Vec<_>>(), ["sm_90"]);
    assert_eq!(
        both.unattributed["sm_90"]
            .kernels
            .keys()
            .collect::<Vec<_>>(),
        ["old"]
    );
    assert_eq!(parse(both.to_text().as_bytes()).unwrap().baseline, both);
    std::fs::remove_dir_all(root).unwrap();
}

/// The error of reading `text`, as a build prints it.
fn refused(text: &str) -> String {
    match parse(text.as_bytes()) {
        Err(ParseError::Invalid(error)) => error.to_string(),
        other => panic!("{text}\nwas not refused: {other:?}"),
    }
}

/// A valid lock with `replace` replaced by `with` (once).
fn lock_with(replace: &str, with: &str) -> String {
    let text = merged(&[ptx_product(24), library_product(32)]).to_text();
    assert!(text.contains(replace), "{replace:?} in\n{text}");
    text.replacen(replace, with, 1)
}

/// (what a valid lock says, what a bad one says instead, what the error must say).
const MALFORMED: &[(&str, &str, &str)] = &[
    (
        "\"registers\": 24",
        "\"registers\": 300",
        "`registers` is 300, more than the 255 registers ptxas gives a thread",
    ),
    (
        "\"registers\": 24",
        "\"registers\": -1",
        "`registers` is -1: a register count cannot be negative",
    ),
    (
        "\"spill_store_bytes\": 0",
        "\"spill_store_bytes\": -8",
        "`spill_store_bytes` is -8: a byte count cannot be negative",
    ),
    (
        "\"stack_frame_bytes\": 0",
        "\"stack_frame_bytes\": 1.5",
        "`stack_frame_bytes` is 1.5: a byte count is written as a whole number",
    ),
    (
        "\"static_smem_bytes\": 0",
        "\"static_smem_bytes\": 18446744073709551616",
        "`static_smem_bytes` is 18446744073709552000, more than 64 bits hold",
    ),
    (
        "\"occupancy\": 0.5",
        "\"occupancy\": 1.5",
        "`occupancy` is 1.5: occupancy is a fraction from 0 to 1",
    ),
    (
        "\"sm_80\": {\n      \"nvcc\"",
        "\"sm_12\": {\n      \"nvcc\"",
        "unknown architecture `sm_12`",
    ),
    (
        "\"sm_80\": {\n      \"nvcc\"",
        "\"80\": {\n      \"nvcc\"",
        "architecture `80` is spelled `sm_80` in a baseline",
    ),
    ("\"affine_f32\"", "\"\"", "a kernel name is empty"),
    (
        "\"flags\"",
        "\"flag\"",
        "unknown field `flag`, expected `flags` or `kernels`",
    ),
];

#[test]
fn a_malformed_lock_is_refused_at_its_line_saying_what_is_wrong() {
    let text = merged(&[ptx_product(24), library_product(32)]).to_text();
    for (valid, invalid, what) in MALFORMED {
        let line = 1 + text[..text.find(valid).unwrap()].matches('\n').count();
        let lock = lock_with(valid, invalid);
        let error = refused(&lock);
        assert!(
            error.contains(what) && error.contains(&format!("line {line} column")),
            "expected {what:?} at line {line}, got: {error}\n{lock}"
        );
    }
}

#[test]
fn a_key_twice_in_one_object_is_refused_not_read_as_the_last() {
    let twice = lock_with(
        "\"affine_f32\": {",
        "\"affine_f32\": { \"registers\": 1, \"spill_store_bytes\": 0, \"spill_load_bytes\": 0, \"stack_frame_bytes\": 0, \"static_smem_bytes\": 0, \"occupancy\": 1.0 },\n            \"affine_f32\": {",
    );
    // The second key is on the line after the first.
    let first = twice.find("\"affine_f32\": {").unwrap();
    let line = 2 + twice[..first].matches('\n').count();
    let error = refused(&twice);
    assert!(
        error.contains("`affine_f32` appears twice in one object")
            && error.contains(&format!("line {line} column")),
        "{error}"
    );
    // In a struct too (serde refuses duplicate fields itself).
    let error = refused(&lock_with(
        "\"ptxas\"",
        "\"nvcc\": \"12.0.0\",\n      \"ptxas\"",
    ));
    assert!(error.contains("duplicate field `nvcc`"), "{error}");
    // And the version itself.
    let error = refused(&lock_with(
        "\"schema_version\": 2",
        "\"schema_version\": 2, \"schema_version\": 2",
    ));
    assert!(
        error.contains("duplicate field `schema_version`"),
        "{error}"
    );
}

#[test]
fn bytes_that_are_not_utf8_are_refused_at_their_line() {
    // A kernel name with a byte that is no UTF-8 (0xff where the `@` is).
    let lock = lock_with("\"affine_f32\"", "\"affine_@\"");
    let bytes: Vec<u8> = lock
        .bytes()
        .map(|byte| if byte == b'@' { 0xff } else { byte })
        .collect();
    let line = 1 + lock[..lock.find("affine_").unwrap()].matches('\n').count();
    let error = match parse(&bytes) {
        Err(ParseError::Invalid(error)) => error.to_string(),
        other => panic!("not refused: {other:?}"),
    };
    assert!(error.contains(&format!("line {line} column")), "{error}");
}

#[test]
fn an_invalid_lock_says_how_to_fix_and_how_to_regenerate() {
    let dir = scratch("invalid-lock");
    let path = dir.join("occupancy.lock");
    std::fs::write(&path, lock_with("\"registers\": 24", "\"registers\": 300")).unwrap();
    let message = Baseline::load(&path).unwrap_err().to_string();
    for part in [
        path.display().to_string().as_str(),
        "is not a valid baseline: `registers` is 300",
        "correct that line, or restore the committed file",
        "remove it and run `OCCUPANCY_BLESS=1 cargo build`",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A changed `"auto"` choice is a change of the lock: `baseline_stale` naming the choices when
/// nothing got worse, a note of the `regression` when something did; the bless writes it and the
/// strict reader reads it back.
#[test]
fn a_changed_choice_is_a_reviewable_change_of_the_lock() {
    use occupancy_core::tune::Bound;
    let with = |registers: u32, occupancy: f64, bound: Bound| {
        let mut built = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", registers)]);
        let numbers = built
            .sources
            .get_mut(SOURCE)
            .unwrap()
            .get_mut("sm_90")
            .unwrap();
        let entry = numbers.kernels.get_mut("k").unwrap();
        entry.occupancy = occupancy;
        entry.chosen_bounds = Some(bound);
        built
    };
    let committed = with(48, 0.625, Bound::MinBlocksPerSm(5));
    let text = committed.to_text();
    assert!(
        text.contains("\"chosen_bounds\": {\n") && text.contains("\"min_blocks_per_sm\": 5"),
        "{text}"
    );
    let read = parse(text.as_bytes()).unwrap().baseline;
    assert_eq!(read, committed, "the lock reads back what the bless wrote");
    let rechosen = with(48, 0.625, Bound::MinBlocksPerSm(4));
    let comparison = compare(&committed, &rechosen, &nothing_deleted());
    assert_eq!(
        lints(&comparison),
        [(Some("k"), LintId::BaselineStale, Some("sm_90"))]
    );
    let finding = &comparison.findings[0].1;
    assert_eq!(
        finding.message,
        "the bounds the build chose for kernel `k` on sm_90 changed"
    );
    assert_eq!(
        finding.notes,
        ["chosen bounds: min_blocks_per_sm = 5 -> min_blocks_per_sm = 4"]
    );
    let worse = with(64, 0.5, Bound::None);
    let comparison = compare(&committed, &worse, &nothing_deleted());
    let finding = &comparison.findings[0].1;
    assert_eq!(finding.lint, LintId::Regression);
    assert!(
        finding
            .notes
            .contains(&"chosen bounds: min_blocks_per_sm = 5 -> no bounds".to_string()),
        "{:?}",
        finding.notes
    );
    let out_of_range = text.replace("\"min_blocks_per_sm\": 5", "\"min_blocks_per_sm\": 40");
    let Err(ParseError::Invalid(error)) = parse(out_of_range.as_bytes()) else {
        panic!("a bound no build chooses is refused");
    };
    assert!(
        error.to_string().contains("`chosen_bounds` out of range"),
        "{error}"
    );
}

/// Issue #35, class 2: a lock that is a FIFO (it waited for a writer), a directory, a sparse
/// file past the cap (read whole into memory) is refused naming what it is, before a byte is
/// read; a link to a FIFO too. Every node is private to a scratch directory.
#[test]
fn a_lock_that_is_a_fifo_or_past_the_cap_is_refused_before_it_is_read() {
    let dir = std::env::temp_dir().join(format!("occupancy-lock-nodes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("occupancy.lock");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink(&fifo, dir.join("link.lock")).unwrap();
    for path in [fifo.clone(), dir.join("link.lock")] {
        let error = Baseline::load(&path).unwrap_err().to_string();
        assert!(error.contains("is a FIFO, not a file"), "{error}");
    }
    let error = Baseline::load(&dir).unwrap_err().to_string();
    assert!(error.contains("is a directory, not a file"), "{error}");
    let sparse = dir.join("sparse.lock");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(MAX_LOCK_BYTES + 1)
        .unwrap();
    let error = Baseline::load(&sparse).unwrap_err().to_string();
    assert!(
        error.contains(&format!("is {} bytes, more than", MAX_LOCK_BYTES + 1)),
        "{error}"
    );
    let small = dir.join("small.lock");
    std::fs::write(&small, [b' '; 20]).unwrap();
    let error = read_lock_file(&small, 10).unwrap_err().to_string();
    assert!(
        error.contains("is 20 bytes, more than the 10 bytes"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
