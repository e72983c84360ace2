//! `cargo occupancy explain KERNEL`: which resource binds a kernel's occupancy and by how much,
//! what each knob would change (computed), whether the occupancy is a problem, and the three
//! curves as text. The facts come from a ptxas log (`--log`, with the PTX it was assembled from
//! for the launch bounds: `--ptx`), from direct values (`--registers`, ...), or from the reports
//! the workspace's builds wrote. When ptxas did not apply the kernel's minimum blocks per SM or
//! register cap as written, the explanation says what it did instead: the `unreachable_bound` and
//! `register_cap_ignored` findings of the kernel's record, made by the same checks as `check`
//! (`occupancy_core::kernel::evaluate_at_launch`) or read from the build's report.
//! The reasoning lives in `occupancy_core::report::explain`; this file finds the kernel.
//!
//! A log is streamed, and only the wanted kernel's rows are kept ([`Selector`]): explaining one
//! kernel of a log of millions of records holds that kernel's distinct rows and a few names.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

use occupancy_core::arch;
use occupancy_core::kernel::evaluate_at_launch;
use occupancy_core::lint::evaluate::{checked_launch, LaunchOrigin, LaunchSettings};
use occupancy_core::ptxas::PtxEntry;
use occupancy_core::report::explain::{explain, render_explanation_text};
use occupancy_core::report::{Finding, KernelRow, RowLaunch};
use occupancy_core::spec::BlockDim;

use super::log_input::kernel_from_record;
use crate::archs::ArchNames;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;
use crate::workspace::{load_dir, report_dir};

/// `cargo occupancy explain` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Explain a kernel's occupancy: what binds, what each knob would change, the curves"
)]
pub struct Args {
    /// The kernel: its symbol or demangled name, or a unique part of one.
    pub kernel: String,
    /// Architecture(s) to explain on (repeatable; default: every one the facts cover).
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Threads per block (default: the declared block, else the compiled maximum, else 256).
    #[arg(long, value_name = "N")]
    pub block: Option<u32>,
    /// Dynamic shared memory per block in bytes.
    #[arg(long, value_name = "BYTES", value_parser = crate::flags::smem_bytes)]
    pub dynamic_smem: Option<u64>,
    /// Shared memory carveout preference: `default` or a percentage 0..=100.
    #[arg(long, value_name = "default|PERCENT")]
    pub carveout: Option<String>,
    /// Read the kernel's facts from a ptxas `-v` log (`nvcc -Xptxas -v` output; repeatable).
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    /// With --log: the PTX the log's kernels were assembled from (`nvcc -ptx`, repeatable): their
    /// launch bounds (`.maxntid`, `.minnctapersm`, `.maxnreg`), which a log does not print.
    #[arg(long = "ptx", value_name = "FILE", requires = "logs")]
    pub ptx: Vec<PathBuf>,
    /// With --log: read a log that shows a failed build (`FAILED:`, `make: *** ... Error`,
    /// `Segmentation fault`, ...) anyway, each such line a warning.
    #[arg(long, requires = "logs")]
    pub allow_failed_build: bool,
    /// Give the facts directly: registers per thread (needs --arch; at most 255).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=255))]
    pub registers: Option<u32>,
    /// With --registers: static shared memory per block in bytes.
    #[arg(long, value_name = "BYTES", requires = "registers", value_parser = crate::flags::smem_bytes)]
    pub static_smem: Option<u64>,
    /// With --registers: barriers the kernel uses (default 1; at most 16).
    #[arg(long, value_name = "N", requires = "registers", value_parser = clap::value_parser!(u32).range(0..=16))]
    pub barriers: Option<u32>,
    /// With --registers: the `__launch_bounds__` maximum threads per block.
    #[arg(long, value_name = "N", requires = "registers")]
    pub max_threads: Option<u32>,
    /// Directory of build reports (default: `<target dir>/occupancy`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Cargo.toml of the workspace whose reports to read.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// Runs `explain`: exit 0 after explaining, 2 when the kernel or its facts cannot be found.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let rows = rows(args, env)?;
    let mut out = Stdout::lock("cannot write the explanation to standard output");
    let mut first = true;
    for (row, bounds) in rows {
        let Ok(facts) = arch::lookup(&row.arch) else {
            continue;
        };
        if !first {
            out.write_all(format!("{}\n", "─".repeat(100)).as_bytes())?;
        }
        first = false;
        let explanation = explain(facts, &row).with_bound_findings(&bounds);
        out.write_all(render_explanation_text(&explanation).as_bytes())?;
    }
    out.finish()?;
    Ok(Outcome::Success)
}

