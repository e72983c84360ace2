//! Every child process the build and the CLI start (nvcc and what it runs, ptxas, cuobjdump,
//! nvdisasm, `cargo metadata`, the `--version` probes, nvidia-smi) runs through [`run_bounded`]:
//! with a time limit, its standard output and error read to the end while it runs (a chatty
//! child never blocks on a full pipe), its standard input closed.
//!
//! A child that runs past its limit is killed with every process it started (nvcc starts cicc,
//! ptxas and fatbinary, and a compiler cache may start more): its descendants are found by
//! their parent ids and sent `SIGKILL`, then the child. The child stays in the build's process
//! group, so a Ctrl-C at the terminal still reaches nvcc and everything it runs. The run then
//! fails with [`Error::ToolTimedOut`], which names the command line, the limit and the setting
//! that changes it. The limits come from `OCCUPANCY_TOOL_TIMEOUT`, read once at resolution
//! ([`ToolTimeouts::from_env`]); std only: a thread per pipe and a `try_wait` loop.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::env::TrackedEnv;
pub(crate) use crate::words::seconds;
use crate::Error;

/// The variable that sets the time limit of every child process, in seconds.
pub const TIMEOUT_SETTING: &str = "OCCUPANCY_TOOL_TIMEOUT";
/// Compiles (nvcc, ptxas) and the SASS tools: a huge translation unit may take many minutes.
const DEFAULT_WORK_LIMIT: Duration = Duration::from_secs(30 * 60);
/// `--version`, `--list-gpu-arch`, nvidia-smi, `cargo metadata`: answers in well under a second.
const DEFAULT_PROBE_LIMIT: Duration = Duration::from_secs(60);
/// After the kill: how long to wait for the child to be reaped and its pipes to close. A
/// process that outlives this (one stuck in the kernel, or one that left the group and holds
/// a pipe) is left behind; the run has failed either way.
const AFTER_KILL: Duration = Duration::from_secs(5);
/// The longest pause between two looks at a running child.
const MAX_POLL: Duration = Duration::from_millis(25);

/// What a child process does, which decides its default limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolKind {
    /// A compile (nvcc, ptxas) or a SASS tool (cuobjdump, nvdisasm).
    Work,
    /// A question that answers at once: `--version`, `--list-gpu-arch`, nvidia-smi,
    /// `cargo metadata`.
    Probe,
}

/// How long each kind of child process may run: `OCCUPANCY_TOOL_TIMEOUT` seconds for every
/// one when it is set, else 30 minutes for work and 60 seconds for probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolTimeouts {
    work: Duration,
    probe: Duration,
    /// Whether `OCCUPANCY_TOOL_TIMEOUT` set them.
    configured: bool,
}

impl Default for ToolTimeouts {
    fn default() -> ToolTimeouts {
        ToolTimeouts {
            work: DEFAULT_WORK_LIMIT,
            probe: DEFAULT_PROBE_LIMIT,
            configured: false,
        }
    }
}

impl ToolTimeouts {
    /// The limits `OCCUPANCY_TOOL_TIMEOUT` sets (seconds, above 0, fractions allowed), else the
    /// defaults. A value that is not such a number is an error naming the variable.
    pub fn from_env(env: &TrackedEnv) -> Result<ToolTimeouts, Error> {
        let Some(value) = env.get(TIMEOUT_SETTING) else {
            return Ok(ToolTimeouts::default());
        };
        let limit = parse_seconds(&value).ok_or(Error::BadToolTimeout { value })?;
        Ok(ToolTimeouts {
            work: limit,
            probe: limit,
            configured: true,
        })
    }

    /// The limit of a child process of this kind.
    pub fn limit(&self, kind: ToolKind) -> Duration {
        match kind {
            ToolKind::Work => self.work,
            ToolKind::Probe => self.probe,
        }
    }

