//! Running nvcc for one source: its commands in order (each arch assembled in parallel on
//! idle job slots; under sccache, nvcc's steps one by one through the cache,
//! `crate::compile::steps`), a compiler cache's failure retried without it, and the files nvcc
//! kept.

use super::commands::nvcc_args;
use super::settings::{absolute, file_stem, CompileSettings, Product};
pub use crate::context::SourceKind;
use crate::fsutil::{parse_dep_file, parse_line_markers};
use crate::jobs::Lender;
use crate::process::{render_command, run_bounded, ToolKind};
use crate::targets::SmArch;
use crate::Error;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub(crate) struct FreshOutput {
    /// (virtual arch, PTX path) per program; empty for a `.ptx_file`.
    pub(crate) ptx: Vec<(String, PathBuf)>,
    pub(crate) binary: Option<PathBuf>,
    pub(crate) compiler_log: String,
    pub(crate) dependencies: Vec<PathBuf>,
    pub(crate) wrapper_failure: Option<String>,
}

/// Who made a compile's files, for a message that says one is missing: nvcc, or nvcc through the
/// compiler cache, which a missing file is more likely the fault of (a hit that does not restore
/// what nvcc keeps) and which the message then names (issue #35, class 10: it blamed nvcc).
fn what_ran(settings: &CompileSettings) -> String {
    match &settings.toolchain.wrapper {
        Some(wrapper) => format!(
            "nvcc through the compiler cache `{}` (a cache that does not restore every file nvcc \
             writes would leave this; build without it to tell)",
            Path::new(wrapper).display()
        ),
        None => "nvcc".to_owned(),
    }
}

/// One source's compile, as [`run_nvcc`] hands it on to [`run_in_order`]: what nvcc compiles,
/// how, and where it keeps its files (the values travel together, so they are named once).
pub(crate) struct SourceCompile<'a, 'l> {
    pub(crate) settings: &'a CompileSettings,
    pub(crate) source: &'a Path,
    pub(crate) kind: SourceKind,
    /// The directory nvcc keeps its intermediate files in (`--keep-dir`).
    pub(crate) work: &'a Path,
    /// cicc and ptxas as two commands with the strip between them (`crate::compile::two_step`).
    pub(crate) two_steps: bool,
    pub(crate) lender: &'a Lender<'l>,
}

/// Compiles the source: nvcc's commands in order, then what it kept (PTX, binary, the files it
/// read) and its log.
pub(crate) fn run_nvcc(compile: &SourceCompile<'_, '_>) -> Result<FreshOutput, Error> {
    let (settings, source, work) = (compile.settings, compile.source, compile.work);
    let (compiler_log, wrapper_failure) = run_in_order(compile)
        .map_err(|error| super::smem_spilling::annotate(error, work, source))?;
    match compile.kind {
        SourceKind::Cuda => {
            let (ptx, binary, dependencies) = kept_outputs(settings, source, work)?;
            Ok(FreshOutput {
                ptx,
                binary: Some(binary),
                compiler_log,
                dependencies,
                wrapper_failure,
            })
        }
        SourceKind::Ptx => Ok(FreshOutput {
            ptx: Vec::new(),
            binary: None,
            compiler_log,
            dependencies: vec![absolute(source)],
            wrapper_failure,
        }),
    }
}

/// Runs the source's commands in their order: the two steps with the strip between them, or
/// nvcc alone (its kept PTX stripped after); returns the compiler's log and, when a compiler
/// cache failed a compile nvcc alone passed, what the cache printed.
fn run_in_order(compile: &SourceCompile<'_, '_>) -> Result<(String, Option<String>), Error> {
    let SourceCompile {
        settings,
        source,
        kind,
        work,
        two_steps,
        lender,
    } = *compile;
    let commands = nvcc_args(settings, source, kind, work, two_steps);
    let stem = file_stem(source);
    if two_steps {
        // cicc, the strip, then ptxas on the stripped PTX (crate::compile::two_step).
        let (mut log, cicc_failure) = run_nvcc_commands(settings, source, &commands[..1], lender)?;
        crate::compile::two_step::strip(source, work, &stem)?;
        let (ptxas_log, ptxas_failure) =
            run_nvcc_commands(settings, source, &commands[1..], lender)?;
        log.push_str(&ptxas_log);
        let failures: Vec<String> = cicc_failure.into_iter().chain(ptxas_failure).collect();
        Ok((log, (!failures.is_empty()).then(|| failures.concat())))
    } else {
        let output = run_nvcc_commands(settings, source, &commands, lender)?;
        if crate::compile::two_step::strips(settings, kind) {
            crate::compile::two_step::strip_kept(source, work, &stem)?;
        }
        Ok(output)
    }
}