fn carveout_percent(text: Option<&str>) -> Result<Option<u32>, CliError> {
    match text {
        None | Some("default") => Ok(None),
        Some(text) => match text.trim_end_matches('%').parse::<u32>() {
            Ok(percent) if percent <= 100 => Ok(Some(percent)),
            _ => Err(CliError::Usage(format!(
                "--carveout `{text}`: write `default` or a percentage from 0 to 100"
            ))),
        },
    }
}

fn canonical_archs(names: &[String], archs: &ArchNames) -> Result<Vec<&'static str>, CliError> {
    names
        .iter()
        .map(|name| {
            archs
                .lookup(name)
                .map(|facts| facts.name)
                .map_err(|error| CliError::Usage(format!("--arch: {error}")))
        })
        .collect()
}

/// A row to explain, with the findings of its record that say what ptxas did with its bounds.
type Explained = (KernelRow, Vec<Finding>);

/// The rows to explain, with the command line's launch applied.
fn rows(args: &Args, env: &Environment) -> Result<Vec<Explained>, CliError> {
    let archs = canonical_archs(&args.archs, &env.archs)?;
    let carveout = carveout_percent(args.carveout.as_deref())?;
    if args.block == Some(0) {
        return Err(CliError::usage("--block must be at least 1 thread"));
    }
    let mut rows = if let Some(registers) = args.registers {
        if archs.is_empty() {
            return Err(CliError::usage("--registers gives the facts of no particular build: name the architecture with --arch"));
        }
        archs
            .iter()
            .map(|name| (direct_row(args, name, registers), Vec::new()))
            .collect()
    } else if !args.logs.is_empty() {
        rows_from_logs(args)?
    } else {
        let dir = report_dir(args.dir.as_deref(), args.manifest_path.as_deref(), env)?;
        let report = load_dir(&dir)?;
        let mut selector = Selector::new(&args.kernel);
        for row in report.kernels.iter().filter(|row| row.entry) {
            let bounds = if selector.matches(row) {
                report.findings_for(row).cloned().collect()
            } else {
                Vec::new()
            };
            selector.add(row, bounds);
        }
        selector.finish()?
    };
    if !archs.is_empty() {
        let available: Vec<String> = rows.iter().map(|(row, _)| row.arch.clone()).collect();
        rows.retain(|(row, _)| archs.contains(&row.arch.as_str()));
        if rows.is_empty() {
            return Err(CliError::Usage(format!(
                "`{}` was not compiled for {}; its facts cover: {}",
                args.kernel,
                archs.join(", "),
                available.join(", ")
            )));
        }
    }
    for (row, _) in &mut rows {
        if let Some(block) = args.block {
            row.block = block;
        }
        if let Some(bytes) = args.dynamic_smem {
            row.dynamic_smem_bytes = bytes;
        }
        if args.carveout.is_some() {
            row.carveout_percent = carveout;
        }
        if let Ok(facts) = arch::lookup(&row.arch) {
            row.compute(facts);
        }
    }
    Ok(rows)
}

fn direct_row(args: &Args, arch_name: &str, registers: u32) -> KernelRow {
    KernelRow {
        registers,
        barriers: args.barriers.unwrap_or(1),
        static_smem_bytes: args.static_smem.unwrap_or(0),
        max_threads_per_block: args.max_threads,
        dynamic_smem_bytes: args.dynamic_smem.unwrap_or(0),
        ..KernelRow::new(&args.kernel, arch_name, args.block.unwrap_or(256))
    }
}

