//! The build engine end to end with the real nvcc (scripts/setup-cuda.sh installs it; these tests
//! fail, never skip, without it): which program each row describes (`ptx_target`), GPUs named
//! in `jit_archs` checked on the JIT result of the shipped PTX, and a failed build's report.

mod common;

use std::path::{Path, PathBuf};

use occupancy_build::{Build, Error};
use occupancy_core::report::Report;

/// A package in a cargo-like layout: `<dir>/pkg` with Cargo.toml, src/lib.rs and kernels/, and
/// OUT_DIR at `<dir>/target/debug/build/pkg-0/out` (with the target dir's CACHEDIR.TAG).
/// The package lives in a private directory removed when the test ends (hold the first value
/// until then).
fn package(
    name: &str,
    metadata: &str,
    lib_rs: &str,
    kernel: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = common::scratch_dir(&format!("occupancy-programs-{name}-"));
    let (pkg, out) = common::scratch_package(dir.path(), metadata, lib_rs);
    std::fs::write(pkg.join("kernels/k.cu"), kernel).unwrap();
    (dir, pkg, out)
}

fn build(pkg: &Path, out: &Path) -> Build {
    let mut build = common::package_build(pkg, out);
    build.file("kernels/k.cu");
    build
}

const BIG_SMEM_KERNEL: &str = "extern \"C\" __global__ void big(float* x) {\n  extern __shared__ float tile[];\n  tile[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n  x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];\n}\n";
const BIG_SMEM_DECLARATION: &str =
    "#[occupancy::kernel(block = 256, dynamic_smem = 131072)]\nfn big(x: *mut f32);\n";

#[test]
fn every_row_names_its_ptx_target_and_sass_arch() {
    let (_dir, pkg, out) = package("rows", "", BIG_SMEM_DECLARATION, BIG_SMEM_KERNEL);
    let output = build(&pkg, &out)
        .arch("sm_80")
        .arch("sm_90")
        .try_compile_ptx()
        .unwrap();
    let programs: Vec<(String, Option<String>)> = output
        .report
        .kernels
        .iter()
        .map(|row| (row.arch.clone(), row.ptx_target.clone()))
        .collect();
    assert_eq!(
        programs,
        [
            ("sm_80".to_string(), Some("compute_80".to_string())),
            ("sm_90".to_string(), Some("compute_80".to_string()))
        ]
    );
    let text = occupancy_core::report::render_text(&output.report);
    assert!(
        text.contains("programs: sm_80 from compute_80 PTX, sm_90 from compute_80 PTX (JIT)"),
        "{text}"
    );
}

#[test]
fn jit_archs_check_the_shipped_ptx_where_it_must_run() {
    // 131,072 B of dynamic shared memory fits sm_80 and sm_90, not sm_120's 101,376 B.
    let (_dir, pkg, out) = package(
        "jit",
        "[package.metadata.occupancy]\njit_archs = [\"sm_120\"]\n",
        BIG_SMEM_DECLARATION,
        BIG_SMEM_KERNEL,
    );
    let error = build(&pkg, &out)
        .arch("sm_80")
        .arch("sm_90")
        .try_compile_ptx()
        .unwrap_err();
    let Error::Denied { rendered, .. } = &error else {
        panic!("expected a denied build, got {error}");
    };
    assert!(
        rendered.contains("error[unlaunchable]") && rendered.contains("sm_120"),
        "{rendered}"
    );
    assert!(
        rendered.contains("program checked: sm_120 SASS from compute_80 PTX, as the driver JIT-compiles the shipped PTX on sm_120"),
        "{rendered}"
    );
    assert!(
        !rendered.contains("on sm_90"),
        "sm_80 and sm_90 fit: {rendered}"
    );
    // The builder's list overrides the metadata's; a JIT arch older than the PTX is refused.
    let older = build(&pkg, &out)
        .arch("sm_90")
        .jit_arch("sm_80")
        .try_compile_ptx()
        .unwrap_err();
    assert!(
        matches!(older, Error::JitArchBelowTargets { .. }),
        "{older:?}"
    );
    assert!(
        older
            .to_string()
            .contains("sm_80 is older than the lowest target arch sm_90"),
        "{older}"
    );
}

