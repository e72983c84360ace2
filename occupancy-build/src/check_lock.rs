//! The lock of `cargo occupancy check --lock FILE`: the build's baseline (`occupancy.lock`: the
//! same schema, strict reader, comparison and bless, `crate::baseline`) applied to what `check`
//! reads, every input alike: the compiled sources, each ptxas log and each binary is a *product*
//! (as a build script's `Build`s are), whose rows are recorded under their source (the `.cu` as
//! shown, the log, the binary's module: `libk.a(k.o)`, `k.fatbin`) with the toolchain that made
//! them (the local nvcc and ptxas and the nvcc arguments for sources; for a binary the ptxas its
//! cubins name, CUDA 13.0 and later, else `unknown`; for a log `unknown`). Worse numbers than the
//! lock are `regression`, anything else that differs `baseline_stale`, at the levels of `check`'s
//! command line; `--bless` writes the lock instead, merging as a build's bless does (entries of a
//! source or arch this check did not read are kept).
//!
//! Only what a check reads is judged: a source no input of this check has is neither compared
//! nor judged vanished (its file is not looked for: a binary's module names no file). Memory:
//! the numbers of every row (about a hundred bytes each), kept until the comparison at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_core::lint::evaluate::{resolve_level, LevelSources};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::{BaselineChangeKind, Finding, KernelRow, Location};

use crate::baseline::{changes, compare, insert_entry, Baseline, ToolchainStamp};
use crate::Error;

/// The lock a check compares with, and the products it read.
#[derive(Debug)]
pub struct CheckLock {
    path: PathBuf,
    /// What the file holds; `None` when it does not exist.
    committed: Option<Baseline>,
    /// A schema-1 file (rewritten as schema 2 by a bless).
    converted: bool,
    products: Vec<Product>,
}

/// One input's rows, as a baseline, and where each kernel's row is on each arch.
#[derive(Debug, Default)]
struct Product {
    current: Baseline,
    /// (source, kernel, arch) -> the row's location.
    places: BTreeMap<(String, String, String), Location>,
}

impl CheckLock {
    /// The lock at `path`, read strictly as a build reads its baseline (a file that is not
    /// exactly a lock is refused, naming the line); empty when the file does not exist.
    pub fn open(path: &Path) -> Result<CheckLock, Error> {
        let parsed = Baseline::load(path)?;
        Ok(CheckLock {
            path: path.to_path_buf(),
            converted: parsed
                .as_ref()
                .is_some_and(|parsed| parsed.schema_version != crate::baseline::SCHEMA_VERSION),
            committed: parsed.map(|parsed| parsed.baseline),
            products: Vec::new(),
        })
    }

    /// Whether the file exists.
    pub fn exists(&self) -> bool {
        self.committed.is_some()
    }

    /// A new product (one input of the check); its number for [`CheckLock::record`].
    pub fn product(&mut self) -> usize {
        self.products.push(Product::default());
        self.products.len() - 1
    }

    /// Records an entry row of `product` under `source`, made by `stamp` (the first row of an
    /// arch gives the arch's versions).
    pub fn record(
        &mut self,
        product: usize,
        source: &str,
        row: &KernelRow,
        stamp: &ToolchainStamp,
    ) {
        if !row.entry {
            return;
        }
        let product = &mut self.products[product];
        (product.current.toolchains)
            .entry(row.arch.clone())
            .or_insert_with(|| stamp.versions());
        let archs = (product.current.sources)
            .entry(source.to_owned())
            .or_default();
        insert_entry(archs, row, stamp);
        if let Some(place) = &row.source {
            (product.places)
                .entry((source.to_owned(), row.name.clone(), row.arch.clone()))
                .or_insert_with(|| place.clone());
        }
    }

    /// Every product against the lock: `regression` and `baseline_stale` findings at `levels`
    /// (each at its kernel's row on its arch), and the toolchain changes since the lock, one line
    /// each.
    pub fn compare(&self, levels: &BTreeMap<LintId, Level>) -> (Vec<Finding>, Vec<String>) {
        let Some(committed) = &self.committed else {
            return (Vec::new(), Vec::new());
        };
        let sources = LevelSources {
            crate_config: Some(levels),
            ..LevelSources::default()
        };
        let (mut findings, mut changes) = (Vec::new(), Vec::new());
        for product in &self.products {
            let comparison = compare(committed, &product.current, &BTreeSet::new());
            for line in comparison.toolchain_changes {
                if !changes.contains(&line) {
                    changes.push(line);
                }
            }
            for (at, finding) in comparison.findings {
                let place = at
                    .as_ref()
                    .zip(finding.arch.as_ref())
                    .and_then(|(at, arch)| {
                        let source = at.source.clone().unwrap_or_default();
                        let key = (source, at.kernel.clone(), arch.clone());
                        product.places.get(&key).cloned()
                    });
                findings.push(Finding {
                    lint: finding.lint,
                    level: resolve_level(finding.lint, &sources),
                    crate_name: None,
                    kernel: at.map(|at| at.kernel).filter(|kernel| !kernel.is_empty()),
                    arch: finding.arch,
                    message: finding.message,
                    notes: finding.notes,
                    help: Some(self.help(finding.lint)),
                    location: place,
                    reason: None,
                });
            }
        }
        (findings, changes)
    }

