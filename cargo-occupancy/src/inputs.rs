//! What the CLI accepts as an input file, checked before it is read: a directory where a file is
//! expected, or a device (`/dev/zero`, `/dev/urandom`: endless input that would fill memory), is
//! refused with a message naming it. Regular files, pipes and `-` (standard input) are read.

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
