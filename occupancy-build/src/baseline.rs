//! The committed baseline (`occupancy.lock`): each kernel's registers, spills, stack, static
//! shared memory and occupancy per architecture, grouped by the source whose compile made them,
//! with the toolchain that produced them. JSON with sorted keys, so a diff of the file reads like
//! the change.
//!
//! ```json
//! { "schema_version": 2,
//!   "toolchains": { "sm_90": { "nvcc": "13.0.88", "ptxas": "13.0.88" } },
//!   "sources": { "kernels/affine.cu": { "sm_90": { "flags": ["-O3"],
//!                                                   "kernels": { "affine_f32": { ... } } } } } }
//! ```
//!
//! A crate's build script may run several `Build`s (PTX and a static library), each a product
//! with its own sources and flags. Each product is compared on its own ([`compare`]): its
//! sources' entries on the archs it built; entries of a source no product of this run compiled
//! yet are not judged (a later `Build` may compile it), those of a source that no longer exists
//! are, by the first `Build` that compares. nvcc's and ptxas's versions are recorded per arch,
//! the flags per source and arch, so a regression names the toolchain change that may explain
//! it. A bless ([`Baseline::blessed`]) merges every product of the run.
//!
//! The baseline is two-way: worse than the file is the `regression` lint, anything else that
//! differs (better numbers, a new or vanished kernel, another toolchain) is `baseline_stale`, so
//! the committed file always equals what the code compiles to. `OCCUPANCY_BLESS=1` rewrites the
//! entries of the sources and archs it rebuilt, keeps every other one, and lists every entry it
//! added, changed or removed ([`changes`]). A lock is read strictly ([`read`]): one that is not
//! exactly what a bless writes is refused with the line and what is wrong. A schema-1 lock
//! (kernels by name, no sources) is read, its entries compared by kernel name, and rewritten as
//! schema 2 by the next bless.
//!
//! The numbers are a committed excerpt of the build's report, not a second computation: they are
//! read from the report's rows ([`Baseline::of_report`], [`numbers_of`]).

use crate::cargo_lines::CargoLines;
use crate::context::Context;
use crate::declarations::Declarations;
use crate::fsutil::display_path;
use crate::levels::{Gathered, Levels};
use crate::matching::Matching;
use crate::parse::CompiledKernel;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::lint::evaluate::BaselineNumbers;
use occupancy_core::report::{BaselineChange, KernelRow, Report};
use serde::Serialize;

use crate::toolchain::Toolchain;
use crate::Error;

pub(crate) mod changes;
mod compare;
pub(crate) mod read;
use crate::lock_schema as schema;

pub use compare::{compare, KernelAt};
pub use read::{parse, ParseError, Parsed};
pub use schema::SCHEMA_VERSION;

/// The baseline file's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    pub schema_version: u32,
    /// Arch -> the nvcc and ptxas whose output the arch's numbers are.
    pub toolchains: BTreeMap<String, Versions>,
    /// Compiled source (as the report's `sources` name it) -> arch -> its flags and kernels.
    pub sources: BTreeMap<String, BTreeMap<String, ArchEntries>>,
    /// Arch -> entries read from a schema-1 lock whose source is not known yet: compared by
    /// kernel name, moved under their source by the bless that compiles their kernel.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unattributed: BTreeMap<String, ArchEntries>,
}

impl Default for Baseline {
    fn default() -> Self {
        Baseline {
            schema_version: SCHEMA_VERSION,
            toolchains: BTreeMap::new(),
            sources: BTreeMap::new(),
            unattributed: BTreeMap::new(),
        }
    }
}

/// The compilers of one arch's numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Versions {
    /// `13.0.88` from nvcc's `V13.0.88`.
    pub nvcc: String,
    /// `13.0.88` from ptxas's `V13.0.88`.
    pub ptxas: String,
}

/// One source's kernels on one arch, and the flags they were compiled with.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ArchEntries {
    /// The flags of the `Build` that compiled them ([`ToolchainStamp::flags`]).
    pub flags: Vec<String>,
    /// Kernel symbol -> numbers.
    pub kernels: BTreeMap<String, BaselineNumbers>,
}