#[test]
fn a_failed_build_marks_its_report_failed() {
    let (_dir, pkg, out) = package(
        "failed",
        "",
        "",
        "extern \"C\" __global__ void ok(float* x) { x[0] = 1.0f; }\n",
    );
    build(&pkg, &out).arch("sm_80").try_compile_ptx().unwrap();
    // target/occupancy/<crate>.json (the crate name is CARGO_PKG_NAME when set: this test's).
    let reports = out.ancestors().nth(4).unwrap().join("occupancy");
    let written: Vec<PathBuf> = std::fs::read_dir(&reports)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let report_path = written[0].clone();
    let good = Report::from_json(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!((good.kernels.len(), good.failed.as_deref()), (1, None));
    std::fs::write(pkg.join("kernels/k.cu"), "this is not CUDA\n").unwrap();
    let error = build(&pkg, &out)
        .arch("sm_80")
        .try_compile_ptx()
        .unwrap_err();
    assert!(matches!(error, Error::NvccFailed { .. }), "{error}");
    let failed = Report::from_json(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert!(
        failed.kernels.is_empty(),
        "no rows of an earlier build: {:?}",
        failed.kernels
    );
    assert!(
        failed
            .failed
            .as_deref()
            .is_some_and(|why| why.contains("nvcc failed to compile")),
        "{:?}",
        failed.failed
    );
}

#[test]
fn the_generated_kernel_crate_builds_checks_and_replays() {
    // scripts/gen-kernel-crate.py --scale small: the shape of issue 10's crate, 54 kernels.
    let dir = std::env::temp_dir().join(format!("occupancy-gen-crate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = std::process::Command::new("python3")
        .arg(repo.join("scripts/gen-kernel-crate.py"))
        .arg(dir.join("crate"))
        .args(["--scale", "small"])
        .arg("--repo")
        .arg(repo)
        .status()
        .unwrap();
    assert!(status.success());
    let out = dir.join("target/debug/build/gen-0/out");
    std::fs::create_dir_all(&out).unwrap();
    let run = || {
        let mut build = Build::new();
        build
            .source_dir("kernels")
            .out_dir(&out)
            .manifest_dir(dir.join("crate"))
            .cargo_metadata(false);
        // The undeclared spill_probe may be a deny finding (the gate's default for spills of
        // undeclared kernels): the report is written either way.
        match build.try_compile_ptx() {
            Ok(_) | Err(Error::Denied { .. }) => {}
            Err(error) => panic!("{error}"),
        }
        Report::from_json(&std::fs::read_to_string(out.join("occupancy.json")).unwrap()).unwrap()
    };
    let cold = run();
    assert_eq!(
        cold.archs,
        ["sm_80", "sm_90"],
        "archs from the crate's metadata"
    );
    // 44 kernels on each arch: the 10 fp8 kernels behind __CUDA_ARCH__ >= 890 are not in
    // compute_80 PTX, and every sm_90 row is the JIT of that PTX.
    assert_eq!(cold.kernels.len(), 88);
    assert!(cold
        .kernels
        .iter()
        .all(|row| row.ptx_target.as_deref() == Some("compute_80")));
    assert!(!cold.kernels.iter().any(|row| row.name.contains("f8e4m3")));
    for arch in ["sm_80", "sm_90"] {
        let probe = cold
            .kernels
            .iter()
            .find(|row| row.name == "spill_probe" && row.arch == arch)
            .unwrap();
        assert!(probe.spill_store_bytes > 0, "{arch}: {probe:?}");
    }
    assert!(cold.sources.iter().all(|source| !source.from_cache));
    let warm = run();
    assert_eq!(warm.sources.len(), 11);
    assert!(
        warm.sources.iter().all(|source| source.from_cache),
        "{:?}",
        warm.sources
    );
    assert_eq!(
        occupancy_core::report::render_json(&Report {
            sources: Vec::new(),
            ..warm
        }),
        occupancy_core::report::render_json(&Report {
            sources: Vec::new(),
            ..cold
        }),
        "the replay reports what the compile did"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_library_is_archived_again_only_when_an_object_changed() {
    const KERNEL: &str =
        "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";
    let (_dir, pkg, out) = package("archive", "", "", KERNEL);
    let library = build(&pkg, &out)
        .arch("sm_80")
        .try_compile_lib("k")
        .unwrap()
        .library
        .unwrap();
    let written = |library: &Path| std::fs::metadata(library).unwrap().modified().unwrap();
    let first = written(&library);
    // A rerun with nothing changed (a Rust-only edit) keeps the archive as it is.
    std::thread::sleep(std::time::Duration::from_millis(20));
    build(&pkg, &out)
        .arch("sm_80")
        .try_compile_lib("k")
        .unwrap();
    assert_eq!(
        written(&library),
        first,
        "a rerun rewrote an unchanged archive"
    );
    // A changed kernel, or an archive someone else changed, is archived again.
    std::fs::write(pkg.join("kernels/k.cu"), KERNEL.replace("2.0f", "3.0f")).unwrap();
    build(&pkg, &out)
        .arch("sm_80")
        .try_compile_lib("k")
        .unwrap();
    let second = written(&library);
    assert_ne!(second, first, "a changed object was not archived");
    std::fs::write(&library, b"not an archive").unwrap();
    build(&pkg, &out)
        .arch("sm_80")
        .try_compile_lib("k")
        .unwrap();
    assert!(std::fs::read(&library).unwrap().starts_with(b"!<arch>"));
}
