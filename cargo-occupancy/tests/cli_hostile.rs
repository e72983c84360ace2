//! The CLI against a hostile user (issue 11, items 6 and 10): outputs that name inputs, every kind
//! of bad input for every subcommand, and a scan of every rendered error for the defects a
//! message must not have (a repeated word, an empty quote, a hint the command ignores, a
//! missing `error:`). No case needs nvcc; each must end with exit code 2 and one clear message.

mod common;

use common::{binary, fixtures, stderr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory holding one input of every kind.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("reports")).unwrap();
    std::fs::create_dir_all(dir.join("empty-dir")).unwrap();
    std::fs::copy(
        fixtures().join("logs/cmake-build.log"),
        dir.join("build.log"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("reports/histo.json"),
        dir.join("reports/histo.json"),
    )
    .unwrap();
    std::fs::write(dir.join("empty.log"), "").unwrap();
    std::fs::write(dir.join("binary.log"), [0xff, 0xfe, 0x00, 0x80, b'\n']).unwrap();
    let non_utf8_name = std::ffi::OsStr::from_bytes(b"log-\xff.log");
    std::fs::copy(dir.join("build.log"), dir.join(non_utf8_name)).unwrap();
    dir
}

/// `cargo occupancy ARGS` in `dir`, with nvcc out of reach and the user's cache directory in
/// `dir`, killed after 60 s (a hang fails).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    let mut child = binary()
        .arg("occupancy")
        .args(args)
        .current_dir(dir)
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .env("PATH", "/usr/bin:/bin")
        .env_remove("NVCC")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cargo-occupancy");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("cargo occupancy {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A rendered error's defects: each is a sentence naming what is wrong.
fn defects(message: &str, args: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    if !message.starts_with("error: ") {
        found.push("does not start with `error: `".to_string());
    }
    if message.contains("panicked") || message.contains("RUST_BACKTRACE") {
        found.push("is a panic".to_string());
    }
    for empty in ["``", "''", "\"\""] {
        if message.contains(empty) {
            found.push(format!("has an empty quote {empty}"));
        }
    }
    // Whole words (`sm_90` is one), leaving out clap's `<VALUE>` placeholders.
    let words: Vec<String> = message
        .split_whitespace()
        .filter(|word| !word.starts_with('<'))
        .map(|word| {
            word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
                .to_lowercase()
        })
        .collect();
    for pair in words.windows(2) {
        let is_word = pair[0].chars().all(char::is_alphabetic);
        if !pair[0].is_empty() && is_word && pair[0] == pair[1] {
            found.push(format!("repeats the word `{}`", pair[0]));
        }
    }
    if args.first() == Some(&"check") && message.contains("OCCUPANCY_SKIP") {
        found.push("suggests OCCUPANCY_SKIP, which only a build reads".to_string());
    }
    found
}

#[test]
fn the_defect_scan_catches_each_defect() {
    assert!(defects("error: the the file", &[])
        .iter()
        .any(|d| d.contains("repeats")));
    assert!(defects("error: bad name ``", &[])
        .iter()
        .any(|d| d.contains("empty quote")));
    assert!(defects("oops", &[]).iter().any(|d| d.contains("error: ")));
    assert!(defects("error: set OCCUPANCY_SKIP=1", &["check"]).len() == 1);
    assert!(defects("error: `a.log` is not a log", &["parse"]).is_empty());
}

/// Bad inputs for every subcommand, each with a text the error must contain (the input's name,
/// the flag, or the bad value).
const CORPUS: &[(&[&str], &str)] = &[
    // Directories where files are expected, empty and binary files, missing files.
    (&["parse", "empty-dir"], "empty-dir"),
    (&["parse", "empty.log"], "empty.log"),
    (&["parse", "binary.log"], "binary.log"),
    (&["parse", "missing.log"], "missing.log"),
    // Endless input: refused before a byte is read, not read until memory runs out.
    (&["parse", "/dev/zero"], "/dev/zero is a device"),
    (&["check", "/dev/zero"], "/dev/zero is a device"),
    (
        &["explain", "k", "--log", "/dev/zero"],
        "/dev/zero is a device",
    ),
    // A batch is read line by line: endless input with no newline is refused at the 1 MiB cap.
    (
        &["calc", "--batch", "/dev/zero"],
        "`/dev/zero`: line 1 is longer than 1048576 bytes (1 MiB",
    ),
    (&["check", "empty-dir"], "empty-dir"),
    (&["check", "empty.log"], "empty.log"),
    (&["check", "binary.log"], "binary.log"),
    (&["check", "missing.log"], "missing.log"),
    (&["check", "kernel.cu"], "nvcc"),
    (&["explain", "k", "--log", "empty-dir"], "empty-dir"),
    (&["explain", "k", "--log", "empty.log"], "empty.log"),
    (
        &["explain", "nosuchkernel", "--log", "build.log"],
        "nosuchkernel",
    ),
    (&["report", "--dir", "empty-dir"], "empty-dir"),
    (&["report", "--dir", "missing-dir"], "missing-dir"),
    (&["report", "--dir", "build.log"], "build.log"),
    (&["report", "--dir", "bad-reports"], "bad.json"),
    // Outputs that would replace inputs.
    (
        &["check", "build.log", "--html", "build.log"],
        "would replace the input build.log",
    ),
    (
        &["check", "build.log", "--html", "./build.log"],
        "would replace the input build.log",
    ),
    (
        &["check", "build.log", "--html", "link.html"],
        "would replace the input build.log",
    ),
    (
        &["check", "build.log", "--html", "empty-dir"],
        "is a directory",
    ),
    (
        &["check", "build.log", "--html", "missing-dir/r.html"],
        "missing-dir",
    ),
    (
        &["check", "build.log", "--cache-dir", "."],
        "holds the input build.log",
    ),
    (
        &["report", "--dir", "reports", "--html", "reports/histo.json"],
        "is inside the input directory reports",
    ),
    // Numbers out of range, negative, NaN; unknown names.
    (&["check", "build.log", "--block", "0"], "--block"),
    (
        &[
            "check",
            "build.log",
            "--dynamic-smem",
            "18446744073709551615",
        ],
        "--dynamic-smem",
    ),
    (&["check", "build.log", "--arch", "sm_999"], "sm_999"),
    (&["check", "build.log", "--deny", "spils"], "spils"),
    (
        &[
            "explain",
            "k",
            "--registers",
            "4294967295",
            "--arch",
            "sm_90",
        ],
        "--registers",
    ),
    (
        &[
            "explain",
            "k",
            "--registers",
            "32",
            "--arch",
            "sm_90",
            "--static-smem",
            "NaN",
        ],
        "NaN",
    ),
    (
        &[
            "explain",
            "k",
            "--registers",
            "32",
            "--arch",
            "sm_90",
            "--carveout",
            "NaN",
        ],
        "NaN",
    ),
    (&["explain", "k", "--registers", "32"], "--arch"),
    (&["calc", "--arch", "sm_999", "--block", "256"], "sm_999"),
    (&["calc", "--arch", "sm_90", "--block", "-1"], "-1"),
    (
        &["calc", "--arch", "sm_90", "--block", "4294967296"],
        "4294967296",
    ),
    (
        &[
            "calc",
            "--arch",
            "sm_90",
            "--block",
            "256",
            "--carveout",
            "NaN",
        ],
        "NaN",
    ),
    (
        &["sweep", "--arch", "sm_90", "--block", "1..=4294967296"],
        "4294967296",
    ),
    (&["arch", "sm_999"], "sm_999"),
    (&["report", "--dir", "reports", "--sort", "speed"], "speed"),
    (&["report", "--dir", "reports", "--lint", "spil"], "spil"),
];

/// Reports that are JSON of the right shape but hold values no build writes.
fn write_bad_reports(dir: &Path) {
    let bad = dir.join("bad-reports");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("bad.json"),
        r#"{"schema_version": 1, "kernels": [], "findings": [], "kernels": []}"#,
    )
    .unwrap();
}

