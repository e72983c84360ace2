//! One crate, however many `Build`s its build script runs: the crate-level view.
//!
//! A crate may ship several products from one build script: candle compiles PTX for run-time
//! loading with one `Build` and a static library for FFI with another. Each `Build` records the
//! product it compiled and checked here ([`record`]); after each, the crate's files are written
//! from every product recorded so far in this process ([`CrateView::write`]): one report, one
//! facts file, one PTX module, one baseline (each product's entries blessed with its own stamp,
//! `Baseline::blessed`; the report lists every change of the run's blesses). A rerun of the
//! same product (a test building a package twice in one process) replaces the earlier record.
//!
//! Whether a declaration matched a kernel, and whether an `expect(...)` was fulfilled, are
//! questions about every product, and a `Build` cannot know whether a later one compiles the
//! kernel. They are settled over the products recorded so far ([`CrateView::settle`]) and
//! written into the facts file; the `#[occupancy::kernel]` expansion, which runs after the whole
//! build script, renders them at the attribute. A `Build` that fails anyway lists them as notes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use occupancy_core::lint::evaluate;
use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::{BaselineChange, Finding, Location, Report};

use crate::baseline::{Baseline, ToolchainStamp};
use crate::compile::Product;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::kernel_tables::{KernelNames, KernelTables};
use crate::levels::{Gathered, Levels};
use crate::products::ModuleSource;
use crate::render::report_display_path;
use crate::Error;

/// Where a declaration is: its file (as shown), line and column.
pub(crate) type DeclarationAt = (String, u32, u32);

/// What a product is, to tell a second `Build` from a rerun of the same one: a library by its
/// name, a PTX product by its sources (a source ships in one PTX product).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProductKey {
    pub(crate) product: Product,
    pub(crate) library: Option<String>,
    pub(crate) sources: BTreeSet<PathBuf>,
}

impl ProductKey {
    pub(crate) fn of(context: &Context, product: Product, library: Option<&str>) -> ProductKey {
        ProductKey {
            product,
            library: library.map(str::to_string),
            sources: context
                .sources
                .iter()
                .map(|(path, _)| path.clone())
                .collect(),
        }
    }

    fn same_product(&self, other: &ProductKey) -> bool {
        self.product == other.product
            && match self.product {
                Product::Object => self.library == other.library,
                Product::Ptx => !self.sources.is_disjoint(&other.sources),
            }
    }

    /// `PTX` or `library \`moe\``, as the report's sources name their product.
    pub(crate) fn label(&self) -> String {
        match &self.library {
            Some(name) => format!("library `{name}`"),
            None => "PTX".to_string(),
        }
    }
}

/// One product as the crate view keeps it.
#[derive(Debug, Clone)]
pub(crate) struct RecordedProduct {
    pub(crate) key: ProductKey,
    /// Its rows, sources and findings.
    pub(crate) report: Report,
    /// The declarations its `Build` scanned.
    pub(crate) declarations: Declarations,
    /// Every kernel it compiled (for a missing declaration's suggestions).
    pub(crate) compiled_kernels: Vec<String>,
    /// Declarations one of its kernels matched.
    pub(crate) matched: BTreeSet<DeclarationAt>,
    /// Expectations one of its findings fulfilled.
    pub(crate) fulfilled: BTreeSet<(DeclarationAt, LintId)>,
    /// Its entries in the PTX module (PTX products).
    pub(crate) ptx: Vec<ModuleSource>,
    /// The toolchain stamp when blessing.
    pub(crate) bless_stamp: Option<ToolchainStamp>,
    /// Why its kernels were not checked (`OCCUPANCY_SKIP`, `.check(false)`); `None`: checked.
    pub(crate) unchecked: Option<String>,
}

impl RecordedProduct {
    /// The files of `out_dir` this product wrote, relative to it: its PTX files, or its library.
    fn outputs(&self, out_dir: &Path) -> Vec<String> {
        let ptx = self.ptx.iter().flat_map(ModuleSource::files);
        let relative = ptx.filter_map(|path| path.strip_prefix(out_dir).ok());
        let mut outputs: Vec<String> = relative.map(|path| path.display().to_string()).collect();
        outputs.extend(self.key.library.as_ref().map(|name| format!("lib{name}.a")));
        outputs
    }
}

