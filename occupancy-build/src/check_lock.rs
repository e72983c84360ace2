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
    /// The packages this run built (`OUT_DIR(k@0.1.0)`): a source under one that no input of
    /// the run has is a product that vanished ([`CheckLock::judge_vanished_under`]).
    owned: BTreeSet<String>,
    /// The names of the inputs this run read ([`CheckLock::saw`]), recorded or held back.
    seen: BTreeSet<String>,
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
            owned: BTreeSet::new(),
            seen: BTreeSet::new(),
        })
    }

    /// Judges the committed sources under `prefixes` (the packages this run built, as the lock
    /// names them: `OUT_DIR(k@0.1.0)`) whose product no input of the run has as vanished: a
    /// `baseline_stale` finding each, removed (and counted) by a bless. Sources under no prefix
    /// (a package this run did not build) are not judged.
    pub fn judge_vanished_under(&mut self, prefixes: BTreeSet<String>) {
        self.owned = prefixes;
    }

    /// An input of this run, by the name its rows are recorded under (`OUT_DIR(k@0.1.0)/k.ptx`,
    /// `OUT_DIR(k@0.1.0)/libk.a`): its sources (`libk.a(k.o)`) have not vanished.
    pub fn saw(&mut self, name: &str) {
        self.seen.insert(name.to_owned());
    }

    /// Renames the committed sources under `old` (`OUT_DIR(k)`, a lock keyed by package name)
    /// as under `new` (`OUT_DIR(k@0.1.0)`) where `new` has none of that name; how many. A bless
    /// writes them under `new`.
    pub fn rekey(&mut self, old: &str, new: &str) -> usize {
        let Some(committed) = &mut self.committed else {
            return 0;
        };
        let old_prefix = format!("{old}/");
        let moved: Vec<String> = (committed.sources.keys())
            .filter(|source| source.starts_with(&old_prefix))
            .cloned()
            .collect();
        let mut renamed = 0;
        for source in moved {
            let new_source = format!("{new}/{}", &source[old_prefix.len()..]);
            if committed.sources.contains_key(&new_source) {
                continue;
            }
            if let Some(entries) = committed.sources.remove(&source) {
                committed.sources.insert(new_source, entries);
                renamed += 1;
            }
        }
        renamed
    }

    /// Whether the lock has a source under one of `prefixes` (`OUT_DIR(k)`).
    pub fn has_sources_under(&self, prefixes: &[String]) -> bool {
        let committed = self.committed.iter().flat_map(|c| c.sources.keys());
        committed.into_iter().any(|source| {
            prefixes
                .iter()
                .any(|p| source.starts_with(&format!("{p}/")))
        })
    }

    /// The committed sources whose product vanished: under a package this run built, and
    /// neither recorded, nor an input it read, nor a member of one (`libk.a(k.o)` of `libk.a`).
    fn vanished(&self) -> BTreeSet<String> {
        let Some(committed) = &self.committed else {
            return BTreeSet::new();
        };
        let owned = |source: &str| {
            (self.owned.iter()).any(|prefix| {
                source
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
        };
        let recorded = |source: &str| {
            (self.products.iter()).any(|product| product.current.sources.contains_key(source))
        };
        let read = |source: &str| {
            recorded(source)
                || (self.seen.iter()).any(|name| {
                    source
                        .strip_prefix(name.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('('))
                })
        };
        (committed.sources.keys())
            .filter(|source| owned(source) && !read(source))
            .cloned()
            .collect()
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
        let gone = Product::default();
        let vanished = self.vanished();
        for (product, deleted) in (self.products.iter().map(|p| (p, BTreeSet::new())))
            .chain(std::iter::once((&gone, vanished)))
        {
            let comparison = compare(committed, &product.current, &deleted);
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
        let blessed = Baseline::blessed(self.committed.clone(), &currents, &self.vanished());
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
    /// Issue #42, class 7: under a package this run built (`OUT_DIR(k@0.1.0)`), a source whose
    /// product no input of the run has is judged vanished (`baseline_stale`) and removed and
    /// counted by a bless; another package's entries are neither; an entry keyed by the old
    /// name (`OUT_DIR(k)`) is read as the package's and rewritten by the bless.
    #[test]
    fn a_vanished_product_of_a_built_package_is_judged_and_removed() {
        let dir = std::env::temp_dir().join(format!(
            "occupancy-check-lock-vanish-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("occupancy.lock");
        let _ = std::fs::remove_file(&path);
        let made_by = recorded_toolchain(Some("13.0.88"));
        let sources = [
            "OUT_DIR(k)/a.ptx",
            "OUT_DIR(k)/b.ptx",
            "OUT_DIR(other@1.0.0)/c.ptx",
        ];
        let mut lock = CheckLock::open(&path).unwrap();
        for source in sources {
            let product = lock.product();
            lock.record(product, source, &row("k", "sm_80", 32, source), &made_by);
        }
        lock.bless().unwrap();

        let mut lock = CheckLock::open(&path).unwrap();
        assert_eq!(lock.rekey("OUT_DIR(k)", "OUT_DIR(k@0.1.0)"), 2);
        lock.judge_vanished_under(["OUT_DIR(k@0.1.0)".to_owned()].into());
        let product = lock.product();
        let kept = "OUT_DIR(k@0.1.0)/a.ptx";
        lock.saw(kept);
        lock.record(product, kept, &row("k", "sm_80", 32, kept), &made_by);
        let (findings, _) = lock.compare(&BTreeMap::new());
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].lint, LintId::BaselineStale);
        assert!(
            findings[0].message.contains("OUT_DIR(k@0.1.0)/b.ptx"),
            "{findings:?}"
        );
        let said = lock.bless().unwrap();
        assert!(said.contains("1 removed"), "{said}");
        let blessed = Baseline::load(&path).unwrap().unwrap().baseline;
        let keys: Vec<&str> = blessed.sources.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["OUT_DIR(k@0.1.0)/a.ptx", "OUT_DIR(other@1.0.0)/c.ptx"]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
