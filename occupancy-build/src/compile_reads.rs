//! The read stage around parse: what the parse stage needs of a compile's files, read into
//! typed values, so that `parse.rs` does no I/O and runs no process (docs/architecture.md).
//! `pipeline::parse_stage` orders the two halves:
//! - before parse, [`read_files`]: each program's PTX summary (`crate::ptx_summary`, cached in
//!   the compile's entry) and a stripping compile's kernel lines (`kernel_lines.json`);
//! - between the parse's two halves, [`read_wanted`]: what the reports left open
//!   (`parse::Wants`), the records of the compile's own binary (`crate::own_binary`: cuobjdump
//!   and the cubin reader) and a `.cu` source's text for the kernels without `-lineinfo`.
//!
//! Each source's read is its own `Result`, handed to the parse stage, which meets the error
//! where it met it when it read the files itself: the first source's error first.

use std::path::Path;

use crate::compile::CompiledSource;
use crate::own_binary::BinaryTools;
use crate::parse::{SourceFiles, WantedReads};
use crate::Error;

/// What the read stage may read from a compile's binary.
#[derive(Debug, Clone, Default)]
pub(crate) struct BinaryReads {
    pub(crate) tools: BinaryTools,
    /// A declaration sets a constant-memory budget (`max_const_bytes`): the constant banks
    /// ptxas does not print (sm_90 and later) are read from the cubins.
    pub(crate) constant_banks: bool,
}

/// Every compiled source's files: its programs' PTX summaries and its kernel lines.
pub(crate) fn read_files(compiled: &[CompiledSource]) -> Vec<Result<SourceFiles, Error>> {
    compiled.iter().map(source_files).collect()
}

fn source_files(source: &CompiledSource) -> Result<SourceFiles, Error> {
    let kernel_lines = match &source.kernel_lines {
        Some(path) => Some(crate::compile::two_step::read_kernel_lines(
            &source.source,
            path,
        )?),
        None => None,
    };
    let summaries = (source.programs.iter())
        .map(|program| crate::ptx_summary::summary(source, program))
        .collect::<Result<_, _>>()?;
    Ok(SourceFiles {
        summaries,
        kernel_lines,
    })
}

/// Per source, what its `wants` ask for: the binary's records of those kernels x archs (read
/// in a private directory under `scratch`, the build's `OUT_DIR`), and the source's text.
pub(crate) fn read_wanted(
    compiled: &[CompiledSource],
    wants: &[crate::parse::Wants],
    tools: &BinaryTools,
    scratch: &Path,
) -> Vec<Result<WantedReads, Error>> {
    compiled
        .iter()
        .zip(wants)
        .map(|(source, wants)| {
            let binary_records = match (&source.binary, wants.binary.is_empty()) {
                (Some(binary), false) => {
                    let mut records =
                        crate::own_binary::records(binary, &source.source, tools, scratch)?;
                    records.retain(|record| {
                        wants
                            .binary
                            .contains(&(record.name.clone(), record.arch.clone()))
                    });
                    records
                }
                _ => Vec::new(),
            };
            // Unreadable: no line is found in it, as in a source without the kernel.
            let source_text = (wants.source_text)
                .then(|| std::fs::read_to_string(&source.source).unwrap_or_default());
            Ok(WantedReads {
                binary_records,
                source_text,
            })
        })
        .collect()
}
