use super::*;
use occupancy_core::lint::LintId;

fn numbers(registers: u32, occupancy: f64) -> BaselineNumbers {
    BaselineNumbers {
        registers,
        spill_store_bytes: 0,
        spill_load_bytes: 0,
        stack_frame_bytes: 0,
        static_smem_bytes: 0,
        occupancy,
    }
}

fn stamp(nvcc: &str) -> ToolchainStamp {
    ToolchainStamp {
        nvcc: nvcc.into(),
        ptxas: nvcc.into(),
        flags: vec!["-O3".into()],
    }
}

/// A baseline of `kernels` (name, arch, registers) made with nvcc `version` on `archs`.
fn baseline(version: &str, archs: &[&str], kernels: &[(&str, &str, u32)]) -> Baseline {
    let mut baseline = Baseline {
        schema_version: 1,
        ..Baseline::default()
    };
    for arch in archs {
        baseline.toolchains.insert(arch.to_string(), stamp(version));
    }
    for (kernel, arch, registers) in kernels {
        baseline
            .kernels
            .entry(kernel.to_string())
            .or_default()
            .insert(arch.to_string(), numbers(*registers, 0.5));
    }
    baseline
}

fn lints(comparison: &Comparison) -> Vec<(Option<&str>, LintId, Option<&str>)> {
    comparison
        .findings
        .iter()
        .map(|(kernel, finding)| (kernel.as_deref(), finding.lint, finding.arch.as_deref()))
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
    let blessed = Baseline::blessed(Some(committed.clone()), sm_80_build);
    assert_eq!(blessed.kernels["k"]["sm_80"].registers, 40);
    assert_eq!(
        blessed.kernels["k"]["sm_90"],
        committed.kernels["k"]["sm_90"]
    );
    assert_eq!(blessed.kernels["old"], committed.kernels["old"]);
    assert_eq!(blessed.toolchains.len(), 2);
    // The next sm_90 regression (12 to 32 registers) still fails against the blessed file.
    let regressed = baseline(
        "13.0.88",
        &["sm_90"],
        &[("k", "sm_90", 32), ("old", "sm_90", 8)],
    );
    assert_eq!(
        lints(&compare(&blessed, &regressed)),
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
    let blessed = Baseline::blessed(Some(committed), baseline("13.0.88", &["sm_80"], &[]));
    assert!(!blessed.kernels["gone"].contains_key("sm_80"));
    assert!(blessed.kernels["gone"].contains_key("sm_90"));
}

#[test]
fn equal_builds_find_nothing_and_better_ones_are_stale() {
    let committed = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 48)]);
    assert_eq!(compare(&committed, &committed), Comparison::default());
    let better = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 40)]);
    let comparison = compare(&committed, &better);
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
    let comparison = compare(&committed, &build);
    let mut found = lints(&comparison);
    found.sort();
    assert_eq!(
        found,
        [
            (Some("gone"), LintId::BaselineStale, Some("sm_90")),
            (Some("new"), LintId::BaselineStale, Some("sm_90")),
        ]
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
    let comparison = compare(&committed, &build);
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
    let comparison = compare(&committed, &same_toolchain);
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

#[test]
fn files_without_toolchains_still_load_and_say_the_cause_is_unknown() {
    let dir = std::env::temp_dir().join(format!("occupancy-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("occupancy.lock");
    std::fs::write(
        &path,
        r#"{"schema_version":1,"kernels":{"k":{"sm_90":{"registers":12,"spill_store_bytes":0,"spill_load_bytes":0,"stack_frame_bytes":0,"static_smem_bytes":0,"occupancy":1.0}}}}"#,
    )
    .unwrap();
    let old = Baseline::load(&path).unwrap().unwrap();
    assert!(old.toolchains.is_empty());
    let mut build = baseline("13.0.88", &["sm_90"], &[("k", "sm_90", 32)]);
    build
        .kernels
        .get_mut("k")
        .unwrap()
        .get_mut("sm_90")
        .unwrap()
        .occupancy = 1.0;
    let comparison = compare(&old, &build);
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
    let parsed: Baseline = serde_json::from_str(&committed.to_text()).unwrap();
    assert_eq!(parsed, committed);
}

#[test]
fn an_unreadable_or_newer_baseline_is_an_error_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("occupancy-bad-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("occupancy.lock");
    std::fs::write(&path, "{\"schema_version\":1,").unwrap();
    let error = Baseline::load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::UnreadableBaseline { path: named, error } if *named == path && error.is_eof()),
        "{error:?}"
    );
    std::fs::write(&path, r#"{"schema_version":2,"kernels":{}}"#).unwrap();
    let error = Baseline::load(&path).unwrap_err();
    assert!(
        matches!(&error, Error::UnsupportedBaselineSchema { path: named, schema_version: 2 } if *named == path),
        "{error:?}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
