//! `check --lock FILE [--bless]`: every row `check` reads, whatever its input (sources, logs,
//! binaries), recorded for the lock (`occupancy_build::cli::CheckLock`, the build's baseline),
//! compared with it at the end (`regression`, `baseline_stale`), or written to it with
//! `--bless`. This module carries rows to the lock and says what it found; the lock compares.

use std::path::Path;

use occupancy_build::cli::CheckLock;

use super::stream::ReportStream;
use crate::error::CliError;

/// The lock of the run, when `--lock` names one.
pub struct Lock {
    lock: CheckLock,
    bless: bool,
}

/// Rows are recorded in the lock itself ([`CheckLock::record`]): this type adds only whether the
/// run blesses it.
impl std::ops::Deref for Lock {
    type Target = CheckLock;

    fn deref(&self) -> &CheckLock {
        &self.lock
    }
}

impl std::ops::DerefMut for Lock {
    fn deref_mut(&mut self) -> &mut CheckLock {
        &mut self.lock
    }
}

impl Lock {
    /// Reads `--lock FILE` before anything is checked: a lock that is not exactly one is an error
    /// (blessing too, as in a build); a file that does not exist is one only when not blessing.
    pub fn open(path: Option<&Path>, bless: bool) -> Result<Option<Lock>, CliError> {
        let Some(path) = path else {
            return Ok(None);
        };
        let lock = CheckLock::open(path).map_err(|error| CliError::Input(error.to_string()))?;
        if !bless && !lock.exists() {
            return Err(CliError::Input(format!(
                "the lock {} does not exist: write it from what this check reads with `--bless`, and commit it",
                occupancy_build::cli::shown_path(path)
            )));
        }
        Ok(Some(Lock { lock, bless }))
    }

    /// A new input (product) whose rows [`Lock::record`] records: its number.
    pub fn input(&mut self) -> usize {
        self.lock.product()
    }

    /// Writes the lock (`--bless`), or compares every input's rows with it: its findings go to
    /// `stream`, the toolchain changes since it to standard error first.
    pub fn conclude(
        &self,
        levels: &std::collections::BTreeMap<
            occupancy_core::lint::LintId,
            occupancy_core::lint::Level,
        >,
        stream: &mut ReportStream,
    ) -> Result<(), CliError> {
        if self.bless {
            let said = self
                .lock
                .bless()
                .map_err(|error| CliError::Output(error.to_string()))?;
            eprintln!("note: {said}");
            return Ok(());
        }
        let (findings, changes) = self.lock.compare(levels);
        for line in changes {
            eprintln!("note: the toolchain changed since the lock: {line}");
        }
        for finding in &findings {
            stream.add_finding(finding, None)?;
        }
        Ok(())
    }
}
