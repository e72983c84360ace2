//! Line information without its price in what ships: a `compile_ptx` source is compiled with
//! `-lineinfo` once, and the build ships its PTX stripped of `.loc`/`.file`/`.section .debug_*`.
//!
//! `-lineinfo` is needed for where each kernel is defined (the PTX's `.file`/`.loc`) and for the
//! SASS stage's source lines (the cubins' line tables), but it nearly doubles the PTX (5.4 to
//! 9.5 MB for a quantized-kernel file), which users embed with `include_str!` and the driver
//! JIT-compiles. So after the one compile (`nvcc -fatbin -lineinfo --keep ...`), [`strip_kept`]
//! reads the kept PTX once into the shipped PTX ([`occupancy_core::ptxas::strip_line_info`]) and
//! the kernels' definition lines (`kernel_lines.json` in the cache entry). ptxas makes the same
//! SASS of the stripped PTX as of the `-lineinfo` one (compared on the corpus,
//! `occupancy-build/tests/line_info.rs`): what the driver JIT-compiles from the shipped PTX is
//! what was checked, and the fatbin (never shipped) keeps its line tables for the SASS stage.
//!
//! Compiling in two steps instead (cicc with `-lineinfo`, then ptxas on the stripped PTX, and
//! line-table cubins of just the kernels the SASS stage reads) saves ptxas its line tables but
//! compiles those kernels twice: 2% less CPU on the generated 935-kernel crate, 20% more on the
//! kernel corpus, where the stage reads nearly every kernel (docs/build.md), so it is not done.
//! `ptx_per_arch`, `compile_lib` and `-G` compile as before and ship what they did.

use std::path::Path;

use occupancy_core::ptxas;

use crate::compile::{device_debug, CompileSettings, Product, SourceKind};
use crate::Error;

/// The cache role of the kernels' definition lines (JSON, [`ptxas::EntrySourceLine`] by name).
pub(crate) const KERNEL_LINES_ROLE: &str = "kernel_lines";

/// Whether the PTX that ships is stripped of its line information: a `.cu` of `compile_ptx`
/// (one PTX for every arch, no `-G`).
pub(crate) fn strips(settings: &CompileSettings, kind: SourceKind) -> bool {
    kind == SourceKind::Cuda
        && settings.product == Product::Ptx
        && !settings.ptx_per_arch
        && !device_debug(settings)
}

/// The kernels' definition lines, as JSON, in `work` and in the cache entry.
const KERNEL_LINES_FILE: &str = "kernel_lines.json";

/// After a compile that strips: reads the `-lineinfo` PTX `--keep` left (`<stem>.ptx` in
/// `work`) once, writes the kernels' definition lines (`kernel_lines.json`) beside it and
/// replaces it with its stripped text, the PTX that ships. An unreadable PTX names `source`.
pub(crate) fn strip_kept(source: &Path, work: &Path, stem: &str) -> Result<(), Error> {
    let kept = work.join(format!("{stem}.ptx"));
    let text = std::fs::read_to_string(&kept).map_err(|error| Error::UnreadableOutput {
        file: source.to_path_buf(),
        message: format!(
            "nvcc succeeded but the PTX kept by --keep ({}) cannot be read: {error}",
            kept.display()
        ),
    })?;
    let lines = ptxas::entry_source_lines(&text);
    let json = serde_json::to_vec(&lines).expect("source lines are plain data");
    crate::fsutil::write_atomic(&work.join(KERNEL_LINES_FILE), &json)?;
    crate::fsutil::write_atomic(&kept, ptxas::strip_line_info(&text).as_bytes())
}

/// The product a stripping compile adds to its cache entry, moved from `work` into `entry`: the
/// kernels' definition lines. Returns (role, file name).
pub(crate) fn products(work: &Path, entry: &Path) -> Result<Vec<(String, String)>, Error> {
    let to = entry.join(KERNEL_LINES_FILE);
    std::fs::rename(work.join(KERNEL_LINES_FILE), &to)
        .map_err(|error| Error::Io { path: to, error })?;
    Ok(vec![(
        KERNEL_LINES_ROLE.to_owned(),
        KERNEL_LINES_FILE.to_owned(),
    )])
}

/// Where each kernel of a stripping compile is defined, from its entry's `kernel_lines.json`.
pub(crate) fn read_kernel_lines(
    source: &Path,
    path: &Path,
) -> Result<std::collections::BTreeMap<String, ptxas::EntrySourceLine>, Error> {
    let bytes = crate::fsutil::read(path)?;
    serde_json::from_slice(&bytes).map_err(|error| Error::UnreadableOutput {
        file: source.to_path_buf(),
        message: format!(
            "the kernels' lines {} do not parse: {error}",
            path.display()
        ),
    })
}
