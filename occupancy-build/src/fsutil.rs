//! Small file-system helpers: the one writer of every output, and make-style dependency files.
//!
//! [`write_atomic`] is how everything is written: reports, the baseline, the compile cache's
//! files, the generated sources, and `cargo occupancy`'s `--html`. What it does depends on what
//! the path names:
//!
//! * a regular file, or nothing yet: a temporary file beside it (created new, never through a
//!   link), synced, then renamed over it, so a reader never sees half a file and an interrupted
//!   build leaves the old one; an existing file keeps its permissions;
//! * a symbolic link: the same at the file the link resolves to (a link whose target does not
//!   exist yet gets it, when the target's directory exists), so the link stays a link and what
//!   it points to (a shared baseline) gets the new contents;
//! * a FIFO or a character or block device (`/dev/null`, `/dev/stdout`, a `>(...)` pipe):
//!   opened and written, never renamed over: the node stays;
//! * anything else (a directory, a socket, a dangling link whose directory does not exist) is
//!   refused with an error naming the path and why.

use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::words::shown_path;
use crate::Error;

/// Symbolic links followed at most, as the kernel's own limit.
const MAX_LINKS: usize = 40;

/// Where a write to a path lands.
#[derive(Debug, PartialEq)]
enum Destination {
    /// A regular file, existing (with its permissions) or new: written beside and renamed onto.
    File {
        target: PathBuf,
        permissions: Option<std::fs::Permissions>,
    },
    /// A FIFO or a device: written in place.
    Special,
}

/// Writes `contents` to `path`, atomically where the path is (or links to) a regular file;
/// see the module's documentation for links, FIFOs and devices. Creates missing parent
/// directories of a new file (not of a link's target).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), Error> {
    match destination(path)? {
        Destination::Special => write_special(path, contents),
        Destination::File {
            target,
            permissions,
        } => {
            if permissions.is_none() {
                let dir = parent_dir(&target);
                std::fs::create_dir_all(dir).map_err(|error| io(path, error))?;
            }
            replace(&target, contents, permissions).map_err(|error| io(path, error))
        }
    }
}

/// Whether [`write_atomic`] could write `path`, without writing it: refuses what it refuses,
/// and checks that a temporary file can be made beside the file it would replace (creating
/// and removing one; nothing beside a FIFO or a device, which are written in place).
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let Destination::File { target, .. } = destination(path)? else {
        return Ok(());
    };
    let probe = temporary_beside(&target);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|error| Error::Unwritable {
            path: path.to_path_buf(),
            reason: format!(
                "is in {}, where no file can be created ({error})",
                parent_dir(&target).display()
            ),
        })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// What `path` names, through any symbolic links, and so how it is written.
fn destination(path: &Path) -> Result<Destination, Error> {
    let refuse = |reason: String| Error::Unwritable {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::metadata(path) {
        Ok(metadata) => {
            let kind = metadata.file_type();
            if metadata.is_file() {
                let linked =
                    std::fs::symlink_metadata(path).is_ok_and(|own| own.file_type().is_symlink());
                let target = match linked {
                    true => std::fs::canonicalize(path).map_err(|error| io(path, error))?,
                    false => path.to_path_buf(),
                };
                let permissions = Some(metadata.permissions());
                Ok(Destination::File {
                    target,
                    permissions,
                })
            } else if is_special(&kind) {
                Ok(Destination::Special)
            } else if kind.is_dir() {
                Err(refuse("is a directory".into()))
            } else {
                Err(refuse(
                    "is neither a file, a FIFO nor a device (a socket?)".into(),
                ))
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => new_file(path),
        Err(error) => Err(io(path, error)),
    }
}

/// The destination of a path that names no existing file: itself, or the missing target of
/// the link it is, whose directory must exist.
fn new_file(path: &Path) -> Result<Destination, Error> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|own| own.file_type().is_symlink());
    if !is_link {
        return Ok(Destination::File {
            target: path.to_path_buf(),
            permissions: None,
        });
    }
    let target = link_target(path)?;
    let dir = parent_dir(&target);
    if !dir.is_dir() {
        return Err(Error::Unwritable {
            path: path.to_path_buf(),
            reason: format!(
                "is a symbolic link to {}, whose directory {} does not exist",
                target.display(),
                dir.display()
            ),
        });
    }
    Ok(Destination::File {
        target,
        permissions: None,
    })
}

/// Where a chain of symbolic links starting at `path` ends (a path that does not exist).
fn link_target(path: &Path) -> Result<PathBuf, Error> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(own) if own.file_type().is_symlink() => {
                let next = std::fs::read_link(&current).map_err(|error| io(path, error))?;
                current = parent_dir(&current).join(next);
            }
            Ok(_) => return Ok(current),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(current),
            Err(error) => return Err(io(path, error)),
        }
    }
    Err(Error::Unwritable {
        path: path.to_path_buf(),
        reason: format!("is a chain of more than {MAX_LINKS} symbolic links"),
    })
}

