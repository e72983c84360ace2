//! The crates in examples/ are built by the suite with the real nvcc, as a user would build them:
//! spill-gate must fail with the kernel's name and `src/lib.rs:` in the error, tiled-gemm must
//! link its static library and the CUDA runtime into a binary, saxpy must build its PTX.
//!
//! Each example is copied to target/e2e/examples/<name> (its path dependencies made absolute) so
//! the build writes nothing into the repository, and all share the end-to-end CARGO_TARGET_DIR.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use occupancy_tests::{clear_build_environment, copy_dir, cuda_home, nvcc, repo_root, text};

fn example(name: &str) -> PathBuf {
    let dir = repo_root().join("target/e2e/examples").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&repo_root().join("examples").join(name), &dir);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let crates = format!("{}/occupancy", repo_root().display());
    std::fs::write(
        dir.join("Cargo.toml"),
        manifest.replace("../../occupancy", &crates),
    )
    .unwrap();
    std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    dir
}

fn cargo(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        // Not --offline: saxpy's cudarc is outside the workspace's build graph, so a clean
        // checkout may not have it cached yet. The copied Cargo.lock pins every version.
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", repo_root().join("target/e2e/target"))
        .env("NVCC", nvcc())
        .env("CUDA_HOME", cuda_home());
    clear_build_environment(&mut command);
    command.output().expect("cargo runs")
}

#[test]
fn spill_gate_fails_to_build_naming_the_kernel_and_the_declaration() {
    let dir = example("spill-gate");
    let output = cargo(&dir, &["build"]);
    assert!(
        !output.status.success(),
        "spill-gate must not build:\n{}",
        text(&output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error[spills]: kernel `stencil48` spills"),
        "{stderr}"
    );
    assert!(stderr.contains("--> src/lib.rs:13:5"), "{stderr}");
    assert!(
        stderr.contains("`min_blocks_per_sm = 4` lets ptxas keep `stencil48` spill-free"),
        "{stderr}"
    );
    // The SASS names the line of the hottest spill (the unrolled 48-point sum).
    assert!(
        stderr.contains("note: the hottest spill is at kernels/stencil.cu:17:"),
        "{stderr}"
    );
}

#[test]
fn tiled_gemm_links_its_static_library_and_allows_low_occupancy() {
    let dir = example("tiled-gemm");
    let output = cargo(&dir, &["build", "--all-targets"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        !text(&output).contains("occupancy: "),
        "no findings expected:\n{}",
        text(&output)
    );
    // The binary links libtiled_gemm_kernels.a and cudart; without a GPU it says so and exits 0.
    let run = cargo(&dir, &["run", "-q"]);
    assert!(run.status.success(), "{}", text(&run));
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("target/e2e/target/occupancy/tiled-gemm.json"))
            .unwrap(),
    )
    .unwrap();
    let rows = report["kernels"].as_array().unwrap();
    assert!(!rows.is_empty(), "{report}");
    for arch in rows {
        assert_eq!(arch["name"], "sgemm_128x128");
        assert!(
            arch["occupancy"].as_f64().unwrap() < 0.5,
            "the Volkov regime: below the 50% floor it is exempt from: {arch}"
        );
        assert_eq!(arch["spill_store_bytes"], 0, "{arch}");
    }
}

#[test]
fn saxpy_builds_its_ptx_for_cudarc() {
    let dir = example("saxpy");
    let output = cargo(&dir, &["build"]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(!text(&output).contains("never used"), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("target/e2e/target/occupancy/saxpy.json"))
            .unwrap(),
    )
    .unwrap();
    // Runs for real where there is a GPU; here it must say there is none and exit cleanly.
    let run = cargo(&dir, &["run", "-q"]);
    assert!(run.status.success(), "{}", text(&run));
    assert!(
        text(&run).contains("saxpy: no usable CUDA device") || text(&run).contains("0 wrong"),
        "{}",
        text(&run)
    );
    // The binary prints the compiled facts the attribute put into SAXPY_OCCUPANCY: they must be
    // the report's numbers, row for row.
    let printed: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter(|line| line.starts_with("saxpy compiled for "))
        .map(str::to_string)
        .collect();
    let rows = report["kernels"].as_array().unwrap();
    let expected: Vec<String> = rows
        .iter()
        .map(|row| {
            let blocks = row["blocks_per_sm"].as_u64().unwrap();
            format!(
                "saxpy compiled for {}: {} registers, {blocks} blocks of {} threads per SM ({:.1}% occupancy), persistent grid on 132 SMs: Some({})",
                row["arch"].as_str().unwrap(),
                row["registers"],
                row["block"],
                row["occupancy"].as_f64().unwrap() * 100.0,
                blocks * 132
            )
        })
        .collect();
    assert_eq!(printed, expected, "{}", text(&run));
    assert_eq!(rows.len(), 2, "sm_80 and sm_90: {report}");
    assert_eq!(report["kernels"][0]["name"], "saxpy");
    assert_eq!(report["kernels"][0]["block"], 256);
    assert_eq!(report["kernels"][0]["rust_name"], "saxpy");
    assert!(
        report["findings"].as_array().unwrap().is_empty(),
        "{report}"
    );
}
