//! Small file-system helpers: atomic writes and make-style dependency files.
//!
//! Reports and cache manifests are written to a temporary file beside the target and renamed
//! into place, so a reader never sees half a file and an interrupted build leaves the old one.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::Error;

/// Writes `contents` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let io = |error: std::io::Error| Error::Io {
        path: path.to_path_buf(),
        error,
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per process and call: threads of one process (the CLI) may write one path at once.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let temp = dir.join(format!(
        ".{file_name}.{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(io)
}

/// Writes only when the contents differ, so files `include!`d or `include_str!`d by the crate
/// keep their mtime and do not retrigger rustc.
pub fn write_if_changed(path: &Path, contents: &[u8]) -> Result<(), Error> {
    if std::fs::read(path)
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
        .map(|name| name.replace("\\\\", "\\"))
        .filter(|name| !name.starts_with('<'))
        .map(PathBuf::from)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The quoted name of a line marker (`# 12 "name" 1 3`) as written; `None` for any other line.
fn marker_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("# ")?;
    let (number, rest) = rest.split_once(' ')?;
    if !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let quoted = rest.strip_prefix('"')?;
    let end = quoted.find('"')?;
    Some(&quoted[..end])
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
    path.strip_prefix(manifest_dir)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// What [`parse_line_markers`] must answer, reading every line.
    fn line_markers_line_by_line(text: &str) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = text
            .lines()
            .filter_map(|line| {
                let name = marker_name(line)?.replace("\\\\", "\\");
                (!name.starts_with('<')).then(|| PathBuf::from(name))
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
                    "# 7 \"unterminated", "", " # 8 \"indented.h\"",
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
}
