//! Under sccache, an nvcc command runs as nvcc's own steps, each compiler step through the cache.
//!
//! sccache 0.16 caches nvcc by running `nvcc --dryrun` and each step itself, but it fails three
//! forms this build runs (so they were compiled by nvcc alone, never cached): one PTX for
//! several real archs (`-arch=compute_80 -code=sm_80,sm_90`: it files each ptxas step under the
//! cicc step whose output is its input, and once the first ptxas is filed the cicc step is no
//! longer the last of its group, so every other ptxas step is dropped and fatbinary fails on the
//! missing cubins), hence `compile_lib`'s `nvcc -c` of two archs, and a `.ptx` input
//! (`PCH not supported by nvcc`: it takes the input for C). Its compilers for the steps
//! themselves (`sccache cicc ...`, `sccache ptxas ...`, `sccache cudafe++ ...`) have none of
//! these faults.
//!
//! So under sccache occupancy-build does what sccache does, for every form: `nvcc --dryrun` of
//! the very command it would run, then the steps in order with nvcc's environment. cicc, ptxas
//! and cudafe++ run through sccache, each cached by the content of its input and its arguments
//! (cicc in the keep dir with the paths into it made relative, since its key holds the path of
//! the module id file, and the keep dir is a fresh staging dir each compile); the host compile of
//! cudafe++'s output through sccache with `SCCACHE_DIRECT=false` (as sccache runs nvcc's host
//! step: its key is then the preprocessed text without line markers, free of the keep dir's
//! path); the preprocessor runs, fatbinary and nvlink as they are (sccache does not cache them
//! either). nvcc's `-- Filter Dependencies --` (from `-MD`) is the files its preprocessor runs
//! read, which `-MD -MF` on each of them lists. The products are what nvcc makes: the same
//! commands. A dry run this module does not understand (a step it does not know, shell syntax
//! beyond quotes and `$NAME`) runs the command as one, as before.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::settings::CompileSettings;
use crate::process::{render_command, run_bounded, ToolKind};
use crate::toolchain::Toolchain;
use crate::Error;

/// An nvcc command as the steps of its dry run.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Steps {
    /// The variables nvcc sets for its steps (`PATH`, `LD_LIBRARY_PATH`, `CICC_PATH`, ...).
    env: Vec<(String, String)>,
    /// What the dry run printed besides its steps (nvcc's own warnings), which a run prints too.
    messages: String,
    steps: Vec<Step>,
    /// The `--keep-dir` the steps write in.
    keep_dir: PathBuf,
}

#[derive(Debug, PartialEq, Eq)]
enum Step {
    Run {
        program: String,
        args: Vec<String>,
        how: How,
    },
    /// `-- Filter Dependencies -- > FILE`: the files every preprocessor run so far read.
    Dependencies(PathBuf),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// cicc: through the cache, in the keep dir, the paths into it made relative.
    CachedInKeepDir,
    /// ptxas, cudafe++: through the cache.
    Cached,
    /// The host compile of cudafe++'s output: through the cache, keyed without line markers.
    CachedHost,
    /// A preprocessor run (`-E`), as it is (with `-MD` when nvcc lists dependencies).
    Preprocess,
    /// fatbinary, nvlink: not compilers; run as they are.
    Plain,
}

/// Whether the compiler cache in front of nvcc is sccache, whose compilers for nvcc's steps this
/// module uses (on Unix, where nvcc's dry run is shell-like text).
pub(crate) fn runs_in_steps(toolchain: &Toolchain) -> bool {
    let stem = toolchain
        .wrapper
        .as_deref()
        .and_then(|wrapper| Path::new(wrapper).file_stem());
    cfg!(unix) && stem.is_some_and(|stem| stem == "sccache")
}

/// The steps of nvcc with `args` when they can run through the cache; `None`: run the command
/// as one (no sccache, or a dry run that fails or that this module does not understand).
pub(crate) fn plan(settings: &CompileSettings, args: &[OsString]) -> Option<Steps> {
    if !runs_in_steps(&settings.toolchain) {
        return None;
    }
    let (args, keep_dir) = with_keep_dir(args)?;
    let mut command = settings.toolchain.command_without_wrapper();
    command.args(&args).arg("--dryrun");
    let output = run_bounded(&mut command, &settings.toolchain.timeouts, ToolKind::Probe).ok()?;
    if !output.status.success() {
        return None;
    }
    parse(&String::from_utf8_lossy(&output.stderr), keep_dir)
}