/// Runs the source's nvcc commands; returns their output (ptxas's report and any warnings) and,
/// when the compiler cache failed a compile nvcc alone passed, what the cache printed.
pub(crate) fn run_nvcc_commands(
    settings: &CompileSettings,
    source: &Path,
    commands: &[Vec<OsString>],
    lender: &Lender<'_>,
) -> Result<(String, Option<String>), Error> {
    let mut compiler_log = String::new();
    let mut wrapper_failure = None;
    for args in commands {
        let (mut output, mut rendered) = run_command(settings, args, lender)?;
        // A compiler cache must not be able to fail a build that nvcc passes (sccache 0.16, run
        // as one nvcc command, fails several forms: crate::compile::steps). Rerun such a compile
        // with nvcc alone; its report is then nvcc's own.
        if !output.status.success() && settings.toolchain.wrapper.is_some() {
            let mut direct = settings.toolchain.command_without_wrapper();
            direct.args(args);
            let direct_rendered = render_command(&direct);
            let direct_output =
                run_bounded(&mut direct, &settings.toolchain.timeouts, ToolKind::Work)?;
            if direct_output.status.success() {
                wrapper_failure = Some(format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            (output, rendered) = (direct_output, direct_rendered);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(Error::NvccFailed {
                file: source.to_path_buf(),
                status: output.status.to_string(),
                diagnostics: format!("{stdout}{stderr}"),
                command: rendered,
                notes: Vec::new(),
            });
        }
        compiler_log.push_str(&stdout);
        compiler_log.push_str(&stderr);
    }
    Ok((compiler_log, wrapper_failure))
}

/// Runs one nvcc command: under sccache as nvcc's steps, each compiler through the cache
/// (`crate::compile::steps`), else as one command (through any other wrapper); returns its
/// output and command line.
fn run_command(
    settings: &CompileSettings,
    args: &[OsString],
    lender: &Lender<'_>,
) -> Result<(std::process::Output, String), Error> {
    if let Some(steps) = super::steps::plan(settings, args) {
        return steps.run(&settings.toolchain);
    }
    let mut command = settings.toolchain.command();
    let threads = parallel_archs(settings, args, lender);
    if threads.count() > 0 {
        // Each arch's ptxas in a thread of its own, on slots idle right now; nvcc prints each
        // arch's report whole, one arch after another.
        command.arg(format!("--threads={}", threads.count() + 1));
    }
    command.args(args);
    let rendered = render_command(&command);
    // Under `--keep`, nvcc leaves its front end's scratch (`<name>-<hash>..lgenfe.bc`) in TMPDIR
    // when the front end fails, and nothing removes it: in the compile's own directory it goes
    // with the rest (a failing compile left one in /tmp per run).
    // (Not for a directory whose path nvcc's own shell steps would split: a source named with a
    // newline or a space has its slot, and its keep directory, named after it.)
    if let Some(dir) = keep_dir(args).filter(|dir| shell_safe(dir)) {
        command.env("TMPDIR", dir);
    }
    let output = run_bounded(&mut command, &settings.toolchain.timeouts, ToolKind::Work)?;
    drop(threads);
    Ok((output, rendered))
}

/// Whether nvcc's steps, which it runs through `sh`, take `path` as one word: ASCII letters,
/// digits and `/._-+=,@%:` only.
fn shell_safe(path: &OsString) -> bool {
    path.to_str().is_some_and(|path| {
        path.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=,@%:".contains(c))
    })
}

/// The directory after `--keep-dir` in an nvcc command, when there is one.
pub(crate) fn keep_dir(args: &[OsString]) -> Option<&OsString> {
    let at = args.iter().position(|arg| arg == "--keep-dir")?;
    args.get(at + 1)
}

/// The idle slots a command may use to assemble its archs in parallel (nvcc `--threads`): one
/// fewer than the SASS archs of a command that assembles several (`-fatbin`, `-c`; not cicc's
/// `-ptx`, not a one-arch `-cubin`), none under a compiler cache (which may not know the flag).
pub(crate) fn parallel_archs<'a>(
    settings: &CompileSettings,
    args: &[OsString],
    lender: &Lender<'a>,
) -> crate::jobs::Borrowed<'a> {
    let assembles = args.iter().any(|arg| arg == "-fatbin" || arg == "-c");
    let archs = settings.archs.len();
    let wanted = match (assembles, &settings.toolchain.wrapper) {
        (true, None) if archs > 1 => archs - 1,
        _ => 0,
    };
    lender.borrow(wanted)
}

