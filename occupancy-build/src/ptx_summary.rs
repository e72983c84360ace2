//! What the build reads from a PTX program, read from its text once per compile.
//!
//! The parse stage needs each `.entry`'s launch directives (and, for PTX with line information
//! or a `.ptx` source, where each kernel is defined); the SASS stage needs which kernels use an
//! operation a machine-code lint starts from (`call`, FP64, `setmaxnreg`). Both come from
//! scanning megabytes of PTX (10 MB on a 935-kernel crate), which a debug build script (how
//! cargo builds one) does several times slower than optimized code, and would do on every run
//! of the build script, whatever changed. So the first reader scans the text once for all of it and caches the answer beside
//! the compile's other products (`<role>.summary.json` in the cache entry); later runs, after a
//! Rust-only edit, read that small file instead. The cached summary names the PTX it was read
//! from by size and modification time, like the SASS facts (`crate::sass_stage`): a PTX compiled again
//! or written over is scanned again. The PTX itself is only ever read.

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::ptxas::{self, EntrySourceLine, PtxEntry};

use crate::compile::compiled::{CompiledSource, Program};
use crate::context::SourceKind;
use crate::Error;

/// Bumped whenever the scan reads the same PTX into another summary (2: each entry's dynamic
/// shared memory and `enable_smem_spilling` with the shared memory it declares; 3: several
/// directives on one line).
const SUMMARY_SCHEMA: u32 = 3;

/// The PTX operations whose kernels the SASS stage asks for (`crate::sass_stage`).
pub(crate) const OPERATIONS: [&str; 3] = ["call", "f64", "setmaxnreg"];

/// What one PTX program says before any assembly or disassembly.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PtxSummary {
    /// Every `.entry` with its launch directives, in the order of the text.
    pub entries: Vec<PtxEntry>,
    /// Where each kernel is defined, from the PTX's `.file`/`.loc` (empty without them).
    pub source_lines: BTreeMap<String, EntrySourceLine>,
    /// For a `.ptx` source: the 1-based line of each `.entry` in it.
    pub entry_lines: BTreeMap<String, u32>,
    /// Per operation of [`OPERATIONS`], the kernels whose code has it (none: absent).
    pub kernels_by_operation: BTreeMap<String, BTreeSet<String>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct SummaryFile {
    schema: u32,
    /// Which PTX was read: its size and modification time.
    ptx_stamp: String,
    summary: PtxSummary,
}

/// The summary of the PTX of `source`'s `program`: cached (when the program has a place for it,
/// `Program::summary`) or scanned now, once, and cached where the cache can be written. The
/// kernels' lines are read from the PTX only when it still has them (not stripped into
/// `source.kernel_lines`). An unreadable PTX is an error naming it.
pub(crate) fn summary(source: &CompiledSource, program: &Program) -> Result<PtxSummary, Error> {
    let stamp = crate::cache::file_stamp(&program.ptx)?;
    let cached = program.summary.as_deref().and_then(|path| {
        let file: SummaryFile = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        (file.schema == SUMMARY_SCHEMA && file.ptx_stamp == stamp).then_some(file.summary)
    });
    if let Some(summary) = cached {
        return Ok(summary);
    }
    let text = std::fs::read_to_string(&program.ptx).map_err(|error| Error::Io {
        path: program.ptx.clone(),
        error,
    })?;
    let summary = scan(&text, source.kind, source.kernel_lines.is_none());
    if let Some(path) = &program.summary {
        let file = SummaryFile {
            schema: SUMMARY_SCHEMA,
            ptx_stamp: stamp,
            summary,
        };
        let json = serde_json::to_vec(&file).expect("a PTX summary is plain data");
        // A cache that cannot be written (a read-only shared `--cache-dir`) costs the next run
        // a scan, nothing else.
        let _ = crate::fsutil::write_atomic(path, &json);
        return Ok(file.summary);
    }
    Ok(summary)
}

/// Reads everything [`PtxSummary`] holds from one PTX text; its kernels' lines only when it may
/// have them (`line_info`).
pub(crate) fn scan(text: &str, kind: SourceKind, line_info: bool) -> PtxSummary {
    let kernels_by_operation =
        occupancy_core::sass::ptx_entries_with_each_operation(text, &OPERATIONS)
            .into_iter()
            .map(|(operation, kernels)| (operation.to_owned(), kernels))
            .collect();
    PtxSummary {
        entries: ptxas::parse_ptx_directives(text),
        source_lines: if line_info {
            ptxas::entry_source_lines(text)
        } else {
            BTreeMap::new()
        },
        entry_lines: match kind {
            SourceKind::Ptx => entry_definition_lines(text),
            SourceKind::Cuda => BTreeMap::new(),
        },
        kernels_by_operation,
    }
}

