//! `cargo occupancy check` on cubins from tileiras, NVIDIA's CUDA Tile compiler, which prints no
//! resource report at all: `tests/kernels/tile_add.py` (a cuTile Python kernel) is written as Tile
//! IR bytecode, compiled by tileiras for each of [`ARCHS`], and each cubin's row must hold the
//! registers and shared memory `cuobjdump -res-usage` reads from that cubin. Needs tileiras and
//! cuTile Python (`OCCUPANCY_TILEIRAS`, `OCCUPANCY_TILEIRAS_PYTHON`) and cuobjdump on `PATH`, as
//! scripts/setup-cuda.sh installs and exports them.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{binary, repo_root, run_tool, stderr, stdout};

/// An Ampere arch and the two Blackwell ones tileiras 13.2 compiles for (it has no sm_90).
const ARCHS: [&str; 3] = ["sm_80", "sm_100", "sm_120"];
/// The kernel of `tests/kernels/tile_add.py`, exported under this symbol.
const KERNEL: &str = "tile_add";
/// What cuobjdump's `SHARED` adds on sm_90+ to a kernel that uses shared memory: the driver's
/// per-block reserve, which a row's `static_smem_bytes` does not count.
const RESERVED_SHARED_BYTES: u64 = 1024;

/// The compiler and the Python that writes its input.
struct Tileiras {
    exe: PathBuf,
    python: PathBuf,
}

/// `OCCUPANCY_TILEIRAS` and `OCCUPANCY_TILEIRAS_PYTHON`; a missing one fails the test (a test
/// reads the environment it runs in).
#[allow(clippy::disallowed_methods)]
fn tileiras() -> Tileiras {
    let file = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "{name} is unset or names no file: run scripts/setup-cuda.sh, then `source <(scripts/setup-cuda.sh --env)`"
                )
            })
    };
    Tileiras {
        exe: file("OCCUPANCY_TILEIRAS"),
        python: file("OCCUPANCY_TILEIRAS_PYTHON"),
    }
}

/// Why the installed tileiras cannot run on this machine (it does not start, or `--version`
/// fails), if it cannot.
fn cannot_run(exe: &Path) -> Option<String> {
    match Command::new(exe).arg("--version").output() {
        Err(error) => Some(format!("{} cannot run here: {error}", exe.display())),
        Ok(output) if !output.status.success() => Some(format!(
            "`{} --version` failed ({}): {}",
            exe.display(),
            output.status,
            stderr(&output).trim()
        )),
        Ok(_) => None,
    }
}

/// `tile_add.py` as bytecode for `arch`, then tileiras's cubin of it.
fn compile(tools: &Tileiras, dir: &Path, arch: &str) -> PathBuf {
    let bytecode = dir.join(format!("{KERNEL}_{arch}.tilebc"));
    run_tool(
        Command::new(&tools.python)
            .arg(repo_root().join("tests/kernels/tile_add.py"))
            .arg(&bytecode)
            .arg(arch),
    );
    let cubin = dir.join(format!("{KERNEL}_{arch}.cubin"));
    // tileiras loads libNVVM and runs ptxas from `CUDA_HOME` when it is set, else from its own
    // tree; the environment's `CUDA_HOME` is nvcc 13.0's, whose libNVVM fails on its input
    // ("failed to compile Tile IR program").
    let home = tools.exe.parent().and_then(Path::parent).unwrap();
    run_tool(
        Command::new(&tools.exe)
            .env("CUDA_HOME", home)
            .arg(format!("--gpu-name={arch}"))
            .arg("-o")
            .arg(&cubin)
            .arg(&bytecode),
    );
    cubin
}

/// `REG` and `SHARED` of [`KERNEL`] in `cuobjdump -res-usage` of `cubin`.
fn cuobjdump_usage(cubin: &Path) -> (u64, u64) {
    let output = Command::new("cuobjdump")
        .arg("-res-usage")
        .arg(cubin)
        .output()
        .expect("cuobjdump on PATH (scripts/setup-cuda.sh --env)");
    assert!(output.status.success(), "cuobjdump: {}", stderr(&output));
    let text = stdout(&output);
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|line| line.trim() == format!("Function {KERNEL}:"))
        .unwrap_or_else(|| panic!("cuobjdump lists no {KERNEL}:\n{text}"));
    let usage = lines.next().expect("a resource line");
    let field = |name: &str| -> u64 {
        usage
            .split_whitespace()
            .find_map(|word| word.strip_prefix(name))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {usage:?}"))
    };
    (field("REG:"), field("SHARED:"))
}

/// `check --json` on `cubin`: its one row, for [`KERNEL`].
fn row(cubin: &Path, cache: &Path) -> serde_json::Value {
    let output = binary()
        .args(["occupancy", "check", "--json", "--cache-dir"])
        .arg(cache)
        .arg(cubin)
        .output()
        .expect("run cargo-occupancy");
    assert_eq!(output.status.code(), Some(0), "check: {}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "one kernel: {rows:?}");
    rows[0].clone()
}

#[test]
fn tileiras_kernels_are_checked_like_nvccs() {
    let tools = tileiras();
    if let Some(reason) = cannot_run(&tools.exe) {
        // Past the harness's capture, so that every run's log says why it checked nothing.
        let _ = writeln!(std::io::stderr(), "skipped: {reason}");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-tileiras");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for arch in ARCHS {
        let cubin = compile(&tools, &dir, arch);
        let row = row(&cubin, &dir.join("cache"));
        let (registers, shared) = cuobjdump_usage(&cubin);
        let major: u64 = arch[3..].parse::<u64>().unwrap() / 10;
        let reserve = if major >= 9 && shared > 0 {
            RESERVED_SHARED_BYTES
        } else {
            0
        };
        assert_eq!(row["name"], KERNEL, "{arch}");
        assert_eq!(row["arch"], arch, "{arch}");
        assert_eq!(row["entry"], true, "{arch}");
        assert_eq!(row["source"]["kind"], "binary", "{arch}");
        assert!(row["registers"].as_u64() > Some(0), "{arch}: {row}");
        assert_eq!(row["registers"], registers, "{arch}: cuobjdump's REG");
        assert_eq!(row["static_smem_bytes"], shared - reserve, "{arch}: SHARED");
        assert!(row["occupancy"].as_f64() > Some(0.0), "{arch}: {row}");
    }
}