    /// What accepts a finding of the lock: a bless by `check`, not by `cargo build`.
    fn help(&self, lint: LintId) -> String {
        let lock = crate::fsutil::shown_path(&self.path);
        match lint {
            LintId::Regression => format!("fix the kernel, or accept the new numbers: run this check again with `--bless`, and commit {lock}"),
            _ => format!("record what the code compiles to now: run this check again with `--bless`, and commit {lock}"),
        }
    }

    /// Writes the lock: the committed entries, each product's replacing its sources' entries on
    /// the archs it read (`Baseline::blessed`, as a build's bless); says what changed.
    pub fn bless(&self) -> Result<String, Error> {
        let currents: Vec<Baseline> = (self.products.iter())
            .map(|product| product.current.clone())
            .collect();
        let blessed = Baseline::blessed(self.committed.clone(), &currents, &BTreeSet::new());
        crate::fsutil::write_atomic(&self.path, blessed.to_text().as_bytes())?;
        let root = self.path.parent().unwrap_or(Path::new("."));
        let step = changes::between(self.committed.as_ref(), &blessed, root);
        let count = |kind: BaselineChangeKind| step.iter().filter(|c| c.change == kind).count();
        let converted = match self.converted {
            true => " (a schema-1 lock, rewritten as schema 2)",
            false => "",
        };
        Ok(format!(
            "wrote the lock {}{converted}: {} added, {} changed, {} removed, {} restamped",
            crate::fsutil::shown_path(&self.path),
            count(BaselineChangeKind::Added),
            count(BaselineChangeKind::Changed) + count(BaselineChangeKind::Attributed),
            count(BaselineChangeKind::Removed),
            count(BaselineChangeKind::Restamped),
        ))
    }
}

/// The toolchain of rows the check did not compile (a binary's, a log's): the ptxas a cubin
/// names (`13.0.88`) as nvcc's and ptxas's version, else `unknown`; no flags.
pub fn recorded_toolchain(compiler: Option<&str>) -> ToolchainStamp {
    let version = compiler.unwrap_or("unknown").to_owned();
    ToolchainStamp {
        nvcc: version.clone(),
        ptxas: version,
        flags: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::report::LocationKind;

    fn row(name: &str, arch: &str, registers: u32, place: &str) -> KernelRow {
        let mut row = KernelRow::new(name, arch, 256);
        row.registers = registers;
        row.occupancy = 1.0;
        row.source = Some(Location {
            kind: LocationKind::Binary,
            path: place.to_owned(),
            line: 0,
            column: 0,
        });
        row
    }

    /// A bless writes what was read; the same rows then pass, more registers on one arch are a
    /// `regression` at that arch's row, and the entries of a source this check did not read
    /// are neither judged nor lost by a bless.
    #[test]
    fn a_blessed_lock_passes_the_same_rows_and_fails_worse_ones() {
        let dir = std::env::temp_dir().join(format!("occupancy-check-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("occupancy.lock");
        let _ = std::fs::remove_file(&path);
        let made_by = recorded_toolchain(Some("13.0.88"));
        let read = |lock: &mut CheckLock, registers: u32, sources: &[&str]| {
            for source in sources {
                let product = lock.product();
                for arch in ["sm_80", "sm_90"] {
                    let extra = u32::from(arch == "sm_90") * (registers - 32);
                    let place = format!("{source} {arch} cubin");
                    lock.record(
                        product,
                        source,
                        &row("k", arch, 32 + extra, &place),
                        &made_by,
                    );
                }
            }
        };
        let levels = BTreeMap::new();
        let mut lock = CheckLock::open(&path).unwrap();
        assert!(!lock.exists());
        read(&mut lock, 32, &["libk.a(a.o)", "libk.a(b.o)"]);
        assert!(lock.bless().unwrap().contains("4 added"));
        let mut lock = CheckLock::open(&path).unwrap();
        read(&mut lock, 32, &["libk.a(a.o)"]);
        assert_eq!(lock.compare(&levels), (Vec::new(), Vec::new()));
        let mut lock = CheckLock::open(&path).unwrap();
        read(&mut lock, 40, &["libk.a(a.o)"]);
        let (findings, changes) = lock.compare(&levels);
        assert!(changes.is_empty());
        assert_eq!(findings.len(), 1, "{findings:?}");
        let finding = &findings[0];
        assert_eq!(finding.lint, LintId::Regression);
        assert_eq!(finding.level, Level::Deny);
        assert_eq!(finding.arch.as_deref(), Some("sm_90"));
        assert_eq!(
            finding.location.as_ref().map(|at| at.path.as_str()),
            Some("libk.a(a.o) sm_90 cubin")
        );
        assert!(finding
            .notes
            .iter()
            .any(|note| note == "registers: 32 -> 40"));
        assert!(finding.help.as_deref().unwrap().contains("--bless"));
        lock.bless().unwrap();
        let kept = Baseline::load(&path).unwrap().unwrap().baseline;
        assert!(kept.sources.contains_key("libk.a(b.o)"), "not read, kept");
        let _ = std::fs::remove_dir_all(dir);
    }
}