/// What this process recorded for one `OUT_DIR`.
#[derive(Debug, Default)]
struct View {
    products: Vec<RecordedProduct>,
    /// The baseline as the first bless of this run found it (`Some(None)`: no file), so the
    /// report lists every change of the run's blesses.
    lock_before_bless: Option<Option<Baseline>>,
}

/// Every product recorded in this process, by the `OUT_DIR` whose files they share.
static VIEWS: Mutex<BTreeMap<PathBuf, View>> = Mutex::new(BTreeMap::new());

fn views() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, View>> {
    VIEWS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The products recorded so far for `context`'s `OUT_DIR`.
fn recorded(context: &Context) -> Vec<RecordedProduct> {
    views()
        .get(&context.out_dir)
        .map(|view| view.products.clone())
        .unwrap_or_default()
}

/// Records a product (replacing an earlier record of the same product) and returns the crate
/// view with it.
pub(crate) fn record(context: &Context, product: RecordedProduct) -> CrateView {
    let mut views = views();
    let products = &mut views.entry(context.out_dir.clone()).or_default().products;
    products.retain(|earlier| !earlier.key.same_product(&product.key));
    products.push(product);
    CrateView {
        products: products.clone(),
    }
}

/// Whether the product `key` is the first of this run to compare with the baseline (no other
/// checked product was recorded before it): it judges what concerns the whole crate once, the
/// entries of sources that no longer exist, and says once that a lock is of an older schema.
pub(crate) fn first_to_compare(context: &Context, key: &ProductKey) -> bool {
    !recorded(context)
        .iter()
        .any(|product| !product.key.same_product(key) && product.unchecked.is_none())
}

/// Blesses every product recorded so far that was checked while blessing, each with its own
/// stamp; returns every change of this run's blesses, for the report.
fn bless(
    context: &Context,
    products: &[RecordedProduct],
    cargo: &mut crate::cargo_lines::CargoLines,
) -> Result<Vec<BaselineChange>, Error> {
    let blessed: Vec<(&Report, &ToolchainStamp)> = products
        .iter()
        .filter_map(|product| Some((&product.report, product.bless_stamp.as_ref()?)))
        .collect();
    if blessed.is_empty() {
        return Ok(Vec::new());
    }
    let mut views = views();
    let view = views.entry(context.out_dir.clone()).or_default();
    crate::baseline::bless_file(context, &blessed, &mut view.lock_before_bless, cargo)
}

/// The PTX module entries of the other PTX products recorded for this `OUT_DIR`: a source of
/// this product must not ship under a stem one of them uses (their files share `OUT_DIR`).
pub(crate) fn other_ptx_stems(context: &Context, key: &ProductKey) -> Vec<(String, PathBuf)> {
    recorded(context)
        .iter()
        .filter(|product| !product.key.same_product(key))
        .flat_map(|product| &product.ptx)
        .map(|entry| (entry.stem.clone(), entry.source.clone()))
        .collect()
}

/// A finding only the whole build script can make, about one declaration (`at`) or about the
/// crate as a whole (`None`: a kernel table that names nothing).
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    pub(crate) at: Option<DeclarationAt>,
    pub(crate) finding: Finding,
}

/// The products of one crate recorded in this process, in the order their `Build`s ran.
#[derive(Debug, Clone)]
pub(crate) struct CrateView {
    pub(crate) products: Vec<RecordedProduct>,
}

impl CrateView {
    /// Every declaration the products' `Build`s scanned, once (first scan kept).
    fn declarations(&self) -> Vec<(&Declarations, &Declared)> {
        let mut seen = BTreeSet::new();
        let mut unique = Vec::new();
        for product in &self.products {
            for declared in &product.declarations.kernels {
                if seen.insert(at(&product.declarations, declared)) {
                    unique.push((&product.declarations, declared));
                }
            }
        }
        unique
    }

    /// Why a declaration may have no kernel although it is not missing: a product whose
    /// kernels were not checked.
    fn unchecked(&self) -> Option<&str> {
        self.products
            .iter()
            .find_map(|product| product.unchecked.as_deref())
    }