/// The arguments with a keep dir (where the steps write their files), and that dir: the
/// command's `--keep-dir`, else `--keep --keep-dir` the directory of its `-o` added (nvcc's
/// temporary files otherwise, in the shared temporary directory).
fn with_keep_dir(args: &[OsString]) -> Option<(Vec<OsString>, PathBuf)> {
    let after = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|at| args.get(at + 1))
            .map(PathBuf::from)
    };
    if let Some(dir) = after("--keep-dir") {
        return Some((args.to_vec(), dir));
    }
    let dir = after("-o")?.parent()?.to_path_buf();
    let mut args = args.to_vec();
    args.extend(["--keep".into(), "--keep-dir".into(), dir.clone().into()]);
    Some((args, dir))
}

/// nvcc's dry run (`#$ ` lines on its standard error) as steps; `None` on anything unknown.
fn parse(dryrun: &str, keep_dir: PathBuf) -> Option<Steps> {
    let mut steps = Steps {
        env: Vec::new(),
        messages: String::new(),
        steps: Vec::new(),
        keep_dir,
    };
    for line in dryrun.lines() {
        let Some(body) = line.strip_prefix("#$ ") else {
            steps.messages.push_str(line);
            steps.messages.push('\n');
            continue;
        };
        if let Some(file) = body.strip_prefix("-- Filter Dependencies -- > ") {
            let file = file.trim().trim_matches('"');
            steps.steps.push(Step::Dependencies(PathBuf::from(file)));
        } else if let Some((name, value)) = assignment(body) {
            steps
                .env
                .push((name.to_owned(), value.trim_end().to_owned()));
        } else {
            let mut words = split_words(body, &steps.env)?.into_iter();
            let program = words.next()?;
            let args: Vec<String> = words.collect();
            let how = how_to_run(&program, &args)?;
            steps.steps.push(Step::Run { program, args, how });
        }
    }
    steps
        .steps
        .iter()
        .any(|step| matches!(step, Step::Run { .. }))
        .then_some(steps)
}

/// `NAME=value`: a variable nvcc sets for the steps after it.
fn assignment(body: &str) -> Option<(&str, &str)> {
    let (name, value) = body.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let identifier = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then_some((name, value))
}

/// How a step runs, by its program; `None` for one this module does not know.
fn how_to_run(program: &str, args: &[String]) -> Option<How> {
    let name = Path::new(program).file_name()?.to_str()?;
    let has = |flag: &str| args.iter().any(|arg| arg == flag);
    Some(match name {
        "cicc" => How::CachedInKeepDir,
        "ptxas" | "cudafe++" => How::Cached,
        "fatbinary" | "nvlink" => How::Plain,
        _ if has("-E") => How::Preprocess,
        _ if has("-c") => How::CachedHost,
        _ => return None,
    })
}

/// A dry-run line's words: blanks separate them, `"..."` and `'...'` quote, `\` escapes, and
/// `$NAME`/`${NAME}` are the variables set before it. `None` on other shell syntax (pipes,
/// redirections, a variable nvcc did not set): such a line is not run here.
fn split_words(line: &str, env: &[(String, String)]) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() && !quoted {
            words.extend(word.take());
            continue;
        }
        let current = word.get_or_insert_with(String::new);
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                let next = chars.next()?;
                if quoted && !matches!(next, '"' | '\\' | '$' | '`') {
                    current.push('\\');
                }
                current.push(next);
            }
            '$' => current.push_str(&variable(&mut chars, env)?),
            '\'' if !quoted => loop {
                match chars.next()? {
                    '\'' => break,
                    c => current.push(c),
                }
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '`' if !quoted => return None,
            c => current.push(c),
        }
    }
    if quoted {
        return None;
    }
    words.extend(word);
    Some(words)
}