/// The PTX of each program (virtual arch, path), the binary, and every file the compile read.
pub(crate) type KeptOutputs = (Vec<(String, PathBuf)>, PathBuf, Vec<PathBuf>);

/// A `.cu` compile's files in `work`: the PTX of each program (kept by `--keep`), the binary,
/// and every file the compile read; a missing one is an error naming it.
pub(crate) fn kept_outputs(
    settings: &CompileSettings,
    source: &Path,
    work: &Path,
) -> Result<KeptOutputs, Error> {
    let stem = file_stem(source);
    // --keep names one program's files `<stem>.ptx`, several `<stem>.compute_90.ptx`.
    let programs = settings.program_archs();
    let kept = |extension: &str, target: &SmArch| match programs.len() {
        1 => work.join(format!("{stem}.{extension}")),
        _ => work.join(format!("{stem}.{}.{extension}", target.virtual_name())),
    };
    let ptx: Vec<(String, PathBuf)> = programs
        .iter()
        .map(|(target, _)| (target.virtual_name(), kept("ptx", target)))
        .collect();
    let binary = match settings.product {
        Product::Ptx => work.join(format!("{stem}.fatbin")),
        Product::Object => work.join(format!("{stem}.o")),
    };
    let deps_path = match (settings.product, programs.first()) {
        (Product::Ptx, Some((lowest, _))) => kept("cpp1.ii", lowest),
        _ => work.join("deps.d"),
    };
    let mut expected: Vec<(&PathBuf, &str)> = ptx
        .iter()
        .map(|(_, path)| (path, "the PTX kept by --keep"))
        .collect();
    expected.extend([
        (&binary, "the output"),
        (
            &deps_path,
            "the dependency list (-MF file, or the preprocessed .cpp1.ii)",
        ),
    ]);
    let ran = what_ran(settings);
    for (path, what) in expected {
        if !path.is_file() {
            return Err(Error::UnreadableOutput {
                file: source.to_path_buf(),
                message: format!("{ran} succeeded but {what} ({}) is missing", path.display()),
            });
        }
    }
    let deps_text = std::fs::read_to_string(&deps_path).map_err(|error| Error::Io {
        path: deps_path.clone(),
        error,
    })?;
    let mut dependencies = match settings.product {
        Product::Object => parse_dep_file(&deps_text),
        Product::Ptx => parse_line_markers(&deps_text),
    };
    if dependencies.is_empty() {
        return Err(Error::UnreadableOutput {
            file: source.to_path_buf(),
            message: format!(
                "{} lists no input file ({ran} wrote it)",
                deps_path.display()
            ),
        });
    }
    dependencies = dependencies
        .into_iter()
        .map(|path| absolute(&path))
        .collect();
    Ok((ptx, binary, dependencies))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(wrapper: Option<&str>) -> CompileSettings {
        let mut settings = CompileSettings::for_tests(&["sm_90"], Product::Object);
        settings.toolchain.wrapper = wrapper.map(OsString::from);
        settings
    }

    /// Issue #35, class 10: a file missing after a compile through a compiler cache names the
    /// cache, which a hit that does not restore it makes likely; without one, nvcc.
    #[test]
    fn a_missing_output_names_the_compiler_cache_it_came_through() {
        let work = std::env::temp_dir().join(format!("occupancy-kept-{}", std::process::id()));
        std::fs::create_dir_all(&work).unwrap();
        let source = Path::new("/src/k.cu");
        let cached = kept_outputs(&settings(Some("/usr/bin/sccache")), source, &work)
            .unwrap_err()
            .to_string();
        assert!(
            cached.contains(
                "nvcc through the compiler cache `/usr/bin/sccache` (a cache that does not restore"
            ) && cached.contains("succeeded but"),
            "{cached}"
        );
        let plain = kept_outputs(&settings(None), source, &work)
            .unwrap_err()
            .to_string();
        assert!(plain.contains(": nvcc succeeded but"), "{plain}");
        std::fs::remove_dir_all(&work).unwrap();
    }
}