    /// The declarations no product matched (`missing_kernel`, or a family that matches
    /// nothing) and the expectations no product fulfilled, leveled like the kernels' findings.
    pub(crate) fn settle(&self, levels: &Levels, context: &Context) -> Vec<Settled> {
        if self.unchecked().is_some() {
            return Vec::new();
        }
        let matched: BTreeSet<&DeclarationAt> = self
            .products
            .iter()
            .flat_map(|product| &product.matched)
            .collect();
        let fulfilled: BTreeSet<&(DeclarationAt, LintId)> = self
            .products
            .iter()
            .flat_map(|product| &product.fulfilled)
            .collect();
        let compiled: Vec<&str> = self
            .products
            .iter()
            .flat_map(|product| product.compiled_kernels.iter().map(String::as_str))
            .collect();
        let mut settled = Vec::new();
        for (declarations, declared) in self.declarations() {
            let place = at(declarations, declared);
            let findings = if matched.contains(&place) {
                unfulfilled(declared, &place, &fulfilled)
            } else {
                vec![missing(declared, &compiled)]
            };
            for finding in findings {
                let Some(gathered) = Gathered::leveled(
                    finding,
                    &levels.sources(Some(declared), &declared.kernel.kernel_name),
                    None,
                    &declared.kernel.kernel_name,
                    false,
                ) else {
                    continue;
                };
                let mut finding = crate::render::report_finding(
                    &gathered,
                    Some(declared),
                    context,
                    declarations,
                    &BTreeMap::new(),
                );
                finding.notes.extend(self.products_note());
                settled.push(Settled {
                    at: Some(place.clone()),
                    finding,
                });
            }
        }
        settled.extend(self.unknown_tables(levels, context));
        settled
    }

    /// Every `[package.metadata.occupancy.kernels.<name>]` table must name a kernel of some
    /// product (by symbol, readable name or pattern) or a declaration (Rust name, symbol or
    /// family pattern): a misspelt name would silently set nothing. `missing_kernel`, about
    /// the crate.
    fn unknown_tables(&self, levels: &Levels, context: &Context) -> Vec<Settled> {
        let tables = &context.settings.package_kernel_tables;
        if tables.is_empty() {
            return Vec::new();
        }
        let kernels: Vec<(&str, Option<String>)> = self
            .products
            .iter()
            .flat_map(|product| &product.compiled_kernels)
            .map(|symbol| (symbol.as_str(), occupancy_core::ptxas::demangle(symbol)))
            .collect();
        let declared: Vec<&str> = self
            .declarations()
            .into_iter()
            .flat_map(|(_, declared)| {
                [
                    declared.kernel.rust_name.as_str(),
                    declared.kernel.kernel_name.as_str(),
                ]
            })
            .collect();
        let mut settled = Vec::new();
        for name in tables {
            let names_a_kernel = kernels.iter().any(|(symbol, demangled)| {
                KernelTables::names(name, KernelNames::of(symbol, demangled.as_deref(), None))
            });
            if names_a_kernel || declared.contains(&name.as_str()) {
                continue;
            }
            let known = kernels
                .iter()
                .map(|(symbol, demangled)| {
                    demangled
                        .as_deref()
                        .map_or(*symbol, occupancy_core::report::readable_kernel_name)
                })
                .chain(declared.iter().copied());
            let suggestions =
                occupancy_core::lint::closest_names(name, known, evaluate::NAMES_SHOWN);
            let error = Error::UnknownKernelTable {
                name: name.clone(),
                suggestions: suggestions.into_iter().map(str::to_string).collect(),
                compiled_kernels: kernels.len(),
            };
            let message = error.to_string();
            let finding = evaluate::Finding {
                arch: None,
                message: message
                    .strip_prefix("occupancy-build: ")
                    .unwrap_or(&message)
                    .to_string(),
                notes: self.products_note().into_iter().collect(),
                help: Some(format!(
                    "name the table after a kernel's symbol, its readable name or the Rust name of its declaration, or a pattern with `*`; or remove it from {}",
                    context
                        .settings
                        .manifest_paths
                        .first()
                        .map_or_else(|| "Cargo.toml".to_string(), |path| path.display().to_string())
                )),
                ..evaluate::Finding::new(LintId::MissingKernel)
            };
            if let Some(gathered) =
                Gathered::leveled(finding, &levels.sources(None, ""), None, "", false)
            {
                settled.push(Settled {
                    at: None,
                    finding: crate::render::report_finding(
                        &gathered,
                        None,
                        context,
                        &Declarations::default(),
                        &BTreeMap::new(),
                    ),
                });
            }
        }
        settled
    }

