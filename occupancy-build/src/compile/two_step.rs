//! Line information without its price in what ships or in ptxas: a `compile_ptx` source's PTX
//! is made with `-lineinfo` once, the build ships it stripped of `.loc`/`.file`/`.section
//! .debug_*`, and ptxas assembles the stripped PTX.
//!
//! `-lineinfo` is needed for where each kernel is defined (the PTX's `.file`/`.loc`) and for the
//! SASS stage's source lines (the cubins' line tables), but it nearly doubles the shipped PTX
//! (5.4 to 9.5 MB for a quantized-kernel file, which users embed with `include_str!` and the
//! driver JIT-compiles), and line tables cost ptxas about 3.5% more on every arch (19.7 vs
//! 20.4 s of ptxas CPU over the generated 935-kernel crate, sm_80 + sm_90, twice). So a `.cu` of
//! a `compile_ptx` build is compiled in two nvcc steps (with no compiler cache in front, or
//! sccache, whose compilers run nvcc's steps: `crate::compile::steps`):
//!
//! 1. `nvcc -ptx -arch=compute_<lowest> -lineinfo --keep ... -o <stem>.lineinfo.ptx` (cicc
//!    once; the `.cpp1.ii` it keeps lists the headers read, as before);
//! 2. [`strip`]: `<stem>.ptx`, the shipped PTX ([`occupancy_core::ptxas::strip_line_info`]), and
//!    the kernels' definition lines (`kernel_lines.json`), from one read of the `-lineinfo` PTX;
//! 3. `nvcc -fatbin -arch=compute_<lowest> -code=sm_<a>,... -Xptxas -v [user args] <stem>.ptx`:
//!    ptxas's report and the fatbin, from exactly the PTX that ships.
//!
//! ptxas assembles the stripped PTX into the same SASS as the `-lineinfo` PTX (compared on the
//! corpus, `occupancy-build/tests/line_info.rs`). Only the SASS lints about local memory (a
//! spill's or a local array's line, the loop it is in) need line tables, so the `-lineinfo` PTX
//! stays in the cache entry and the SASS stage assembles, per arch, a module of just the kernels
//! it reads that use local memory there (`crate::line_table_cubins`); every other kernel is read from
//! the fatbin. nvcc gives ptxas the same options for a `.ptx` input as for the `.cu`
//! (`-maxrregcount`, `-Xptxas`, `-fmad=false`, `-w`, `-Werror`, `-rdc`, checked with `nvcc
//! -dryrun`, nvcc 13.0) and ignores cicc's (`-I`, `-D`, `-std`, `--use_fast_math`, `-O3`), so
//! the user's arguments go to both steps unchanged.
//!
//! Reassembling a kernel costs what assembling it did, so a source whose previous compile
//! spilled in many kernels (the SASS stage reads every spilling kernel, with lines) is compiled
//! in one step instead, ptxas making line tables for all ([`spills_are_common`]); either way
//! ships the same PTX and gets the same report, so both share one cache slot.
//!
//! Under another compiler cache, run as one nvcc command (as sccache 0.16 would be, which
//! refuses `.ptx` inputs), the one-step compile runs (`nvcc -fatbin -lineinfo --keep ...`) and
//! its kept PTX is stripped after ([`strip_kept`]): the same PTX ships, and the fatbin keeps its
//! line tables for the SASS stage.
//! `ptx_per_arch`, `compile_lib` and `-G` compile in one step and ship what nvcc made.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use occupancy_core::ptxas;

use super::settings::{arch_args, device_debug, file_stem, CompileSettings, Product};
use crate::context::SourceKind;
use crate::Error;

/// The cache role of the `-lineinfo` PTX the shipped PTX was stripped from (two-step compiles).
pub(crate) const LINEINFO_ROLE: &str = "ptx_lineinfo";
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

/// Whether the source is compiled in two steps (cicc, then ptxas on the stripped PTX): when it
/// strips, and either no compiler cache runs nvcc or it is sccache, whose steps run one by one
/// (`crate::compile::steps`: sccache run as one nvcc command refuses a `.ptx` input).
pub(crate) fn two_steps(settings: &CompileSettings, kind: SourceKind) -> bool {
    strips(settings, kind)
        && (settings.toolchain.wrapper.is_none()
            || super::steps::runs_in_steps(&settings.toolchain))
}

/// Whether ptxas should make line tables for every kernel, from the previous compile of the
/// source (its ptxas report, `previous_log`): when at least 1 in 100 of its kernel records
/// spilled. The SASS stage reads every spilling kernel, with its lines, so in two steps each is
/// assembled a second time; line tables for all cost ptxas about 3.5% more, and spilling
/// kernels are larger than most, so from that share on one step costs less. (Kernels with only a
/// stack frame are read when a lint asks, which the compile cannot know; they do not count.) A
/// file under work on its spills is compiled again and again: its first compile pays for the
/// second assembly once (the kernel corpus's `spills.cu`: 0.53 s of line-table ptxas for its
/// 0.69 s), and the later ones do not. A file with one spilling kernel among 156 (the generated
/// crate's `quantized.cu`) stays in two steps.
pub(crate) fn spills_are_common(previous_log: &str) -> bool {
    let Ok(report) = ptxas::parse_log(previous_log) else {
        return false;
    };
    let kernels = report.kernels.iter().filter(|record| record.entry);
    let (records, spilled) = kernels.fold((0usize, 0usize), |(records, spilled), record| {
        let spills = record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0);
        (records + 1, spilled + usize::from(spills > 0))
    });
    records > 0 && spilled * 100 >= records
}