/// The PTX entries of the `--ptx` files, by kernel name (the first of each name).
fn ptx_entries(paths: &[PathBuf]) -> Result<BTreeMap<String, PtxEntry>, CliError> {
    let mut entries = BTreeMap::new();
    for path in paths {
        crate::inputs::check_input_file("the PTX", path)?;
        let text = std::fs::read_to_string(path)
            .map_err(|error| CliError::Input(format!("cannot read {}: {error}", path.display())))?;
        for entry in occupancy_core::ptxas::parse_ptx_directives(&text) {
            entries.entry(entry.name.clone()).or_insert(entry);
        }
    }
    Ok(entries)
}

/// The rows of the kernel `args.kernel` names in the logs: every record is looked at as the
/// log streams by, and only that kernel's rows are kept (each distinct row once), each with the
/// findings of its record that say what ptxas did with its bounds.
fn rows_from_logs(args: &Args) -> Result<Vec<Explained>, CliError> {
    let mut selector = Selector::new(&args.kernel);
    let entries = ptx_entries(&args.ptx)?;
    for path in &args.logs {
        let output = super::log_input::read_log(path, |record| {
            let ptx = entries.get(&record.name);
            let launch = explained_launch(args, ptx);
            let kernel = kernel_from_record(record, ptx.cloned(), launch)?;
            // The findings that say what ptxas did with its minimum blocks per SM or register
            // cap, from the checks `check` runs, at the row's launch.
            let bounds = if selector.matches(&kernel.row) {
                evaluate_at_launch(std::slice::from_ref(&kernel), &BTreeMap::new())
            } else {
                Vec::new()
            };
            selector.add(&kernel.row, bounds);
            Ok(())
        })?;
        let name = occupancy_build::cli::shown_path(path);
        let policy = super::log_input::LogPolicy {
            allow_failed_build: args.allow_failed_build,
        };
        super::log_input::conclude(&name, &output, policy)?;
    }
    selector.finish()
}

/// The launch a log's kernel is explained at ([`checked_launch`], as `check` decides it, with
/// `at_compiled_max`): `--block`, else the block the kernel was compiled for (`--ptx`'s
/// `.maxntid`/`.reqntid`, above 256 too), else 256.
fn explained_launch(args: &Args, ptx: Option<&PtxEntry>) -> RowLaunch {
    let launch = checked_launch(&LaunchSettings {
        origin: LaunchOrigin::CommandLine,
        declared: None,
        table: None,
        given_block: args.block.map(BlockDim::linear),
        given_dynamic_smem_bytes: args.dynamic_smem.unwrap_or(0),
        crate_block: None,
        compiled_max_threads: ptx.and_then(PtxEntry::max_threads_per_block),
        at_compiled_max: true,
    });
    RowLaunch {
        block: launch.block_threads(),
        dynamic_smem_bytes: launch.dynamic_smem_bytes,
        carveout_percent: None,
    }
}

/// Kernel names listed when `explain` cannot pick one kernel (the first, by name).
const NAMES_LISTED: usize = 100;

/// The first [`NAMES_LISTED`] of a set of names in order, and whether there were more.
#[derive(Debug)]
struct FirstNames<T: Ord> {
    names: BTreeSet<T>,
    more: bool,
}

impl<T: Ord> FirstNames<T> {
    fn new() -> Self {
        FirstNames {
            names: BTreeSet::new(),
            more: false,
        }
    }

    fn insert(&mut self, name: T) {
        if self.names.len() == NAMES_LISTED && self.names.last().is_some_and(|last| name >= *last) {
            self.more |= !self.names.contains(&name);
            return;
        }
        self.names.insert(name);
        if self.names.len() > NAMES_LISTED {
            self.names.pop_last();
            self.more = true;
        }
    }

    /// Exactly one name, and no more.
    fn is_one(&self) -> bool {
        self.names.len() == 1 && !self.more
    }

    /// `  a` per line, then `  … and more` when some were left out.
    fn listed<'a>(&'a self, shown: impl Fn(&'a T) -> &'a str) -> String {
        let mut lines: Vec<String> = self
            .names
            .iter()
            .map(|name| format!("  {}", shown(name)))
            .collect();
        if self.more {
            lines.push(format!(
                "  … and more (the first {NAMES_LISTED} by name are listed)"
            ));
        }
        lines.join("\n")
    }
}

