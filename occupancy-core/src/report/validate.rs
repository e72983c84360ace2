//! Reading a report from a file ([`Report::from_json`]): the schema version first, then the
//! model, then every value checked ([`validate`]) as strictly as the command line checks its
//! flags: every architecture known, every count and size in the range the hardware and the
//! calculator have, every occupancy a fraction, every limiter one the calculator names. A report
//! is written by a build, but it is read from disk, where anything can be; a value out of range
//! is an error that names the kernel row and the key, never a wrong table or a hang further on.

use serde::Deserialize;

use crate::arch::{self, ArchFacts};
use crate::calc::Limiter;

use super::model::{BaselineChange, Finding, KernelRow, Report, SCHEMA_VERSION};

/// A report file whose schema this version cannot read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Not JSON of the report's shape.
    #[error("not an occupancy report: {0}")]
    Malformed(#[from] serde_json::Error),
    /// Written by a different version of the schema.
    #[error(
        "occupancy report schema version {found} is not supported (this tool reads version {expected}); \
         rebuild the crate with this version of occupancy-build, or use the matching cargo-occupancy"
    )]
    Version {
        /// The file's `schema_version`.
        found: u64,
        /// [`SCHEMA_VERSION`].
        expected: u32,
    },
    /// Of the report's shape, but a value no build writes (an unknown arch, a count out of range).
    #[error("not a valid occupancy report: {0}")]
    Invalid(#[from] InvalidValue),
}

impl Report {
    /// Parses a report written by a build or by `check --json`, checking the schema version first
    /// so that a future schema gets a version error rather than a confusing field error.
    ///
    /// Parsed straight into the model (not through `serde_json::Value`, which would keep the last
    /// of two duplicate keys without a word), then every value is checked by `validate`:
    /// unknown archs, counts out of range and a NaN occupancy are errors that name the row and
    /// key.
    pub fn from_json(text: &str) -> Result<Report, ReadError> {
        /// Only the version, read first; every other key is ignored here.
        #[derive(Deserialize)]
        struct Version {
            schema_version: Option<serde_json::Value>,
        }
        let version: Version = serde_json::from_str(text)?;
        match version
            .schema_version
            .as_ref()
            .and_then(serde_json::Value::as_u64)
        {
            Some(found) if found != u64::from(SCHEMA_VERSION) => {
                return Err(ReadError::Version {
                    found,
                    expected: SCHEMA_VERSION,
                })
            }
            _ => {}
        }
        let report: Report = serde_json::from_str(text)?;
        validate(&report)?;
        Ok(report)
    }
}

/// The most named barriers a block can use on any architecture (ptxas's `bar` ids 0..=15).
pub(crate) const MAX_BARRIERS_PER_BLOCK: u32 = 16;

/// A value in a report that cannot be right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {problem}")]
#[non_exhaustive]
pub struct InvalidValue {
    /// Where: `kernels[3] (saxpy on sm_90).registers`.
    pub place: String,
    /// What is wrong with it, with the allowed range.
    pub problem: String,
}

/// Every limiter name the calculator writes.
const LIMITER_NAMES: [Limiter; 6] = Limiter::ALL;

/// Checks every value of `report`; the first bad one is the error.
pub(crate) fn validate(report: &Report) -> Result<(), InvalidValue> {
    for (index, name) in report.archs.iter().enumerate() {
        known_arch(name).map_err(|problem| InvalidValue {
            place: format!("archs[{index}]"),
            problem,
        })?;
    }
    for (index, row) in report.kernels.iter().enumerate() {
        validate_row(row).map_err(|(key, problem)| InvalidValue {
            place: format!("kernels[{index}] (`{}` on {}).{key}", row.name, row.arch),
            problem,
        })?;
    }
    for (index, finding) in report.findings.iter().enumerate() {
        validate_finding(finding).map_err(|(key, problem)| InvalidValue {
            place: format!("findings[{index}] ({}).{key}", finding.lint),
            problem,
        })?;
    }
    for (index, change) in report.baseline_changes.iter().enumerate() {
        validate_change(change).map_err(|(key, problem)| InvalidValue {
            place: format!("baseline_changes[{index}].{key}"),
            problem,
        })?;
    }
    Ok(())
}

fn validate_change(change: &BaselineChange) -> Result<(), (&'static str, String)> {
    if change.kernel.is_empty() {
        return Err(("kernel", "empty; every entry names its kernel".to_string()));
    }
    known_arch(&change.arch).map_err(|problem| ("arch", problem))?;
    Ok(())
}

fn known_arch(name: &str) -> Result<&'static ArchFacts, String> {
    arch::lookup(name).map_err(|_| {
        format!(
            "unknown architecture `{name}`; known: {}",
            arch::known_names()
        )
    })
}