/// What decides the compiled code besides the source: the compiler versions and the flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolchainStamp {
    /// `13.0.88` from nvcc's `V13.0.88`.
    pub nvcc: String,
    /// `13.0.88` from ptxas's `V13.0.88`.
    pub ptxas: String,
    /// The builder's flags and defines, then `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS`
    /// (include paths are left out: they name the machine, not the code).
    pub flags: Vec<String>,
}

impl ToolchainStamp {
    /// The stamp of this build: versions asked from the tools, and the flags the build
    /// resolved (`Context::stamped_flags`).
    pub fn of(flags: &[String], toolchain: &Toolchain) -> ToolchainStamp {
        ToolchainStamp {
            nvcc: toolchain.nvcc_version(),
            ptxas: toolchain.ptxas_version(),
            flags: flags.to_vec(),
        }
    }

    /// The versions of the stamp.
    pub fn versions(&self) -> Versions {
        Versions {
            nvcc: self.nvcc.clone(),
            ptxas: self.ptxas.clone(),
        }
    }

    /// `nvcc 13.0.88 -> 13.5.37, flags [-O3] -> [-O2]`: what differs from `earlier` to `self`.
    pub fn change_from(&self, earlier: &ToolchainStamp) -> String {
        [
            self.versions_change_from(earlier),
            self.flags_change_from(earlier),
        ]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// `nvcc 13.0.88 -> 13.5.37` (and ptxas when it moved apart from nvcc); empty when equal.
    pub fn versions_change_from(&self, earlier: &ToolchainStamp) -> String {
        let mut parts = Vec::new();
        if earlier.nvcc != self.nvcc {
            parts.push(format!("nvcc {} -> {}", earlier.nvcc, self.nvcc));
        }
        if earlier.ptxas != self.ptxas && (earlier.ptxas != earlier.nvcc || self.ptxas != self.nvcc)
        {
            parts.push(format!("ptxas {} -> {}", earlier.ptxas, self.ptxas));
        }
        parts.join(", ")
    }

    /// `flags [-O3] -> [-O2]`; empty when equal.
    pub fn flags_change_from(&self, earlier: &ToolchainStamp) -> String {
        if earlier.flags == self.flags {
            return String::new();
        }
        format!(
            "flags [{}] -> [{}]",
            earlier.flags.join(" "),
            self.flags.join(" ")
        )
    }
}

/// Records `row`'s numbers in its arch's entries (made with `stamp`'s flags for the first row
/// of an arch): the one way a lock entry is written, by a build's baseline and by `check`'s lock.
pub(crate) fn insert_entry(
    archs: &mut BTreeMap<String, ArchEntries>,
    row: &KernelRow,
    stamp: &ToolchainStamp,
) {
    archs
        .entry(row.arch.clone())
        .or_insert_with(|| ArchEntries {
            flags: stamp.flags.clone(),
            kernels: BTreeMap::new(),
        })
        .kernels
        .insert(row.name.clone(), numbers_of(row));
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
        chosen_bounds: row.tuning.as_ref().map(|tuning| tuning.chosen),
    }
}

impl Baseline {
    /// The baseline of one product's report: every entry kernel on every architecture it was
    /// checked on, under the source that compiled it, with the product's flags; every source it
    /// compiled is a key (with no arch when it has no kernel), every arch it checked a toolchain.
    pub fn of_report(report: &Report, stamp: &ToolchainStamp) -> Baseline {
        let mut baseline = Baseline::default();
        let versions = stamp.versions();
        for arch in &report.archs {
            baseline.toolchains.insert(arch.clone(), versions.clone());
        }
        for source in &report.sources {
            baseline.sources.entry(source.path.clone()).or_default();
        }
        for row in report.kernels.iter().filter(|row| row.entry) {
            let archs = match &row.compiled_from {
                Some(source) => baseline.sources.entry(source.clone()).or_default(),
                None => &mut baseline.unattributed,
            };
            insert_entry(archs, row, stamp);
            baseline
                .toolchains
                .entry(row.arch.clone())
                .or_insert_with(|| versions.clone());
        }
        baseline
    }

