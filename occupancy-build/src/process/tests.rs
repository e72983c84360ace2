//! The bounded runner against real processes: a chatty one, a hung one with children, one
//! whose child keeps its output open, and the setting's parsing.

use super::*;

fn shell(script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(script);
    command
}

fn limits(limit: Duration) -> ToolTimeouts {
    ToolTimeouts {
        work: limit,
        probe: limit,
        configured: true,
    }
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("occupancy-process-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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

#[test]
fn a_chatty_child_is_read_to_the_end_on_both_pipes() {
    // 4 MB on each pipe, interleaved: far beyond a pipe's buffer, so a runner that read one
    // pipe after the other, or only after the exit, would deadlock.
    let script = "i=0; while [ $i -lt 64 ]; do head -c 65536 /dev/zero | tr '\\0' o; head -c 65536 /dev/zero | tr '\\0' e >&2; i=$((i+1)); done; exit 3";
    let output = run_bounded(
        &mut shell(script),
        &limits(Duration::from_secs(120)),
        ToolKind::Work,
    )
    .unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert_eq!(output.stdout.len(), 64 * 65536);
    assert_eq!(output.stderr.len(), 64 * 65536);
    assert!(output.stdout.iter().all(|&byte| byte == b'o'));
    assert!(output.stderr.iter().all(|&byte| byte == b'e'));
}

#[test]
fn a_hung_child_is_killed_with_its_children_and_named() {
    let dir = scratch("hung");
    let pids = dir.join("pids");
    // Like nvcc: a driver that starts a compiler and waits for it; both would sleep an hour.
    let script = format!(
        "sleep 3600 & echo $! > '{}'; echo $$ >> '{}'; wait",
        pids.display(),
        pids.display()
    );
    let started = Instant::now();
    let error = run_bounded(
        &mut shell(&script),
        &limits(Duration::from_millis(500)),
        ToolKind::Work,
    )
    .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let message = error.to_string();
    assert!(
        matches!(error, Error::ToolTimedOut { .. }) && message.contains("/bin/sh -c 'sleep 3600"),
        "{message}"
    );
    assert!(
        message.contains("within 0.5 s") && message.contains("OCCUPANCY_TOOL_TIMEOUT"),
        "{message}"
    );
    let pids = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(pids.lines().count(), 2, "{pids}");
    for pid in pids.lines() {
        assert!(is_dead(pid), "process {pid} outlived the kill");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_child_whose_children_keep_its_output_open_times_out() {
    let dir = scratch("held-pipe");
    let pid_file = dir.join("pid");
    // The shell exits at once; the background sleep still holds stdout and stderr.
    let script = format!("sleep 3600 & echo $! > '{}'; exit 0", pid_file.display());
    let error = run_bounded(
        &mut shell(&script),
        &limits(Duration::from_millis(500)),
        ToolKind::Probe,
    )
    .unwrap_err();
    assert!(matches!(error, Error::ToolTimedOut { .. }), "{error}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(is_dead(pid.trim()), "the sleep outlived the kill");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn quick_children_keep_their_status_and_output() {
    let output = run_bounded(
        &mut shell("read line; echo \"[$line]\"; echo warn >&2; exit 1"),
        &ToolTimeouts::default(),
        ToolKind::Probe,
    )
    .unwrap();
    // Standard input is closed: `read` sees the end at once.
    assert_eq!(output.stdout, b"[]\n");
    assert_eq!(output.stderr, b"warn\n");
    assert_eq!(output.status.code(), Some(1));
    let error = run_bounded(
        &mut Command::new("/nonexistent/occupancy-tool"),
        &ToolTimeouts::default(),
        ToolKind::Probe,
    )
    .unwrap_err();
    assert!(
        matches!(&error, Error::ToolNotStarted { command, .. } if command == "/nonexistent/occupancy-tool"),
        "{error:?}"
    );
}

#[test]
fn the_setting_is_seconds_above_zero() {
    let read = |value: Option<&str>| {
        let mut env = TrackedEnv::new();
        env.set(TIMEOUT_SETTING, value);
        ToolTimeouts::from_env(&env)
    };
    let defaults = read(None).unwrap();
    assert_eq!(defaults.limit(ToolKind::Work), Duration::from_secs(1800));
    assert_eq!(defaults.limit(ToolKind::Probe), Duration::from_secs(60));
    assert!(
        defaults.hint().contains("default 1800 s for compiles"),
        "{}",
        defaults.hint()
    );
    let set = read(Some(" 2.5 ")).unwrap();
    assert_eq!(set.limit(ToolKind::Work), Duration::from_millis(2500));
    assert_eq!(set.limit(ToolKind::Probe), Duration::from_millis(2500));
    for bad in ["0", "-1", "abc", "inf", "NaN", "1e12", "5s"] {
        let error = read(Some(bad)).unwrap_err();
        assert!(
            matches!(&error, Error::BadToolTimeout { value } if value == bad),
            "{bad}: {error:?}"
        );
        assert!(
            error.to_string().contains("OCCUPANCY_TOOL_TIMEOUT"),
            "{error}"
        );
    }
    assert_eq!(seconds(Duration::from_secs(60)), "60 s");
    assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
}

#[test]
fn the_child_stays_in_the_callers_process_group() {
    // A Ctrl-C at the terminal signals the foreground process group: nvcc must be in it, or it
    // would compile on after the build was interrupted.
    let group_of = |stat: &str| -> String {
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name.split_whitespace().nth(2).unwrap().to_string()
    };
    let ours = group_of(&std::fs::read_to_string("/proc/self/stat").unwrap());
    let output = run_bounded(
        &mut shell("cat /proc/$$/stat"),
        &limits(Duration::from_secs(60)),
        ToolKind::Probe,
    )
    .unwrap();
    assert_eq!(group_of(&String::from_utf8_lossy(&output.stdout)), ours);
}

#[test]
fn a_stat_line_gives_its_parent_even_with_a_strange_name() {
    assert_eq!(
        parent_of_stat("4242 (a (b) c) S 17 4242 4242 0 -1 4194560"),
        Some(17)
    );
    assert_eq!(parent_of_stat("1 (init) S 0 1 1"), Some(0));
    assert_eq!(parent_of_stat("garbage"), None);
}
