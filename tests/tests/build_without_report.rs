//! The build gate when the compile prints no ptxas report: a compiler cache that replays no
//! compiler output on a hit (Bazel's remote cache replays no stderr at all), or a wrapper that
//! drops nvcc's stderr. occupancy-build then reads the facts from the compiled binary
//! (`occupancy-build/src/parse.rs`, `BinaryFallback`), so the build must fail on the same spill
//! with the same report as a build whose report it read.
//!
//! The wrapper is a script named `sccache` (the names `cc` accepts in `RUSTC_WRAPPER` for a
//! compiler cache) that runs the compile with its stderr written to a private file, never to the
//! terminal. The `spill` fixture is built for sm_80, then for sm_80 and sm_90, each without and
//! with the wrapper.

use std::path::Path;

use occupancy_tests::sccache::{error_lines, Fixture};
use occupancy_tests::text;

/// A wrapper that compiles and swallows the compiler's stderr (kept in `dir/stderr.log`).
fn swallowing_wrapper(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let script = dir.join("sccache");
    let log = dir.join("stderr.log");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec \"$@\" 2>>'{}'\n", log.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    script
}

/// The fixture's report without what may differ between a report read and a binary read:
/// each source's cache state and compiler log, the warnings, and the notes' wording of where
/// the facts came from (`the binary holds for`, `ptxas reported for`).
fn comparable(mut report: serde_json::Value) -> serde_json::Value {
    report["sources"] = serde_json::Value::Null;
    report["warnings"] = serde_json::Value::Null;
    let text = report
        .to_string()
        .replace("the binary holds for", "ptxas reported for");
    serde_json::from_str(&text).unwrap()
}

/// The error lines, with the note's wording of where the facts came from made common.
fn comparable_errors(log: &str, fixture: &Fixture) -> Vec<String> {
    error_lines(log, fixture)
        .into_iter()
        .map(|line| line.replace("the binary holds for", "ptxas reported for"))
        .collect()
}

#[test]
fn a_compile_whose_report_is_swallowed_is_checked_from_its_binary() {
    let fixture = Fixture::new("no-report");
    let wrapper = swallowing_wrapper(&fixture.dir.join("wrapper"));
    for archs in ["sm_80", "sm_80,sm_90"] {
        fixture.remove_build_outputs();
        let (reference, reference_errors) = fixture.reference(Some(archs));
        fixture.remove_build_outputs();
        let output = fixture
            .build_command(Some(archs))
            .env("RUSTC_WRAPPER", &wrapper)
            .output()
            .expect("cargo runs");
        let log = text(&output);
        assert!(
            !output.status.success(),
            "{archs}: the spill fails the build:\n{log}"
        );
        assert!(
            log.contains("held no ptxas report") && log.contains("read from the compiled binary"),
            "{archs}: the build says where the facts came from:\n{log}"
        );
        assert!(
            std::fs::read_to_string(fixture.dir.join("wrapper/stderr.log"))
                .unwrap_or_default()
                .contains("ptxas info"),
            "{archs}: the wrapper did swallow ptxas's report"
        );
        assert_eq!(
            comparable(fixture.report()),
            comparable(reference),
            "{archs}: the same rows and findings"
        );
        assert_eq!(
            comparable_errors(&log, &fixture),
            comparable_errors(&reference_errors.join("\n"), &fixture),
            "{archs}: the same errors"
        );
        std::fs::remove_file(fixture.dir.join("wrapper/stderr.log")).unwrap();
    }
}