    /// Every (source, arch, entries); `None` is [`Baseline::unattributed`].
    pub fn groups(&self) -> impl Iterator<Item = (Option<&str>, &str, &ArchEntries)> {
        let sourced = self.sources.iter().flat_map(|(source, archs)| {
            archs
                .iter()
                .map(move |(arch, entries)| (Some(source.as_str()), arch.as_str(), entries))
        });
        let unattributed = self
            .unattributed
            .iter()
            .map(|(arch, entries)| (None, arch.as_str(), entries));
        sourced.chain(unattributed)
    }

    /// The entries of `source` on `arch` (`None`: the unattributed ones).
    pub fn entries(&self, source: Option<&str>, arch: &str) -> Option<&ArchEntries> {
        match source {
            Some(source) => self.sources.get(source)?.get(arch),
            None => self.unattributed.get(arch),
        }
    }

    /// The committed numbers of `kernel` on `arch` compiled from `source`: its source's entry,
    /// else a schema-1 entry of that name; with where it was found.
    pub fn committed<'a>(
        &'a self,
        source: Option<&str>,
        arch: &str,
        kernel: &str,
    ) -> Option<(Option<&'a str>, &'a BaselineNumbers)> {
        let sourced = source.and_then(|source| {
            let (source, archs) = self.sources.get_key_value(source)?;
            let numbers = archs.get(arch)?.kernels.get(kernel)?;
            Some((Some(source.as_str()), numbers))
        });
        sourced.or_else(|| {
            let numbers = self.unattributed.get(arch)?.kernels.get(kernel)?;
            Some((None, numbers))
        })
    }

    /// The toolchain of `source`'s entries on `arch`: the arch's versions and the entries'
    /// flags; `None` when the arch has no recorded toolchain.
    pub fn stamp(&self, source: Option<&str>, arch: &str) -> Option<ToolchainStamp> {
        let versions = self.toolchains.get(arch)?;
        Some(ToolchainStamp {
            nvcc: versions.nvcc.clone(),
            ptxas: versions.ptxas.clone(),
            flags: self
                .entries(source, arch)
                .map(|entries| entries.flags.clone())
                .unwrap_or_default(),
        })
    }

    /// The sources of the baseline whose file does not exist any more under `root` (the
    /// package root); a file that cannot be looked at is not taken for gone.
    pub fn deleted_sources(&self, root: &Path) -> BTreeSet<String> {
        self.sources
            .keys()
            .filter(|source| matches!(root.join(source).try_exists(), Ok(false)))
            .cloned()
            .collect()
    }

    /// What blessing writes, from the committed baseline and every product of this run
    /// ([`Baseline::of_report`] each, in the order their `Build`s ran): the entries of
    /// `deleted` sources are removed; each product's sources' entries on the archs it built are
    /// replaced (a kernel it no longer compiles there is removed); schema-1 entries whose
    /// kernel a product compiles move under that source; everything else is kept (a build for
    /// sm_80 only keeps the sm_90 entries, a product's bless keeps the other products').
    pub fn blessed(
        previous: Option<Baseline>,
        products: &[Baseline],
        deleted: &BTreeSet<String>,
    ) -> Baseline {
        let mut merged = previous.unwrap_or_default();
        merged.schema_version = SCHEMA_VERSION;
        merged.sources.retain(|source, _| !deleted.contains(source));
        for product in products {
            merged.replace_entries_of(product);
        }
        merged.attribute_unattributed(products);
        for archs in merged.sources.values_mut() {
            archs.retain(|_, entries| !entries.kernels.is_empty());
        }
        merged.sources.retain(|_, archs| !archs.is_empty());
        merged
            .unattributed
            .retain(|_, entries| !entries.kernels.is_empty());
        merged
    }

    /// `product`'s sources' entries (and its rows without a source) on the archs it built
    /// replaced by its own, and its archs' toolchains.
    fn replace_entries_of(&mut self, product: &Baseline) {
        for (source, archs) in &product.sources {
            let committed = self.sources.entry(source.clone()).or_default();
            for arch in product.toolchains.keys() {
                committed.remove(arch);
            }
            committed.extend(archs.clone());
        }
        for (arch, entries) in &product.unattributed {
            let committed = self.unattributed.entry(arch.clone()).or_default();
            committed.flags = entries.flags.clone();
            committed.kernels.extend(entries.kernels.clone());
        }
        self.toolchains.extend(product.toolchains.clone());
    }

    /// Schema-1 entries move under each source that compiles their kernel now: on an arch its
    /// product built, the fresh numbers stand (or the kernel is gone there); on another arch the
    /// entry moves as it is, with the flags it was made with. Kernels no product compiled stay.
    fn attribute_unattributed(&mut self, products: &[Baseline]) {
        if self.unattributed.is_empty() {
            return;
        }
        let mut compiled_in: CompiledIn<'_> = BTreeMap::new();
        for product in products {
            for (source, _, entries) in product.groups() {
                let Some(source) = source else { continue };
                for kernel in entries.kernels.keys() {
                    let places = compiled_in.entry(kernel.as_str()).or_default();
                    if !places.iter().any(|(known, _)| *known == source) {
                        places.push((source, product));
                    }
                }
            }
        }
        let unattributed = std::mem::take(&mut self.unattributed);
        for (arch, entries) in unattributed {
            let mut kept = ArchEntries {
                flags: entries.flags.clone(),
                kernels: BTreeMap::new(),
            };
            for (kernel, numbers) in entries.kernels {
                let Some(places) = compiled_in.get(kernel.as_str()) else {
                    kept.kernels.insert(kernel, numbers);
                    continue;
                };
                let elsewhere = places
                    .iter()
                    .filter(|(_, product)| !product.toolchains.contains_key(&arch));
                for (source, _) in elsewhere {
                    self.sources
                        .entry((*source).to_string())
                        .or_default()
                        .entry(arch.clone())
                        .or_insert_with(|| ArchEntries {
                            flags: entries.flags.clone(),
                            kernels: BTreeMap::new(),
                        })
                        .kernels
                        .entry(kernel.clone())
                        .or_insert(numbers);
                }
            }
            if !kept.kernels.is_empty() {
                self.unattributed.insert(arch, kept);
            }
        }
    }

    /// Reads the baseline; `None` when the file does not exist (no regression checks). A lock
    /// that is not exactly a baseline is refused, naming the file, the line and what is wrong.
    pub fn load(path: &Path) -> Result<Option<Parsed>, Error> {
        let text = match read_lock_file(path, MAX_LOCK_BYTES) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    error,
                })
            }
        };
        match parse(&text) {
            Ok(parsed) => Ok(Some(parsed)),
            Err(ParseError::Invalid(error)) => Err(Error::UnreadableBaseline {
                path: path.to_path_buf(),
                error,
            }),
            Err(ParseError::Unsupported(schema_version)) => Err(Error::UnsupportedBaselineSchema {
                path: path.to_path_buf(),
                schema_version,
            }),
        }
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the baseline is plain data");
        text.push('\n');
        text
    }
}