    /// `products compiled: PTX (12 kernels), library `moe` (3 kernels)`, when there are several.
    fn products_note(&self) -> Option<String> {
        (self.products.len() > 1).then(|| {
            let products: Vec<String> = self
                .products
                .iter()
                .map(|product| {
                    format!(
                        "{} ({} kernels)",
                        product.key.label(),
                        product.compiled_kernels.len()
                    )
                })
                .collect();
            format!(
                "matched against every product of the build script: {}",
                products.join(", ")
            )
        })
    }

    /// The crate's report: every product's rows, sources and findings, and the settled ones.
    pub(crate) fn report(&self, context: &Context, settled: &[Settled]) -> Report {
        let first = self.products.first().map(|product| &product.report);
        let mut report = crate::report::for_build(
            context,
            self.products
                .iter()
                .find_map(|product| product.report.cuda_release.clone()),
            None,
        );
        report.arch_source = first.and_then(|report| report.arch_source.clone());
        report.archs = merged_archs(self.products.iter().map(|product| &product.report));
        if self
            .products
            .iter()
            .all(|product| product.unchecked.is_some())
        {
            report.skipped = self.unchecked().map(str::to_string);
        }
        let several = self.products.len() > 1;
        for product in &self.products {
            let label = several.then(|| product.key.label());
            report
                .sources
                .extend(product.report.sources.iter().cloned().map(|mut source| {
                    source.product = label.clone();
                    source
                }));
            report.outputs.extend(product.outputs(&context.out_dir));
            report
                .kernels
                .extend(product.report.kernels.iter().cloned());
            report
                .findings
                .extend(product.report.findings.iter().cloned());
        }
        report
            .findings
            .extend(settled.iter().map(|settled| settled.finding.clone()));
        report
    }

    /// The facts file: every declaration, its kernel's facts from every product, and the
    /// findings settled over all of them.
    pub(crate) fn facts(
        &self,
        report: &Report,
        settled: &[Settled],
    ) -> occupancy_core::facts::BuildFacts {
        let mut facts = crate::facts_file::of_declarations(report, self.declarations());
        let unchecked = self.unchecked();
        for (declaration, place) in facts.declarations.iter_mut().zip(
            self.declarations()
                .into_iter()
                .map(|(declarations, declared)| at(declarations, declared)),
        ) {
            declaration.settled = settled
                .iter()
                .filter(|settled| settled.at.as_ref() == Some(&place))
                .map(|settled| settled_finding(&settled.finding))
                .collect();
            if declaration.compiled.is_empty() && report.skipped.is_none() {
                declaration.not_checked = unchecked.map(str::to_string);
            }
        }
        facts.settled = settled
            .iter()
            .filter(|settled| settled.at.is_none())
            .map(|settled| settled_finding(&settled.finding))
            .collect();
        facts
    }

    /// Every PTX product's module entries, in the order the products were recorded.
    fn ptx_module(&self) -> Vec<&ModuleSource> {
        self.products
            .iter()
            .filter(|product| product.key.product == Product::Ptx)
            .flat_map(|product| &product.ptx)
            .collect()
    }

    /// Writes the crate's files from every product recorded so far: the report, the facts file
    /// and header (`occupancy_facts.json`, `occupancy_facts.h`), the PTX module (when a product ships PTX) and, blessing, the baseline. Returns the
    /// crate's report and the findings settled over the products.
    pub(crate) fn write(
        &self,
        context: &Context,
        levels: &Levels,
        cargo: &mut crate::cargo_lines::CargoLines,
    ) -> Result<(Report, Vec<Settled>), Error> {
        let settled = self.settle(levels, context);
        let mut report = self.report(context, &settled);
        let module = self.ptx_module();
        if !module.is_empty() {
            crate::products::write_module(&context.out_dir, &module)?;
        }
        if context.bless {
            report.baseline_changes = bless(context, &self.products, cargo)?;
        }
        crate::report::write_reports(context, &report)?;
        crate::facts_file::write(context, &self.facts(&report, &settled))?;
        crate::facts_header::write(
            context,
            &crate::facts_header::render(&report, &self.declarations()),
        )?;
        Ok((report, settled))
    }
}

