//! End-to-end test of the gate on a generated candle-kernels-shaped crate
//! (`scripts/gen-kernel-crate.py --scale small`): the spilling undeclared kernel fails the build
//! with one summary, a family declaration covers every kernel of a macro family, and rows point
//! at real lines (a macro's invocation, a header's line).

use std::path::Path;
use std::process::Command;

use occupancy_tests::{clear_build_environment, e2e_root, nvcc, repo_root};

fn generate(dir: &Path, name: &str) {
    let _ = std::fs::remove_dir_all(dir);
    let status = Command::new("python3")
        .arg(repo_root().join("scripts/gen-kernel-crate.py"))
        .arg(dir)
        .args(["--scale", "small", "--name", name, "--repo"])
        .arg(repo_root())
        .status()
        .expect("python3 runs the generator");
    assert!(status.success(), "gen-kernel-crate.py failed");
    std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

#[test]
fn generated_crate_gates_undeclared_kernels_families_and_locations() {
    let name = "e2e-gate-gen";
    let dir = e2e_root().join("work").join(name);
    generate(&dir, name);
    let lib = dir.join("src/lib.rs");
    let mut source = std::fs::read_to_string(&lib).unwrap();
    source.push_str(
        "\n#[occupancy::kernel(family = \"affine_*\", block = 256, max_stack_bytes = 0)]\nfn affine();\n",
    );
    std::fs::write(&lib, source).unwrap();
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .args(["build", "--offline"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", e2e_root().join("target"))
        .env("NVCC", nvcc())
        .env("CUDA_HOME", occupancy_tests::cuda_home());
    clear_build_environment(&mut command);
    let output = command.output().expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // The spilling undeclared kernel fails the build, as one summary naming it.
    assert!(!output.status.success(), "the build passed:\n{text}");
    let summary = text
        .lines()
        .map(str::trim_start)
        .find(|line| line.starts_with("error[spills]: 1 undeclared kernel spills"))
        .unwrap_or_else(|| panic!("no spills summary:\n{text}"));
    assert!(
        summary.ends_with(": spill_probe (details in target/occupancy/e2e-gate-gen.json)"),
        "{summary}"
    );
    assert!(
        text.contains("`spill_probe` is defined at kernels/quantized.cu:"),
        "{text}"
    );
    assert_eq!(text.matches("error[spills]").count(), 1, "{text}");

    let report_path = e2e_root().join(format!("target/occupancy/{name}.json"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    let row = |kernel: &str, arch: &str| {
        rows.iter()
            .find(|row| row["name"] == kernel && row["arch"] == arch)
            .unwrap_or_else(|| panic!("no row for {kernel} on {arch}"))
    };
    // The family declaration covers both instances of AFFINE_OP.
    let affine_text = std::fs::read_to_string(dir.join("kernels/affine.cu")).unwrap();
    for (kernel, invocation) in [
        ("affine_f32", "AFFINE_OP(float, affine_f32)"),
        ("affine_f16", "AFFINE_OP(__half, affine_f16)"),
    ] {
        let row = row(kernel, "sm_90");
        assert_eq!(row["rust_name"], "affine", "{row}");
        assert_eq!(row["declaration"]["path"], "src/lib.rs", "{row}");
        // The row points at the macro's invocation line, not at line 0 or the #define.
        let line = affine_text
            .lines()
            .position(|text| text.starts_with(invocation))
            .unwrap()
            + 1;
        assert_eq!(row["source"]["path"], "kernels/affine.cu", "{row}");
        assert_eq!(row["source"]["line"], line, "{row}");
    }
    // A kernel defined in a header points at the header's line.
    let header = std::fs::read_to_string(dir.join("kernels/fill_kernels.cuh")).unwrap();
    let header_line = header
        .lines()
        .position(|text| text.contains("void copy2d_f32("))
        .unwrap()
        + 1;
    let copy = row("copy2d_f32", "sm_80");
    assert_eq!(copy["source"]["path"], "kernels/fill_kernels.cuh", "{copy}");
    assert_eq!(copy["source"]["line"], header_line, "{copy}");
    // The undeclared kernel's findings are in the report, each at its definition.
    let findings = report["findings"].as_array().unwrap();
    let spill = findings
        .iter()
        .find(|finding| finding["lint"] == "spills" && finding["kernel"] == "spill_probe")
        .unwrap_or_else(|| panic!("no spills finding in the report"));
    assert_eq!(spill["location"]["path"], "kernels/quantized.cu", "{spill}");
    assert!(spill["location"]["line"].as_u64().unwrap() > 0, "{spill}");
}
