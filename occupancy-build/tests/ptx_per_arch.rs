//! `ptx_per_arch` end to end with the real nvcc (scripts/setup-cuda.sh installs it; these tests
//! fail, never skip, without it): each target arch's rows come from its own PTX, a kernel behind
//! `__CUDA_ARCH__ >= 890` exists on sm_90 only in that mode, the generated module ships one PTX
//! per arch with a picker that compiles and picks as the driver would, and a library build's
//! SASS follows the same mode.

// A test reads the environment it runs in (the CUDA tools setup-cuda.sh installed).
#![allow(clippy::disallowed_methods)]

mod common;

use std::path::{Path, PathBuf};

use occupancy_build::Build;
use occupancy_core::report::Report;

/// `a` everywhere; `fp8` only where the compiled-for arch is 8.9 or newer.
const KERNEL: &str = "extern \"C\" __global__ void a(float* x) { x[threadIdx.x] *= 2.0f; }\n#if __CUDA_ARCH__ >= 890\nextern \"C\" __global__ void fp8(float* x) { x[threadIdx.x] += 1.0f; }\n#endif\n";

/// For a library, where host code launches kernels: a kernel must exist in every device pass
/// (nvcc's rule), so only its body is arch-dependent.
const LIB_KERNEL: &str = "extern \"C\" __global__ void a(float* x) { x[threadIdx.x] *= 2.0f; }\nextern \"C\" __global__ void fp8(float* x) {\n#if __CUDA_ARCH__ >= 890\n  x[threadIdx.x] += 1.0f;\n#endif\n}\n";

/// A package `<dir>/pkg` (Cargo.toml with `metadata`, src/, kernels/k.cu) and its OUT_DIR, in
/// a private directory removed when the test ends (hold the first value until then).
fn package(name: &str, metadata: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = common::scratch_dir(&format!("occupancy-per-arch-{name}-"));
    let (pkg, out) = common::scratch_package(dir.path(), metadata, "");
    std::fs::write(pkg.join("kernels/k.cu"), KERNEL).unwrap();
    (dir, pkg, out)
}

fn build(pkg: &Path, out: &Path) -> Build {
    let mut build = common::package_build(pkg, out);
    build.file("kernels/k.cu").arch("sm_80").arch("sm_90");
    build
}

