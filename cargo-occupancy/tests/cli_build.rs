//! `cargo occupancy build`: scratch crates in three builders' styles (a direct `nvcc --ptx`
//! Command, `cc`'s CUDA mode, cmake-rs), built as they are (no
//! occupancy dependency, no edit), their `OUT_DIR`s read, every row compared with an
//! independent reading of the same code (a hand-run `ptxas -v` on the PTX, `cuobjdump
//! -res-usage` on the library). The artifact traps on real compiles: a stale PTX, `cc`'s `-G` in
//! a debug profile, arch-specific PTX, a build script that asks for a GPU. Needs nvcc, ptxas,
//! cuobjdump and nvdisasm (scripts/setup-cuda.sh), CMake (`OCCUPANCY_CMAKE`, from the same
//! script) and `cc` and `cmake` in cargo's cache (`cargo fetch`).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{binary, nvcc, repo_root, stderr, stdout, work_dir};
use serde_json::Value;

/// A `build.rs` in bindgen_cuda's manner: `nvcc --ptx` per file of `kernels/` into `OUT_DIR`
/// at `CUDA_COMPUTE_CAP` (a number; `PTX_ARCH_SUFFIX=a` for `sm_90a`), asking `nvidia-smi` when
/// it is unset, and a generated `ptx.rs` that includes each module.
const PTX_BUILD_RS: &str = r#"
use std::path::PathBuf;
use std::process::Command;
fn main() {
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rerun-if-env-changed=PTX_ARCH_SUFFIX");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| {
        let out = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output()
            .expect("nvidia-smi failed: set CUDA_COMPUTE_CAP");
        String::from_utf8(out.stdout).unwrap().trim().replace('.', "")
    });
    let suffix = std::env::var("PTX_ARCH_SUFFIX").unwrap_or_default();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let nvcc = std::env::var("NVCC").unwrap();
    let mut consts = String::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir("kernels").unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let ptx = out.join(format!("{stem}.ptx"));
        let status = Command::new(&nvcc).arg("--ptx").arg(format!("-arch=sm_{cap}{suffix}")).arg("-o").arg(&ptx).arg(&path).status().unwrap();
        assert!(status.success());
        consts.push_str(&format!("pub const {}: &str = include_str!(concat!(env!(\"OUT_DIR\"), \"/{stem}.ptx\"));\n", stem.to_uppercase()));
    }
    std::fs::write(out.join("ptx.rs"), consts).unwrap();
}
"#;

/// A `build.rs` in `cc`'s CUDA mode: a static library linked by the crate.
const CC_BUILD_RS: &str = r#"
fn main() {
    println!("cargo:rerun-if-changed=kernels");
    cc::Build::new().cuda(true).flag("-gencode").flag("arch=compute_80,code=sm_80")
        .file("kernels/saxpy.cu").file("kernels/spills.cu").compile("kernels");
}
"#;

const SAXPY: &str = "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

/// A package `name` in `dir` with `build_rs`, `build_deps` and the corpus's spilling kernels.
fn scratch_crate(dir: &Path, name: &str, build_rs: &str, build_deps: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("kernels")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n[build-dependencies]\n{build_deps}"
    );
    std::fs::write(root.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(root.join("build.rs"), build_rs).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(root.join("kernels/saxpy.cu"), SAXPY).unwrap();
    std::fs::copy(
        repo_root().join("tests/kernels/spills.cu"),
        root.join("kernels/spills.cu"),
    )
    .unwrap();
    root
}

/// `cargo occupancy build --json ARGS` in `root`, offline, with `vars`.
fn build(root: &Path, args: &[&str], vars: &[(&str, &str)]) -> (Output, Value) {
    let mut command = binary();
    command
        .arg("occupancy")
        .arg("build")
        .arg("--json")
        .args(args)
        .current_dir(root)
        .env("CARGO_NET_OFFLINE", "true")
        .env("NVCC", nvcc())
        .env_remove("CUDA_COMPUTE_CAP")
        .env_remove("RUSTC_WRAPPER");
    for (name, value) in vars {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let report = serde_json::from_str(&stdout(&output)).unwrap_or(Value::Null);
    (output, report)
}

fn rows(report: &Value) -> Vec<&Value> {
    report["kernels"]
        .as_array()
        .map(|rows| rows.iter().collect())
        .unwrap_or_default()
}

fn findings<'a>(report: &'a Value, lint: &str) -> Vec<&'a Value> {
    let all = report["findings"].as_array();
    all.map(|all| all.iter().filter(|f| f["lint"] == lint).collect())
        .unwrap_or_default()
}