/// The largest lock read: 512 MiB, about a million entries (a bless writes some 400 bytes
/// each), far above any crate's; a larger file is no lock a bless wrote.
const MAX_LOCK_BYTES: u64 = 512 << 20;

/// The bytes of the lock at `path`, which must be a regular file (through links) of at most
/// `limit` bytes: a FIFO would wait for a writer, a device (`/dev/zero`) never ends, and a
/// sparse file or a huge one would be read whole into memory (issue #35, class 2). Each is
/// refused, naming what it is, before a byte is read; a file that grows past `limit` while it
/// is read is refused too.
fn read_lock_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let refuse = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, what);
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        let kind = crate::fsutil::node_kind(&metadata);
        return Err(refuse(format!(
            "is {kind}, not a file: a lock is a regular file that `--bless` writes; name one"
        )));
    }
    let too_big = |bytes: u64| {
        refuse(format!(
            "is {bytes} bytes, more than the {limit} bytes of the largest lock read (a lock is a \
             few hundred bytes a kernel): name the lock a bless wrote"
        ))
    };
    if metadata.len() > limit {
        return Err(too_big(metadata.len()));
    }
    let mut text = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut text)?;
    if text.len() as u64 > limit {
        return Err(too_big(text.len() as u64));
    }
    Ok(text)
}

/// Kernel -> each source that compiles it, with the product (and so the archs) it is in.
type CompiledIn<'a> = BTreeMap<&'a str, Vec<(&'a str, &'a Baseline)>>;