/// (kernel, arch, ptx_target) of every row, sorted.
fn programs(report: &Report) -> Vec<(String, String, String)> {
    let mut rows: Vec<_> = report
        .kernels
        .iter()
        .map(|row| {
            (
                row.name.clone(),
                row.arch.clone(),
                row.ptx_target.clone().unwrap_or_default(),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn rows(expected: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    expected
        .iter()
        .map(|(name, arch, target)| (name.to_string(), arch.to_string(), target.to_string()))
        .collect()
}

#[test]
fn each_arch_is_checked_on_its_own_ptx_only_when_asked() {
    let (_dir, pkg, out) = package("ptx", "[package.metadata.occupancy]\nptx_per_arch = true\n");
    let per_arch = build(&pkg, &out).try_compile_ptx().unwrap();
    assert_eq!(
        programs(&per_arch.report),
        rows(&[
            ("a", "sm_80", "compute_80"),
            ("a", "sm_90", "compute_90"),
            ("fp8", "sm_90", "compute_90"),
        ])
    );
    let text = occupancy_core::report::render_text(&per_arch.report);
    assert!(
        text.contains("programs: sm_80 from compute_80 PTX, sm_90 from compute_90 PTX\n"),
        "{text}"
    );
    let module = std::fs::read_to_string(out.join("occupancy_ptx.rs")).unwrap();
    for item in [
        "pub const K: &str",
        "pub const K_SM_80: &str",
        "pub const K_SM_90: &str",
        "pub fn k(major: u32, minor: u32) -> Option<&'static str>",
    ] {
        assert!(module.contains(item), "{item} in\n{module}");
    }
    let ptx_90 = std::fs::read_to_string(out.join("k.compute_90.ptx")).unwrap();
    let ptx_80 = std::fs::read_to_string(out.join("k.compute_80.ptx")).unwrap();
    assert!(ptx_90.contains(".entry fp8") && !ptx_80.contains(".entry fp8"));
    assert_eq!(std::fs::read_to_string(out.join("k.ptx")).unwrap(), ptx_80);

    // The builder overrides the metadata; the same OUT_DIR then holds the one-PTX build.
    let shipped = build(&pkg, &out)
        .ptx_per_arch(false)
        .try_compile_ptx()
        .unwrap();
    assert_eq!(
        programs(&shipped.report),
        rows(&[("a", "sm_80", "compute_80"), ("a", "sm_90", "compute_80")])
    );
    let module = std::fs::read_to_string(out.join("occupancy_ptx.rs")).unwrap();
    assert!(
        module.contains("pub const K: &str") && !module.contains("K_SM_90"),
        "{module}"
    );
    // And back: the per-arch compile replays from its own cache slot.
    let replayed = build(&pkg, &out).try_compile_ptx().unwrap();
    assert!(replayed
        .report
        .sources
        .iter()
        .all(|source| source.from_cache));
    assert_eq!(programs(&replayed.report), programs(&per_arch.report));
}

#[test]
fn the_generated_picker_compiles_and_picks_the_highest_loadable_ptx() {
    let (_dir, pkg, out) = package("picker", "");
    let output = build(&pkg, &out)
        .ptx_per_arch(true)
        .try_compile_ptx()
        .unwrap();
    let module = output.ptx_module.unwrap();
    let main = out.join("picker_main.rs");
    std::fs::write(
        &main,
        format!(
            "include!({:?});\nfn main() {{\n    assert_eq!(k(7, 5), None);\n    assert_eq!(k(8, 0), Some(K_SM_80));\n    assert_eq!(k(8, 9), Some(K_SM_80));\n    assert_eq!(k(9, 0), Some(K_SM_90));\n    assert_eq!(k(12, 0), Some(K_SM_90));\n    assert!(K_SM_90.contains(\".entry fp8\") && !K_SM_80.contains(\".entry fp8\"));\n    assert_eq!(K, K_SM_80);\n}}\n",
            module.display().to_string()
        ),
    )
    .unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let binary = out.join("picker_main");
    let compiled = std::process::Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(&binary)
        .arg(&main)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let ran = std::process::Command::new(&binary).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

#[test]
fn jit_archs_load_the_highest_ptx_not_above_them() {
    let (_dir, pkg, out) = package(
        "jit",
        "[package.metadata.occupancy]\nptx_per_arch = true\njit_archs = [\"sm_120\"]\n",
    );
    let output = build(&pkg, &out).try_compile_ptx().unwrap();
    assert_eq!(
        programs(&output.report),
        rows(&[
            ("a", "sm_120", "compute_90"),
            ("a", "sm_80", "compute_80"),
            ("a", "sm_90", "compute_90"),
            ("fp8", "sm_120", "compute_90"),
            ("fp8", "sm_90", "compute_90"),
        ])
    );
}

#[test]
fn a_library_embeds_each_arch_from_the_ptx_its_rows_name() {
    let (_dir, pkg, out) = package("lib", "");
    std::fs::write(pkg.join("kernels/k.cu"), LIB_KERNEL).unwrap();
    // Default: sm_90 SASS is assembled from the compute_80 PTX, and its rows say so.
    let shipped = build(&pkg, &out).try_compile_lib("k").unwrap();
    assert_eq!(
        programs(&shipped.report),
        rows(&[
            ("a", "sm_80", "compute_80"),
            ("a", "sm_90", "compute_80"),
            ("fp8", "sm_80", "compute_80"),
            ("fp8", "sm_90", "compute_80"),
        ])
    );
    let per_arch = build(&pkg, &out)
        .ptx_per_arch(true)
        .try_compile_lib("k")
        .unwrap();
    assert_eq!(
        programs(&per_arch.report),
        rows(&[
            ("a", "sm_80", "compute_80"),
            ("a", "sm_90", "compute_90"),
            ("fp8", "sm_80", "compute_80"),
            ("fp8", "sm_90", "compute_90"),
        ])
    );
    assert!(per_arch.library.unwrap().is_file());
}

#[test]
fn without_nvcc_under_occupancy_skip_the_per_arch_module_still_compiles() {
    let (_dir, pkg, out) = package(
        "skip",
        "[package.metadata.occupancy]\nptx_per_arch = true\n",
    );
    let mut env = occupancy_build::TrackedEnv::new();
    env.set("OCCUPANCY_SKIP", Some("1"));
    for name in ["NVCC", "CUDA_HOME", "CUDA_PATH", "RUSTC_WRAPPER"] {
        env.set(name, None);
    }
    env.set("PATH", Some(out.to_str().unwrap()));
    let output = build(&pkg, &out).env(env).try_compile_ptx().unwrap();
    let module = output.ptx_module.unwrap();
    let main = out.join("skip_main.rs");
    std::fs::write(
        &main,
        format!(
            "include!({:?});\nfn main() {{\n    assert_eq!(k(9, 0), Some(K_SM_90));\n    assert_eq!((K, K_SM_80, K_SM_90), (\"\", \"\", \"\"));\n}}\n",
            module.display().to_string()
        ),
    )
    .unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let compiled = std::process::Command::new(rustc)
        .args(["--edition", "2021", "-o"])
        .arg(out.join("skip_main"))
        .arg(&main)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let ran = std::process::Command::new(out.join("skip_main"))
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

#[test]
fn a_spill_only_in_a_higher_arch_program_gets_its_machine_code_note() {
    // `hot` exists only in the compute_90 program and spills there: the SASS is read because
    // that program's PTX asks for it, not only the lowest one's.
    let (_dir, pkg, out) = package(
        "sass",
        "[package.metadata.occupancy]\nptx_per_arch = true\n",
    );
    std::fs::write(
        pkg.join("src/lib.rs"),
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 8, archs = [\"sm_90\"])]\nfn hot(input: *const f32, output: *mut f32, n: i32);\n",
    )
    .unwrap();
    let hot = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/spill/kernels/hot.cu"),
    )
    .unwrap();
    let guarded = hot.replace(
        "extern \"C\" __global__",
        "#if __CUDA_ARCH__ >= 890\nextern \"C\" __global__",
    ) + "#endif\n";
    std::fs::write(pkg.join("kernels/k.cu"), format!("{KERNEL}{guarded}")).unwrap();
    let error = build(&pkg, &out).try_compile_ptx().unwrap_err();
    let occupancy_build::Error::Denied { rendered, .. } = &error else {
        panic!("expected the spill to deny the build, got {error}");
    };
    assert!(
        rendered.contains("error[spills]") && rendered.contains("the hottest spill is at"),
        "{rendered}"
    );
}