/// A FIFO or a character or block device.
#[cfg(unix)]
fn is_special(kind: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_fifo() || kind.is_char_device() || kind.is_block_device()
}

#[cfg(not(unix))]
fn is_special(_kind: &std::fs::FileType) -> bool {
    false
}

/// Opens a FIFO or device (through any link) and writes to it; never creates, truncates or
/// renames. Opening a FIFO waits for its reader, as a shell's `>` does.
fn write_special(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|error| io(path, error))?;
    // Replaced by another kind of file between the look and the open: write nothing into it.
    let still_special = file
        .metadata()
        .is_ok_and(|metadata| is_special(&metadata.file_type()));
    if !still_special {
        return Err(Error::Unwritable {
            path: path.to_path_buf(),
            reason: "changed from a FIFO or device to another kind of file while being opened; run again".into(),
        });
    }
    file.write_all(contents).map_err(|error| io(path, error))
}

/// Writes a new temporary file beside `target` and renames it over `target`.
fn replace(
    target: &Path,
    contents: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let temp = temporary_beside(target);
    let result = (|| {
        // New, never an existing file or a link someone placed at this name.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(contents)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// `.<name>.<pid>-<n>.tmp` beside `target`: unique per process and call (threads of one
/// process, the CLI's, may write one path at once).
fn temporary_beside(target: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let file_name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_dir(target).join(format!(
        ".{file_name}.{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ))
}

/// The directory a path lives in (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn io(path: &Path, error: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Writes only when the contents differ, so files `include!`d or `include_str!`d by the crate
/// keep their mtime and do not retrigger rustc. Only a regular file is read to compare: reading
/// a FIFO would wait for a writer, a device like `/dev/zero` never ends.
pub fn write_if_changed(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let regular = std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file());
    if regular
        && std::fs::read(path)
            .map(|existing| existing == contents)
            .unwrap_or(false)
    {
        return Ok(());
    }
    write_atomic(path, contents)
}

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// The prerequisites of a make-style dependency file (`target: a.cu b.h \` ...), as nvcc's
/// `-MD -MF` writes it. Escaped spaces (`\ `) stay part of the name.
pub fn parse_dep_file(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut paths = Vec::new();
    for line in joined.lines() {
        let Some((_, prerequisites)) = split_rule(line) else {
            continue;
        };
        let mut current = String::new();
        let mut chars = prerequisites.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                c if c.is_whitespace() => {
                    if !current.is_empty() {
                        paths.push(PathBuf::from(std::mem::take(&mut current)));
                    }
                }
                c => current.push(c),
            }
        }
        if !current.is_empty() {
            paths.push(PathBuf::from(current));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// The files a preprocessor output read, from its line markers (`# 12 "path/to/file.h" 1 3`),
/// without the preprocessor's pseudo-files (`<built-in>`, `<command-line>`). Sorted, deduplicated.
///
/// Only the marker lines are read (found by a whole-text search for `\n# `), and each name is
/// made a path once: the `.cpp1.ii` of a file is megabytes of preprocessed code with thousands
/// of markers naming a few dozen files, and a build script runs unoptimized.
pub fn parse_line_markers(text: &str) -> Vec<PathBuf> {
    let next_marker = |from: usize| text[from..].find("\n# ").map(|offset| from + offset + 1);
    let mut names: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let mut marker = match text.starts_with("# ") {
        true => Some(0),
        false => next_marker(0),
    };
    while let Some(start) = marker {
        let end = text[start..]
            .find('\n')
            .map_or(text.len(), |offset| start + offset);
        names.extend(marker_name(&text[start..end]));
        marker = next_marker(end);
    }
    let mut paths: Vec<PathBuf> = names
        .into_iter()
        .filter(|name| !name.starts_with('<'))
        .map(|name| path_of_bytes(occupancy_core::ptxas::unescape_quoted(name)))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The quoted name of a line marker (`# 12 "name" 1 3`) as written (its escapes undone by the
/// caller: a newline is `\n`); `None` for any other line.
fn marker_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("# ")?;
    let (number, rest) = rest.split_once(' ')?;
    if !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let quoted = rest.strip_prefix('"')?;
    let mut escaped = false;
    let end = quoted.bytes().position(|byte| {
        let closes = !escaped && byte == b'"';
        escaped = !escaped && byte == b'\\';
        closes
    })?;
    Some(&quoted[..end])
}

/// A path of the bytes a compiler wrote (a Unix path may be any bytes; elsewhere, as UTF-8).
fn path_of_bytes(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// Splits `target: prerequisites` at the rule's colon (not a Windows drive letter's).
fn split_rule(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b':' {
            let drive_letter = index == 1 && bytes[0].is_ascii_alphabetic()
                || (index >= 2
                    && bytes[index - 2] == b' '
                    && bytes[index - 1].is_ascii_alphabetic());
            let followed_by_separator = matches!(bytes.get(index + 1), Some(b'\\' | b'/'));
            if drive_letter && followed_by_separator {
                continue;
            }
            return Some((&line[..index], &line[index + 1..]));
        }
    }
    None
}

pub(crate) fn display_path(manifest_dir: &Path, path: &Path) -> String {
    shown_path(path.strip_prefix(manifest_dir).unwrap_or(path))
}

/// A private directory under the caller's scratch directory, removed when dropped (where the
/// parse stage and the binary front end read a binary's cubins).
#[derive(Debug)]
pub struct WorkDir(PathBuf);

impl WorkDir {
    pub fn create(scratch: &Path) -> Result<WorkDir, Error> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = scratch.join(format!("occupancy-binary-{}-{n}", std::process::id()));
        // Created new and private: a directory someone else made at this name is refused.
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).map_err(|error| Error::Io {
            path: path.clone(),
            error,
        })?;
        Ok(WorkDir(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a path that is not a regular file names, for a message ("a FIFO", "a device",
/// "a socket", "a directory"): the one wording of the lock reader and the CLI's inputs.
pub fn node_kind(metadata: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if metadata.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_with_control_characters_are_shown_escaped() {
        assert_eq!(shown_path(Path::new("src/k.cu")), "src/k.cu");
        assert_eq!(shown_path(Path::new("a b/k.cu")), "a b/k.cu");
        assert_eq!(shown_path(Path::new("a\nb.cu")), "\"a\\nb.cu\"");
        assert_eq!(
            shown_path(Path::new("x\u{1b}[31m.log")),
            "\"x\\u{1b}[31m.log\""
        );
    }

    #[test]
    fn dep_files_as_nvcc_writes_them() {
        let text = "k.fatbin : k.cu \\\n    /usr/include/stdio.h \\\n    my\\ dir/k.cuh\n";
        assert_eq!(
            parse_dep_file(text),
            vec![
                PathBuf::from("/usr/include/stdio.h"),
                PathBuf::from("k.cu"),
                PathBuf::from("my dir/k.cuh")
            ]
        );
        assert_eq!(
            parse_dep_file("C:\\x\\k.o: C:\\x\\k.cu"),
            vec![PathBuf::from("C:\\x\\k.cu")]
        );
        assert!(parse_dep_file("").is_empty());
    }

    #[test]
    fn line_markers_list_every_file_read() {
        let text = "# 0 \"k.cu\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n# 1 \"/usr/include/stdc-predef.h\" 1 3 4\nint x;\n# 1 \"k.cu\"\n# 1 \"kernels/common.cuh\" 1\n#define X 1\n";
        assert_eq!(
            parse_line_markers(text),
            vec![
                PathBuf::from("/usr/include/stdc-predef.h"),
                PathBuf::from("k.cu"),
                PathBuf::from("kernels/common.cuh")
            ]
        );
    }

    /// Issue #35, class 9: a name the preprocessor escaped (a newline as `\n`, a quote, a
    /// backslash, octal) is the file's own name, so a source with a newline in its name is
    /// found (it failed as missing).
    #[test]
    fn line_marker_names_are_unescaped() {
        let text = "# 1 \"/u/a\\nb.cu\"\n# 1 \"/u/q\\\"uote.h\" 1\n# 2 \"C:\\\\x\\\\k.cu\"\n# 3 \"/u/\\303\\251.h\" 1\n";
        assert_eq!(
            parse_line_markers(text),
            vec![
                PathBuf::from("/u/a\nb.cu"),
                PathBuf::from("/u/q\"uote.h"),
                PathBuf::from("/u/\u{e9}.h"),
                PathBuf::from("C:\\x\\k.cu"),
            ]
        );
    }

    /// What [`parse_line_markers`] must answer, reading every line.
    fn line_markers_line_by_line(text: &str) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = text
            .lines()
            .filter_map(|line| {
                let name = marker_name(line)?;
                (!name.starts_with('<'))
                    .then(|| path_of_bytes(occupancy_core::ptxas::unescape_quoted(name)))
            })
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    proptest::proptest! {
        #[test]
        fn line_markers_are_those_of_every_line(
            lines in proptest::collection::vec(
                proptest::sample::select(vec![
                    "# 1 \"k.cu\"", "# 0 \"<built-in>\"", "# 12 \"/a/b.h\" 1 3", "#  2 \"x.h\"",
                    "# 3 \"C:\\\\x\\\\y.h\"", "# 4 \"a//b.h\"", "# 5 \"a/b.h\"", "int x;", "#define Y",
                    "# 7 \"unterminated", "", " # 8 \"indented.h\"", "# 9 \"a\\nb.cu\"",
                    "# 10 \"q\\\"uote.h\" 1",
                ]),
                0..30,
            ),
            crlf in proptest::bool::ANY,
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            proptest::prop_assert_eq!(parse_line_markers(&text), line_markers_line_by_line(&text));
        }
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("occupancy-fsutil-{}", std::process::id()));
        let path = dir.join("report.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        write_if_changed(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A private scratch directory (never the system's shared paths).
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-write-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success(), "mkfifo {}", path.display());
    }

    #[cfg(unix)]
    fn is_fifo(path: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(path)
            .unwrap()
            .file_type()
            .is_fifo()
    }

    /// Runs `write` while a reader drains `fifo`; what the reader got. Fails instead of hanging
    /// when the write never opens the FIFO (or reads it first, waiting for a writer).
    #[cfg(unix)]
    fn read_fifo_while(fifo: &Path, write: impl FnOnce() + Send + 'static) -> Vec<u8> {
        let fifo = fifo.to_path_buf();
        let read_from = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(read_from).unwrap());
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            write();
            let _ = done.send(());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the write to the FIFO did not finish");
        // Before waiting for the reader: a FIFO renamed over never gets its writer.
        assert!(is_fifo(&fifo), "the FIFO was replaced");
        reader.join().unwrap()
    }

    /// A baseline shared through a link (`occupancy.lock -> ../shared/occupancy.lock`): the
    /// shared file gets the new contents and the link stays a link (issue 23, item 4).
    #[cfg(unix)]
    #[test]
    fn a_write_through_a_link_replaces_the_target_and_keeps_the_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("link");
        std::fs::create_dir_all(dir.join("shared")).unwrap();
        std::fs::create_dir_all(dir.join("crate")).unwrap();
        let shared = dir.join("shared/occupancy.lock");
        std::fs::write(&shared, "old").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.join("crate/occupancy.lock");
        std::os::unix::fs::symlink("../shared/occupancy.lock", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&shared).unwrap(), b"new");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../shared/occupancy.lock")
        );
        let mode = std::fs::metadata(&shared).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o640,
            "the replaced file keeps its permissions"
        );
        assert_eq!(names(&dir.join("shared")), ["occupancy.lock"]);
        assert_eq!(names(&dir.join("crate")), ["occupancy.lock"]);
        write_if_changed(&link, b"newer").unwrap();
        assert_eq!(std::fs::read(&shared).unwrap(), b"newer");
        // A link whose target does not exist yet gets it, when its directory exists.
        let dangling = dir.join("crate/report.json");
        std::os::unix::fs::symlink("../shared/report.json", &dangling).unwrap();
        write_atomic(&dangling, b"{}").unwrap();
        assert_eq!(
            std::fs::read(dir.join("shared/report.json")).unwrap(),
            b"{}"
        );
        assert!(std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// `--html /dev/null` replaced the system's `/dev/null` with a file. FIFOs and devices
    /// (here a private FIFO, and a link to it as `/dev/stdout` is one) are written in place.
    #[cfg(unix)]
    #[test]
    fn fifos_and_links_to_them_are_written_in_place() {
        let dir = scratch("fifo");
        let fifo = dir.join("out.fifo");
        mkfifo(&fifo);
        let link = dir.join("null");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        for (path, writer) in [(fifo.clone(), "atomic"), (link.clone(), "if_changed")] {
            let target = path.clone();
            let got = read_fifo_while(&fifo, move || match writer {
                "atomic" => write_atomic(&target, b"report").unwrap(),
                _ => write_if_changed(&target, b"report").unwrap(),
            });
            assert_eq!(got, b"report", "{}", path.display());
            assert!(is_fifo(&fifo), "the FIFO was replaced");
        }
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        check_writable(&fifo).unwrap();
        check_writable(&link).unwrap();
        assert_eq!(
            names(&dir),
            ["null", "out.fifo"],
            "nothing created beside them"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn what_cannot_be_written_safely_is_refused_naming_it() {
        let dir = scratch("refused");
        std::fs::create_dir_all(dir.join("reports")).unwrap();
        std::os::unix::fs::symlink(dir.join("reports"), dir.join("to-dir")).unwrap();
        std::os::unix::fs::symlink(dir.join("missing/r.json"), dir.join("nowhere")).unwrap();
        std::os::unix::fs::symlink("loop-b", dir.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", dir.join("loop-b")).unwrap();
        let cases = [
            ("reports", "it is a directory"),
            ("to-dir", "it is a directory"),
            ("nowhere", "whose directory"),
            ("loop-a", "loop-a"),
        ];
        for (name, reason) in cases {
            let path = dir.join(name);
            for error in [
                write_atomic(&path, b"x").unwrap_err(),
                check_writable(&path).unwrap_err(),
            ] {
                let message = error.to_string();
                assert!(
                    message.contains(&path.display().to_string()) && message.contains(reason),
                    "{name}: {message}"
                );
            }
        }
        assert!(
            !dir.join("missing").exists(),
            "no directory made for a link"
        );
        assert_eq!(
            names(&dir),
            ["loop-a", "loop-b", "nowhere", "reports", "to-dir"]
        );
        assert!(names(&dir.join("reports")).is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