/// `OCCUPANCY_BLESS`: writes every product of the run so far (each product's report and its
/// stamp) as the package's baseline ([`Baseline::blessed`]), says what changed in one warning
/// and returns every change since `first` (the lock as the run's first bless found it, set by
/// that bless), for the report's `baseline_changes`.
pub(crate) fn bless_file(
    context: &crate::context::Context,
    products: &[(&Report, &ToolchainStamp)],
    first: &mut Option<Option<Baseline>>,
    cargo: &mut crate::cargo_lines::CargoLines,
) -> Result<Vec<BaselineChange>, Error> {
    let path = baseline_path(context);
    let loaded = Baseline::load(&path)?;
    let converted = loaded
        .as_ref()
        .is_some_and(|parsed| parsed.schema_version != SCHEMA_VERSION);
    let previous = loaded.map(|parsed| parsed.baseline);
    let deleted = previous
        .as_ref()
        .map(|previous| previous.deleted_sources(&context.manifest_dir))
        .unwrap_or_default();
    let current: Vec<Baseline> = products
        .iter()
        .map(|(report, stamp)| Baseline::of_report(report, stamp))
        .collect();
    let blessed = Baseline::blessed(previous.clone(), &current, &deleted);
    crate::fsutil::write_atomic(&path, blessed.to_text().as_bytes())?;
    let root = &context.manifest_dir;
    let step = changes::between(previous.as_ref(), &blessed, root);
    cargo.warning(&changes::warning_line(
        &crate::fsutil::display_path(root, &path),
        converted,
        &step,
        &crate::render::report_display_path(context),
    ));
    let first = first.get_or_insert(previous);
    Ok(changes::between(first.as_ref(), &blessed, root))
}

/// The package's baseline file: `baseline = ...` under `[package.metadata.occupancy]`, else
/// `occupancy.lock`, relative to the package root.
pub(crate) fn baseline_path(context: &crate::context::Context) -> std::path::PathBuf {
    context.manifest_dir.join(
        context
            .settings
            .baseline
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("occupancy.lock")),
    )
}

/// The package's baseline file (`occupancy.lock`, or `baseline = ...`) and what it holds.
pub(crate) struct BaselineFile {
    baseline: Option<Baseline>,
    /// Its sources whose file no longer exists, judged by the first product that compares.
    deleted: BTreeSet<String>,
}

/// What comparing a product with the baseline gave.
#[derive(Default)]
pub(crate) struct Compared {
    /// `regression` and `baseline_stale` findings, leveled.
    pub(crate) found: Vec<Gathered>,
    /// The toolchain changes since the baseline, one line each.
    pub(crate) toolchain_changes: Vec<String>,
    /// Blessing: the stamp the crate view blesses this product's entries with.
    pub(crate) bless_stamp: Option<ToolchainStamp>,
}

/// The product's kernels and how they were declared, which its baseline findings are leveled by.
#[derive(Clone, Copy)]
pub(crate) struct Judged<'a> {
    pub(crate) kernels: &'a [CompiledKernel<'a>],
    pub(crate) matching: &'a Matching,
    pub(crate) declarations: &'a Declarations,
    pub(crate) levels: &'a Levels,
}

impl BaselineFile {
    /// Loaded when blessing too: a lock that cannot be read is refused before anything is
    /// written. The first product to compare says once that a schema-1 lock is converted, and
    /// judges the entries of deleted sources.
    pub(crate) fn load(
        context: &Context,
        first: bool,
        cargo: &mut CargoLines,
    ) -> Result<BaselineFile, Error> {
        let path = crate::baseline::baseline_path(context);
        let parsed = Baseline::load(&path)?;
        if path.exists() {
            cargo.rerun_if_changed(&path);
        }
        let Some(parsed) = parsed else {
            return Ok(BaselineFile {
                baseline: None,
                deleted: BTreeSet::new(),
            });
        };
        // Blessing, the bless's own line says the file was rewritten.
        if first && !context.bless && parsed.schema_version != crate::baseline::SCHEMA_VERSION {
            cargo.warning(&format!(
                "occupancy: the baseline {} is schema {}: its entries, which name no source, are compared by kernel name; the next `OCCUPANCY_BLESS=1 cargo build` rewrites it as schema {}",
                display_path(&context.manifest_dir, &path),
                parsed.schema_version,
                crate::baseline::SCHEMA_VERSION
            ));
        }
        let deleted = match first && !context.bless {
            true => parsed.baseline.deleted_sources(&context.manifest_dir),
            false => BTreeSet::new(),
        };
        Ok(BaselineFile {
            baseline: Some(parsed.baseline),
            deleted,
        })
    }