/// The 1-based line of each `.entry` in a PTX text (one pass).
pub(crate) fn entry_definition_lines(ptx: &str) -> BTreeMap<String, u32> {
    let mut lines = BTreeMap::new();
    for (index, line) in ptx.lines().enumerate() {
        if let Some(name) = ptxas::entry_declared_on(line) {
            lines
                .entry(name.to_string())
                .or_insert(u32::try_from(index + 1).unwrap_or(u32::MAX));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    const PTX: &str = "\
.version 8.0
.target sm_80
.file 1 \"/src/k.cu\"
.visible .entry calls(
    .param .u64 p
)
.maxntid 256, 1, 1
{
    .loc 1 12 3
    call.uni helper, ();
    ret;
}
.visible .entry plain()
{
    add.f64 %fd1, %fd2, %fd3;
    ret;
}
";

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "occupancy-ptx-summary-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A program whose PTX is [`PTX`], written as `name` in `dir`.
    fn program_in(dir: &Path, name: &str, summary: Option<PathBuf>) -> Program {
        let ptx = dir.join(name);
        std::fs::write(&ptx, PTX).unwrap();
        Program {
            ptx_target: None,
            ptx,
            archs: vec!["sm_80".into()],
            summary,
        }
    }

    /// A compiled source of `kind` whose PTX kept its line information.
    fn compiled(kind: SourceKind) -> CompiledSource {
        let mut source = CompiledSource::for_tests(PathBuf::from("/src/k"), PathBuf::from("/k.o"));
        source.kind = kind;
        source
    }

    #[test]
    fn the_scan_reads_directives_lines_and_operations_in_one_summary() {
        let summary = scan(PTX, SourceKind::Ptx, true);
        let names: Vec<&str> = summary
            .entries
            .iter()
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(names, ["calls", "plain"]);
        assert_eq!(summary.entries[0].maxntid, Some(vec![256, 1, 1]));
        assert_eq!(summary.entry_lines.get("calls"), Some(&4));
        assert_eq!(
            summary.source_lines.get("calls").map(|line| line.line),
            Some(12)
        );
        let with = |operation: &str| summary.kernels_by_operation.get(operation).cloned();
        assert_eq!(with("call"), Some(BTreeSet::from(["calls".to_owned()])));
        assert_eq!(with("f64"), Some(BTreeSet::from(["plain".to_owned()])));
        assert_eq!(with("setmaxnreg"), None);
        assert!(scan(PTX, SourceKind::Cuda, true).entry_lines.is_empty());
        assert!(scan(PTX, SourceKind::Cuda, false).source_lines.is_empty());
    }

    #[test]
    fn a_cached_summary_is_used_only_for_the_ptx_it_was_read_from() {
        let dir = scratch("cache");
        let program = program_in(
            &dir,
            "k.ptx",
            Some(crate::compile::summary_path(&dir, "ptx")),
        );
        let ptx = program.ptx.clone();
        let first = summary(&compiled(SourceKind::Cuda), &program).unwrap();
        assert!(
            crate::compile::summary_path(&dir, "ptx").is_file(),
            "cached"
        );
        // A summary file that answers differently shows which one a second read used.
        let mut file: SummaryFile = serde_json::from_slice(
            &std::fs::read(crate::compile::summary_path(&dir, "ptx")).unwrap(),
        )
        .unwrap();
        file.summary.entries.clear();
        std::fs::write(
            crate::compile::summary_path(&dir, "ptx"),
            serde_json::to_vec(&file).unwrap(),
        )
        .unwrap();
        assert!(
            summary(&compiled(SourceKind::Cuda), &program)
                .unwrap()
                .entries
                .is_empty(),
            "the cache"
        );
        // The PTX written again (another size): scanned again, and the cache replaced.
        std::fs::write(&ptx, format!("{PTX}\n")).unwrap();
        assert_eq!(
            summary(&compiled(SourceKind::Cuda), &program).unwrap(),
            first
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn without_a_place_for_it_nothing_is_written_beside_the_ptx() {
        let dir = scratch("no-cache");
        let program = program_in(&dir, "user.ptx", None);
        assert_eq!(
            summary(&compiled(SourceKind::Ptx), &program).unwrap(),
            scan(PTX, SourceKind::Ptx, true)
        );
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["user.ptx"]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