/// The value of `$NAME` or `${NAME}` (the `$` read) among the variables the dry run set.
fn variable(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    env: &[(String, String)],
) -> Option<String> {
    let braced = chars.next_if_eq(&'{').is_some();
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_') {
        name.push(c);
    }
    if braced && chars.next() != Some('}') {
        return None;
    }
    env.iter()
        .rev()
        .find(|(set, _)| *set == name)
        .map(|(_, value)| value.clone())
}

impl Steps {
    /// Runs the steps in order, stopping at the first that fails: their output together (the
    /// standard outputs, then the dry run's messages and the standard errors, as nvcc's own run
    /// gives them) with the last step's status, and that step's command line.
    pub(crate) fn run(&self, toolchain: &Toolchain) -> Result<(Output, String), Error> {
        let mut stdout = Vec::new();
        let mut stderr = self.messages.clone().into_bytes();
        let mut read = Vec::new();
        let mut last = None;
        for (index, step) in self.steps.iter().enumerate() {
            let (program, args, how) = match step {
                Step::Run { program, args, how } => (program, args, *how),
                Step::Dependencies(file) => {
                    self.write_dependencies(file, &read)?;
                    continue;
                }
            };
            let listed = self.dependency_file(index, how);
            read.extend(listed.clone());
            let mut command = self.command(toolchain, program, args, how, listed);
            let rendered = render_command(&command);
            let output = run_bounded(&mut command, &toolchain.timeouts, ToolKind::Work)?;
            stdout.extend_from_slice(&output.stdout);
            stderr.extend_from_slice(&output.stderr);
            let failed = !output.status.success();
            last = Some((output.status, rendered));
            if failed {
                break;
            }
        }
        let (status, rendered) = last.expect("a plan has a step to run");
        Ok((
            Output {
                status,
                stdout,
                stderr,
            },
            rendered,
        ))
    }

    /// One step's command: nvcc's variables set, through the cache when it is cached.
    fn command(
        &self,
        toolchain: &Toolchain,
        program: &str,
        args: &[String],
        how: How,
        listed: Option<PathBuf>,
    ) -> Command {
        let program = self.resolve(program);
        let cached = matches!(how, How::Cached | How::CachedInKeepDir | How::CachedHost);
        let mut command = match (&toolchain.wrapper, cached) {
            (Some(wrapper), true) => {
                let mut command = Command::new(wrapper);
                command.arg(&program);
                command
            }
            _ => Command::new(&program),
        };
        command.envs(self.env.iter().map(|(name, value)| (name, value)));
        if how == How::CachedInKeepDir {
            let inside = format!("{}/", self.keep_dir.display());
            command.current_dir(&self.keep_dir);
            command.args(args.iter().map(|arg| arg.replace(&inside, "")));
        } else {
            command.args(args);
        }
        if how == How::CachedHost {
            command.env("SCCACHE_DIRECT", "false");
        }
        if let Some(file) = listed {
            command.arg("-MD").arg("-MF").arg(file);
        }
        command
    }

    /// Where a preprocessor run lists the files it read, when nvcc lists dependencies.
    fn dependency_file(&self, index: usize, how: How) -> Option<PathBuf> {
        let lists = self
            .steps
            .iter()
            .any(|step| matches!(step, Step::Dependencies(_)));
        (lists && how == How::Preprocess)
            .then(|| self.keep_dir.join(format!("occupancy-step-{index}.d")))
    }

    /// nvcc's dependency file: the rules of every preprocessor run before it, one after another.
    fn write_dependencies(&self, file: &Path, read: &[PathBuf]) -> Result<(), Error> {
        let mut rules = Vec::new();
        for listed in read {
            rules.extend(crate::fsutil::read(listed)?);
            rules.push(b'\n');
        }
        crate::fsutil::write_atomic(file, &rules)
    }

    /// A step's program: a name is looked up in the `PATH` nvcc sets for its steps.
    fn resolve(&self, program: &str) -> PathBuf {
        if program.contains('/') {
            return PathBuf::from(program);
        }
        let path = self.env.iter().rev().find(|(name, _)| name == "PATH");
        path.into_iter()
            .flat_map(|(_, value)| std::env::split_paths(value))
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| PathBuf::from(program))
    }
}

#[cfg(test)]
mod tests;
