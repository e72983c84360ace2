//! The build's report: an [`occupancy_core::report::Report`] (the one report model that
//! `cargo occupancy report/check/explain` and every renderer read), filled with the build's
//! context here and with kernels and findings by the check, written as JSON to
//! `$OUT_DIR/occupancy.json` and `target/occupancy/<crate>.json`.
//!
//! This module defines no schema of its own: the JSON is `occupancy_core::report::render_json`.

use std::path::{Path, PathBuf};

pub use occupancy_core::report::Report;

use crate::context::Context;
use crate::fsutil::write_atomic;
use crate::Error;

/// A report with the build's context (crate, archs, where they came from) and nothing checked
/// yet; `skipped` says why nothing will be.
pub fn for_build(
    context: &Context,
    cuda_release: Option<String>,
    skipped: Option<String>,
) -> Report {
    Report {
        crate_name: Some(context.crate_name.clone()),
        cuda_release,
        archs: context.archs.iter().map(ToString::to_string).collect(),
        arch_source: Some(context.arch_source.as_str().to_string()),
        skipped,
        ..Report::default()
    }
}

/// Replaces the build's reports with one that says the build failed and why, so the last good
/// run's numbers do not stand in for a build that did not check anything.
pub fn write_failed(context: &Context, why: &str) -> Result<(), Error> {
    let mut report = for_build(context, None, None);
    report.failed = Some(why.to_string());
    write_reports(context, &report)
}

/// The first line of an error, for a report's `failed` (the whole message goes to the build's
/// stderr).
pub fn failure_summary(error: &Error) -> String {
    let text = error.to_string();
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("the build failed");
    line.strip_prefix("occupancy-build: ")
        .unwrap_or(line)
        .to_string()
}

/// Writes `$OUT_DIR/occupancy.json` and `target/occupancy/<crate>.json` atomically.
pub fn write_reports(context: &Context, report: &Report) -> Result<(), Error> {
    let text = occupancy_core::report::render_json(report);
    write_atomic(&context.out_dir.join("occupancy.json"), text.as_bytes())?;
    if let Some(target_dir) = target_dir(&context.out_dir) {
        write_atomic(
            &target_dir
                .join("occupancy")
                .join(format!("{}.json", context.crate_name)),
            text.as_bytes(),
        )?;
    }
    Ok(())
}

/// The cargo target directory above `OUT_DIR` (`<target>[/<triple>]/<profile>/build/<pkg>/out`):
/// the nearest ancestor with cargo's `CACHEDIR.TAG`, else the profile directory's parent.
pub fn target_dir(out_dir: &Path) -> Option<PathBuf> {
    let build_dir = out_dir
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "build"))?;
    let profile_dir = build_dir.parent()?;
    profile_dir
        .ancestors()
        .skip(1)
        .take(2)
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .map(Path::to_path_buf)
        .or_else(|| profile_dir.parent().map(Path::to_path_buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_is_found_above_out_dir() {
        let root = std::env::temp_dir().join(format!("occupancy-target-{}", std::process::id()));
        let out = root.join("target/debug/build/k-123/out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(root.join("target/CACHEDIR.TAG"), "").unwrap();
        assert_eq!(target_dir(&out), Some(root.join("target")));
        let cross = root.join("target/x86_64-unknown-linux-gnu/release/build/k-1/out");
        std::fs::create_dir_all(&cross).unwrap();
        assert_eq!(target_dir(&cross), Some(root.join("target")));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn arch_source_names_are_the_serde_names() {
        use crate::targets::ArchSource;
        for source in [
            ArchSource::Builder,
            ArchSource::OccupancyArchsEnv,
            ArchSource::CudaComputeCapEnv,
            ArchSource::Metadata,
            ArchSource::InstalledGpu,
            ArchSource::Default,
        ] {
            assert_eq!(
                serde_json::to_value(source).unwrap(),
                serde_json::Value::from(source.as_str())
            );
        }
    }
}
