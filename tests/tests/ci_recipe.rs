//! docs/ci.md's GitHub Actions job, run as written: every `run:` block of its workflow, in order,
//! with bash as Actions runs it (`bash -e`), on a copy of the `regress` fixture committed to git
//! with its baseline. Stand-ins only where a runner differs: the install step (nvcc comes from
//! `scripts/setup-cuda.sh`, the CLI from this workspace) and `gh`, which records its arguments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use occupancy_tests::{
    clear_build_environment, copy_dir, cuda_home, e2e_root, nvcc, repo_root, text,
};

/// `(step name, script)` of every step with a `run:` block in docs/ci.md's workflow.
fn workflow_steps() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(repo_root().join("docs/ci.md")).unwrap();
    let yaml = doc
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("docs/ci.md has a ```yaml workflow");
    let mut steps = Vec::new();
    let mut name = String::new();
    let mut script: Option<String> = None;
    for line in yaml.lines() {
        if let Some(rest) = line.strip_prefix("      - ") {
            if let Some(script) = script.take() {
                steps.push((name.clone(), script));
            }
            name = rest.strip_prefix("name: ").unwrap_or(rest).to_string();
        } else if line.trim() == "run: |" {
            script = Some(String::new());
        } else if let (Some(script), Some(body)) =
            (script.as_mut(), line.strip_prefix("          "))
        {
            script.push_str(body);
            script.push('\n');
        } else if script.is_some() && !line.starts_with("          ") {
            steps.push((name.clone(), script.take().unwrap()));
        }
    }
    if let Some(script) = script {
        steps.push((name, script));
    }
    steps
}

struct Runner {
    dir: PathBuf,
    bin: PathBuf,
    github_env: PathBuf,
    summary: PathBuf,
    gh_log: PathBuf,
}

impl Runner {
    fn new(instance: &str) -> Runner {
        let dir = e2e_root().join("work").join(instance);
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures/regress"), &dir);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .replace("@REPO@", &repo_root().display().to_string())
            .replace(
                "name = \"fixture-regress\"",
                &format!("name = \"e2e-{instance}\""),
            );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        let bin = dir.join("runner-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let runner = Runner {
            github_env: dir.join("github-env"),
            summary: dir.join("step-summary.md"),
            gh_log: dir.join("gh-invocations.log"),
            dir,
            bin,
        };
        // The install step's stand-in: this workspace's CLI, and a `gh` that records its call.
        std::fs::copy(cli_binary(), runner.bin.join("cargo-occupancy")).unwrap();
        let gh = runner.bin.join("gh");
        std::fs::write(
            &gh,
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n", runner.gh_log.display()),
        )
        .unwrap();
        make_executable(&gh);
        runner
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command
            .current_dir(&self.dir)
            .env("PATH", path)
            // Its own target dir: `cargo occupancy report` reads every report under it, as in a
            // repository's CI, not the other end-to-end fixtures' (some of which fail on purpose).
            .env("CARGO_TARGET_DIR", e2e_root().join("ci-target"))
            .env("CARGO_NET_OFFLINE", "true")
            .env("NVCC", nvcc())
            .env("CUDA_HOME", cuda_home())
            .env("GITHUB_ENV", &self.github_env)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GIT_AUTHOR_NAME", "ci")
            .env("GIT_AUTHOR_EMAIL", "ci@example.invalid")
            .env("GIT_COMMITTER_NAME", "ci")
            .env("GIT_COMMITTER_EMAIL", "ci@example.invalid");
        clear_build_environment(&mut command);
        command.env_remove("OCCUPANCY_LINT_BASELINE_STALE");
        command
    }

    fn shell(&self, script: &str) -> Output {
        self.command("bash")
            .args(["--noprofile", "--norc", "-e", "-c", script])
            .output()
            .expect("bash runs")
    }

    /// Runs every step but the install; returns each step's name and output.
    fn run_workflow(&self) -> Vec<(String, Output)> {
        workflow_steps()
            .into_iter()
            .filter(|(name, _)| !name.starts_with("Install nvcc"))
            .map(|(name, script)| {
                let script = script.replace("${{ github.event.pull_request.number }}", "7");
                assert!(
                    !script.contains("${{"),
                    "an unhandled expression in {name}: {script}"
                );
                let output = self.shell(&script);
                (name, output)
            })
            .collect()
    }

    fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_else(|error| panic!("{file}: {error}"))
    }
}

fn cli_binary() -> PathBuf {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--offline", "-q", "-p", "cargo-occupancy"])
        .current_dir(repo_root())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    target.join("debug/cargo-occupancy")
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn step<'a>(outputs: &'a [(String, Output)], prefix: &str) -> &'a Output {
    &outputs
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .unwrap_or_else(|| panic!("docs/ci.md has a step `{prefix}...`"))
        .1
}

#[test]
fn the_documented_workflow_gates_reports_comments_and_diffs_the_baseline() {
    let runner = Runner::new("ci-recipe");
    // The repository as a pull request finds it: kernels and a blessed baseline, committed.
    // (Cargo.lock is the workspace's, trimmed to this crate as its own repository would commit it.)
    let bless = runner.shell(
        "cargo metadata --format-version 1 > /dev/null && OCCUPANCY_BLESS=1 cargo build --locked \
         && git init -q && git add -A && git commit -qm base",
    );
    assert!(bless.status.success(), "{}", text(&bless));

    let clean = runner.run_workflow();
    for (name, output) in &clean {
        assert!(
            output.status.success(),
            "step `{name}` failed:\n{}",
            text(output)
        );
    }
    let sarif: serde_json::Value = serde_json::from_str(&runner.read("occupancy.sarif")).unwrap();
    assert_eq!(sarif["version"], "2.1.0", "{sarif}");
    assert!(runner.read("occupancy.md").contains("e2e-ci-recipe"));
    assert!(
        runner.read("occupancy-lock.diff").is_empty(),
        "an unchanged baseline"
    );
    assert_eq!(
        std::fs::read_to_string(&runner.gh_log).unwrap(),
        "pr comment 7 --body-file occupancy.md\n"
    );

    // A pull request that makes the kernel worse: the build step fails, the others still run
    // (`if: always()`) and the comment carries the baseline's diff.
    let source = runner.dir.join("kernels/reduce.cu");
    let kernel = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, kernel.replace("#define LIVE 8", "#define LIVE 40")).unwrap();
    let worse = runner.run_workflow();
    let build = step(&worse, "Build");
    assert!(
        !build.status.success(),
        "a regression fails the job:\n{}",
        text(build)
    );
    assert!(
        runner
            .read("occupancy-build.log")
            .contains("error[regression]: kernel `reduce` is worse than the baseline on sm_90"),
        "{}",
        runner.read("occupancy-build.log")
    );
    for prefix in ["Reports", "Baseline diff", "Comment"] {
        let output = step(&worse, prefix);
        assert!(output.status.success(), "{prefix}:\n{}", text(output));
    }
    let comment = runner.read("occupancy.md");
    assert!(
        comment.contains("### occupancy.lock if blessed"),
        "{comment}"
    );
    assert!(comment.contains("\"registers\""), "{comment}");
    assert!(
        std::fs::read_to_string(&runner.summary)
            .unwrap()
            .contains("occupancy.lock"),
        "the job summary shows the diff"
    );
}
