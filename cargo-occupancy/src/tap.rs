//! The nvcc tap (issue #33, item 5): this same binary started as `nvcc` (or `nvcc-launcher`,
//! CMake's `CMAKE_CUDA_COMPILER_LAUNCHER`), from the directory `cargo occupancy build --tap`
//! makes (`cmd/build/tap_dir.rs`). It keeps ptxas's text of each compile the build makes, which
//! cc-rs, cudaforge and bindgen_cuda throw away on success: the warnings a binary cannot tell
//! (`.minnctapersm will be ignored`, an ignored register cap). It evaluates nothing.
//!
//! What it runs:
//! 1. **A side compile**, only when `OCCUPANCY_REAL_NVCC` is set (`cargo occupancy build --tap`
//!    sets it) and the call runs ptxas on a source with an output file ([`plan`]): the same
//!    arguments with `-Xptxas -v` first, the output written to a private temporary directory
//!    and thrown away, dependency-file and keep-files options left out. Its standard error is
//!    kept as `<output>.ptxas` beside the output; its output, exit code and text are shown to
//!    nobody.
//! 2. **The real nvcc, unchanged**: the same arguments and environment, by `exec` (on Unix the
//!    process becomes it), so its exit code or signal, its standard streams and the files it
//!    writes are exactly those of a build without the tap.
//!
//! Why not add `-Xptxas -v` to the real compile: ptxas records its command line in the cubin
//! (`.note.nv.tkinfo`, CUDA 13), so an added `-v` changes the bytes the build ships. The cost
//! of the side compile is a second compile of each tapped call.
//!
//! The real nvcc: launcher mode's first argument (unless it is this tap); else
//! `OCCUPANCY_REAL_NVCC`; else (a tap left in a CMake cache, run by a plain build) `nvcc` on
//! `PATH`, then `$CUDA_HOME/bin/nvcc`. A candidate that is this executable is never run.
//!
//! **The chain** (issue #42): every nvcc the tap runs gets `OCCUPANCY_TAP_CHAIN`, the taps that
//! ran so far (this executable last). A tap started with itself already in the chain, or past
//! [`MAX_HOPS`] taps, is two installs of the tool naming each other as the real nvcc: it stops
//! with one line naming the chain ([`chain_to_hand_on`]) instead of running them forever. Only the
//! first tap of a chain compiles on the side.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The link name the builders call as their nvcc (`NVCC`, `PATH`).
pub const NVCC: &str = "nvcc";
/// The link name CMake runs as `CMAKE_CUDA_COMPILER_LAUNCHER`: `nvcc-launcher REAL ARGS`.
pub const LAUNCHER: &str = "nvcc-launcher";
/// The real nvcc, set by `cargo occupancy build --tap`; its presence turns the side compile on.
pub const REAL_NVCC: &str = "OCCUPANCY_REAL_NVCC";
/// The taps that ran before this one, as `PATH` lists directories (set for every nvcc it runs).
pub const CHAIN: &str = "OCCUPANCY_TAP_CHAIN";
/// Taps one nvcc call may pass through before the chain is called a loop.
pub const MAX_HOPS: usize = 8;
/// What a kept report's name adds to its output's (`k.o` → `k.o.ptxas`).
pub const REPORT_SUFFIX: &str = ".ptxas";
/// The first line of a kept report.
pub const REPORT_HEADER: &str =
    "# ptxas's report of a compile of this output, kept by the occupancy nvcc tap (a side compile with -Xptxas -v)";

/// Whether the process was started as the tap (`argv[0]`'s file name).
pub fn started_as_tap(argv0: Option<&OsString>) -> bool {
    let name = argv0.and_then(|arg| Path::new(arg).file_name());
    name.is_some_and(|name| name == NVCC || name == LAUNCHER)
}