    /// What a timed-out run's error says about the setting.
    fn hint(&self) -> String {
        if self.configured {
            format!("{TIMEOUT_SETTING} set this limit: raise it if the tool needs longer")
        } else {
            format!(
                "if it needs longer, set {TIMEOUT_SETTING} to the seconds every tool may run (default {} for compiles and disassembly, {} for version probes, nvidia-smi and cargo metadata)",
                seconds(DEFAULT_WORK_LIMIT),
                seconds(DEFAULT_PROBE_LIMIT)
            )
        }
    }
}

/// `12`, `0.5`: seconds above 0 and at most about 31 years.
fn parse_seconds(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds > 0.0 && seconds <= 1e9)
        .then(|| Duration::from_secs_f64(seconds))
}

/// Runs `command` to completion within its kind's limit and returns what it printed, like
/// [`Command::output`]. Not started: [`Error::ToolNotStarted`]; past the limit (exiting, or
/// closing its output, later than that): killed with what it started, [`Error::ToolTimedOut`].
/// A non-zero exit is not an error here: the caller reads the status.
pub fn run_bounded(
    command: &mut Command,
    timeouts: &ToolTimeouts,
    kind: ToolKind,
) -> Result<Output, Error> {
    let rendered = render_command(command);
    let limit = timeouts.limit(kind);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let not_started = |error| Error::ToolNotStarted {
        command: rendered.clone(),
        error,
    };
    let mut child = command.spawn().map_err(not_started)?;
    let deadline = Instant::now() + limit;
    let pipes = PipeNames::of(&child);
    let drains = Drain::start(&mut child).inspect_err(|_| stop(&mut child, &pipes));
    let (stdout, stderr) = drains.map_err(not_started)?;
    let status = match wait_until(&mut child, deadline) {
        Ok(status) => status,
        Err(error) => {
            stop(&mut child, &pipes);
            return Err(not_started(error));
        }
    };
    let output = status.and_then(|status| {
        Some(Output {
            status,
            stdout: stdout.until(deadline)?,
            stderr: stderr.until(deadline)?,
        })
    });
    output.ok_or_else(|| {
        stop(&mut child, &pipes);
        Error::ToolTimedOut {
            command: rendered,
            limit,
            hint: timeouts.hint(),
        }
    })
}

/// The child's exit status once it exits, or `None` when `deadline` passes first. Looks often
/// at first (a probe answers in milliseconds), then every [`MAX_POLL`].
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(MAX_POLL);
    }
}

/// What the child's stdout and stderr pipes are called in `/proc` (`pipe:[1234]`): whoever
/// else holds them open was started by this run, also once its parent has exited (a background
/// process of a script is adopted by init). Empty without `/proc`.
#[derive(Debug, Default)]
struct PipeNames(Vec<std::path::PathBuf>);

impl PipeNames {
    fn of(child: &Child) -> PipeNames {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fds = [
                child.stdout.as_ref().map(AsRawFd::as_raw_fd),
                child.stderr.as_ref().map(AsRawFd::as_raw_fd),
            ];
            PipeNames(
                fds.into_iter()
                    .flatten()
                    .filter_map(|fd| std::fs::read_link(format!("/proc/self/fd/{fd}")).ok())
                    .collect(),
            )
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = child;
            PipeNames::default()
        }
    }

    /// Every other process that holds one of the pipes open.
    fn holders(&self) -> Vec<u32> {
        if self.0.is_empty() {
            return Vec::new();
        }
        let me = std::process::id();
        let Ok(processes) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        processes
            .flatten()
            .filter_map(|entry| {
                let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
                let fds = std::fs::read_dir(entry.path().join("fd")).ok()?;
                let holds = fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|target| self.0.contains(&target))
                });
                (holds && pid != me).then_some(pid)
            })
            .collect()
    }
}

