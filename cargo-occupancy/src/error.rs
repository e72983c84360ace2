//! How a command ends, in one type each way: [`Outcome`] when it did its work, [`CliError`] when
//! it could not. Every command returns `Result<Outcome, CliError>`; `main` alone turns that into
//! the exit code and prints the error, once:
//!
//! | exit | when |
//! |---|---|
//! | 0 | [`Outcome::Success`]; or [`CliError::StdoutClosed`] (the reader went away: a quiet end) |
//! | 1 | [`Outcome::ChecksFailed`]: a deny finding stands (`check`), a crate's last build failed (`report`) |
//! | 2 | every other [`CliError`] (the tool could not do its work: a bad flag or input, nvcc failing), printed as one `error: ...` line; and clap's usage errors |
//! | 3 | [`CliError::BuildFailed`]: the crate's own `cargo build` failed, so nothing was checked |
//! | 4 | [`CliError::NothingChecked`]: the inputs or the build held no kernel, so nothing was checked |
//!
//! With `--json`, an error is also one JSON object on standard output
//! ([`CliError::json_status`]), so a CI step that parses it reads what happened.
//!
//! A failed check is an outcome, not an error: the command worked, printed its whole report, and
//! its verdict must survive a reader that stops reading (`check ... | head` still exits 1).
//! This module is a leaf: it depends on nothing else of the CLI.

use std::fmt;

/// What a command that did its work found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Outcome {
    /// Exit 0: done; for a gate, no deny-level finding.
    Success,
    /// Exit 1: the checks failed: a deny-level finding stands (`check`), or a crate's last build
    /// failed, so its report holds nothing checked (`report`).
    ChecksFailed,
}

impl Outcome {
    /// [`Outcome::ChecksFailed`] when `failed`, else [`Outcome::Success`].
    pub fn failed_if(failed: bool) -> Outcome {
        if failed {
            Outcome::ChecksFailed
        } else {
            Outcome::Success
        }
    }

    /// The outcome of a command whose verdict was known before it wrote its output: a write
    /// that found standard output closed ends the output, not the verdict (`check ... | head`
    /// exits 1 when a deny finding stands). Any other error of `written` is the command's.
    pub fn despite_closed_stdout(self, written: Result<(), CliError>) -> Result<Outcome, CliError> {
        match written {
            Ok(()) | Err(CliError::StdoutClosed) => Ok(self),
            Err(error) => Err(error),
        }
    }
}

/// Why a command could not do its work. Every variant but [`CliError::StdoutClosed`] is exit 2
/// and one message, printed by `main` as `error: <message>`; the message says what to do.
#[derive(Debug)]
pub enum CliError {
    /// The command line asks for what cannot be done: a bad flag value, an unknown lint or
    /// architecture, an output that would replace an input.
    Usage(String),
    /// An input cannot be read, or is not what it must be (a directory, a device, a report of
    /// another schema, bad batch lines); the message names it.
    Input(String),
    /// An output cannot be written (`--html FILE`, standard output, a spool file); the message
    /// names it.
    Output(String),
    /// The inputs were read but give no verdict: nvcc missing or failing, a log of a compile that
    /// failed or of a build that failed, no kernel in the inputs, `cargo metadata` failing.
    CouldNotCheck(String),
    /// Exit 3: the crate's own `cargo build` failed (`cargo occupancy build`): its code was not
    /// checked.
    BuildFailed(String),
    /// Exit 4: no kernel in the inputs, or no device code in any `OUT_DIR` of the build:
    /// nothing was checked, which is no pass.
    NothingChecked(String),
    /// Standard output was closed by its reader (`| head`): the output ends quietly. Made only by
    /// [`CliError::writing_stdout`], the one place that looks for a broken pipe.
    StdoutClosed,
}

impl CliError {
    /// A usage error with this message.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }

    /// `cannot read PATH: ERROR`, for an input that cannot be opened or listed.
    pub fn cannot_read(path: &std::path::Path, error: &std::io::Error) -> CliError {
        CliError::Input(format!(
            "cannot read {}: {error}",
            occupancy_build::cli::shown_path(path)
        ))
    }

    /// A write to standard output failed: a reader that went away (a broken pipe) is
    /// [`CliError::StdoutClosed`]; anything else (a full disk, `> /dev/full`) is an output
    /// error `CONTEXT: ERROR`.
    pub fn writing_stdout(context: &str, error: &std::io::Error) -> CliError {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            CliError::StdoutClosed
        } else {
            CliError::Output(format!("{context}: {error}"))
        }
    }

    /// The message, without the `error: ` that `main` puts before it; empty for
    /// [`CliError::StdoutClosed`], which prints nothing.
    pub fn message(&self) -> &str {
        match self {
            CliError::Usage(message)
            | CliError::Input(message)
            | CliError::Output(message)
            | CliError::CouldNotCheck(message)
            | CliError::BuildFailed(message)
            | CliError::NothingChecked(message) => message,
            CliError::StdoutClosed => "",
        }
    }
}

impl CliError {
    /// The exit code of this error (the table above).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::StdoutClosed => 0,
            CliError::BuildFailed(_) => 3,
            CliError::NothingChecked(_) => 4,
            _ => 2,
        }
    }

    /// The word a `--json` reader is told what happened by: `build_failed`, `nothing_checked`,
    /// `usage`, `input`, `output`, `could_not_check`.
    pub fn json_status(&self) -> &'static str {
        match self {
            CliError::Usage(_) => "usage",
            CliError::Input(_) => "input",
            CliError::Output(_) => "output",
            CliError::CouldNotCheck(_) => "could_not_check",
            CliError::BuildFailed(_) => "build_failed",
            CliError::NothingChecked(_) => "nothing_checked",
            CliError::StdoutClosed => "stdout_closed",
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::StdoutClosed => formatter.write_str("standard output was closed"),
            other => formatter.write_str(other.message()),
        }
    }
}

impl std::error::Error for CliError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_broken_pipe_is_a_closed_stdout() {
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(matches!(
            CliError::writing_stdout("writing the table", &closed),
            CliError::StdoutClosed
        ));
        let full = std::io::Error::other("No space left on device");
        let error = CliError::writing_stdout("writing the table", &full);
        assert!(matches!(error, CliError::Output(_)));
        assert_eq!(
            error.to_string(),
            "writing the table: No space left on device"
        );
    }

    /// Issue #42, class 12: a failed build, no device code and a tool error are told apart by
    /// the exit code alone.
    #[test]
    fn a_failed_build_nothing_checked_and_a_tool_error_have_their_own_codes() {
        let codes = [
            CliError::BuildFailed("b".into()).exit_code(),
            CliError::NothingChecked("n".into()).exit_code(),
            CliError::CouldNotCheck("t".into()).exit_code(),
            CliError::Usage("u".into()).exit_code(),
        ];
        assert_eq!(codes, [3, 4, 2, 2]);
    }

    #[test]
    fn a_verdict_survives_a_closed_stdout_and_no_other_error() {
        let failed = Outcome::ChecksFailed;
        assert_eq!(
            failed
                .despite_closed_stdout(Err(CliError::StdoutClosed))
                .ok(),
            Some(Outcome::ChecksFailed)
        );
        assert_eq!(failed.despite_closed_stdout(Ok(())).ok(), Some(failed));
        let error = failed
            .despite_closed_stdout(Err(CliError::Output("--html x: full".into())))
            .unwrap_err();
        assert_eq!(error.message(), "--html x: full");
    }
}