/// What the tap reads of its environment, once, at its start.
#[derive(Debug, Default)]
struct TapEnv {
    real_nvcc: Option<OsString>,
    path: Option<OsString>,
    cuda_home: Option<OsString>,
    chain: Vec<PathBuf>,
    temp_dir: PathBuf,
}

impl TapEnv {
    /// The tap is its own program: this is its one read of the environment.
    #[allow(clippy::disallowed_methods)]
    fn read() -> TapEnv {
        let set = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
        TapEnv {
            real_nvcc: set(REAL_NVCC),
            path: set("PATH"),
            cuda_home: set("CUDA_HOME"),
            chain: (set(CHAIN).iter())
                .flat_map(std::env::split_paths)
                .collect(),
            temp_dir: std::env::temp_dir(),
        }
    }
}

/// Runs the tap: the side compile when asked for, then the real nvcc in this process's place.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let env = TapEnv::read();
    let me = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let this = me.clone().unwrap_or_else(|| PathBuf::from(&args[0]));
    let chain = match chain_to_hand_on(&env.chain, &this) {
        Ok(chain) => chain,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: {error}");
            return ExitCode::from(127);
        }
    };
    let launcher = Path::new(&args[0]).file_name() == Some(OsStr::new(LAUNCHER));
    let mut rest: Vec<OsString> = args[1..].to_vec();
    let given = match launcher && !rest.is_empty() {
        true => Some(PathBuf::from(rest.remove(0))),
        false => None,
    };
    let real = (given.filter(|path| !is_me(path, me.as_deref())))
        .or_else(|| real_nvcc(&env, me.as_deref()));
    let Some(real) = real else {
        let _ = writeln!(
            std::io::stderr(),
            "error: the occupancy nvcc tap found no real nvcc ({REAL_NVCC}, nvcc on PATH, CUDA_HOME/bin/nvcc) other than itself"
        );
        return ExitCode::from(127);
    };
    if env.real_nvcc.is_some() && env.chain.is_empty() {
        if let Some(plan) = plan(&rest) {
            side_compile(&real, &plan, (&env.temp_dir, &chain));
        }
    }
    run_real(&real, &rest, &chain)
}

/// The chain this tap hands on (the taps before it, then itself), or the error of a tap that
/// already ran in it or of one past [`MAX_HOPS`]: two taps naming each other as the real nvcc.
pub fn chain_to_hand_on(before: &[PathBuf], this: &Path) -> Result<OsString, String> {
    let mut chain = before.to_vec();
    chain.push(this.to_path_buf());
    let names: Vec<String> = chain.iter().map(|tap| tap.display().to_string()).collect();
    let shown = names.join(" -> ");
    if before.iter().any(|tap| tap == this) || before.len() >= MAX_HOPS {
        return Err(format!(
            "the occupancy nvcc tap {} runs itself through another nvcc tap ({shown}): two installs of cargo-occupancy name each other as the real nvcc; set {REAL_NVCC} or NVCC to the toolkit's nvcc",
            this.display()
        ));
    }
    std::env::join_paths(&chain).map_err(|error| {
        format!("the occupancy nvcc tap cannot hand on its chain ({shown}) in {CHAIN}: {error}")
    })
}

/// Whether `path` names this executable.
fn is_me(path: &Path, me: Option<&Path>) -> bool {
    let found = std::fs::canonicalize(path).ok();
    me.is_some() && found.as_deref() == me
}

/// The real nvcc when launcher mode gave none: `OCCUPANCY_REAL_NVCC`, else `nvcc` on `PATH`,
/// else `$CUDA_HOME/bin/nvcc`; never this executable.
fn real_nvcc(env: &TapEnv, me: Option<&Path>) -> Option<PathBuf> {
    let on_path = (env.path.iter()).flat_map(std::env::split_paths);
    let candidates = (env.real_nvcc.iter().map(PathBuf::from))
        .chain(on_path.map(|dir| dir.join(NVCC)))
        .chain(
            env.cuda_home
                .iter()
                .map(|home| Path::new(home).join("bin").join(NVCC)),
        );
    candidates
        .filter(|path| path.is_file() && !is_me(path, me))
        .find(|_| true)
}