/// The one `OUT_DIR` of `package` under `root`'s target directory.
fn out_dir(root: &Path, profile: &str, package: &str) -> PathBuf {
    let build = root.join("target").join(profile).join("build");
    let dirs: Vec<PathBuf> = std::fs::read_dir(build)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("out"))
        .filter(|out| out.is_dir() && out.to_string_lossy().contains(&format!("/{package}-")))
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// ptxas's own report of `ptx` on `arch`: symbol → (registers, spill stores, spill loads).
fn hand_run_ptxas(ptx: &Path, arch: &str) -> BTreeSet<(String, u64, u64, u64)> {
    let ptxas = nvcc().with_file_name("ptxas");
    let cubin = ptx.with_extension("hand.cubin");
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let _ = std::fs::remove_file(cubin);
    let log = stderr(&output);
    let mut facts = BTreeSet::new();
    let mut current: Option<(String, u64, u64)> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            current = rest.split('\'').next().map(|name| (name.to_owned(), 0, 0));
        } else if line.contains("bytes spill stores") {
            let numbers: Vec<u64> = numbers_in(line);
            if let Some(current) = &mut current {
                current.1 = numbers[1];
                current.2 = numbers[2];
            }
        } else if let Some(rest) = line.split("Used ").nth(1) {
            let registers = numbers_in(rest)[0];
            let (name, stores, loads) = current.take().unwrap();
            facts.insert((name, registers, stores, loads));
        }
    }
    facts
}

/// `cuobjdump -res-usage` of `binary`: (kernel, registers) of every function it lists, and the
/// listing.
fn cuobjdump_registers(binary: &Path) -> (BTreeSet<(String, u64)>, String) {
    let cuobjdump = nvcc().with_file_name("cuobjdump");
    let output = Command::new(cuobjdump)
        .arg("-res-usage")
        .arg(binary)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let listing = stdout(&output);
    let mut registers_of = BTreeSet::new();
    let mut function = None;
    for line in listing.lines() {
        if let Some(name) = line.trim().strip_prefix("Function ") {
            function = Some(name.trim_end_matches(':').to_owned());
        } else if let (Some(name), Some(rest)) = (&function, line.split("REG:").nth(1)) {
            registers_of.insert((name.clone(), numbers_in(rest)[0]));
        }
    }
    (registers_of, listing)
}

