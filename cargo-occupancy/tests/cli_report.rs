//! `cargo occupancy report`: reads the reports builds wrote, sorts, filters, renders.

mod common;

use common::{binary, cargo_occupancy_in as cargo_occupancy, fixtures, stderr, stdout};
use std::path::Path;
use std::process::Output;

use occupancy_core::report::{example_report, render_json, Report};

fn report(args: &[&str]) -> Output {
    let dir = fixtures().join("reports");
    let mut all = vec!["report", "--dir", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    cargo_occupancy(&all, &fixtures())
}

/// The fixture reports are `example_report()` split by crate, computed by today's calculator.
/// `OCCUPANCY_BLESS_FIXTURES=1` rewrites them.
#[test]
fn fixture_reports_are_current() {
    let example = example_report();
    let mut crates: Vec<String> = example
        .kernels
        .iter()
        .filter_map(|row| row.crate_name.clone())
        .collect();
    crates.sort();
    crates.dedup();
    for crate_name in crates {
        let of_crate = Report {
            kernels: example
                .kernels
                .iter()
                .filter(|row| row.crate_name.as_deref() == Some(&crate_name))
                .cloned()
                .collect(),
            findings: example
                .findings
                .iter()
                .filter(|f| f.crate_name.as_deref() == Some(&crate_name))
                .cloned()
                .collect(),
            ..Report::default()
        };
        let path = fixtures()
            .join("reports")
            .join(format!("{crate_name}.json"));
        let text = render_json(&of_crate);
        // A test reads the environment it runs in (not the CLI, whose reads are env.rs's).
        #[allow(clippy::disallowed_methods)]
        let bless = std::env::var_os("OCCUPANCY_BLESS_FIXTURES").is_some();
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            committed,
            text,
            "{} is stale: rerun with OCCUPANCY_BLESS_FIXTURES=1",
            path.display()
        );
    }
}

