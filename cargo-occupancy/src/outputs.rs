//! Where the CLI writes files. Every output path (`--html FILE`, `--cache-dir DIR`) is checked
//! against every input before any work: an output never replaces an input file, never lands inside
//! an input directory, and an output directory never holds an input, whichever way the paths are
//! spelled (`./`, `..`, symlinks, hard links). Outputs are checked for writability up front too,
//! so a read-only destination fails the run before a compile. Files are written by the build's
//! own writer (`occupancy_build::cli::write_atomic`, the one every report, baseline and cache file
//! goes through): atomically (a temporary file beside the destination, then a rename) where the
//! output is or links to a regular file, so a killed run leaves the old file or the new one;
//! through a symlink onto what it points to; into a FIFO or device (`/dev/null`, `/dev/stdout`)
//! in place, never replacing the node.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// One output the command will write: the flag it came from and the path as given.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The command-line flag naming it, e.g. `--html`.
    pub flag: &'static str,
    /// The path as the user wrote it.
    pub path: &'a Path,
    /// Whether the output is a directory the command writes into (else one file).
    pub is_dir: bool,
}

/// Refuses, before any work, every output that would replace or write into an input, or that
/// cannot be written; names the flag, the output and the input.
pub fn check_outputs(outputs: &[Output<'_>], inputs: &[&Path]) -> Result<(), CliError> {
    let inputs: Vec<(&Path, PathBuf)> = inputs
        .iter()
        .filter_map(|input| Some((*input, std::fs::canonicalize(input).ok()?)))
        .collect();
    let mut written: Vec<(&Output<'_>, PathBuf)> = Vec::new();
    for output in outputs {
        let resolved = resolve_output(output)?;
        for (other, other_resolved) in &written {
            refuse_one_target(output, &resolved, other, other_resolved)?;
        }
        for (given, input) in &inputs {
            if let Some(relation) = overlap(&resolved, output, input) {
                return Err(CliError::Usage(format!(
                    "{} {} {relation} {}: outputs never replace inputs; write it somewhere else",
                    output.flag,
                    occupancy_build::cli::shown_path(output.path),
                    occupancy_build::cli::shown_path(given)
                )));
            }
        }
        if !output.is_dir {
            check_writable_file(output, &resolved)?;
        }
        written.push((output, resolved));
    }
    Ok(())
}

/// Two outputs that name one file (however spelled: a link, `./`, a hard link), or a file
/// inside an output directory, are refused before any work: the second write would replace the
/// first (`--lock X --bless --html X` left the lock an HTML page, its entries lost).
fn refuse_one_target(
    output: &Output<'_>,
    resolved: &Path,
    other: &Output<'_>,
    other_resolved: &Path,
) -> Result<(), CliError> {
    let same = resolved == other_resolved || same_file(resolved, other_resolved);
    let nested = (other.is_dir && resolved.starts_with(other_resolved))
        || (output.is_dir && other_resolved.starts_with(resolved));
    if !same && !nested {
        return Ok(());
    }
    let relation = if same { "name one file" } else { "overlap" };
    Err(CliError::Usage(format!(
        "{} {} and {} {} {relation}: each output needs a path of its own, or one would replace the other; write them to different files",
        other.flag,
        occupancy_build::cli::shown_path(other.path),
        output.flag,
        occupancy_build::cli::shown_path(output.path)
    )))
}

/// How `resolved` (the output) collides with `input` (canonical), if it does.
fn overlap(resolved: &Path, output: &Output<'_>, input: &Path) -> Option<&'static str> {
    if resolved == input || same_file(resolved, input) {
        return Some(if output.is_dir {
            "is the input directory"
        } else {
            "would replace the input"
        });
    }
    if resolved.starts_with(input) {
        return Some("is inside the input directory");
    }
    if output.is_dir && input.starts_with(resolved) {
        return Some("holds the input");
    }
    None
}

/// The same file under two names (a hard link): same device and inode.
#[cfg(unix)]
fn same_file(left: &Path, right: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(left), std::fs::metadata(right)) {
        (Ok(left), Ok(right)) => left.dev() == right.dev() && left.ino() == right.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_left: &Path, _right: &Path) -> bool {
    false
}

/// The absolute path the output will have: canonical when it exists (through symlinks), else
/// its canonical parent joined with its file name.
fn resolve_output(output: &Output<'_>) -> Result<PathBuf, CliError> {
    if let Ok(canonical) = std::fs::canonicalize(output.path) {
        return Ok(canonical);
    }
    let file_name = output.path.file_name().ok_or_else(|| {
        CliError::Usage(format!(
            "{} {}: name a file, not a directory",
            output.flag,
            occupancy_build::cli::shown_path(output.path)
        ))
    })?;
    let parent = parent_dir(output.path);
    let parent = std::fs::canonicalize(parent).map_err(|error| {
        CliError::Usage(format!(
            "{} {}: its directory {} cannot be used ({error}); create it or choose another path",
            output.flag,
            occupancy_build::cli::shown_path(output.path),
            occupancy_build::cli::shown_path(parent)
        ))
    })?;
    Ok(parent.join(file_name))
}

/// The directory a path lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// A file output must be one the writer takes (not a directory, not a link into a missing
/// directory), and the directory of the file it replaces must take a new file; a FIFO or a
/// device is written in place and needs neither.
fn check_writable_file(output: &Output<'_>, resolved: &Path) -> Result<(), CliError> {
    if resolved.is_dir() {
        return Err(CliError::Usage(format!(
            "{} {} is a directory: name the file to write",
            output.flag,
            occupancy_build::cli::shown_path(output.path)
        )));
    }
    occupancy_build::cli::check_writable(output.path)
        .map_err(|error| CliError::Usage(write_error(output.flag, output.path, error)))
}

/// Writes `bytes` to `path` with the build's writer: atomically where `path` is (or links to) a
/// regular file, in place into a FIFO or device.
pub fn write_atomically(flag: &str, path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    occupancy_build::cli::write_atomic(path, bytes)
        .map_err(|error| CliError::Output(write_error(flag, path, error)))
}

/// The writer's error as the CLI says it: the flag, the path, and why.
fn write_error(flag: &str, path: &Path, error: occupancy_build::Error) -> String {
    let why = match error {
        occupancy_build::Error::Unwritable { reason, .. } => reason,
        occupancy_build::Error::Io { error, .. } => format!("cannot write it: {error}"),
        other => other.to_string(),
    };
    format!(
        "{flag} {}: {why}; choose another path",
        occupancy_build::cli::shown_path(path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private directory holding `cu/victim.cu`, removed when the test ends (also when it
    /// fails).
    fn scratch(name: &str) -> tempfile::TempDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("cargo-occupancy-outputs-{name}-"))
            .tempdir()
            .unwrap();
        std::fs::create_dir_all(dir.path().join("cu")).unwrap();
        std::fs::write(dir.path().join("cu/victim.cu"), "__global__ void k() {}\n").unwrap();
        dir
    }

    fn html(path: &Path) -> Output<'_> {
        Output {
            flag: "--html",
            path,
            is_dir: false,
        }
    }

    /// Issue #35, class 6: two outputs naming one file, in any spelling, are refused before
    /// anything is written; the file keeps what it held.
    #[test]
    fn two_outputs_naming_one_file_are_refused() {
        let tmp = scratch("two-outputs");
        let dir = tmp.path();
        let lock = dir.join("occupancy.lock");
        std::fs::write(&lock, "{}\n").unwrap();
        std::os::unix::fs::symlink(&lock, dir.join("link.html")).unwrap();
        let as_lock = Output {
            flag: "--lock",
            path: &lock,
            is_dir: false,
        };
        for spelling in [
            lock.clone(),
            dir.join("./occupancy.lock"),
            dir.join("link.html"),
        ] {
            let error = check_outputs(&[html(&spelling), as_lock], &[]).unwrap_err();
            assert!(
                error.message().contains("--html")
                    && error.message().contains("--lock")
                    && error.message().contains("name one file"),
                "{spelling:?}: {error}"
            );
        }
        let cache = dir.join("cache");
        let in_cache = cache.join("r.html");
        std::fs::create_dir_all(&cache).unwrap();
        let as_cache = Output {
            flag: "--cache-dir",
            path: &cache,
            is_dir: true,
        };
        let error = check_outputs(&[html(&in_cache), as_cache], &[]).unwrap_err();
        assert!(error.message().contains("overlap"), "{error}");
        check_outputs(&[html(&dir.join("r.html")), as_lock, as_cache], &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), "{}\n");
    }

    #[test]
    fn an_output_naming_an_input_in_any_spelling_is_refused() {
        let tmp = scratch("spelling");
        let dir = tmp.path();
        let input = dir.join("cu/victim.cu");
        std::os::unix::fs::symlink(&input, dir.join("link.html")).unwrap();
        std::fs::hard_link(&input, dir.join("hard.html")).unwrap();
        for spelling in [
            input.clone(),
            dir.join("cu/./victim.cu"),
            dir.join("cu/../cu/victim.cu"),
            dir.join("link.html"),
            dir.join("hard.html"),
        ] {
            let error = check_outputs(&[html(&spelling)], &[&input]).unwrap_err();
            assert!(
                error.message().contains("would replace the input")
                    && error.message().contains("victim.cu"),
                "{spelling:?}: {error}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(&input).unwrap(),
            "__global__ void k() {}\n"
        );
    }

    #[test]
    fn outputs_inside_input_directories_and_directories_holding_inputs_are_refused() {
        let tmp = scratch("inside");
        let dir = tmp.path();
        let inputs_dir = dir.join("cu");
        let inside = dir.join("cu/report.html");
        let error = check_outputs(&[html(&inside)], &[&inputs_dir]).unwrap_err();
        assert!(
            error.message().contains("is inside the input directory"),
            "{error}"
        );
        let cache = Output {
            flag: "--cache-dir",
            path: dir,
            is_dir: true,
        };
        let error = check_outputs(&[cache], &[&dir.join("cu/victim.cu")]).unwrap_err();
        assert!(
            error.message().contains("--cache-dir") && error.message().contains("holds the input"),
            "{error}"
        );
        let elsewhere = dir.join("report.html");
        check_outputs(&[html(&elsewhere)], &[&inputs_dir]).unwrap();
    }

    #[test]
    fn unwritable_outputs_are_refused_up_front() {
        let tmp = scratch("unwritable");
        let dir = tmp.path();
        let error = check_outputs(&[html(&dir.join("missing/report.html"))], &[]).unwrap_err();
        assert!(
            error.message().contains("create it or choose another path"),
            "{error}"
        );
        let error = check_outputs(&[html(&dir.join("cu"))], &[]).unwrap_err();
        assert!(error.message().contains("is a directory"), "{error}");
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporary() {
        let tmp = scratch("atomic");
        let dir = tmp.path();
        let path = dir.join("report.html");
        write_atomically("--html", &path, b"first").unwrap();
        write_atomically("--html", &path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
        assert_eq!(names.len(), 2, "only cu/ and report.html: {names:?}");
    }
}
