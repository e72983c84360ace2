//! The committed baseline (`occupancy.lock`): each kernel's registers, spills, stack, static
//! shared memory and occupancy per architecture. Worse than the baseline is the `regression`
//! lint; `OCCUPANCY_BLESS=1` rewrites the file. JSON with sorted keys, so diffs are reviewable.
//!
//! The baseline is a committed excerpt of the build's report, not a second computation: its
//! numbers are read from the report's rows ([`Baseline::of_report`], [`numbers_of`]).

use std::collections::BTreeMap;
use std::path::Path;

use occupancy_core::lint::evaluate::BaselineNumbers;
use occupancy_core::report::{KernelRow, Report};
use serde::{Deserialize, Serialize};

use crate::Error;

/// The baseline file's contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    /// Kernel name -> arch -> numbers.
    pub kernels: BTreeMap<String, BTreeMap<String, BaselineNumbers>>,
}

/// The numbers the baseline keeps of one report row.
pub fn numbers_of(row: &KernelRow) -> BaselineNumbers {
    BaselineNumbers {
        registers: row.registers,
        spill_store_bytes: row.spill_store_bytes,
        spill_load_bytes: row.spill_load_bytes,
        stack_frame_bytes: row.stack_frame_bytes,
        static_smem_bytes: row.static_smem_bytes,
        occupancy: row.occupancy,
    }
}

impl Baseline {
    /// The baseline of a build's report: every entry kernel on every architecture it was
    /// checked on.
    pub fn of_report(report: &Report) -> Baseline {
        let mut baseline = Baseline {
            schema_version: 1,
            kernels: BTreeMap::new(),
        };
        for row in report.kernels.iter().filter(|row| row.entry) {
            baseline
                .kernels
                .entry(row.name.clone())
                .or_default()
                .insert(row.arch.clone(), numbers_of(row));
        }
        baseline
    }

    /// Reads the baseline; `None` when the file does not exist (no regression checks).
    pub fn load(path: &Path) -> Result<Option<Baseline>, Error> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    error,
                })
            }
        };
        let baseline: Baseline = serde_json::from_str(&text).map_err(|error| Error::Config {
            message: format!(
                "the baseline {} is not readable ({error}); fix it or regenerate it with OCCUPANCY_BLESS=1",
                path.display()
            ),
        })?;
        if baseline.schema_version != 1 {
            return Err(Error::Config {
                message: format!("the baseline {} has schema_version {}, this occupancy-build reads 1; regenerate it with OCCUPANCY_BLESS=1", path.display(), baseline.schema_version),
            });
        }
        Ok(Some(baseline))
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the baseline is plain data");
        text.push('\n');
        text
    }
}