/// Kills the child and every process it started, then reaps it (waiting at most
/// [`AFTER_KILL`]): its descendants, found by parent ids, and whoever else holds its output
/// pipes (adopted by init once their parent exited), looked for again until none is left (a
/// process may start another while its tree is being killed). The child, not reaped until
/// then, keeps its pid, so the tree is this run's.
fn stop(child: &mut Child, pipes: &PipeNames) {
    #[cfg(unix)]
    for _ in 0..4 {
        let mut doomed = descendants_of(child.id());
        doomed.extend(pipes.holders());
        if doomed.is_empty() {
            break;
        }
        kill(&doomed);
    }
    #[cfg(not(unix))]
    let _ = pipes;
    let _ = child.kill();
    let _ = wait_until(child, Instant::now() + AFTER_KILL);
}

/// Every live process below `root`, found by parent ids: on Linux from `/proc/<pid>/stat`,
/// elsewhere from `pgrep -P`.
#[cfg(unix)]
fn descendants_of(root: u32) -> Vec<u32> {
    let parents = parent_ids();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        let children: Vec<u32> = match &parents {
            Some(parents) => parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid)
                .collect(),
            None => pgrep_children(parent),
        };
        for child in children {
            if !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

/// (pid, parent pid) of every process, from `/proc`; `None` without `/proc` (macOS, BSD).
#[cfg(unix)]
fn parent_ids() -> Option<Vec<(u32, u32)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut pairs = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        if let Some(ppid) = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| parent_of_stat(&stat))
        {
            pairs.push((pid, ppid));
        }
    }
    Some(pairs)
}

/// The parent pid in a `/proc/<pid>/stat` line: the second field after the command name in
/// parentheses (which may itself hold spaces and parentheses, so the last `)` ends it).
#[cfg(any(unix, test))]
fn parent_of_stat(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The children of `parent` by `pgrep -P`, where there is no `/proc`.
#[cfg(unix)]
fn pgrep_children(parent: u32) -> Vec<u32> {
    Command::new("pgrep")
        .arg("-P")
        .arg(parent.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|output| {
            String::from_utf8_lossy(&output.stdout)
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `SIGKILL` to each of `pids`. std signals only its own children; the shell's `kill` builtin
/// signals any pid, and `/bin/sh` exists on every Unix.
#[cfg(unix)]
fn kill(pids: &[u32]) {
    let list: Vec<String> = pids.iter().map(ToString::to_string).collect();
    let _ = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("kill -s KILL {} 2>/dev/null", list.join(" ")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A thread reading one pipe to its end; its bytes arrive on the channel when the pipe closes.
struct Drain(mpsc::Receiver<Vec<u8>>);

impl Drain {
    /// Starts reading the child's stdout and stderr.
    fn start(child: &mut Child) -> std::io::Result<(Drain, Drain)> {
        Ok((
            Drain::pipe(child.stdout.take())?,
            Drain::pipe(child.stderr.take())?,
        ))
    }

    fn pipe(pipe: Option<impl Read + Send + 'static>) -> std::io::Result<Drain> {
        let (sender, receiver) = mpsc::channel();
        match pipe {
            Some(mut pipe) => {
                std::thread::Builder::new()
                    .name("occupancy-child-output".into())
                    .spawn(move || {
                        let mut bytes = Vec::new();
                        // A read error ends the output where it happened, as a closed pipe does.
                        let _ = pipe.read_to_end(&mut bytes);
                        let _ = sender.send(bytes);
                    })?;
            }
            None => {
                let _ = sender.send(Vec::new());
            }
        }
        Ok(Drain(receiver))
    }

    /// Everything the pipe carried, once it closes before `deadline`; `None` when it is still
    /// open then (a process the child started holds it).
    fn until(&self, deadline: Instant) -> Option<Vec<u8>> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.0.recv_timeout(left).ok()
    }
}

/// The command as a shell line, for error messages and logs.
pub fn render_command(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| {
            let text = part.to_string_lossy();
            if text.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                || text.is_empty()
            {
                format!("'{}'", text.replace('\'', "'\\''"))
            } else {
                text.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(all(test, unix))]
mod tests;
