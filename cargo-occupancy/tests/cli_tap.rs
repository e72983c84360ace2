//! The nvcc tap (`cargo-occupancy` started as `nvcc` or `nvcc-launcher`) against the real nvcc
//! on the same source: probes pass through untouched, the files a compile writes are the same
//! bytes (a host object's own bytes embed nvcc's temporary file names, which differ between any
//! two compiles, so its cubins are compared), the standard error and exit code are nvcc's, and
//! ptxas's report is kept beside the output. Needs nvcc and cuobjdump (scripts/setup-cuda.sh).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{nvcc, run_tool, stderr, work_dir};

const SOURCE: &str = "extern \"C\" __global__ void __launch_bounds__(1024, 4) wide(float* x) { x[threadIdx.x] *= 2.0f; }\n\
extern \"C\" __global__ void __maxnreg__(8) capped(float* x) { float a[16]; for (int i = 0; i < 16; ++i) a[i] = x[i * threadIdx.x]; float s = 0; for (int i = 0; i < 16; ++i) s += a[(i * 7) % 16] * x[i]; x[threadIdx.x] = s; }\n";

/// A directory holding the tap's two names, links to the built binary.
fn tap_dir(dir: &Path) -> PathBuf {
    let bin = dir.join("tap");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["nvcc", "nvcc-launcher"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cargo-occupancy"), bin.join(name)).unwrap();
    }
    bin
}

/// `program ARGS` in `dir`, with the tap's variable set as `cargo occupancy build --tap` sets it.
fn run(program: &Path, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("OCCUPANCY_REAL_NVCC", nvcc())
        .output()
        .unwrap()
}

/// The cubins of `binary`, by name without the file's stem.
fn cubins(binary: &Path, into: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::create_dir_all(into).unwrap();
    let cuobjdump = nvcc().with_file_name("cuobjdump");
    run_tool(
        Command::new(cuobjdump)
            .args(["-xelf", "all"])
            .arg(binary)
            .current_dir(into),
    );
    std::fs::read_dir(into)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let rest = name.split_once('.').unwrap().1.to_owned();
            (rest, std::fs::read(path).unwrap())
        })
        .collect()
}

