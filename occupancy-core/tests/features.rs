//! Issue 12.7: a crate that only calculates does not compile the declaration grammar's `syn`
//! (version 2 with `full`; serde's and thiserror's derives bring their own small one).
//! `cargo tree` answers from the lock file, without building or taking the build lock.

// A test reads the environment it runs in; the root clippy.toml's disallowed-methods are for
// the crates' own code.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

fn normal_dependencies(features: &[&str]) -> String {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "occupancy-core",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["-f", "{p} {f}"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn has_full_syn(tree: &str) -> bool {
    tree.lines()
        .any(|line| line.starts_with("syn v2.") && line.contains("full"))
}

#[test]
fn the_calculator_alone_does_not_compile_the_grammar() {
    let without = normal_dependencies(&["--no-default-features"]);
    assert!(!has_full_syn(&without), "{without}");
    let with = normal_dependencies(&["--no-default-features", "--features", "spec"]);
    assert!(has_full_syn(&with), "the `spec` feature brings syn: {with}");
}