    /// A product against the baseline: its regressions and stale entries and the toolchain
    /// changes since the baseline (said first in a failure); blessing, the stamp to bless with.
    /// Asking the tools their versions costs processes: only when there is a baseline or a
    /// bless.
    pub(crate) fn compare_or_stamp(
        &self,
        context: &Context,
        toolchain: &Toolchain,
        judged: &Judged<'_>,
        report: &Report,
        cargo: &mut CargoLines,
    ) -> Compared {
        if !context.bless && self.baseline.is_none() {
            return Compared::default();
        }
        let stamp = ToolchainStamp::of(&context.stamped_flags, toolchain);
        if context.bless {
            return Compared {
                bless_stamp: Some(stamp),
                ..Compared::default()
            };
        }
        let (found, toolchain_changes) = self.compare(context, report, &stamp, judged, cargo);
        Compared {
            found,
            toolchain_changes,
            bless_stamp: None,
        }
    }

    /// The regressions against the baseline, and the toolchain changes since it (said as
    /// warnings, and first in a failure: they may explain every regression).
    fn compare(
        &self,
        context: &Context,
        report: &Report,
        stamp: &ToolchainStamp,
        judged: &Judged<'_>,
        cargo: &mut CargoLines,
    ) -> (Vec<Gathered>, Vec<String>) {
        let Some(baseline) = &self.baseline else {
            return (Vec::new(), Vec::new());
        };
        let comparison =
            crate::baseline::compare(baseline, &Baseline::of_report(report, stamp), &self.deleted);
        let mut changes = Vec::new();
        for line in &comparison.toolchain_changes {
            cargo.warning(&format!(
                "occupancy: the toolchain changed since the baseline: {line}"
            ));
            changes.push(format!(
                "note: the toolchain changed since the baseline: {line}\n"
            ));
        }
        let found = baseline_findings(context, comparison.findings, judged);
        (found, changes)
    }
}

/// The baseline's `regression` and `baseline_stale` findings, leveled like the kernel's others
/// (an arch-wide finding, about another toolchain, concerns no kernel: an empty name). A finding
/// goes to the declaration of the kernel of its name compiled from its source (two sources may
/// each define a kernel of one name), else of its name.
fn baseline_findings(
    context: &Context,
    findings: Vec<(
        Option<crate::baseline::KernelAt>,
        occupancy_core::lint::evaluate::Finding,
    )>,
    judged: &Judged<'_>,
) -> Vec<Gathered> {
    let Judged {
        kernels,
        matching,
        declarations,
        levels,
    } = *judged;
    let mut gathered = Vec::new();
    for (at, finding) in findings {
        let (source, kernel_name) = at.map_or((None, String::new()), |at| (at.source, at.kernel));
        let from_source = |kernel: &&CompiledKernel<'_>| {
            source.as_deref()
                == Some(display_path(&context.manifest_dir, &kernel.source.source).as_str())
        };
        let named = |kernel: &&CompiledKernel<'_>| kernel.name == kernel_name;
        let index = kernels
            .iter()
            .position(|kernel| named(&kernel) && from_source(&kernel))
            .or_else(|| kernels.iter().position(|kernel| named(&kernel)));
        let declaration = index
            .and_then(|index| matching.by_kernel.get(&index).copied())
            .or_else(|| {
                declarations
                    .kernels
                    .iter()
                    .position(|declared| declared.kernel.kernel_name == kernel_name)
            });
        let declared = declaration.map(|index| &declarations.kernels[index]);
        gathered.extend(Gathered::leveled(
            finding,
            &levels.sources(declared, &kernel_name),
            declaration,
            &kernel_name,
            false,
        ));
    }
    gathered
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