/// The real nvcc with `args`, in this process's place (Unix); elsewhere run and waited for,
/// its exit code returned.
fn run_real(real: &Path, args: &[OsString], chain: &OsStr) -> ExitCode {
    let mut command = Command::new(real);
    command.args(args).env(CHAIN, chain);
    #[cfg(unix)]
    {
        let error = std::os::unix::process::CommandExt::exec(&mut command);
        let _ = writeln!(
            std::io::stderr(),
            "error: the occupancy nvcc tap could not run {}: {error}",
            real.display()
        );
        ExitCode::from(127)
    }
    #[cfg(not(unix))]
    match command.status() {
        Ok(status) => ExitCode::from(status.code().map_or(1, |code| code as u8)),
        Err(_) => ExitCode::from(127),
    }
}

/// A call that runs ptxas, and how it is compiled on the side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The output the real compile writes (`-o`): its report is kept beside it.
    pub output: PathBuf,
    /// The side compile's arguments, with [`Plan::SIDE_OUTPUT`] where its output goes.
    pub side_args: Vec<OsString>,
}

impl Plan {
    /// Stands in the side arguments for the private output path.
    pub const SIDE_OUTPUT: &'static str = "\u{0}side-output";
}

/// Options under which ptxas does not run, or whose call is not a compile: the call passes
/// through alone (`--version`, `-E`, `--dryrun`, `--list-gpu-code`, `-M`, `--ptx`, a device
/// link, a library, `-dlto` whose ptxas runs at link time). Names without their dashes.
const NO_PTXAS: [&str; 22] = [
    "version",
    "V",
    "help",
    "h",
    "E",
    "preprocess",
    "dryrun",
    "list-gpu-code",
    "list-gpu-arch",
    "M",
    "MM",
    "generate-dependencies",
    "generate-nonsystem-dependencies",
    "ptx",
    "cuda",
    "device-link",
    "dlink",
    "lib",
    "run",
    "optix-ir",
    "dlto",
    "dlink-time-opt",
];

/// Options that write files beside the real compile's (dependency files, kept intermediates,
/// timing), which the side compile leaves out; `true` where the option takes a value.
const SIDE_EFFECTS: [(&str, bool); 19] = [
    ("MD", false),
    ("MMD", false),
    ("MP", false),
    ("MF", true),
    ("MT", true),
    ("MQ", true),
    ("generate-dependencies-with-compile", false),
    ("generate-nonsystem-dependencies-with-compile", false),
    ("generate-dependency-targets", false),
    ("dependency-output", true),
    ("dependency-target-name", true),
    ("keep", false),
    ("keep-dir", true),
    ("save-temps", false),
    ("time", true),
    ("fdevice-time-trace", true),
    ("dependency-drive-prefix", true),
    ("odir", true),
    ("output-directory", true),
];

/// Options whose value is the next argument when not joined by `=` (so that `-Xcompiler -MD`
/// is the host compiler's option, not nvcc's). Names without their dashes.
const TAKES_VALUE: [&str; 34] = [
    "Xcompiler",
    "compiler-options",
    "Xptxas",
    "ptxas-options",
    "Xlinker",
    "linker-options",
    "Xnvlink",
    "nvlink-options",
    "Xarchive",
    "archive-options",
    "Xcudafe",
    "Xfatbin",
    "ccbin",
    "compiler-bindir",
    "gencode",
    "generate-code",
    "arch",
    "gpu-architecture",
    "code",
    "gpu-code",
    "I",
    "include-path",
    "isystem",
    "system-include",
    "include",
    "pre-include",
    "L",
    "library-path",
    "l",
    "library",
    "D",
    "U",
    "std",
    "options-file",
];