#[test]
fn every_bad_input_gets_one_exact_error_and_exit_2() {
    let dir = scratch("corpus");
    write_bad_reports(&dir);
    std::os::unix::fs::symlink("build.log", dir.join("link.html")).unwrap();
    std::fs::write(dir.join("kernel.cu"), "__global__ void k() {}\n").unwrap();
    let original = std::fs::read(dir.join("build.log")).unwrap();
    let mut failures = Vec::new();
    for (args, names) in CORPUS {
        let output = run_in(&dir, args);
        let message = stderr(&output);
        let mut problems = defects(&message, args);
        if output.status.code() != Some(2) {
            problems.push(format!("exit code {:?}, not 2", output.status.code()));
        }
        if !message.contains(names) {
            problems.push(format!("does not name `{names}`"));
        }
        if !problems.is_empty() {
            failures.push(format!("{args:?}: {}\n{message}", problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(std::fs::read(dir.join("build.log")).unwrap(), original);
    assert_eq!(
        std::fs::read_link(dir.join("link.html")).unwrap(),
        Path::new("build.log")
    );
}

#[test]
fn report_files_are_validated_like_flags() {
    let dir = scratch("reports");
    let original = std::fs::read_to_string(dir.join("reports/histo.json")).unwrap();
    let cases = [
        (
            "\"arch\": \"sm_90\"",
            "\"arch\": \"sm_999\"",
            "unknown architecture `sm_999`",
        ),
        (
            "\"registers\": 40",
            "\"registers\": 4294967295",
            ".registers: 4294967295 is more",
        ),
        (
            "\"registers\": 40",
            "\"registers\": -1",
            "invalid value: integer `-1`",
        ),
        (
            "\"barriers\": 1",
            "\"barriers\": 99",
            ".barriers: 99 is more",
        ),
        ("\"lint\": \"", "\"lint\": \"x", "unknown variant"),
    ];
    for (from, to, expected) in cases {
        assert!(original.contains(from), "fixture lacks {from}");
        std::fs::write(
            dir.join("reports/histo.json"),
            original.replacen(from, to, 1),
        )
        .unwrap();
        let output = run_in(&dir, &["report", "--dir", "reports"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{to}: {message}");
        assert!(
            message.contains("reports/histo.json") && message.contains(expected),
            "{to}: {message}"
        );
        assert!(defects(&message, &["report"]).is_empty(), "{message}");
    }
}

#[test]
fn a_non_utf8_path_is_read_and_named() {
    let dir = scratch("non-utf8");
    let name = std::ffi::OsStr::from_bytes(b"log-\xff.log");
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-occupancy"))
        .args(["occupancy", "parse"])
        .arg(name)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output = run_in(&dir, &["parse", "missing-\u{fffd}.log"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Issue 23 (round 2): a path with a control character (a newline) is shown quoted with the
/// escape, in every message that names it, instead of a message broken across two lines.
#[test]
fn a_path_with_a_newline_is_shown_escaped() {
    let dir = scratch("newline");
    for command in ["check", "parse"] {
        let output = run_in(&dir, &[command, "missing\nlog.log"]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let first = stderr(&output)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        assert!(
            first.contains("\"missing\\nlog.log\""),
            "{command}: {first}"
        );
    }
    let mut log = std::fs::read(dir.join("build.log")).unwrap();
    log.extend_from_slice(b"FAILED: CMakeFiles/k.dir/crashed.cu.o\n");
    std::fs::write(dir.join("new\nline.log"), log).unwrap();
    let output = run_in(&dir, &["check", "new\nline.log"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("\"new\\nline.log\":line "),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_html_report_is_written_whole_beside_its_inputs() {
    let dir = scratch("html");
    let output = run_in(
        &dir,
        &["check", "build.log", "--html", "report.html", "--json"],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.trim_end().ends_with("</html>"));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn explain_with_shared_memory_beyond_every_gpu_finishes() {
    let dir = scratch("explain");
    let output = run_in(
        &dir,
        &[
            "explain",
            "k",
            "--registers",
            "32",
            "--arch",
            "sm_90",
            "--dynamic-smem",
            "4294967295",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// Writes an executable shell script.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether the process `pid` is gone or a zombie (killed, waiting for its reaper) within a few
/// seconds: `SIGKILL` is sent at once, but a loaded machine may take a moment to end it.
fn is_dead(pid: &str) -> bool {
    let dead = || match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    let started = Instant::now();
    while !dead() {
        if started.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// An nvcc that never answers (issue 23, item 5) fails `check` within `OCCUPANCY_TOOL_TIMEOUT`,
/// naming the command line, the limit and the setting, at the `--version` probe and in the
/// compile; the compiler it started dies with it.
#[test]
fn a_hung_nvcc_is_killed_and_named() {
    let dir = scratch("hung-nvcc");
    std::fs::write(dir.join("kernel.cu"), "__global__ void k() {}\n").unwrap();
    let pid_file = dir.join("compiler.pid");
    let compile_hangs = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Cuda compilation tools, release 13.0, V13.0.88'; exit 0; fi\nsleep 3600 &\necho $! > '{}'\nwait\n",
        pid_file.display()
    );
    let cases = [
        ("probe", "#!/bin/sh\nsleep 3600\n", "nvcc-probe --version`"),
        ("compile", compile_hangs.as_str(), "kernel.cu`"),
    ];
    for (name, script, command_end) in cases {
        let nvcc = dir.join(format!("nvcc-{name}"));
        write_script(&nvcc, script);
        let args = [
            "check",
            "kernel.cu",
            "--arch",
            "sm_90",
            "--cache-dir",
            "cache",
        ];
        let started = Instant::now();
        let output = binary()
            .arg("occupancy")
            .args(args)
            .current_dir(&dir)
            .env("NVCC", &nvcc)
            .env("OCCUPANCY_TOOL_TIMEOUT", "1")
            .output()
            .unwrap();
        let message = stderr(&output);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name}: {:?}",
            started.elapsed()
        );
        assert_eq!(output.status.code(), Some(2), "{name}: {message}");
        let expected = format!("{command_end} did not finish within 1 s and was killed");
        assert!(
            message.contains(&expected) && message.contains("OCCUPANCY_TOOL_TIMEOUT"),
            "{name}: {message}"
        );
        assert!(defects(&message, &args).is_empty(), "{name}: {message}");
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(is_dead(pid.trim()), "nvcc's compiler outlived the kill");
}

#[test]
fn a_tool_timeout_that_is_not_seconds_is_refused() {
    let dir = scratch("bad-timeout");
    std::fs::write(dir.join("kernel.cu"), "__global__ void k() {}\n").unwrap();
    let output = binary()
        .args([
            "occupancy",
            "check",
            "kernel.cu",
            "--arch",
            "sm_90",
            "--cache-dir",
            "cache",
        ])
        .current_dir(&dir)
        .env("OCCUPANCY_TOOL_TIMEOUT", "soon")
        .output()
        .unwrap();
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("OCCUPANCY_TOOL_TIMEOUT=\"soon\""),
        "{message}"
    );
}

/// `--html` onto a FIFO or a device (`--html /dev/null` replaced the system's `/dev/null` with a
/// file, run as root) writes into it and leaves the node; through a symlink, the link stays and
/// its target gets the report. Private nodes only: a FIFO in the scratch directory, and a link
/// to it as `/dev/stdout` is a link.
#[test]
fn an_html_report_onto_a_fifo_or_a_link_keeps_the_node() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("html-nodes");
    let fifo = dir.join("out.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("out.fifo", dir.join("stdout-link")).unwrap();
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    std::fs::write(dir.join("shared/report.html"), "old").unwrap();
    std::os::unix::fs::symlink("shared/report.html", dir.join("report-link.html")).unwrap();
    for html in ["out.fifo", "stdout-link"] {
        let reader_path = fifo.clone();
        let (sender, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(std::fs::read(reader_path).unwrap()));
        let output = run_in(&dir, &["check", "build.log", "--html", html, "--json"]);
        assert!(
            matches!(output.status.code(), Some(0 | 1)),
            "{html}: {}",
            stderr(&output)
        );
        let is_fifo = std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo();
        assert!(is_fifo, "{html}: the FIFO was replaced");
        // Fails, rather than hangs, when the run never opened the FIFO.
        let bytes = read
            .recv_timeout(Duration::from_secs(20))
            .expect("nothing written");
        let html_text = String::from_utf8(bytes).unwrap();
        assert!(html_text.trim_end().ends_with("</html>"), "{html}");
    }
    let output = run_in(
        &dir,
        &["check", "build.log", "--html", "report-link.html", "--json"],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_link(dir.join("report-link.html")).unwrap(),
        Path::new("shared/report.html")
    );
    let shared = std::fs::read_to_string(dir.join("shared/report.html")).unwrap();
    assert!(shared.trim_end().ends_with("</html>"), "{shared}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// A link into a directory that does not exist is refused before any work, naming both.
#[test]
fn an_html_link_into_a_missing_directory_is_refused() {
    let dir = scratch("html-dangling");
    std::os::unix::fs::symlink("gone/report.html", dir.join("dangling.html")).unwrap();
    let args = ["check", "build.log", "--html", "dangling.html"];
    let output = run_in(&dir, &args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("--html dangling.html: is a symbolic link to")
            && message.contains("gone/report.html, whose directory"),
        "{message}"
    );
    assert!(defects(&message, &args).is_empty(), "{message}");
    assert!(!dir.join("gone").exists());
}

/// Issue #35, class 6: `--lock X --bless --html X` (also through a link) is refused before any
/// work, and the lock keeps every entry it held (it became an HTML page); without `--bless` the
/// lock is an input, which `--html` never replaces.
#[test]
fn two_outputs_naming_one_file_are_refused_and_the_lock_is_kept() {
    let dir = scratch("one-target");
    let blessed = run_in(
        &dir,
        &["check", "build.log", "--lock", "occupancy.lock", "--bless"],
    );
    assert!(
        matches!(blessed.status.code(), Some(0 | 1)),
        "{}",
        stderr(&blessed)
    );
    let committed = std::fs::read_to_string(dir.join("occupancy.lock")).unwrap();
    assert!(committed.contains("\"kernels\""), "{committed}");
    std::os::unix::fs::symlink("occupancy.lock", dir.join("lock-link.html")).unwrap();
    // Blessing, the lock is an output beside --html; comparing, it is an input --html would
    // replace. Either way: refused, whatever spelling names the file.
    let cases = [
        (&["--bless"][..], "name one file"),
        (&[][..], "would replace the input"),
    ];
    for html in ["occupancy.lock", "lock-link.html", "./occupancy.lock"] {
        for (bless, refusal) in cases {
            let mut args = vec![
                "check",
                "build.log",
                "--lock",
                "occupancy.lock",
                "--html",
                html,
            ];
            args.extend_from_slice(bless);
            let output = run_in(&dir, &args);
            let said = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{html} {bless:?}: {said}");
            assert!(said.contains(refusal), "{html} {bless:?}: {said}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("occupancy.lock")).unwrap(),
        committed
    );
}

/// Issue #35, class 2: `--lock` naming a FIFO (it waited for a writer forever) or a sparse file
/// past the cap (read whole into memory) is refused before it is read, naming what it is.
#[test]
fn a_lock_that_is_a_fifo_or_too_large_is_refused_without_reading_it() {
    let dir = scratch("lock-nodes");
    assert!(Command::new("mkfifo")
        .arg(dir.join("fifo.lock"))
        .status()
        .unwrap()
        .success());
    std::fs::File::create(dir.join("sparse.lock"))
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    for (lock, says) in [
        ("fifo.lock", "is a FIFO, not a file"),
        ("sparse.lock", "is 4294967296 bytes, more than"),
    ] {
        let started = Instant::now();
        let output = run_in(&dir, &["check", "build.log", "--lock", lock]);
        assert_eq!(output.status.code(), Some(2), "{lock}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(says),
            "{lock}: {}",
            stderr(&output)
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{lock}");
    }
}

/// `cargo occupancy ARGS` in `dir` with `envs` set and `removed` unset, no nvcc in reach, and
/// `stdin` on its standard input.
fn run_with_env(
    dir: &Path,
    args: &[&str],
    envs: &[(&str, &std::ffi::OsStr)],
    stdin: &[u8],
) -> Output {
    use std::io::Write;
    let mut command = binary();
    command
        .arg("occupancy")
        .args(args)
        .current_dir(dir)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("NVCC")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in envs {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// Issue #35, class 7: a `HOME` that does not exist is not created (the cache once went under
/// it, on the root file system): a warning names HOME and the run compiles in a temporary
/// directory; a `TMPDIR` that does not exist is an error naming TMPDIR, not a scratch path
/// under it; and a log given as a pipe (`check <(ninja 2>&1)`) is read from its first byte,
/// so a failed build's first line is seen (sniffing it for a binary ate it).
#[test]
fn the_environment_and_a_piped_log_are_taken_as_they_are() {
    let dir = scratch("environment");
    std::fs::write(dir.join("k.cu"), "__global__ void k() {}\n").unwrap();
    let home = dir.join("no-home");
    let output = run_with_env(&dir, &["check", "k.cu"], &[("HOME", home.as_os_str())], b"");
    assert!(
        stderr(&output).contains("HOME (") && stderr(&output).contains("not an existing directory"),
        "{}",
        stderr(&output)
    );
    assert!(!home.exists(), "HOME was created");

    let mut cubin = vec![0u8; 64];
    cubin[..6].copy_from_slice(b"\x7fELF\x02\x01");
    cubin[18] = 190;
    std::fs::write(dir.join("k.cubin"), &cubin).unwrap();
    let tmp = dir.join("no-tmp");
    let output = run_with_env(
        &dir,
        &["check", "k.cubin"],
        &[("TMPDIR", tmp.as_os_str())],
        b"",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("TMPDIR: ") && stderr(&output).contains("set TMPDIR to"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("occupancy-binary-"),
        "{}",
        stderr(&output)
    );

    // Issue #35's third pass: nvcc works in TMPDIR too, so a `.cu` (and `tune`) with a TMPDIR
    // that is a file is an error naming TMPDIR before nvcc runs (it was nvcc's own "Could not
    // open output file" under it, or here, with no nvcc, a missing nvcc).
    for args in [
        &["check", "k.cu"][..],
        &["tune", "k.cu", "--kernel", "k", "--block", "64"],
    ] {
        let output = run_with_env(&dir, args, &[("TMPDIR", dir.join("k.cu").as_os_str())], b"");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("TMPDIR: ") && stderr(&output).contains("is not a directory"),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    let mut log = b"FAILED: k.cu.o\n".to_vec();
    log.extend(std::fs::read(dir.join("build.log")).unwrap());
    let output = run_with_env(&dir, &["check", "/dev/stdin"], &[], &log);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the log shows a failed build"),
        "{}",
        stderr(&output)
    );
}

/// Issue #35, class 2: a directory walk visits each directory once (two self-links made 2^40
/// paths), and a FIFO named like an input is an error naming it, never opened (it waited
/// forever). Private FIFOs in the test's own directory.
#[test]
fn a_directory_walk_visits_each_directory_once_and_names_a_fifo() {
    let dir = scratch("walk");
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    let cubin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../occupancy-binary/src/fuzz_corpus/k.sm_90.cubin");
    std::fs::copy(&cubin, tree.join("sub/k.cubin")).unwrap();
    std::os::unix::fs::symlink(&tree, tree.join("a")).unwrap();
    std::os::unix::fs::symlink(&tree, tree.join("b")).unwrap();
    std::os::unix::fs::symlink(&tree, tree.join("sub/up")).unwrap();
    let output = run_in(&dir, &["check", "--json", "tree"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    let names: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), names.len(), "each kernel once: {rows:?}");

    let made = Command::new("mkfifo")
        .arg(tree.join("sub/waits.fatbin"))
        .status();
    if made.is_ok_and(|status| status.success()) {
        let output = run_in(&dir, &["check", "tree"]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(
            said.contains("waits.fatbin is not a regular file"),
            "{said}"
        );
    }
}

/// Issue #35's third pass: a compiled binary given to `parse` or `explain --log` is no log (a
/// sparse one was read to its end as one), and `tune --kernel` takes one symbol, not an empty or
/// spaced name (shown as an empty quote, or across lines).
#[test]
fn a_binary_is_no_log_and_a_kernel_is_one_symbol() {
    let dir = scratch("binary-as-log");
    let mut cubin = vec![0u8; 64];
    cubin[..6].copy_from_slice(b"\x7fELF\x02\x01");
    cubin[18] = 190;
    std::fs::write(dir.join("k.cubin"), &cubin).unwrap();
    for args in [
        &["parse", "k.cubin"][..],
        &["explain", "k", "--log", "k.cubin"],
    ] {
        let output = run_in(&dir, args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("is a compiled binary")
                && stderr(&output).contains("not a ptxas log"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    std::fs::write(dir.join("k.cu"), "__global__ void k() {}\n").unwrap();
    for kernel in ["", "a\nb", "two words"] {
        let output = run_in(&dir, &["tune", "k.cu", "--kernel", kernel]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{kernel:?}: {}",
            stderr(&output)
        );
        let said = stderr(&output);
        assert!(
            said.contains("--kernel") && said.contains("one word"),
            "{kernel:?}: {said}"
        );
        assert!(
            defects(said.lines().next().unwrap_or(""), &["tune"]).is_empty(),
            "{said}"
        );
    }
}

/// Issue #42, class 14: a FIFO named as a binary argument (`check lib.so`, directly or through
/// a link) waited for a writer until it was killed; one inside a directory argument was named
/// only as "not a regular file". Each is refused at once, before it is opened, naming the file,
/// that it is a FIFO and that nothing was read from it. Private FIFOs in the test's directory.
#[test]
fn a_fifo_named_like_a_binary_is_refused_unopened_and_named_as_a_fifo() {
    let dir = scratch("fifo-arguments");
    std::fs::create_dir_all(dir.join("tree")).unwrap();
    for fifo in ["lib.so", "tree/k.cubin"] {
        assert!(Command::new("mkfifo")
            .arg(dir.join(fifo))
            .status()
            .unwrap()
            .success());
    }
    std::os::unix::fs::symlink("lib.so", dir.join("link-to-lib")).unwrap();
    for (argument, named) in [
        ("lib.so", "lib.so"),
        ("link-to-lib", "link-to-lib"),
        ("tree", "k.cubin"),
    ] {
        let started = Instant::now();
        let output = run_in(&dir, &["check", argument]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{argument}: {said}");
        assert!(
            said.contains(&format!("{named} is not a regular file but a FIFO")),
            "{argument}: {said}"
        );
        assert!(
            said.contains("nothing was read from it"),
            "{argument}: {said}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{argument}: refused only after {:?}",
            started.elapsed()
        );
    }
}