/// The rows one way of matching the wanted name picked: while they are of one kernel, its
/// distinct rows; once a second kernel matches, only the kernels' names (for the error).
#[derive(Debug)]
struct Tier {
    kernels: FirstNames<(Option<String>, String)>,
    rows: Vec<Explained>,
    /// The rows kept, as JSON: a log that compiles the kernel many times gives one row per
    /// distinct compile, not one per record.
    distinct_rows: HashSet<String>,
}

impl Tier {
    fn new() -> Self {
        Tier {
            kernels: FirstNames::new(),
            rows: Vec::new(),
            distinct_rows: HashSet::new(),
        }
    }

    fn add(&mut self, row: &KernelRow, bounds: &[Finding]) {
        self.kernels
            .insert((row.crate_name.clone(), row.name.clone()));
        if !self.kernels.is_one() {
            self.rows = Vec::new();
            self.distinct_rows = HashSet::new();
            return;
        }
        let key = serde_json::to_string(&(row, bounds)).unwrap_or_default();
        if self.distinct_rows.insert(key) {
            self.rows.push((row.clone(), bounds.to_vec()));
        }
    }
}

/// Picks the rows of the one kernel `wanted` names, from rows seen one at a time: an exact
/// symbol or demangled name, else the demangled name without its parameter list, else a
/// unique substring. Memory holds the matching kernel's rows and a few names, not the rows.
#[derive(Debug)]
struct Selector<'a> {
    wanted: &'a str,
    /// Exact name, short name, substring.
    tiers: [Tier; 3],
    /// Every kernel's display name, for the error when nothing matches.
    all_names: FirstNames<String>,
}

impl<'a> Selector<'a> {
    fn new(wanted: &'a str) -> Self {
        Selector {
            wanted,
            tiers: [Tier::new(), Tier::new(), Tier::new()],
            all_names: FirstNames::new(),
        }
    }

    /// Whether `row` is of a kernel the wanted name may pick (its findings are worth making).
    fn matches(&self, row: &KernelRow) -> bool {
        self.ways(row).contains(&true)
    }

    /// Whether the wanted name matches `row` exactly, by short name, by a substring.
    fn ways(&self, row: &KernelRow) -> [bool; 3] {
        let wanted = self.wanted;
        let short = || {
            row.demangled
                .split('(')
                .next()
                .unwrap_or("")
                .trim()
                .rsplit(' ')
                .next()
                .unwrap_or("")
                .to_string()
        };
        [
            row.name == wanted || row.demangled == wanted,
            short() == wanted || short().split('<').next() == Some(wanted),
            row.name.contains(wanted) || row.demangled.contains(wanted),
        ]
    }

    /// Looks at one row; `bounds` are its record's findings about its bounds (empty when the
    /// row matches no way: [`Self::matches`] says whether to make them).
    fn add(&mut self, row: &KernelRow, bounds: Vec<Finding>) {
        self.all_names.insert(row.display_name().to_string());
        let ways = self.ways(row);
        for (tier, matched) in self.tiers.iter_mut().zip(ways) {
            if matched {
                tier.add(row, &bounds);
            }
        }
    }