/// The dash-free name of an option and its joined value (`--output-file=k.o`).
fn option(arg: &str) -> Option<(&str, Option<&str>)> {
    let name = arg.strip_prefix('-')?;
    let name = name.strip_prefix('-').unwrap_or(name);
    Some(match name.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (name, None),
    })
}

/// The call's plan when it compiles a CUDA source or PTX to an output file (`-o`) with ptxas;
/// `None` for every other call (probes, preprocessing, `--ptx`, device links, archives, a
/// compile without `-o` or with an argument that is not UTF-8), which passes through alone.
pub fn plan(args: &[OsString]) -> Option<Plan> {
    let texts: Vec<&str> = args.iter().map(|arg| arg.to_str()).collect::<Option<_>>()?;
    let mut output = None;
    let mut source = false;
    let mut side: Vec<OsString> = vec!["-Xptxas".into(), "-v".into()];
    let mut index = 0;
    while index < texts.len() {
        let arg = texts[index];
        let next = texts.get(index + 1).copied();
        index += 1;
        let Some((name, joined)) = option(arg) else {
            source |= [".cu", ".ptx", ".gpu"].iter().any(|ext| arg.ends_with(ext));
            side.push(arg.into());
            continue;
        };
        if NO_PTXAS.contains(&name) {
            return None;
        }
        if let Some((_, valued)) = SIDE_EFFECTS.iter().find(|(known, _)| *known == name) {
            index += usize::from(*valued && joined.is_none());
            continue;
        }
        if name == "o" || name == "output-file" {
            output = Some(joined.or(next)?);
            index += usize::from(joined.is_none());
            side.push("-o".into());
            side.push(Plan::SIDE_OUTPUT.into());
            continue;
        }
        side.push(arg.into());
        let value = match joined {
            Some(value) => Some(value),
            None if TAKES_VALUE.contains(&name) || name == "x" || name == "language" => {
                index += 1;
                if let Some(next) = next {
                    side.push(next.into());
                }
                next
            }
            None => None,
        };
        source |= (name == "x" || name == "language") && value == Some("cu");
    }
    (source).then_some(())?;
    Some(Plan {
        output: PathBuf::from(output?),
        side_args: side,
    })
}

/// The side compile of `plan` with `real`: its output in a private directory (removed), its
/// standard error kept as the report beside the real output when it succeeds. An old report of
/// the output is removed first, so a failed compile leaves none. Nothing is printed.
fn side_compile(real: &Path, plan: &Plan, (temp_dir, chain): (&Path, &OsStr)) {
    let report = report_path(&plan.output);
    let _ = std::fs::remove_file(&report);
    let private = temp_dir.join(format!("occupancy-nvcc-tap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    if std::fs::create_dir(&private).is_err() {
        return;
    }
    let name = plan.output.file_name().unwrap_or(OsStr::new("out.o"));
    let side_output = private.join(name);
    let args = (plan.side_args.iter()).map(|arg| match arg == Plan::SIDE_OUTPUT {
        true => side_output.clone().into_os_string(),
        false => arg.clone(),
    });
    let ran = Command::new(real)
        .args(args)
        .env(CHAIN, chain)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let _ = std::fs::remove_dir_all(&private);
    if let Some(ran) = ran.ok().filter(|ran| ran.status.success()) {
        let mut text = format!("{REPORT_HEADER}\n").into_bytes();
        text.extend_from_slice(&ran.stderr);
        write_report(&report, &text);
    }
}

/// `<output>.ptxas`.
pub fn report_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(REPORT_SUFFIX);
    PathBuf::from(name)
}

