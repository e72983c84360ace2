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
