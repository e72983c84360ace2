//! Rust-native PTX is checked like nvcc's: `cargo occupancy check` on PTX in the shape of
//! Rust-CUDA's libNVVM output and of rustc's `nvptx64-nvidia-cuda` target
//! (`tests/fixtures/rust-ptx/`) reports each kernel by the path of its Rust `fn`
//! (`my_kernels::gemm`, not `_ZN10my_kernels4gemm17h0123456789abcdefE`), denies the spilling one
//! by that name, and gives the registers and spills `ptxas -v`, run here on the same PTX,
//! prints. A cubin assembled from the PTX gives the same names and numbers through the binary
//! reader. Needs ptxas (beside nvcc, scripts/setup-cuda.sh).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{binary, entry_rows, nvcc, repo_root, stderr, stdout, work_dir};

const NVVM: &str = "tests/fixtures/rust-ptx/nvvm_kernels.ptx";
const LLVM: &str = "tests/fixtures/rust-ptx/llvm_nvptx.ptx";
const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// Every kernel of the fixtures: its `.entry` symbol and the Rust path it is reported by.
const KERNELS: [(&str, &str); 6] = [
    ("vecadd", "vecadd"),
    (
        "_ZN10my_kernels4gemm17h0123456789abcdefE",
        "my_kernels::gemm",
    ),
    (
        "_RNvCs4fqI2P2rA04_10my_kernels6reduce",
        "my_kernels::reduce",
    ),
    ("saxpy", "saxpy"),
    (
        "_ZN10nvptx_demo7stencil17h9f3c2a1b0d4e5f67E",
        "nvptx_demo::stencil",
    ),
    (
        "_RNvNtCs9xYz01AbCdE_10nvptx_demo7kernels4tile",
        "nvptx_demo::kernels::tile",
    ),
];

/// The spilling kernel (`.maxnreg 32` with 48 values live).
const SPILLING: &str = "_ZN10my_kernels4gemm17h0123456789abcdefE";

/// What ptxas prints for one kernel on one arch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Usage {
    registers: u64,
    stack_frame: u64,
    spill_stores: u64,
    spill_loads: u64,
}

/// ptxas beside the nvcc the tests use.
fn ptxas() -> PathBuf {
    nvcc().with_file_name("ptxas")
}

/// `ptxas -arch=ARCH -v PTX -o CUBIN`: its report.
fn assemble(ptx: &str, arch: &str, cubin: &Path) -> String {
    let output = Command::new(ptxas())
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(repo_root().join(ptx))
        .arg("-o")
        .arg(cubin)
        .output()
        .expect("run ptxas");
    assert!(
        output.status.success(),
        "ptxas failed:\n{}",
        stderr(&output)
    );
    format!("{}{}", stdout(&output), stderr(&output))
}

/// The entries of a `ptxas -v` report, read here by hand (not by the parser under test): per
/// `Compiling entry function 'K'`, the frame and spill line and the `Used N registers` line.
fn entry_usage(report: &str) -> BTreeMap<String, Usage> {
    let number = |text: &str, after: &str| -> u64 {
        let start = text.find(after).unwrap() + after.len();
        let digits: String = text[start..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let mut entries = BTreeMap::new();
    let mut current: Option<(String, Usage)> = None;
    for line in report.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap().to_string();
            let usage = Usage {
                registers: 0,
                stack_frame: 0,
                spill_stores: 0,
                spill_loads: 0,
            };
            current = Some((name, usage));
        } else if let Some((_, usage)) = current.as_mut() {
            if line.contains("bytes stack frame") {
                usage.stack_frame = number(line, "");
                usage.spill_stores = number(line, "frame,");
                usage.spill_loads = number(line, "stores,");
            } else if line.contains("Used ") {
                usage.registers = number(line, "Used ");
                let (name, usage) = current.take().unwrap();
                entries.insert(name, usage);
            }
        }
    }
    entries
}

/// `check ARGS` in the repository root.
fn check(args: &[&str], paths: &[PathBuf], cache: &Path) -> Output {
    binary()
        .args(["occupancy", "check"])
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .args(paths)
        .current_dir(repo_root())
        .output()
        .expect("run cargo-occupancy")
}

/// `check --json` with both archs: the report, after asserting that spills failed it (exit 1).
fn check_json(paths: &[PathBuf], cache: &Path) -> serde_json::Value {
    let output = check(
        &["--json", "--arch", ARCHS[0], "--arch", ARCHS[1]],
        paths,
        cache,
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "the spill denies:\n{}",
        stderr(&output)
    );
    serde_json::from_str(&stdout(&output)).unwrap()
}

fn usage_of(row: &serde_json::Value) -> Usage {
    Usage {
        registers: row["registers"].as_u64().unwrap(),
        stack_frame: row["stack_frame_bytes"].as_u64().unwrap(),
        spill_stores: row["spill_store_bytes"].as_u64().unwrap(),
        spill_loads: row["spill_load_bytes"].as_u64().unwrap(),
    }
}