#[test]
fn compiles_keep_their_bytes_text_and_exit_code_and_a_report_beside_them() {
    let dir = work_dir("cli_tap", "compiles");
    std::fs::write(dir.join("k.cu"), SOURCE).unwrap();
    let tap = tap_dir(&dir).join("nvcc");
    let real = nvcc();
    for (mode, ext) in [("--cubin", "cubin"), ("--fatbin", "fatbin"), ("-c", "o")] {
        let (plain, tapped) = (format!("plain.{ext}"), format!("tapped.{ext}"));
        // A cubin holds one arch; the others two.
        let archs: &[&str] = if ext == "cubin" {
            &["sm_80"]
        } else {
            &["sm_80", "sm_90"]
        };
        let args = |out: &str| -> Vec<String> {
            let mut args: Vec<String> = vec![mode.into()];
            for arch in archs {
                let number = arch.trim_start_matches("sm_");
                args.extend([
                    "-gencode".into(),
                    format!("arch=compute_{number},code={arch}"),
                ]);
            }
            args.extend(["k.cu".into(), "-o".into(), out.into()]);
            args
        };
        let plain_args = args(&plain);
        let tapped_args = args(&tapped);
        let a = run(
            &real,
            &plain_args.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir,
        );
        let b = run(
            &tap,
            &tapped_args.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir,
        );
        assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
        assert_eq!(b.status.code(), a.status.code(), "{mode}");
        assert_eq!(b.stderr, a.stderr, "{mode}: nvcc's own text, byte for byte");
        assert!(
            stderr(&b).contains(".minnctapersm will be ignored"),
            "{}",
            stderr(&b)
        );
        assert!(
            !stderr(&b).contains("ptxas info"),
            "{mode}: the side compile's -v shown"
        );
        let (plain_bytes, tapped_bytes) = (
            std::fs::read(dir.join(&plain)).unwrap(),
            std::fs::read(dir.join(&tapped)).unwrap(),
        );
        if ext == "o" {
            // The object embeds nvcc's temporary names (`tmpxft_<pid>...`): compare its code.
            let a = cubins(&dir.join(&plain), &dir.join("plain-o"));
            let b = cubins(&dir.join(&tapped), &dir.join("tapped-o"));
            assert_eq!(a.len(), 2, "{:?}", a.keys());
            assert_eq!(a, b, "the object's cubins");
        } else {
            assert!(
                plain_bytes == tapped_bytes,
                "{mode}: the tap changed the output's bytes"
            );
        }
        assert!(!dir.join(format!("{plain}.ptxas")).exists());
        let report = std::fs::read_to_string(dir.join(format!("{tapped}.ptxas"))).unwrap();
        for arch in archs {
            let line = format!("Compiling entry function 'wide' for '{arch}'");
            assert!(report.contains(&line), "{report}");
        }
        assert!(report.contains(".minnctapersm will be ignored"), "{report}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn probes_pass_through_untouched_and_keep_no_report() {
    let dir = work_dir("cli_tap", "probes");
    std::fs::write(dir.join("k.cu"), SOURCE).unwrap();
    let bin = tap_dir(&dir);
    let tap = bin.join("nvcc");
    let real = nvcc();
    for probe in [
        &["--version"][..],
        &["--list-gpu-code"],
        &["--list-gpu-arch"],
        &["-E", "k.cu"],
        &["-M", "k.cu"],
        &["-arch=sm_80", "--ptx", "k.cu", "-o", "-"],
    ] {
        let a = run(&real, probe, &dir);
        let b = run(&tap, probe, &dir);
        assert_eq!(b.status.code(), a.status.code(), "{probe:?}");
        assert!(a.stdout == b.stdout, "{probe:?}: standard output differs");
        assert_eq!(b.stderr, a.stderr, "{probe:?}");
    }
    run_tool(
        Command::new(&real)
            .args(["-arch=sm_80", "--ptx", "k.cu", "-o", "plain.ptx"])
            .current_dir(&dir),
    );
    let b = run(
        &tap,
        &["-arch=sm_80", "--ptx", "k.cu", "-o", "tapped.ptx"],
        &dir,
    );
    assert_eq!(b.status.code(), Some(0));
    assert_eq!(
        std::fs::read(dir.join("plain.ptx")).unwrap(),
        std::fs::read(dir.join("tapped.ptx")).unwrap()
    );
    assert!(
        !dir.join("tapped.ptx.ptxas").exists(),
        "--ptx runs no ptxas: no report"
    );
    // CMake's launcher: the real compiler first; the tap named there runs the real one.
    let launcher = bin.join("nvcc-launcher");
    let version = run(&real, &["--version"], &dir).stdout;
    for compiler in [real.as_path(), tap.as_path()] {
        let out = run(&launcher, &[compiler.to_str().unwrap(), "--version"], &dir);
        assert_eq!(out.stdout, version, "{}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failures_keep_their_exit_code_and_text_and_the_tap_never_runs_itself() {
    let dir = work_dir("cli_tap", "failures");
    std::fs::write(
        dir.join("bad.cu"),
        "__global__ void k(float* x) { x y z }\n",
    )
    .unwrap();
    let bin = tap_dir(&dir);
    let tap = bin.join("nvcc");
    let args = ["-arch=sm_80", "-c", "bad.cu", "-o", "bad.o"];
    let a = run(&nvcc(), &args, &dir);
    let b = run(&tap, &args, &dir);
    assert_eq!(a.status.code(), Some(2), "{}", stderr(&a));
    assert_eq!(b.status.code(), a.status.code());
    assert_eq!(b.stderr, a.stderr);
    assert!(!dir.join("bad.o.ptxas").exists());
    // Named as its own real nvcc, with no other nvcc to find: an error, never a loop.
    let out = Command::new(&tap)
        .arg("--version")
        .env("OCCUPANCY_REAL_NVCC", &tap)
        .env("PATH", &bin)
        .env_remove("CUDA_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("found no real nvcc"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two different executables of the tool (two installs), each the other's "real nvcc"
/// (issue #42, class 6): the chain is detected and named, never run forever.
#[test]
fn two_taps_that_name_each_other_stop_with_an_error_naming_the_chain() {
    let dir = work_dir("cli_tap", "two_taps");
    let mut bins = Vec::new();
    for install in ["a", "b"] {
        let bin = dir.join(install).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_cargo-occupancy"), bin.join("nvcc")).unwrap();
        bins.push(bin);
    }
    // a's real nvcc is b's; b skips itself and finds a's first on PATH.
    let path = std::env::join_paths(&bins).unwrap();
    let mut child = Command::new(bins[0].join("nvcc"))
        .arg("--version")
        .env("OCCUPANCY_REAL_NVCC", bins[1].join("nvcc"))
        .env("PATH", &path)
        .env_remove("CUDA_HOME")
        .env_remove("OCCUPANCY_TAP_CHAIN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the two taps ran each other for 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(127), "{text}");
    assert!(
        text.contains("runs itself through another nvcc tap"),
        "{text}"
    );
    for bin in &bins {
        let shown = std::fs::canonicalize(bin.join("nvcc")).unwrap();
        assert!(text.contains(&shown.display().to_string()), "{text}");
    }
    assert_eq!(text.lines().count(), 1, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