/// The two nvcc commands of a two-step compile (module docs); [`strip`] runs between them.
/// The user's arguments go to both: nvcc passes to ptxas what concerns it.
pub(crate) fn two_step_args(
    settings: &CompileSettings,
    source: &Path,
    work: &Path,
) -> Vec<Vec<OsString>> {
    let stem = file_stem(source);
    let arch = arch_args(settings, false);
    let mut cicc: Vec<OsString> = vec!["-ptx".into()];
    cicc.extend(arch.iter().take(1).cloned());
    cicc.extend([
        "-lineinfo".into(),
        "--keep".into(),
        "--keep-dir".into(),
        work.as_os_str().to_owned(),
        "-o".into(),
        lineinfo_path(work, &stem).into_os_string(),
    ]);
    cicc.extend(settings.user_args.iter().cloned());
    cicc.push(source.as_os_str().to_owned());
    let mut assemble: Vec<OsString> = vec!["-fatbin".into()];
    assemble.extend(arch);
    assemble.extend([
        "-Xptxas".into(),
        "-v".into(),
        "-o".into(),
        work.join(format!("{stem}.fatbin")).into_os_string(),
    ]);
    assemble.extend(settings.user_args.iter().cloned());
    assemble.push(shipped_path(work, &stem).into_os_string());
    vec![cicc, assemble]
}

/// `<work>/<stem>.lineinfo.ptx`: cicc's PTX with its line information.
fn lineinfo_path(work: &Path, stem: &str) -> PathBuf {
    work.join(format!("{stem}.lineinfo.ptx"))
}

/// `<work>/<stem>.ptx`: the PTX that ships.
fn shipped_path(work: &Path, stem: &str) -> PathBuf {
    work.join(format!("{stem}.ptx"))
}

/// The kernels' definition lines, as JSON, in `work` and in the cache entry.
const KERNEL_LINES_FILE: &str = "kernel_lines.json";

/// Reads the line-info PTX (`<stem>.lineinfo.ptx` in `work`) once and writes the shipped PTX
/// (`<stem>.ptx`) and the kernels' definition lines (`kernel_lines.json`) beside it; an
/// unreadable PTX names `source`.
pub(crate) fn strip(source: &Path, work: &Path, stem: &str) -> Result<(), Error> {
    let lineinfo = lineinfo_path(work, stem);
    let text = std::fs::read_to_string(&lineinfo).map_err(|error| Error::UnreadableOutput {
        file: source.to_path_buf(),
        message: format!(
            "nvcc succeeded but its -lineinfo PTX ({}) cannot be read: {error}",
            lineinfo.display()
        ),
    })?;
    let lines = ptxas::entry_source_lines(&text);
    let json = serde_json::to_vec(&lines).expect("source lines are plain data");
    crate::fsutil::write_atomic(&work.join(KERNEL_LINES_FILE), &json)?;
    crate::fsutil::write_atomic(
        &shipped_path(work, stem),
        ptxas::strip_line_info(&text).as_bytes(),
    )
}

/// After a one-step compile that strips (under a compiler cache): the `-lineinfo` PTX that
/// `--keep` left (`<stem>.ptx`) becomes `<stem>.lineinfo.ptx`, then [`strip`] writes the shipped
/// `<stem>.ptx` from it.
pub(crate) fn strip_kept(source: &Path, work: &Path, stem: &str) -> Result<(), Error> {
    let kept = shipped_path(work, stem);
    let lineinfo = lineinfo_path(work, stem);
    std::fs::rename(&kept, &lineinfo).map_err(|error| Error::UnreadableOutput {
        file: source.to_path_buf(),
        message: format!(
            "nvcc succeeded but the PTX kept by --keep ({}) cannot be moved: {error}",
            kept.display()
        ),
    })?;
    strip(source, work, stem)
}

/// The products a stripping compile adds to its cache entry, moved from `work` into `entry`:
/// the kernels' definition lines and, when the binary was assembled from the stripped PTX
/// (`keep_lineinfo`), the `-lineinfo` PTX for the SASS stage's line tables. Returns (role, file
/// name).
pub(crate) fn products(
    work: &Path,
    entry: &Path,
    stem: &str,
    keep_lineinfo: bool,
) -> Result<Vec<(String, String)>, Error> {
    let mut moves = vec![(KERNEL_LINES_ROLE, work.join(KERNEL_LINES_FILE))];
    if keep_lineinfo {
        moves.push((LINEINFO_ROLE, lineinfo_path(work, stem)));
    }
    let mut products = Vec::new();
    for (role, from) in moves {
        let name = from
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        std::fs::rename(&from, entry.join(&name)).map_err(|error| Error::Io {
            path: entry.join(&name),
            error,
        })?;
        products.push((role.to_owned(), name));
    }
    Ok(products)
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