/// ptxas's own numbers for every kernel of both fixtures on both archs, and the cubins it wrote.
fn ptxas_usage(dir: &Path) -> (BTreeMap<(String, String), Usage>, Vec<PathBuf>) {
    let mut usage = BTreeMap::new();
    let mut cubins = Vec::new();
    for ptx in [NVVM, LLVM] {
        for arch in ARCHS {
            let stem = Path::new(ptx).file_stem().unwrap().to_str().unwrap();
            let cubin = dir.join(format!("{stem}.{arch}.cubin"));
            for (name, entry) in entry_usage(&assemble(ptx, arch, &cubin)) {
                usage.insert((name, arch.to_string()), entry);
            }
            cubins.push(cubin);
        }
    }
    (usage, cubins)
}

/// Rows named by the Rust path, with ptxas's registers, frames and spills.
fn assert_rows_match(
    what: &str,
    rows: &BTreeMap<(String, String), serde_json::Value>,
    usage: &BTreeMap<(String, String), Usage>,
) {
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        usage.keys().collect::<Vec<_>>(),
        "{what}: every kernel on every arch"
    );
    for ((symbol, arch), row) in rows {
        let path = KERNELS
            .iter()
            .find(|(name, _)| name == symbol)
            .map(|(_, path)| *path)
            .unwrap_or_else(|| panic!("{what}: unexpected kernel {symbol}"));
        assert_eq!(row["demangled"], path, "{what}: {symbol} on {arch}");
        let key = (symbol.clone(), arch.clone());
        assert_eq!(usage_of(row), usage[&key], "{what}: {symbol} on {arch}");
    }
}

/// The deny `spills` findings, each (kernel symbol, arch, message).
fn spill_denials(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "spills" && finding["level"] == "deny")
        .map(|finding| {
            (
                finding["kernel"].as_str().unwrap().to_owned(),
                finding["arch"].as_str().unwrap_or_default().to_owned(),
                finding["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn rust_ptx_rows_carry_the_rust_path_and_ptxas_numbers() {
    let dir = work_dir("check-rust-ptx", "ptx");
    let (usage, _) = ptxas_usage(&dir);
    assert_eq!(usage.len(), KERNELS.len() * ARCHS.len(), "{usage:?}");
    assert!(
        usage[&(SPILLING.to_string(), "sm_90".to_string())].spill_stores > 0,
        "the fixture spills: {usage:?}"
    );
    let paths = [PathBuf::from(NVVM), PathBuf::from(LLVM)];
    let report = check_json(&paths, &dir.join("cache"));
    assert_rows_match("ptx", &entry_rows(&report), &usage);
    let denials = spill_denials(&report);
    assert_eq!(denials.len(), ARCHS.len(), "one per arch: {denials:?}");
    for (kernel, _, message) in &denials {
        assert_eq!(kernel, SPILLING);
        assert!(message.contains("my_kernels::gemm"), "{message}");
    }
}

#[test]
fn the_text_table_names_rust_paths() {
    let dir = work_dir("check-rust-ptx", "text");
    let paths = [PathBuf::from(NVVM), PathBuf::from(LLVM)];
    let output = check(&["--arch", "sm_90"], &paths, &dir.join("cache"));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    // The table: a header, then one row per kernel, first column the Rust path.
    let table: Vec<&str> = text.lines().take_while(|line| !line.is_empty()).collect();
    let mut shown: Vec<&str> = table[1..]
        .iter()
        .map(|row| row.split_whitespace().next().unwrap())
        .collect();
    shown.sort_unstable();
    let mut paths: Vec<&str> = KERNELS.iter().map(|(_, path)| *path).collect();
    paths.sort_unstable();
    assert_eq!(shown, paths, "{text}");
    // Hashes and v0 disambiguators are not in the table; the symbol stays in the note that
    // quotes ptxas.
    for noise in ["17h0123456789abcdef", "Cs4fqI2P2rA04_", "_RNvNt"] {
        assert!(!table.join("\n").contains(noise), "{noise} in\n{text}");
    }
    assert!(
        text.contains("deny[spills]: kernel `my_kernels::gemm` spills"),
        "{text}"
    );
    assert!(
        text.contains("ptxas reported for _ZN10my_kernels4gemm17h0123456789abcdefE on sm_90"),
        "{text}"
    );
}

#[test]
fn a_cubin_assembled_from_rust_ptx_gives_the_same_names_and_numbers() {
    let dir = work_dir("check-rust-ptx", "cubin");
    let (usage, cubins) = ptxas_usage(&dir);
    let report = check_json(&cubins, &dir.join("cache"));
    let rows = entry_rows(&report);
    assert_rows_match("cubin", &rows, &usage);
    for row in rows.values() {
        assert_eq!(row["source"]["kind"], "binary", "{row}");
    }
    let denials = spill_denials(&report);
    assert!(
        denials
            .iter()
            .any(|(kernel, _, message)| kernel == SPILLING && message.contains("my_kernels::gemm")),
        "{denials:?}"
    );
}