/// The archs of every product's report, each once, in arch order.
fn merged_archs<'a>(reports: impl Iterator<Item = &'a Report>) -> Vec<String> {
    let mut archs: Vec<String> = Vec::new();
    for report in reports {
        for arch in &report.archs {
            if !archs.contains(arch) {
                archs.push(arch.clone());
            }
        }
    }
    archs.sort_by_key(|arch| {
        occupancy_core::arch::lookup(arch)
            .map_or((u32::MAX, u32::MAX), |facts| (facts.major, facts.minor))
    });
    archs
}

/// Where `declared` is.
pub(crate) fn at(declarations: &Declarations, declared: &Declared) -> DeclarationAt {
    let location: Location = declarations.location(declared);
    (location.path, location.line, location.column)
}

/// `missing_kernel` (or a family matching nothing) for a declaration no kernel took.
fn missing(declared: &Declared, compiled: &[&str]) -> evaluate::Finding {
    match &declared.kernel.spec.family {
        Some(pattern) => evaluate::family_matches_nothing(pattern, compiled),
        None => evaluate::missing_kernel(&declared.kernel.kernel_name, compiled),
    }
}

/// `unfulfilled_expectation` for each `expect(...)` of a matched declaration no product's
/// finding fulfilled.
fn unfulfilled(
    declared: &Declared,
    place: &DeclarationAt,
    fulfilled: &BTreeSet<&(DeclarationAt, LintId)>,
) -> Vec<evaluate::Finding> {
    declared
        .kernel
        .spec
        .expected_lints
        .iter()
        .filter(|lint| !fulfilled.contains(&(place.clone(), **lint)))
        .map(|lint| crate::expectations::unfulfilled(declared, *lint))
        .collect()
}

/// The finding as the facts file carries it to the attribute, which renders it at itself: its
/// lint, level, message, notes and help (the kernel, crate and place are the report's).
fn settled_finding(finding: &Finding) -> Finding {
    Finding {
        level: finding.level,
        message: finding.message.clone(),
        notes: finding.notes.clone(),
        help: finding.help.clone(),
        ..Finding::new(finding.lint)
    }
}

/// [`Error::Denied`] with this product's deny findings rendered, when there is one. The
/// findings settled over the products so far are said as notes: the build stops here, so no
/// later product can settle them, but one might have.
pub(crate) fn denied(
    context: &Context,
    toolchain_changes: &[String],
    rendered_denials: &[String],
    settled: &[Settled],
) -> Result<(), Error> {
    if rendered_denials.is_empty() {
        return Ok(());
    }
    let count = rendered_denials.len();
    // A toolchain change is said first: it may explain every regression below.
    let mut rendered = toolchain_changes.concat();
    rendered.push_str(&rendered_denials.join("\n"));
    let pending: Vec<&Settled> = settled
        .iter()
        .filter(|settled| settled.finding.level != Level::Allow)
        .collect();
    for settled in &pending {
        let place = settled
            .at
            .as_ref()
            .map(|(path, line, column)| format!(" ({path}:{line}:{column})"))
            .unwrap_or_default();
        rendered.push_str(&format!(
            "\nnote[{}]: {}{place}{}",
            settled.finding.lint,
            settled.finding.message,
            settled
                .finding
                .help
                .as_deref()
                .map(|help| format!(": {help}"))
                .unwrap_or_default()
        ));
    }
    if !pending.is_empty() {
        rendered.push_str("\nnote: the attribute reports these when the crate compiles, once every `Build` of the build script has run");
    }
    rendered.push_str(&format!(
        "\nerror: occupancy checks failed for `{}`: {count} error{} (full report: {})\n",
        context.crate_name,
        if count == 1 { "" } else { "s" },
        report_display_path(context)
    ));
    Err(Error::Denied { rendered, count })
}
