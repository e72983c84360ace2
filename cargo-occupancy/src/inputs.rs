//! What the CLI accepts as an input file, checked before it is read: a directory where a file is
//! expected, or a device (`/dev/zero`, `/dev/urandom`: endless input that would fill memory), is
//! refused with a message naming it. Regular files, pipes and `-` (standard input) are read; a
//! FIFO, socket or device named like a compiled binary or a source is refused unopened.

use std::path::Path;

use crate::error::CliError;

/// Refuses `path` (named by `what`, e.g. "the ptxas log") unless it can be read to an end.
pub fn check_input_file(what: &str, path: &Path) -> Result<(), CliError> {
    if path == Path::new("-") {
        return Ok(());
    }
    // A path that cannot be examined is left to the reader, whose error names it.
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(());
    };
    if metadata.is_dir() {
        return Err(CliError::Input(format!(
            "{what} {} is a directory; name a file",
            occupancy_build::cli::shown_path(path)
        )));
    }
    if is_device(&metadata) {
        return Err(CliError::Input(format!(
            "{what} {} is a device, not a file (a device's input need not end, as /dev/zero's does not); save the log to a file, or pipe it to `-`",
            occupancy_build::cli::shown_path(path)
        )));
    }
    Ok(())
}

/// Refuses `path` when it is no regular file (a FIFO, socket or device, through any link) and
/// its name as given, or its target's after following links, is one `named_like` selects (a
/// compiled binary's or a source's, which are opened and read whole): opening a FIFO waits for
/// a writer, and its bytes need not end (issue #42, class 14). Only metadata is read.
pub fn refuse_named_node(
    path: &Path,
    named_like: impl Fn(&Path) -> bool,
    remedy: &str,
) -> Result<(), CliError> {
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(());
    };
    if metadata.is_file() || metadata.is_dir() {
        return Ok(());
    }
    let target = std::fs::canonicalize(path).ok();
    if named_like(path) || target.as_deref().is_some_and(&named_like) {
        return Err(not_a_regular_file(path, &metadata, remedy));
    }
    Ok(())
}

/// The one error for a path named like an input that is no regular file: the path, what it is
/// (`a FIFO`), that nothing was read from it, and `remedy`.
pub fn not_a_regular_file(path: &Path, metadata: &std::fs::Metadata, remedy: &str) -> CliError {
    CliError::Input(format!(
        "{} is not a regular file but {}, though it is named like an input: nothing was read from it (it need not end); {remedy}",
        occupancy_build::cli::shown_path(path),
        occupancy_build::cli::node_kind(metadata)
    ))
}

/// Why a regular file named like a compiled binary (`.cubin`, `.fatbin`, `.o`, `.a`, `.so`,
/// `.whl`, ...) whose first bytes are no binary's is damaged, or `None` when it may be a file of
/// that name that holds no device code: a `.so` linker script (`/* GNU ld script */`,
/// `INPUT(...)`), which lies beside libraries. A directory walk and `cargo occupancy build`
/// select files by name: an empty or damaged `k.cubin` passed over without a word was a kernel
/// that was never read (issue #35's third pass).
pub fn not_a_binary(path: &Path) -> Option<String> {
    use std::io::Read;
    let name = path.file_name()?.to_string_lossy().into_owned();
    let mut head = Vec::new();
    if let Err(error) =
        std::fs::File::open(path).and_then(|file| file.take(64).read_to_end(&mut head))
    {
        return Some(format!("cannot be read: {error}"));
    }
    let text = String::from_utf8_lossy(&head);
    let linker_script = ["/*", "INPUT", "GROUP", "OUTPUT_FORMAT", "SEARCH_DIR"]
        .iter()
        .any(|start| text.trim_start().starts_with(start));
    if head.is_empty() {
        return Some("named like a compiled binary, it is empty: a damaged or unfinished file, not one without device code".into());
    }
    if linker_script && (name.ends_with(".so") || name.contains(".so.")) {
        return None;
    }
    Some("named like a compiled binary, it is none (no ELF, archive, fatbin or zip header): damaged, or not what its name says".into())
}

#[cfg(unix)]
fn is_device(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let file_type = metadata.file_type();
    file_type.is_char_device() || file_type.is_block_device()
}

#[cfg(not(unix))]
fn is_device(_metadata: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_directories_are_refused_files_and_stdin_are_not() {
        let error = check_input_file("the ptxas log", Path::new("/dev/zero")).unwrap_err();
        assert!(error.message().contains("/dev/zero is a device"), "{error}");
        let error = check_input_file("the ptxas log", Path::new("/")).unwrap_err();
        assert!(
            error.message().contains("the ptxas log / is a directory"),
            "{error}"
        );
        check_input_file("the ptxas log", Path::new("-")).unwrap();
        check_input_file(
            "the manifest",
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")),
        )
        .unwrap();
    }
}