/// Writes the report through a temporary name in its directory, then renames it in place.
fn write_report(report: &Path, text: &[u8]) {
    let mut temporary = report.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    if std::fs::write(&temporary, text).is_ok() && std::fs::rename(&temporary, report).is_ok() {
        return;
    }
    let _ = std::fs::remove_file(&temporary);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    fn side(plan: &Plan) -> String {
        let texts: Vec<&str> = plan.side_args.iter().map(|a| a.to_str().unwrap()).collect();
        texts.join(" ").replace(Plan::SIDE_OUTPUT, "OUT")
    }

    #[test]
    fn probes_and_calls_without_ptxas_pass_through_alone() {
        for line in [
            "--version",
            "-V",
            "-E k.cu -o k.i",
            "--dryrun -c k.cu -o k.o",
            "--list-gpu-code",
            "-M k.cu",
            "-MM k.cu -o k.d",
            "--generate-dependencies k.cu",
            "--ptx -arch=sm_80 k.cu -o k.ptx",
            "-ptx k.cu -o k.ptx",
            "--device-link a.o b.o -o dlink.o",
            "-dlink a.o -o d.o",
            "-lib a.o -o liba.a",
            "-dc -dlto -arch=sm_80 k.cu -o k.o",
            "a.o b.o -o prog",
            "-c k.cu",
        ] {
            assert_eq!(plan(&args(line)), None, "{line}");
        }
    }

    #[test]
    fn compiles_are_planned_with_their_side_effects_left_out() {
        let cc = plan(&args(
            "-ccbin=c++ -Xcompiler -MD -gencode arch=compute_80,code=sm_80 -o /o/x-k.o -c k.cu",
        ))
        .unwrap();
        assert_eq!(cc.output, PathBuf::from("/o/x-k.o"));
        assert_eq!(
            side(&cc),
            "-Xptxas -v -ccbin=c++ -Xcompiler -MD -gencode arch=compute_80,code=sm_80 -o OUT -c k.cu"
        );
        let cmake = plan(&args(
            "-x cu -MD -MT k.o -MF k.o.d --keep-dir=/tmp/k -time t.csv -c src/k.cu --output-file=k.o",
        ))
        .unwrap();
        assert_eq!(cmake.output, PathBuf::from("k.o"));
        assert_eq!(side(&cmake), "-Xptxas -v -x cu -c src/k.cu -o OUT");
        let cubin = plan(&args("--cubin -arch=sm_90 k.ptx -o k.cubin")).unwrap();
        assert_eq!(side(&cubin), "-Xptxas -v --cubin -arch=sm_90 k.ptx -o OUT");
        let language = plan(&args("-x cu -c kernels.txt -o k.o")).unwrap();
        assert_eq!(language.output, PathBuf::from("k.o"));
    }

    #[test]
    fn only_its_own_names_start_the_tap() {
        assert!(started_as_tap(Some(&"/tmp/tap/bin/nvcc".into())));
        assert!(started_as_tap(Some(&"nvcc-launcher".into())));
        assert!(!started_as_tap(Some(&"/usr/bin/cargo-occupancy".into())));
        assert!(!started_as_tap(None));
    }

    #[test]
    fn a_tap_already_in_the_chain_or_past_its_hops_is_a_loop() {
        let a = PathBuf::from("/i/a/nvcc");
        let b = PathBuf::from("/i/b/nvcc");
        assert!(chain_to_hand_on(&[], &a).is_ok());
        assert!(chain_to_hand_on(std::slice::from_ref(&a), &b).is_ok());
        let looped = chain_to_hand_on(&[a.clone(), b.clone()], &a).unwrap_err();
        assert!(
            looped.contains("(/i/a/nvcc -> /i/b/nvcc -> /i/a/nvcc)"),
            "{looped}"
        );
        let long: Vec<PathBuf> = (0..MAX_HOPS)
            .map(|i| PathBuf::from(format!("/t{i}")))
            .collect();
        assert!(chain_to_hand_on(&long, &b).is_err());
    }

    #[test]
    fn reports_sit_beside_their_output() {
        assert_eq!(
            report_path(Path::new("/o/a-k.o")),
            Path::new("/o/a-k.o.ptxas")
        );
    }
}
