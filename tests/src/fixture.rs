//! A fixture crate of `tests/fixtures/` copied under `target/e2e/work/<instance>` and built
//! with cargo and the real nvcc (through `tests/fixtures/nvcc-logger.sh`, which logs each
//! invocation, so a test can count what was compiled), sharing `target/e2e/target`.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::{clear_build_environment, copy_dir, e2e_root, nvcc, repo_root};

/// A copy of a fixture crate under target/e2e/work/<instance>, with its own package name.
pub struct Fixture {
    pub dir: PathBuf,
    pub nvcc_log: PathBuf,
    pub name: String,
}

impl Fixture {
    pub fn new(fixture: &str, instance: &str) -> Fixture {
        let dir = e2e_root().join("work").join(instance);
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures").join(fixture), &dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let name = format!("e2e-{instance}");
        let manifest = manifest
            .replace("@REPO@", &repo_root().display().to_string())
            .replace(
                &format!("name = \"fixture-{fixture}\""),
                &format!("name = \"{name}\""),
            );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        // The workspace's lock: same dependency versions, nothing to resolve or download.
        std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        // Start from nothing: no build-script output or per-file cache left by an earlier run.
        crate::remove_build_outputs(&name);
        let nvcc_log = dir.join("nvcc-invocations.log");
        Fixture {
            dir,
            nvcc_log,
            name,
        }
    }

    pub fn cargo_build(&self, env: &[(&str, &str)]) -> Output {
        self.cargo(&["build", "--offline", "-v"], env)
    }

    /// `cargo <args>` in the fixture, with nvcc logged and the developer's overrides cleared.
    pub fn cargo(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(args)
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", e2e_root().join("target"))
            .env("NVCC", repo_root().join("tests/fixtures/nvcc-logger.sh"))
            .env("OCCUPANCY_TEST_REAL_NVCC", nvcc())
            .env("OCCUPANCY_TEST_NVCC_LOG", &self.nvcc_log)
            .env("CUDA_HOME", crate::cuda_home());
        clear_build_environment(&mut command);
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().expect("cargo runs")
    }

    /// Kernel compiles logged so far: one line each, the nvcc that reads the `.cu` (not
    /// `--version`, nor `cc`'s probes of the compiler family). A `compile_ptx` source is
    /// compiled by `nvcc -ptx -lineinfo --keep-dir <dir>` and then assembled from its stripped
    /// PTX, `<dir>/<stem>.ptx`, by a second nvcc (`-Xptxas -v`); each compile must have that step.
    pub fn nvcc_compiles(&self) -> Vec<String> {
        let log = std::fs::read_to_string(&self.nvcc_log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let mut compiles = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if line.contains(" -ptx ") && line.ends_with(".cu") {
                let stem = line.rsplit('/').next().unwrap().trim_end_matches(".cu");
                let dir = line.split("--keep-dir ").nth(1).unwrap();
                let shipped = format!("{}/{stem}.ptx", dir.split(' ').next().unwrap());
                let assembled = lines[index + 1..]
                    .iter()
                    .any(|next| next.contains("-Xptxas -v") && next.ends_with(&shipped));
                assert!(assembled, "{line}: no ptxas step on its PTX:\n{log}");
                compiles.push((*line).to_string());
            } else if line.contains("-Xptxas -v") && line.ends_with(".cu") {
                compiles.push((*line).to_string());
            }
        }
        compiles
    }

    /// The `cargo:` lines the fixture's build script printed in the last build.
    pub fn build_script_output(&self) -> String {
        std::fs::read_to_string(crate::newest_build_file(&self.name, "output")).unwrap()
    }

    pub fn report(&self) -> serde_json::Value {
        let path = e2e_root()
            .join("target/occupancy")
            .join(format!("{}.json", self.name));
        serde_json::from_str(
            &std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display())),
        )
        .unwrap()
    }

    pub fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} contains {from:?}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    }
}

impl Fixture {
    pub fn lock(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("occupancy.lock")).unwrap())
            .unwrap()
    }

    /// The `cargo:warning` lines of the last build script run that start with `prefix`.
    pub fn warnings_starting(&self, prefix: &str) -> Vec<String> {
        self.build_script_output()
            .lines()
            .filter_map(|line| line.strip_prefix("cargo:warning="))
            .filter(|line| line.starts_with(prefix))
            .map(str::to_string)
            .collect()
    }

    /// The report's `baseline_changes`: (change, source, kernel, arch).
    pub fn baseline_changes(&self) -> Vec<(String, String, String, String)> {
        let report = self.report();
        let field = |change: &serde_json::Value, key: &str| {
            change[key].as_str().unwrap_or_default().to_string()
        };
        report["baseline_changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|change| {
                (
                    field(change, "change"),
                    field(change, "source"),
                    field(change, "kernel"),
                    field(change, "arch"),
                )
            })
            .collect()
    }
}