    /// The rows of the first way of matching that picked any kernel; an error when it picked
    /// several, or when none picked one.
    fn finish(self) -> Result<Vec<Explained>, CliError> {
        let wanted = self.wanted;
        for tier in self.tiers {
            if tier.kernels.names.is_empty() {
                continue;
            }
            if tier.kernels.is_one() {
                return Ok(tier.rows);
            }
            return Err(CliError::Usage(format!(
                "`{wanted}` matches several kernels; name one exactly:\n{}",
                tier.kernels.listed(|(_, name)| name.as_str())
            )));
        }
        Err(CliError::Usage(format!(
            "no kernel named `{wanted}`; the kernels are:\n{}",
            self.all_names.listed(String::as_str)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, demangled: &str, arch: &str, registers: u32) -> KernelRow {
        let mut row = KernelRow {
            demangled: demangled.to_string(),
            registers,
            ..KernelRow::new(name, arch, 256)
        };
        row.compute(arch::lookup(arch).unwrap());
        row
    }

    fn select(wanted: &str, rows: &[KernelRow]) -> Result<Vec<KernelRow>, CliError> {
        let mut selector = Selector::new(wanted);
        for row in rows {
            selector.add(row, Vec::new());
        }
        Ok(selector.finish()?.into_iter().map(|(row, _)| row).collect())
    }

    fn rows() -> Vec<KernelRow> {
        vec![
            row("_Z5scalePf", "scale(float*)", "sm_80", 16),
            row("_Z11scale_wholePf", "scale_whole(float*)", "sm_80", 20),
            row("_Z5scalePf", "scale(float*)", "sm_90", 18),
            row("_ZN2ns4sumsEPf", "ns::sums(float*)", "sm_90", 30),
        ]
    }

    /// An exact name wins over a substring that matches more; the short name over a substring.
    #[test]
    fn the_first_way_of_matching_that_picks_a_kernel_wins() {
        let picked = select("_Z5scalePf", &rows()).unwrap();
        assert_eq!(picked.len(), 2);
        assert!(picked.iter().all(|row| row.name == "_Z5scalePf"));
        let picked = select("scale", &rows()).unwrap();
        assert_eq!(picked.len(), 2);
        let picked = select("sums", &rows()).unwrap();
        assert_eq!(picked[0].name, "_ZN2ns4sumsEPf");
        let picked = select("whole", &rows()).unwrap();
        assert_eq!(picked[0].name, "_Z11scale_wholePf");
    }

    #[test]
    fn a_name_matching_several_kernels_lists_them() {
        let error = select("Pf", &rows()).unwrap_err();
        assert_eq!(
            error.message(),
            "`Pf` matches several kernels; name one exactly:\n  _Z11scale_wholePf\n  _Z5scalePf\n  _ZN2ns4sumsEPf"
        );
    }

    /// The same compile repeated (a log made of copies) is one row, not one per record.
    #[test]
    fn repeated_equal_rows_are_kept_once() {
        let mut many = Vec::new();
        for _ in 0..1000 {
            many.extend(rows());
        }
        many.push(row("_Z5scalePf", "scale(float*)", "sm_90", 40));
        let picked = select("scale", &many).unwrap();
        let registers: Vec<(&str, u32)> = picked
            .iter()
            .map(|row| (row.arch.as_str(), row.registers))
            .collect();
        assert_eq!(registers, [("sm_80", 16), ("sm_90", 18), ("sm_90", 40)]);
    }

    /// Nothing matches: the kernels are listed by name, the first hundred when there are more.
    #[test]
    fn no_match_lists_the_first_names() {
        let error = select("nope", &rows()).unwrap_err();
        assert_eq!(
            error.message(),
            "no kernel named `nope`; the kernels are:\n  ns::sums(float*)\n  scale(float*)\n  scale_whole(float*)"
        );
        let many: Vec<KernelRow> = (0..1000)
            .rev()
            .map(|index| row(&format!("k{index:04}"), "", "sm_90", 16))
            .collect();
        let error = select("nope", &many).unwrap_err();
        let lines: Vec<&str> = error.message().lines().collect();
        assert_eq!(lines.len(), 1 + NAMES_LISTED + 1, "{}", error.message());
        assert_eq!(lines[1], "  k0000");
        assert_eq!(lines[NAMES_LISTED], "  k0099");
        assert_eq!(
            lines[NAMES_LISTED + 1],
            "  … and more (the first 100 by name are listed)"
        );
    }

    #[test]
    fn first_names_keep_the_smallest_and_say_when_there_were_more() {
        let mut names = FirstNames::new();
        for index in (0..NAMES_LISTED).rev() {
            names.insert(index);
            names.insert(index);
        }
        assert!(!names.more);
        names.insert(NAMES_LISTED - 1);
        assert!(!names.more);
        names.insert(NAMES_LISTED);
        assert!(names.more);
        assert_eq!(names.names.len(), NAMES_LISTED);
        assert_eq!(names.names.last(), Some(&(NAMES_LISTED - 1)));
    }
}
