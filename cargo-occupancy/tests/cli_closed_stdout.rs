//! Standard output that fails, for every subcommand. A reader that went away
//! (`cargo occupancy check ... | head`) ends the command quietly, like ripgrep: no panic, no
//! `error:` line, and the exit code of what the command already knew (a deny finding stands: 1),
//! never "could not check" (2). Any other failed write (`> /dev/full`) is one `error:` line and
//! exit 2, never a panic. (`explain` and `report` once panicked on both; `parse` once said
//! `error: cannot write to standard output: Broken pipe` and exited 2.)

mod common;

use common::{binary, fixtures, stderr};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// A batch of many lines, more than a pipe holds: the writer meets the closed pipe mid-run.
fn batch_file() -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("closed-stdout-batch.jsonl");
    let line = "{\"arch\":\"sm_90\",\"block\":256,\"registers\":32}\n";
    std::fs::write(&path, line.repeat(20_000)).unwrap();
    path
}

/// Every subcommand with arguments that print something, and its exit code when its output
/// is read to the end.
fn commands(batch: &Path) -> Vec<(Vec<String>, i32)> {
    let cases: &[(&[&str], i32)] = &[
        (&["arch"], 0),
        (&["arch", "--gpus", "--json"], 0),
        (&["calc", "--arch", "sm_90", "--block", "256"], 0),
        (&["sweep", "--arch", "sm_90", "--csv"], 0),
        (&["parse", "logs/cmake-build.log"], 0),
        (&["parse", "logs/cmake-build.log", "--json"], 0),
        // The log's spilling kernels are deny findings: the gate fails, read or not.
        (&["check", "logs/cmake-build.log"], 1),
        (&["check", "logs/cmake-build.log", "--sarif"], 1),
        (&["explain", "histogram", "--dir", "reports"], 0),
        (&["report", "--dir", "reports"], 0),
        (&["report", "--dir", "reports", "--json"], 0),
    ];
    let mut commands: Vec<(Vec<String>, i32)> = cases
        .iter()
        .map(|(args, code)| (args.iter().map(|arg| (*arg).to_string()).collect(), *code))
        .collect();
    commands.push((
        vec![
            "calc".into(),
            "--batch".into(),
            batch.to_str().unwrap().into(),
        ],
        0,
    ));
    commands
}

/// `cargo occupancy ARGS` in the fixtures, its standard output `stdout`.
fn run(args: &[String], stdout: impl Into<Stdio>) -> Output {
    binary()
        .arg("occupancy")
        .args(args)
        .current_dir(fixtures())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("run cargo-occupancy")
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_the_verdict_it_had() {
    let batch = batch_file();
    for (args, code) in commands(&batch) {
        // The reader is gone before the command starts: its first write finds the pipe closed.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = run(&args, writer);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {error}");
        for bad in ["error:", "panicked", "Broken pipe"] {
            assert!(!error.contains(bad), "{args:?} printed `{bad}`: {error}");
        }
    }
}

#[test]
fn a_failed_write_to_stdout_is_one_error_and_exit_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    let batch = batch_file();
    for (args, _) in commands(&batch) {
        let output = run(&args, full.try_clone().unwrap());
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
        let errors: Vec<&str> = error
            .lines()
            .filter(|line| line.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {error}");
        assert!(
            errors[0].contains("No space left on device") && !error.contains("panicked"),
            "{args:?}: {error}"
        );
    }
}