/// Asserts that `report` has one row per kernel x arch and that its (kernel, registers) equal
/// `cuobjdump -res-usage` of `library`; the number of rows.
fn rows_equal_cuobjdump_once_each(report: &Value, library: &Path) -> usize {
    let (expected, listing) = cuobjdump_registers(library);
    assert!(!expected.is_empty(), "{listing}");
    let rows = rows(report);
    let keys: Vec<(&str, &str)> = (rows.iter())
        .map(|row| (row["name"].as_str().unwrap(), row["arch"].as_str().unwrap()))
        .collect();
    let distinct: BTreeSet<_> = keys.iter().collect();
    assert_eq!(keys.len(), distinct.len(), "one row per kernel: {keys:?}");
    let seen: BTreeSet<(String, u64)> = (rows.iter())
        .map(|row| {
            let name = row["name"].as_str().unwrap().to_owned();
            (name, row["registers"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(seen, expected, "{listing}");
    rows.len()
}

fn numbers_in(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect()
}

fn row_facts(rows: &[&Value]) -> BTreeSet<(String, u64, u64, u64)> {
    rows.iter()
        .map(|row| {
            let number = |key: &str| row[key].as_u64().unwrap();
            (
                row["name"].as_str().unwrap().to_owned(),
                number("registers"),
                number("spill_store_bytes"),
                number("spill_load_bytes"),
            )
        })
        .collect()
}

/// A direct `nvcc --ptx` build: every row equals ptxas's own report of the shipped PTX, named
/// for the package, the spilling kernels fail the gate (exit 1); `--arch` reaches the build
/// script through `CUDA_COMPUTE_CAP`.
#[test]
fn ptx_in_out_dir_is_assembled_as_the_driver_would_and_equals_ptxas() {
    let dir = work_dir("cli_build", "ptx");
    let root = scratch_crate(&dir, "ptxcmd", PTX_BUILD_RS, "");
    let (output, report) = build(&root, &["--arch", "sm_80"], &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let out = out_dir(&root, "debug", "ptxcmd");
    let mut expected = hand_run_ptxas(&out.join("saxpy.ptx"), "sm_80");
    expected.extend(hand_run_ptxas(&out.join("spills.ptx"), "sm_80"));
    let rows = rows(&report);
    assert_eq!(row_facts(&rows), expected);
    assert!(rows
        .iter()
        .all(|row| row["crate"] == "ptxcmd" && row["arch"] == "sm_80"));
    let spills = findings(&report, "spills");
    assert_eq!(spills.len(), 2, "{report:#}");
    assert!(spills
        .iter()
        .all(|f| f["level"] == "deny" && f["crate"] == "ptxcmd"));
    assert!(
        stderr(&output).contains("CUDA_COMPUTE_CAP=80"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PTX module the build no longer makes (its source removed) is read and said to be stale,
/// and its findings do not gate; a module kept by the current `ptx.rs` is not stale.
#[test]
fn a_module_left_by_an_earlier_build_is_named_and_does_not_gate() {
    let dir = work_dir("cli_build", "stale");
    let root = scratch_crate(&dir, "ptxstale", PTX_BUILD_RS, "");
    let (first, _) = build(&root, &["--arch", "sm_80"], &[]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    std::fs::remove_file(root.join("kernels/spills.cu")).unwrap();
    let (output, report) = build(&root, &["--arch", "sm_80"], &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("1 file(s) of OUT_DIR predate its build script's last run"),
        "{text}"
    );
    assert!(text.contains("spills.ptx"), "{text}");
    let spills = findings(&report, "spills");
    assert_eq!(spills.len(), 2, "{report:#}");
    for finding in spills {
        assert_eq!(finding["level"], "warn");
        let notes = finding["notes"].to_string();
        assert!(
            notes.contains("left in OUT_DIR by an earlier build"),
            "{notes}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `cc` adds `-G` in a debug profile: the build says so and holds the findings back; the
/// release build of the same crate gates on what ships, and its rows equal cuobjdump's.
#[test]
fn cc_debug_code_is_held_back_and_the_release_library_gates() {
    let dir = work_dir("cli_build", "cc");
    let root = scratch_crate(&dir, "ccstatic", CC_BUILD_RS, "cc = \"1\"\n");
    let (debug, debug_report) = build(&root, &[], &[]);
    let text = stderr(&debug);
    assert_eq!(debug.status.code(), Some(0), "{text}");
    assert!(text.contains("compiled for debugging (`nvcc -G`"), "{text}");
    assert!(!rows(&debug_report).is_empty());
    assert!(
        findings(&debug_report, "spills").is_empty(),
        "-G code does not spill here"
    );

    let (release, report) = build(&root, &["--", "--release"], &[]);
    let text = stderr(&release);
    assert_eq!(release.status.code(), Some(1), "{text}");
    assert!(!text.contains("compiled for debugging"), "{text}");
    let spills = findings(&report, "spills");
    assert!(spills.iter().any(|f| f["level"] == "deny"), "{report:#}");
    let library = out_dir(&root, "release", "ccstatic").join("libkernels.a");
    // cc compiles with -rdc and device-links: the linked `kernels_dlink.o` is read, not the
    // relocatable objects beside it, so each kernel x arch is one row.
    assert_eq!(rows_equal_cuobjdump_once_each(&report, &library), 4);
    assert!(
        text.contains("relocatable (-rdc) cubin(s) passed over"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #42, class 5: `-G` passed by hand in a release build is what ships: said as seen (debug
/// code in an optimized profile) and gated, never told to "build with --release".
#[test]
fn debug_code_in_a_release_build_is_said_and_gated() {
    let dir = work_dir("cli_build", "hand_g");
    let build_rs = CC_BUILD_RS.replace(".cuda(true)", ".cuda(true).flag(\"-G\")");
    let root = scratch_crate(&dir, "handg", &build_rs, "cc = \"1\"\n");
    let lock = dir.join("occupancy.lock");
    let lock_arg = lock.to_str().unwrap();
    let (release, report) = build(
        &root,
        &["--lock", lock_arg, "--bless", "--", "--release"],
        &[],
    );
    let text = stderr(&release);
    assert_eq!(release.status.code(), Some(0), "{text}");
    assert!(
        text.contains("seen in an optimized (release) profile"),
        "{text}"
    );
    assert!(!text.contains("build with `-- --release`"), "{text}");
    assert!(!rows(&report).is_empty(), "{report:#}");
    let blessed = std::fs::read_to_string(&lock).unwrap();
    assert!(
        blessed.contains("saxpy"),
        "gated, so the lock records it: {blessed}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// cudaforge's `sm_90a` PTX: assembled for sm_90a on its own GPU, and an `arch_specific_ptx`
/// finding, which names a newer asked arch it cannot reach.
#[test]
fn arch_specific_ptx_is_a_finding_and_no_newer_row_is_claimed() {
    let dir = work_dir("cli_build", "arch_specific");
    let root = scratch_crate(&dir, "ptx90a", PTX_BUILD_RS, "");
    std::fs::remove_file(root.join("kernels/spills.cu")).unwrap();
    let vars = [("PTX_ARCH_SUFFIX", "a"), ("CUDA_COMPUTE_CAP", "90")];
    let (output, report) = build(&root, &["--arch", "sm_90", "--arch", "sm_100"], &vars);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows = rows(&report);
    assert_eq!(rows.len(), 1, "{report:#}");
    assert_eq!(rows[0]["arch"], "sm_90");
    let found = findings(&report, "arch_specific_ptx");
    assert_eq!(found.len(), 1, "{report:#}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(
        message.contains("sm_90a only (kernel `saxpy`)"),
        "{message}"
    );
    assert!(found[0]["notes"]
        .to_string()
        .contains("asked for sm_100: no row"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build script that asks nvidia-smi fails without a GPU: a tool error naming `--arch`. With
/// `--arch`, it builds (the variable it reads is set).
#[test]
fn a_build_script_that_wants_a_gpu_is_told_which_flag_to_pass() {
    let dir = work_dir("cli_build", "gpu");
    let root = scratch_crate(&dir, "wantsgpu", PTX_BUILD_RS, "");
    let (output, json) = build(&root, &[], &[]);
    let text = stderr(&output);
    // Issue #42, classes 10 and 12: a failed build has its own exit code, and `--json` says so.
    assert_eq!(output.status.code(), Some(3), "{text}");
    assert_eq!(json["status"], "build_failed", "{json:#}");
    assert_eq!(json["exit_code"], 3, "{json:#}");
    assert!(text.contains("`cargo build` failed"), "{text}");
    assert!(text.contains("pass `--arch sm_XX`"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `build.rs` in the manner of llama-cpp-sys-2 and whisper-rs-sys: cmake-rs configures and
/// builds a CMake project whose CUDA targets take their arch from CMake's own `CUDAARCHS`, and
/// installs a static library into `OUT_DIR/lib`.
const CMAKE_BUILD_RS: &str = r#"
fn main() {
    println!("cargo:rerun-if-changed=kernels");
    let dst = cmake::Config::new("kernels").build_target("install").build();
    println!("cargo:rustc-link-search=native={}/lib", dst.display());
    println!("cargo:rustc-link-lib=static=kernels");
}
"#;

const CMAKE_LISTS: &str = "cmake_minimum_required(VERSION 3.18)\nproject(kernels LANGUAGES CXX CUDA)\nadd_library(kernels STATIC saxpy.cu spills.cu)\ninstall(TARGETS kernels ARCHIVE DESTINATION lib)\n";

/// The CMake scripts/setup-cuda.sh installs (`OCCUPANCY_CMAKE`); `None`, said, where it is
/// unset outside CI (CI runs the CMake tests: there it fails).
#[allow(clippy::disallowed_methods)]
fn cmake() -> Option<std::ffi::OsString> {
    let cmake = std::env::var_os("OCCUPANCY_CMAKE");
    if cmake.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs this test: OCCUPANCY_CMAKE is unset (scripts/setup-cuda.sh --env)"
        );
        eprintln!("skipped: OCCUPANCY_CMAKE is unset (source <(scripts/setup-cuda.sh --env))");
    }
    cmake
}

/// CMake through cmake-rs (CMake from the registries: scripts/setup-cuda.sh installs it, and
/// `OCCUPANCY_CMAKE` names it): `--arch` reaches CMake as `CUDAARCHS`; the installed library is
/// read (CMake's object files beside it and its compiler probes are passed over), each kernel
/// once, every row's registers equal to `cuobjdump -res-usage` of that library, and the
/// spilling kernels gate.
#[test]
fn a_cmake_rs_static_library_is_read_once_and_equals_cuobjdump() {
    let Some(cmake) = cmake() else { return };
    let dir = work_dir("cli_build", "cmake");
    let root = scratch_crate(&dir, "cmakestatic", CMAKE_BUILD_RS, "cmake = \"0.1\"\n");
    std::fs::write(root.join("kernels/CMakeLists.txt"), CMAKE_LISTS).unwrap();
    let nvcc = nvcc();
    let cmake = cmake.to_str().unwrap();
    let vars = [("CMAKE", cmake), ("CUDACXX", nvcc.to_str().unwrap())];
    let (output, report) = build(&root, &["--arch", "sm_80", "--", "--release"], &vars);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let library = out_dir(&root, "release", "cmakestatic").join("lib/libkernels.a");
    assert_eq!(rows_equal_cuobjdump_once_each(&report, &library), 4);
    let rows = rows(&report);
    assert!(rows.iter().all(|row| row["arch"] == "sm_80"), "{report:#}");
    assert!(rows.iter().all(|row| row["crate"] == "cmakestatic"));
    assert!(
        findings(&report, "spills")
            .iter()
            .any(|f| f["level"] == "deny"),
        "{report:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A workspace whose build scripts leave no device code is not a pass: exit 2, said.
#[test]
fn a_build_with_no_device_code_is_not_a_pass() {
    let dir = work_dir("cli_build", "none");
    let root = scratch_crate(&dir, "nokernels", "fn main() {}\n", "");
    let (output, json) = build(&root, &[], &[]);
    let text = stderr(&output);
    // Issue #42, classes 10 and 12: nothing checked has its own exit code, and `--json` says so.
    assert_eq!(output.status.code(), Some(4), "{text}");
    assert_eq!(json["status"], "nothing_checked", "{json:#}");
    assert!(
        json["error"].as_str().unwrap().contains("no device code"),
        "{json:#}"
    );
    assert!(
        text.contains("no device code in the OUT_DIR of any package"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lock blessed from one build compares equal with the same crate built in another target
/// directory (the OUT_DIR's path differs, its package and files do not), and a kernel that
/// changes is a finding against it.
#[test]
fn a_blessed_lock_holds_across_target_directories() {
    let dir = work_dir("cli_build", "lock");
    let root = scratch_crate(&dir, "ptxlock", PTX_BUILD_RS, "");
    std::fs::remove_file(root.join("kernels/spills.cu")).unwrap();
    let lock = dir.join("occupancy.lock");
    let lock_arg = lock.to_str().unwrap();
    let first_target = dir.join("target-a");
    let vars = [("CARGO_TARGET_DIR", first_target.to_str().unwrap())];
    let (blessed, _) = build(
        &root,
        &["--arch", "sm_80", "--lock", lock_arg, "--bless"],
        &vars,
    );
    assert_eq!(blessed.status.code(), Some(0), "{}", stderr(&blessed));
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(text.contains("OUT_DIR(ptxlock@0.1.0)/saxpy.ptx"), "{text}");
    assert!(!text.contains("target-a"), "{text}");

    let second_target = dir.join("target-b");
    let vars = [("CARGO_TARGET_DIR", second_target.to_str().unwrap())];
    let (same, report) = build(&root, &["--arch", "sm_80", "--lock", lock_arg], &vars);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(findings(&report, "baseline_stale").is_empty(), "{report:#}");
    assert!(findings(&report, "regression").is_empty(), "{report:#}");

    let heavier = SAXPY.replace(
        "a * x[i] + y[i]",
        "a * x[i] + y[i] * sqrtf(x[i] * y[i] + a)",
    );
    std::fs::write(root.join("kernels/saxpy.cu"), heavier).unwrap();
    let (changed, report) = build(&root, &["--arch", "sm_80", "--lock", lock_arg], &vars);
    let seen = findings(&report, "baseline_stale").len() + findings(&report, "regression").len();
    assert!(seen > 0, "{}\n{report:#}", stderr(&changed));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Kernel tables: the crate's `[package.metadata.occupancy.kernels."NAME"]` and `--kernel`
/// patterns set the launch a kernel is checked at, the crate's table winning over the command
/// line's of the same name; `--block` is the rest's.
#[test]
fn kernel_tables_of_the_crate_and_the_command_line_set_launches() {
    let dir = work_dir("cli_build", "tables");
    let root = scratch_crate(&dir, "ptxtables", PTX_BUILD_RS, "");
    let manifest = root.join("Cargo.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str("\n[package.metadata.occupancy.kernels.saxpy]\nblock = 1024\n");
    std::fs::write(&manifest, text).unwrap();
    let args = [
        "--arch",
        "sm_80",
        "--allow",
        "spills",
        "--block",
        "96",
        "--kernel",
        "saxpy:block=32",
        "--kernel",
        "unbounded_*:block=64,dynamic_smem=2048",
    ];
    let (output, report) = build(&root, &args, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let launch_of = |name: &str| {
        let row = rows(&report)
            .into_iter()
            .find(|row| row["name"] == name)
            .unwrap()
            .clone();
        (
            row["block"].as_u64().unwrap(),
            row["dynamic_smem_bytes"].as_u64().unwrap(),
        )
    };
    assert_eq!(launch_of("saxpy"), (1024, 0));
    assert_eq!(launch_of("unbounded_window_sum"), (64, 2048));
    assert_eq!(
        launch_of("_ZN6corpus6spills10window_sumILi3EEEvPfPKf"),
        (96, 0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the package's own build reports of its `k.ptx`: `check`'s report of the same PTX, its
/// registers changed (so that a row assembled again would show), naming `k.ptx` as its output.
fn own_report_of_k(dir: &Path) -> Value {
    let ptx = dir.join("k.ptx");
    std::fs::write(
        &ptx,
        ".version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n",
    )
    .unwrap();
    let checked = binary()
        .args(["occupancy", "check", "--json", "--arch", "sm_80"])
        .arg(&ptx)
        .env("NVCC", nvcc())
        .output()
        .unwrap();
    let mut own: Value = serde_json::from_str(&stdout(&checked)).unwrap();
    own["crate"] = "ownbuild".into();
    own["kernels"][0]["registers"] = 99.into();
    own["outputs"] = serde_json::json!(["k.ptx"]);
    own
}

/// A package whose build already runs occupancy-build (its `OUT_DIR/occupancy.json`) is not
/// read twice: its own report is taken in for the files it names (`outputs`), its PTX not
/// assembled again. Issue #42, class 1: a report hides nothing else. A product it does not name
/// is read here; a report an earlier run left (this run's script wrote none) is not taken; a
/// report that says its checks were skipped is said, and its products are read here.
#[test]
fn a_package_checked_by_its_own_build_is_taken_in_not_read_twice() {
    let dir = work_dir("cli_build", "own");
    let own_build_rs = r#"
fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let ptx = |name: &str| format!("//\n.version 9.0\n.target sm_80\n.address_size 64\n.visible .entry {name}()\n{{\nret;\n}}\n");
    std::fs::write(out.join("k.ptx"), ptx("k")).unwrap();
    if std::env::var("EXTRA").is_ok() {
        std::fs::write(out.join("extra.ptx"), ptx("extra")).unwrap();
    }
    let report = std::env::var("OWN_REPORT").unwrap();
    if !report.is_empty() {
        std::fs::write(out.join("occupancy.json"), report).unwrap();
    }
    println!("cargo:rerun-if-env-changed=OWN_REPORT");
    println!("cargo:rerun-if-env-changed=EXTRA");
}
"#;
    let root = scratch_crate(&dir, "ownbuild", own_build_rs, "");
    let mut own = own_report_of_k(&dir);
    let report = own.to_string();
    let (output, json) = build(&root, &[], &[("OWN_REPORT", &report)]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("checked by their own occupancy-build: ownbuild"),
        "{text}"
    );
    assert_eq!(rows(&json).len(), 1, "{json:#}");
    assert_eq!(
        rows(&json)[0]["registers"],
        99,
        "the report's row, not a new assembly"
    );

    // A product the report does not name is read, beside the report's rows.
    let (output, json) = build(&root, &[], &[("OWN_REPORT", &report), ("EXTRA", "1")]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let kernels: BTreeSet<String> = (rows(&json).iter())
        .map(|row| row["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kernels,
        BTreeSet::from(["k".into(), "extra".into()]),
        "{json:#}"
    );
    assert!(
        text.contains("1 covered by its own occupancy-build report"),
        "{text}"
    );

    // This run's script wrote no report: the one left by the run before is not taken.
    let (output, json) = build(&root, &[], &[("OWN_REPORT", ""), ("EXTRA", "1")]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("no report of this build: not taken"),
        "{text}"
    );
    assert_eq!(rows(&json).len(), 2, "{json:#}");
    assert!(
        rows(&json).iter().all(|row| row["registers"] != 99),
        "assembled here: {json:#}"
    );

    own["skipped"] = "OCCUPANCY_SKIP=1".into();
    own["kernels"] = Value::Array(Vec::new());
    let skipped = own.to_string();
    let (output, json) = build(&root, &[], &[("OWN_REPORT", &skipped), ("EXTRA", "1")]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("skipped its checks (OCCUPANCY_SKIP=1): its products are read here"),
        "{text}"
    );
    assert_eq!(rows(&json).len(), 2, "read here: {json:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `cc` CUDA static library of `kernels/bounds.cu` alone, for sm_80.
const BOUNDS_BUILD_RS: &str = r#"
fn main() {
    println!("cargo:rerun-if-changed=kernels");
    cc::Build::new().cuda(true).flag("-gencode").flag("arch=compute_80,code=sm_80")
        .file("kernels/bounds.cu").compile("kernels");
}
"#;

/// 4 blocks of 1024 threads exceed sm_80's 2048 threads per SM: ptxas drops the minimum with a
/// warning, and the cubin keeps no `.minnctapersm`.
const BOUNDS: &str = "extern \"C\" __global__ void __launch_bounds__(1024, 4) wide(float* x) {\n  x[threadIdx.x] *= 2.0f;\n}\n";

/// A cc crate of `source` as `kernels/bounds.cu`.
fn bounds_crate(dir: &Path, name: &str, source: &str) -> PathBuf {
    let root = scratch_crate(dir, name, BOUNDS_BUILD_RS, "cc = \"1\"\n");
    std::fs::write(root.join("kernels/bounds.cu"), source).unwrap();
    root
}

/// The cubins `cuobjdump -xelf all` extracts from `binary`, by name, each file's bytes.
fn cubins_of(binary: &Path, into: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let _ = std::fs::remove_dir_all(into);
    std::fs::create_dir_all(into).unwrap();
    let cuobjdump = nvcc().with_file_name("cuobjdump");
    common::run_tool(
        Command::new(cuobjdump)
            .args(["-xelf", "all"])
            .arg(binary)
            .current_dir(into),
    );
    let cubins: std::collections::BTreeMap<String, Vec<u8>> = std::fs::read_dir(into)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let stem = name
                .split_once('.')
                .map_or(name.clone(), |(_, rest)| rest.to_owned());
            (stem, std::fs::read(&path).unwrap())
        })
        .collect();
    assert!(!cubins.is_empty(), "no cubin in {}", binary.display());
    cubins
}

/// The library of [`BOUNDS_BUILD_RS`] with a second file of host code and a device function,
/// no kernel (risc0-sys's `ffi.cu` is one): ptxas reports its module and no entry.
const BOUNDS_AND_HOST_BUILD_RS: &str = r#"
fn main() {
    println!("cargo:rerun-if-changed=kernels");
    cc::Build::new().cuda(true).flag("-gencode").flag("arch=compute_80,code=sm_80")
        .file("kernels/bounds.cu").file("kernels/host.cu").compile("kernels");
}
"#;

/// Without `--tap` the library's cubin cannot tell that ptxas dropped the minimum; with it, the
/// kept report gives the row the warning and `unreachable_bound` names the package. The rows
/// are the same (the binary's, none from the report), the library's cubins are byte for byte
/// those of the plain build, and a second `--tap` run, whose build script cargo finds fresh,
/// reads the reports kept beside the objects. The report of the file without a kernel is
/// counted, not an error (it was one: the crater's risc0-sys).
#[test]
fn the_tap_reports_a_minimum_a_cc_library_dropped_and_ships_the_same_code() {
    let dir = work_dir("cli_build", "tap");
    let root = scratch_crate(&dir, "ccbounds", BOUNDS_AND_HOST_BUILD_RS, "cc = \"1\"\n");
    std::fs::write(root.join("kernels/bounds.cu"), BOUNDS).unwrap();
    let host = "__device__ float twice(float x) { return 2.0f * x; }\nextern \"C\" int host_answer(void) { return 42; }\n";
    std::fs::write(root.join("kernels/host.cu"), host).unwrap();
    let cache = dir.join("cache");
    let cache = cache.to_str().unwrap();
    let vars = [("XDG_CACHE_HOME", cache)];
    let args = ["--arch", "sm_80", "--", "--release"];
    let (plain, plain_report) = build(&root, &args, &vars);
    let text = stderr(&plain);
    assert_eq!(plain.status.code(), Some(0), "{text}");
    assert!(
        findings(&plain_report, "unreachable_bound").is_empty(),
        "{plain_report:#}"
    );
    let out = out_dir(&root, "release", "ccbounds");
    let library = out.join("libkernels.a");
    let plain_cubins = cubins_of(&library, &dir.join("plain-cubins"));

    let tap_args = ["--tap", "--arch", "sm_80", "--", "--release"];
    for run in ["compiled under the tap", "fresh: the kept reports"] {
        let (tapped, report) = build(&root, &tap_args, &vars);
        let text = stderr(&tapped);
        assert_eq!(tapped.status.code(), Some(0), "{run}: {text}");
        assert!(
            !text.contains("ptxas info"),
            "{run}: the side compile's text is shown: {text}"
        );
        assert!(
            text.contains("2 report(s) of ptxas kept by the nvcc tap (1 of compiles without a kernel), 1 kernel record(s)"),
            "{run}: {text}"
        );
        let dropped = findings(&report, "unreachable_bound");
        assert_eq!(dropped.len(), 1, "{run}: {report:#}");
        assert_eq!(dropped[0]["crate"], "ccbounds", "{run}");
        assert_eq!(dropped[0]["kernel"], "wide", "{run}");
        let notes = dropped[0]["notes"].to_string();
        assert!(
            notes.contains(".minnctapersm will be ignored"),
            "{run}: {notes}"
        );
        assert_eq!(rows(&report), rows(&plain_report), "{run}");
        assert_eq!(
            cubins_of(&library, &dir.join("tap-cubins")),
            plain_cubins,
            "{run}: the tap changed the library's code"
        );
    }
    let kept: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with("bounds.o.ptxas"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let report = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(
        report.contains("Compiling entry function 'wide' for 'sm_80'"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build whose nvcc fails fails under the tap exactly as without it: exit 2, nvcc's error
/// shown as often, no report kept (cc's own message names the nvcc it ran: the tap).
#[test]
fn a_failing_nvcc_fails_the_build_alike_under_the_tap() {
    let dir = work_dir("cli_build", "tap-fails");
    let root = bounds_crate(
        &dir,
        "ccbroken",
        "extern \"C\" __global__ void broken(float* x) { x y z }\n",
    );
    let cache = dir.join("cache");
    let vars = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let mut seen = Vec::new();
    for tap in [&[][..], &["--tap"][..]] {
        let args: Vec<&str> = tap.iter().copied().chain(["--", "--release"]).collect();
        let (output, _) = build(&root, &args, &vars);
        let text = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{tap:?}: {text}");
        assert!(text.contains("`cargo build` failed"), "{text}");
        let error = (text.lines())
            .filter(|line| line.contains("error: expected a \";\""))
            .count();
        assert!(error > 0, "{tap:?}: {text}");
        seen.push(error);
    }
    assert_eq!(
        seen[0], seen[1],
        "nvcc's error is shown as often with the tap as without"
    );
    let build = root.join("target/release/build");
    let reports = std::process::Command::new("find")
        .arg(&build)
        .args(["-name", "*.ptxas"])
        .output()
        .unwrap();
    assert_eq!(stdout(&reports), "", "a failed compile keeps no report");
    let _ = std::fs::remove_dir_all(&dir);
}

/// CMake through cmake-rs under the tap, with no `CUDACXX`: CMake finds the tap first on `PATH`
/// as its compiler and runs it through the tap's launcher too, and the launcher, given the tap
/// as the compiler, runs the real nvcc (once). The report beside CMake's object joins the
/// installed library's row. A plain build afterwards, with the tap cached in CMake's cache,
/// builds as before (a tap run without `OCCUPANCY_REAL_NVCC` only runs the real nvcc).
#[test]
#[allow(clippy::disallowed_methods)]
fn a_cmake_rs_library_under_the_tap_reports_the_dropped_minimum() {
    let Some(cmake) = cmake() else { return };
    let dir = work_dir("cli_build", "cmake-tap");
    let root = scratch_crate(&dir, "cmakebounds", CMAKE_BUILD_RS, "cmake = \"0.1\"\n");
    let lists = "cmake_minimum_required(VERSION 3.18)\nproject(kernels LANGUAGES CXX CUDA)\nadd_library(kernels STATIC bounds.cu)\ninstall(TARGETS kernels ARCHIVE DESTINATION lib)\n";
    std::fs::write(root.join("kernels/CMakeLists.txt"), lists).unwrap();
    std::fs::write(root.join("kernels/bounds.cu"), BOUNDS).unwrap();
    let cache = dir.join("cache");
    let path = std::env::join_paths(
        std::iter::once(nvcc().parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let vars = [
        ("CMAKE", cmake.to_str().unwrap()),
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("PATH", path.to_str().unwrap()),
    ];
    let (output, report) = build(
        &root,
        &["--tap", "--arch", "sm_80", "--", "--release"],
        &vars,
    );
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    let dropped = findings(&report, "unreachable_bound");
    assert_eq!(dropped.len(), 1, "{report:#}\n{text}");
    assert_eq!(dropped[0]["crate"], "cmakebounds");
    assert_eq!(rows(&report).len(), 1, "{report:#}");
    let out = out_dir(&root, "release", "cmakebounds");
    let found = Command::new("find")
        .arg(&out)
        .args(["-name", "*.ptxas"])
        .output()
        .unwrap();
    let kept: Vec<&str> = std::str::from_utf8(&found.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(kept.len(), 1, "one report, of the one compile: {kept:?}");
    assert!(kept[0].ends_with("bounds.cu.o.ptxas"), "{kept:?}");

    // A plain build that compiles again, with the tap in CMake's cache.
    std::fs::write(
        root.join("kernels/bounds.cu"),
        format!("{BOUNDS}// again\n"),
    )
    .unwrap();
    let (plain, report) = build(&root, &["--arch", "sm_80", "--", "--release"], &vars);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(
        findings(&report, "unreachable_bound").is_empty(),
        "{report:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #42, class 7: the lock keys a package's products by its id (`name@version`), and a
/// product that vanished since the bless (its source removed; the PTX the earlier build left is
/// stale) is judged: a `baseline_stale` finding, and the next `--bless` removes its entries and
/// counts them.
#[test]
fn a_vanished_product_is_judged_and_removed_on_bless() {
    let dir = work_dir("cli_build", "vanish");
    let root = scratch_crate(&dir, "ptxvanish", PTX_BUILD_RS, "");
    std::fs::remove_file(root.join("kernels/spills.cu")).unwrap();
    let second = SAXPY.replace("void saxpy(", "void second(");
    std::fs::write(root.join("kernels/second.cu"), second).unwrap();
    let lock = dir.join("occupancy.lock");
    let lock_arg = lock.to_str().unwrap();
    let target = dir.join("target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let bless = ["--arch", "sm_80", "--lock", lock_arg, "--bless"];
    let (blessed, _) = build(&root, &bless, &vars);
    assert_eq!(blessed.status.code(), Some(0), "{}", stderr(&blessed));
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(
        text.contains("OUT_DIR(ptxvanish@0.1.0)/second.ptx"),
        "{text}"
    );

    std::fs::remove_file(root.join("kernels/second.cu")).unwrap();
    let (judged, report) = build(&root, &["--arch", "sm_80", "--lock", lock_arg], &vars);
    let stale = findings(&report, "baseline_stale");
    assert!(
        stale
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("second.ptx")),
        "{}\n{report:#}",
        stderr(&judged)
    );

    let (reblessed, _) = build(&root, &bless, &vars);
    let said = stderr(&reblessed);
    assert_eq!(reblessed.status.code(), Some(0), "{said}");
    assert!(!said.contains(" 0 removed"), "{said}");
    assert!(said.contains(" removed"), "{said}");
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(!text.contains("second.ptx"), "{text}");
    assert!(
        text.contains("OUT_DIR(ptxvanish@0.1.0)/saxpy.ptx"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #42, class 11: a build script that reads `CUDA_COMPUTE_CAP` but does not name it in
/// `rerun-if-env-changed` is fresh for `--arch sm_80` after a build for sm_90: its sm_90 PTX is
/// not read as if built for sm_80 (it was passed over with a note, beside the portable module's
/// rows): `missing_kernel` on sm_80, naming the arch the file holds and `cargo clean -p`.
#[test]
fn an_asked_arch_the_build_did_not_make_is_a_deny_finding() {
    let dir = work_dir("cli_build", "arch_not_built");
    // It writes a portable module too (sm_80 PTX, whatever the arch): the build has rows.
    let portable = "    let status = Command::new(&nvcc).args([\"--ptx\", \"-arch=sm_80\", \"-o\"]).arg(out.join(\"portable.ptx\")).arg(\"kernels/saxpy.cu\").status().unwrap();\n    assert!(status.success());\n    std::fs::write(out.join(\"ptx.rs\"), consts).unwrap();";
    let build_rs = PTX_BUILD_RS
        .replace(
            "    println!(\"cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP\");\n",
            "",
        )
        .replace(
            "    std::fs::write(out.join(\"ptx.rs\"), consts).unwrap();",
            portable,
        );
    let root = scratch_crate(&dir, "ptxfresh", &build_rs, "");
    std::fs::remove_file(root.join("kernels/spills.cu")).unwrap();
    let target = dir.join("target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (first, _) = build(&root, &["--arch", "sm_90"], &vars);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let (output, report) = build(&root, &["--arch", "sm_80"], &vars);
    let said = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{said}");
    let missing = findings(&report, "missing_kernel");
    let text = format!("{missing:?}\n{said}");
    assert_eq!(missing.len(), 1, "{report:#}\n{said}");
    assert_eq!(missing[0]["level"], "deny", "{text}");
    assert_eq!(missing[0]["arch"], "sm_80", "{text}");
    let message = missing[0]["message"].as_str().unwrap();
    assert!(message.contains("holds PTX for sm_90"), "{text}");
    assert!(
        missing[0]["help"]
            .to_string()
            .contains("cargo clean -p ptxfresh"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
