//! End-to-end tests of the baseline, expectations and the build's facts for the attribute:
//! fixture crates (tests/fixtures/) built with cargo and the real nvcc through occupancy-build.
//!
//! - blessing one arch keeps the others, and the next regression on them still fails;
//! - a lock made with another toolchain is reported as such, first, and named as the cause;
//! - better than the lock is `baseline_stale` (warn; deny when CI asks);
//! - `expect(spills, reason = ...)` holds while the kernel spills and fails once it does not;
//! - a declaration the build's scanner cannot see does not compile.

use std::path::PathBuf;
use std::process::{Command, Output};

use occupancy_tests::{
    assert_success, clear_build_environment, copy_dir, e2e_root, nvcc, repo_root, text,
};

/// A copy of a fixture crate under target/e2e/work/<instance>, with its own package name.
struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new(fixture: &str, instance: &str) -> Fixture {
        let dir = e2e_root().join("work").join(instance);
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures").join(fixture), &dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let manifest = manifest
            .replace("@REPO@", &repo_root().display().to_string())
            .replace(
                &format!("name = \"fixture-{fixture}\""),
                &format!("name = \"e2e-{instance}\""),
            );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        Fixture { dir }
    }

    fn cargo_build(&self, env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(["build", "--offline"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", e2e_root().join("target"))
            .env("NVCC", nvcc())
            .env("CUDA_HOME", occupancy_tests::cuda_home());
        clear_build_environment(&mut command);
        command.env_remove("OCCUPANCY_LINT_BASELINE_STALE");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("cargo runs")
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} contains {from:?}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    }

    fn lock(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("occupancy.lock")).unwrap())
            .unwrap()
    }
}

fn assert_failure(output: &Output, what: &str) {
    assert!(!output.status.success(), "{what}:\n{}", text(output));
}

