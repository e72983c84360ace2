//! Checking compiled kernels against their declarations (filled in as the core modules land).

use crate::compile::CompiledSource;
use crate::engine::{CargoLines, Context};
use crate::report::{Report, SourceReport};
use crate::toolchain::Toolchain;
use crate::{Build, Error};

/// Builds the report for the compiled sources.
pub fn check(
    _build: &Build,
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    _cargo: &mut CargoLines,
) -> Result<Report, Error> {
    let mut report = Report::empty(context, toolchain);
    for source in compiled {
        report.sources.push(SourceReport {
            path: source.source.display().to_string(),
            from_cache: source.from_cache,
        });
    }
    Ok(report)
}