/// `Err((key, problem))` for the first bad value of one row.
fn validate_row(row: &KernelRow) -> Result<(), (&'static str, String)> {
    if row.name.is_empty() {
        return Err(("name", "empty; every row names its kernel".to_string()));
    }
    let facts = known_arch(&row.arch).map_err(|problem| ("arch", problem))?;
    at_most(
        "registers",
        row.registers,
        facts.max_regs_per_thread_accepted,
    )?;
    at_most("barriers", row.barriers, MAX_BARRIERS_PER_BLOCK)?;
    at_most("blocks_per_sm", row.blocks_per_sm, facts.max_blocks_per_sm)?;
    at_most("warps_per_sm", row.warps_per_sm, facts.max_warps_per_sm)?;
    if let Some(percent) = row.carveout_percent {
        at_most("carveout_percent", percent, 100)?;
    }
    if row.entry && row.block == 0 {
        return Err(("block", "0 threads; a launch has at least 1".to_string()));
    }
    // The calculator counts shared memory in 32 bits; a larger value is no real kernel.
    let limit = u64::from(u32::MAX);
    at_most("static_smem_bytes", row.static_smem_bytes, limit)?;
    at_most("dynamic_smem_bytes", row.dynamic_smem_bytes, limit)?;
    if let Some(bytes) = row.max_dynamic_smem_bytes {
        at_most("max_dynamic_smem_bytes", bytes, limit)?;
    }
    if !(row.occupancy.is_finite() && (0.0..=1.0).contains(&row.occupancy)) {
        return Err((
            "occupancy",
            format!("{} is not a fraction from 0 to 1", row.occupancy),
        ));
    }
    for name in &row.limiters {
        if !LIMITER_NAMES.iter().any(|limiter| limiter.name() == name) {
            let known: Vec<&str> = LIMITER_NAMES.iter().map(|limiter| limiter.name()).collect();
            return Err((
                "limiters",
                format!("unknown limiter `{name}`; known: {}", known.join(", ")),
            ));
        }
    }
    Ok(())
}

fn validate_finding(finding: &Finding) -> Result<(), (&'static str, String)> {
    if let Some(name) = &finding.arch {
        known_arch(name).map_err(|problem| ("arch", problem))?;
    }
    if finding.message.trim().is_empty() {
        return Err(("message", "empty; a finding says what is wrong".to_string()));
    }
    Ok(())
}

fn at_most<T: PartialOrd + std::fmt::Display>(
    key: &'static str,
    value: T,
    limit: T,
) -> Result<(), (&'static str, String)> {
    if value > limit {
        return Err((
            key,
            format!("{value} is more than the largest possible, {limit}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::example_report;

    /// One edit that breaks a row.
    type Edit = Box<dyn FnOnce(&mut KernelRow)>;

    fn broken(edit: impl FnOnce(&mut KernelRow)) -> String {
        let mut report = example_report();
        edit(&mut report.kernels[0]);
        validate(&report).unwrap_err().to_string()
    }

    #[test]
    fn the_example_report_is_valid() {
        validate(&example_report()).unwrap();
    }

    #[test]
    fn each_out_of_range_value_is_named_with_its_row_and_key() {
        let cases: [(&str, Edit); 8] = [
            (
                ".arch: unknown architecture `sm_999`",
                Box::new(|row| row.arch = "sm_999".into()),
            ),
            (
                ".registers: 4294967295 is more",
                Box::new(|row| row.registers = u32::MAX),
            ),
            (".barriers: 17 is more", Box::new(|row| row.barriers = 17)),
            (
                ".blocks_per_sm: 33 is more",
                Box::new(|row| row.blocks_per_sm = 33),
            ),
            (
                ".occupancy: NaN is not a fraction",
                Box::new(|row| row.occupancy = f64::NAN),
            ),
            (
                ".occupancy: 1.5 is not",
                Box::new(|row| row.occupancy = 1.5),
            ),
            (
                ".dynamic_smem_bytes: 18446744073709551615 is more",
                Box::new(|row| row.dynamic_smem_bytes = u64::MAX),
            ),
            (
                ".limiters: unknown limiter `luck`",
                Box::new(|row| row.limiters = vec!["luck".into()]),
            ),
        ];
        for (expected, edit) in cases {
            let message = broken(edit);
            assert!(
                message.starts_with("kernels[0] (`") && message.contains(expected),
                "{expected}: {message}"
            );
        }
    }

    #[test]
    fn findings_name_known_archs() {
        let mut report = example_report();
        report.findings[0].arch = Some("sm_1".into());
        let message = validate(&report).unwrap_err().to_string();
        assert!(message.starts_with("findings[0] ("), "{message}");
        assert!(
            message.contains("unknown architecture `sm_1`; known: sm_50"),
            "{message}"
        );
    }
}