#[test]
fn blessing_one_arch_keeps_the_others_and_their_regressions_still_fail() {
    let fixture = Fixture::new("regress", "baseline-subset");
    assert_success(
        &fixture.cargo_build(&[("OCCUPANCY_ARCHS", "sm_80,sm_90"), ("OCCUPANCY_BLESS", "1")]),
    );
    let both = fixture.lock();
    let reduce = "kernels/reduce.cu";
    assert!(
        both["sources"][reduce]["sm_90"]["kernels"]["reduce"].is_object(),
        "{both}"
    );
    assert!(
        both["sources"][reduce]["sm_80"]["kernels"]["reduce"].is_object(),
        "{both}"
    );
    assert_eq!(both["toolchains"]["sm_90"]["nvcc"], "13.0.88", "{both}");

    // The case: an sm_80-only bless must keep sm_90's entry as it was.
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_ARCHS", "sm_80"), ("OCCUPANCY_BLESS", "1")]));
    let after = fixture.lock();
    assert_eq!(
        after["sources"][reduce]["sm_90"],
        both["sources"][reduce]["sm_90"]
    );
    assert_eq!(after["toolchains"]["sm_90"], both["toolchains"]["sm_90"]);

    // ...so the next sm_90 regression still fails (the metadata's archs: sm_90).
    fixture.edit("kernels/reduce.cu", "#define LIVE 8", "#define LIVE 40");
    let output = fixture.cargo_build(&[]);
    assert_failure(
        &output,
        "an sm_90 regression after an sm_80 bless must fail",
    );
    let stderr = text(&output);
    assert!(
        stderr.contains("error[regression]: kernel `reduce` is worse than the baseline on sm_90"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cause: the source or the declaration changed"),
        "same toolchain: the source is the cause:\n{stderr}"
    );
}

#[test]
fn a_lock_from_another_toolchain_is_reported_first_and_named_as_the_cause() {
    let fixture = Fixture::new("regress", "baseline-toolchain");
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    // As if the lock had been blessed with an older nvcc.
    fixture.edit(
        "occupancy.lock",
        "\"nvcc\": \"13.0.88\"",
        "\"nvcc\": \"12.9.41\"",
    );
    fixture.edit(
        "occupancy.lock",
        "\"ptxas\": \"13.0.88\"",
        "\"ptxas\": \"12.9.41\"",
    );
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    let stderr = text(&output);
    assert!(
        stderr.contains("occupancy: the toolchain changed since the baseline: nvcc 12.9.41 -> 13.0.88 on sm_90: 0 kernels changed, 0 worse, 0 better"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "warning[baseline_stale]: the baseline for sm_90 was made with another toolchain"
        ),
        "{stderr}"
    );

    fixture.edit("kernels/reduce.cu", "#define LIVE 8", "#define LIVE 40");
    let output = fixture.cargo_build(&[]);
    assert_failure(&output, "a regression fails whatever its cause");
    let stderr = text(&output);
    let summary = stderr
        .find("note: the toolchain changed since the baseline: nvcc 12.9.41 -> 13.0.88 on sm_90: 1 kernel changed, 1 worse, 0 better")
        .unwrap_or_else(|| panic!("the summary is printed:\n{stderr}"));
    let regression = stderr.find("error[regression]").expect("the regression");
    assert!(
        summary < regression,
        "the toolchain change is said first:\n{stderr}"
    );
    assert!(
        stderr
            .contains("cause: the toolchain changed since the baseline (nvcc 12.9.41 -> 13.0.88)"),
        "{stderr}"
    );
}

#[test]
fn an_improvement_is_a_stale_baseline_and_ci_can_deny_it() {
    let fixture = Fixture::new("regress", "baseline-stale");
    fixture.edit("kernels/reduce.cu", "#define LIVE 8", "#define LIVE 40");
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    assert_success(&fixture.cargo_build(&[]));

    fixture.edit("kernels/reduce.cu", "#define LIVE 40", "#define LIVE 8");
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    let stderr = text(&output);
    assert!(
        stderr.contains(
            "warning[baseline_stale]: kernel `reduce` is better than the baseline on sm_90"
        ),
        "{stderr}"
    );
    let output = fixture.cargo_build(&[("OCCUPANCY_LINT_BASELINE_STALE", "deny")]);
    assert_failure(&output, "CI denies a stale baseline");
    assert!(
        text(&output).contains("error[baseline_stale]"),
        "{}",
        text(&output)
    );

    // Blessing makes the file equal to what the code compiles to: nothing left to say.
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    let output = fixture.cargo_build(&[("OCCUPANCY_LINT_BASELINE_STALE", "deny")]);
    assert_success(&output);
    assert!(
        !text(&output).contains("baseline_stale"),
        "{}",
        text(&output)
    );
}

#[test]
fn an_expectation_holds_while_the_kernel_spills_and_fails_once_it_does_not() {
    let fixture = Fixture::new("spill", "expect-spills");
    fixture.edit(
        "src/lib.rs",
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]",
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 8, expect(spills, reason = \"8 blocks per SM matter more; tracked in #15\"))]",
    );
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(e2e_root().join("target/occupancy/e2e-expect-spills.json"))
            .unwrap(),
    )
    .unwrap();
    let spills: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "spills")
        .collect();
    assert!(!spills.is_empty(), "{report}");
    for finding in spills {
        assert_eq!(finding["level"], "allow", "{finding}");
        assert_eq!(
            finding["reason"], "8 blocks per SM matter more; tracked in #15",
            "{finding}"
        );
    }
    // The frame that holds the accepted spill is accepted with it: no stack_frame warning.
    assert!(
        !text(&output).contains("warning[stack_frame]"),
        "{}",
        text(&output)
    );
    let frames: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "stack_frame")
        .collect();
    assert!(!frames.is_empty(), "{report}");
    for finding in frames {
        assert_eq!(finding["level"], "allow", "{finding}");
        assert!(
            finding["notes"].to_string().contains("accepted spill"),
            "{finding}"
        );
    }

    // Without a reason, an expectation of a deny lint is refused, at the lint.
    fixture.edit(
        "src/lib.rs",
        ", reason = \"8 blocks per SM matter more; tracked in #15\"",
        "",
    );
    let output = fixture.cargo_build(&[]);
    assert_failure(&output, "expect(spills) of a deny lint needs a reason");
    assert!(
        text(&output)
            .contains("error[missing_reason]: `expect(spills)` on kernel `hot` needs a reason"),
        "{}",
        text(&output)
    );

    // The spill is gone: the expectation is not needed any more, and the build says so, at the
    // attribute, once the build script has run every `Build` (the expansion reports it).
    fixture.edit(
        "src/lib.rs",
        "min_blocks_per_sm = 8, expect(spills)",
        "min_blocks_per_sm = 2, expect(spills, reason = \"8 blocks per SM matter more\")",
    );
    let output = fixture.cargo_build(&[]);
    assert_failure(&output, "an unfulfilled expectation fails the build");
    let stderr = text(&output);
    assert!(
        stderr.contains("error: unfulfilled_expectation: kernel `hot` expects `spills` (reason: 8 blocks per SM matter more), but no `spills` finding occurred on any target arch"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--> src/lib.rs:9:5"),
        "at the attribute:\n{stderr}"
    );
}

#[test]
fn a_declaration_the_scanner_cannot_see_does_not_compile() {
    let fixture = Fixture::new("clean", "unseen-declaration");
    // A module loaded from outside src/ with #[path]: the build scans src/ only.
    std::fs::create_dir_all(fixture.dir.join("extra")).unwrap();
    std::fs::write(
        fixture.dir.join("extra/hidden.rs"),
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]\npub fn hidden(n: i32);\n",
    )
    .unwrap();
    fixture.edit(
        "src/lib.rs",
        "pub mod ptx {",
        "#[path = \"../extra/hidden.rs\"]\npub mod hidden;\n\npub mod ptx {",
    );
    let output = fixture.cargo_build(&[]);
    assert_failure(&output, "an unchecked declaration must not compile");
    let stderr = text(&output);
    assert!(
        stderr.contains("error: kernel `hidden` (fn `hidden`) was not checked: the occupancy build of `e2e-unseen-declaration` did not see this declaration"),
        "{stderr}"
    );
    assert!(stderr.contains("extra/hidden.rs:1:1"), "{stderr}");
    assert!(
        stderr.contains("The build saw: `saxpy` (src/lib.rs:"),
        "{stderr}"
    );
}