#[test]
fn text_table_of_every_crate() {
    let output = report(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn sorted_and_filtered_by_arch() {
    let output = report(&["--arch", "90", "--sort", "-occupancy", "--sort", "kernel"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!text.contains("sm_80"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn every_column_sorts() {
    for column in [
        "crate",
        "kernel",
        "arch",
        "block",
        "registers",
        "spills",
        "stack",
        "smem",
        "barriers",
        "blocks",
        "occupancy",
        "limiter",
        "headroom",
        "findings",
    ] {
        for key in [column.to_string(), format!("-{column}")] {
            let output = report(&["--sort", &key, "--json"]);
            assert_eq!(
                output.status.code(),
                Some(0),
                "--sort {key}: {}",
                stderr(&output)
            );
            let parsed = Report::from_json(&stdout(&output)).unwrap();
            assert_eq!(parsed.kernels.len(), example_report().kernels.len());
        }
    }
}

#[test]
fn lint_filter_keeps_kernels_with_that_finding() {
    let output = report(&["--lint", "spills", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let parsed = Report::from_json(&stdout(&output)).unwrap();
    assert_eq!(parsed.kernels.len(), 2);
    assert!(parsed
        .kernels
        .iter()
        .all(|row| row.demangled.starts_with("reduce_spills")));
    assert!(parsed
        .findings
        .iter()
        .all(|finding| finding.lint.as_str() == "spills"));
}

#[test]
fn crate_filter_as_markdown() {
    let output = report(&["--crate", "histo", "--markdown"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn kernel_filter_as_sarif_and_html() {
    let html = std::env::temp_dir().join(format!("occupancy-report-{}.html", std::process::id()));
    let output = report(&[
        "--kernel",
        "sgemm",
        "--sarif",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(&html);
    // Each row names its three curves (drawn when its details open; the browser test checks
    // the drawing).
    let curves: Vec<usize> = page
        .split("data-curves=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or("").split(' ').count())
        .collect();
    assert_eq!(curves, [3, 3], "2 archs x 3 curves");
    assert!(page.contains("sgemm_tiled&lt;128, 8&gt;"));
}

#[test]
fn inside_a_workspace_the_target_directory_comes_from_cargo_metadata() {
    let workspace = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-workspace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&workspace);
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    std::fs::write(
        workspace.join("Cargo.toml"),
        "[package]\nname = \"histo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(workspace.join("src/lib.rs"), "").unwrap();
    let reports = workspace.join("custom-target/occupancy");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::copy(
        fixtures().join("reports/histo.json"),
        reports.join("histo.json"),
    )
    .unwrap();
    let output = binary()
        .args(["occupancy", "report"])
        .env("CARGO_TARGET_DIR", workspace.join("custom-target"))
        .current_dir(&workspace)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("histogram"), "{}", stdout(&output));
    let _ = std::fs::remove_dir_all(&workspace);
}

/// A manifest cargo refuses: `cargo metadata`'s own words, and the settings that avoid it.
#[test]
fn a_manifest_cargo_metadata_refuses_is_a_usage_error_with_cargos_words() {
    let workspace = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-bad-manifest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&workspace);
    std::fs::create_dir_all(&workspace).unwrap();
    let manifest = workspace.join("Cargo.toml");
    std::fs::write(&manifest, "[package\n").unwrap();
    let output = binary()
        .args(["occupancy", "report", "--manifest-path"])
        .arg(&manifest)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("`cargo metadata` failed (run inside a Rust workspace, or give --manifest-path or --dir)"),
        "{message}"
    );
    assert!(message.contains("unclosed table"), "{message}");
    let _ = std::fs::remove_dir_all(&workspace);
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let bad_sort = report(&["--sort", "speed"]);
    assert_eq!(bad_sort.status.code(), Some(2));
    assert!(
        stderr(&bad_sort)
            .contains("unknown column `speed` to sort by; the columns are: crate, kernel"),
        "{}",
        stderr(&bad_sort)
    );

    let bad_lint = report(&["--lint", "spill"]);
    assert_eq!(bad_lint.status.code(), Some(2));
    assert!(
        stderr(&bad_lint).contains("did you mean `spills`?"),
        "{}",
        stderr(&bad_lint)
    );

    let bad_arch = report(&["--arch", "sm_42"]);
    assert_eq!(bad_arch.status.code(), Some(2));
    assert!(
        stderr(&bad_arch).contains("unknown architecture `sm_42`"),
        "{}",
        stderr(&bad_arch)
    );

    let missing = cargo_occupancy(&["report", "--dir", "/nonexistent/occupancy"], &fixtures());
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no occupancy reports in /nonexistent/occupancy"),
        "{}",
        stderr(&missing)
    );

    let garbage_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-garbage-{}", std::process::id()));
    std::fs::create_dir_all(&garbage_dir).unwrap();
    std::fs::write(
        garbage_dir.join("broken.json"),
        "{\"schema_version\": 1, \"kernels\": 3}",
    )
    .unwrap();
    let garbage = cargo_occupancy(
        &["report", "--dir", garbage_dir.to_str().unwrap()],
        &fixtures(),
    );
    assert_eq!(garbage.status.code(), Some(2));
    assert!(
        stderr(&garbage).contains("broken.json: not an occupancy report"),
        "{}",
        stderr(&garbage)
    );
    std::fs::write(
        garbage_dir.join("broken.json"),
        "{\"schema_version\": 9, \"kernels\": [], \"findings\": []}",
    )
    .unwrap();
    let future = cargo_occupancy(
        &["report", "--dir", garbage_dir.to_str().unwrap()],
        &fixtures(),
    );
    assert_eq!(future.status.code(), Some(2));
    assert!(
        stderr(&future).contains("schema version 9 is not supported"),
        "{}",
        stderr(&future)
    );
    let _ = std::fs::remove_dir_all(&garbage_dir);
}
