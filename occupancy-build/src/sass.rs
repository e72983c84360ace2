//! The SASS stage: the machine code of the compile that already ran, read into per-kernel facts.
//!
//! For every compiled `.cu` (compiled with `-lineinfo`, which adds line tables and does not change
//! the code), `cuobjdump -xelf all` takes the per-arch cubins out of the fatbin or object the
//! compile produced, and `nvdisasm -c -g` disassembles each with its source lines; the text goes
//! to `occupancy_core::sass`. Nothing is compiled a second time. The facts are cached next to the
//! binary in the compile's cache entry (`<binary>.sass.json`), keyed by the binary's SHA-256, so
//! a cached compile reads no SASS again.
//!
//! When nvdisasm or cuobjdump is missing, the stage reports why ([`SassEvidence::unavailable`])
//! and the caller says so in a warning: the SASS lints did not run. A disassembler that runs and
//! fails, or text the reader cannot read, fails the build (fail closed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::lint::evaluate::Finding;
use occupancy_core::lint::LintId;
use occupancy_core::report::KernelRow;
use occupancy_core::sass::{self, SassFacts};
use sha2::{Digest, Sha256};

use crate::compile::CompiledSource;
use crate::fsutil::write_atomic;
use crate::toolchain::Toolchain;
use crate::Error;

/// ptxas's warning that it dropped a `setmaxnreg`.
pub const C7508: &str = "(C7508)";

/// The cached facts' format and reader: bump it whenever `occupancy_core::sass` reads the same
/// SASS into other facts, so that cached facts of the old reader are read again (2: a call into
/// the kernel's own code is not a call; 3: what was read is recorded: all, or kernels per arch).
const CACHE_SCHEMA: u32 = 3;

/// What the SASS of a build says, per kernel and architecture.
#[derive(Debug, Clone, Default)]
pub struct SassEvidence {
    /// `(kernel symbol, arch)` → facts.
    pub facts: BTreeMap<(String, String), SassFacts>,
    /// Kernels whose PTX has `setmaxnreg`.
    pub setmaxnreg_entries: BTreeSet<String>,
    /// Sources whose compile printed ptxas warning C7508.
    pub c7508_sources: BTreeSet<PathBuf>,
    /// Why no SASS was read (a tool missing); `None` when it was.
    pub unavailable: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CacheFile {
    schema: u32,
    binary_sha256: String,
    /// What was read.
    selection: Selection,
    kernels: Vec<SassFacts>,
}

impl CacheFile {
    /// Whether these facts cover `wanted` of this binary.
    fn covers(&self, binary_sha256: &str, wanted: &Selection) -> bool {
        self.schema == CACHE_SCHEMA
            && self.binary_sha256 == binary_sha256
            && self.selection.covers(wanted)
    }
}

/// The SASS stage's tools: `OCCUPANCY_NVDISASM`/`OCCUPANCY_CUOBJDUMP` (resolved into the
/// context), else beside nvcc, else the toolkit's `bin/`, else `PATH`.
#[derive(Debug, Clone, Default)]
pub struct SassTools {
    pub nvdisasm: Option<PathBuf>,
    pub cuobjdump: Option<PathBuf>,
    /// For sources whose binary has no line tables: what assembles cubins that have them.
    pub line_tables: Option<crate::line_tables::LineTableCompiler>,
}

impl SassTools {
    pub fn locate(context: &crate::context::Context, toolchain: &Toolchain) -> SassTools {
        SassTools {
            nvdisasm: context
                .nvdisasm
                .clone()
                .or_else(|| locate_tool(toolchain, "nvdisasm")),
            cuobjdump: context
                .cuobjdump
                .clone()
                .or_else(|| locate_tool(toolchain, "cuobjdump")),
            line_tables: Some(crate::line_tables::LineTableCompiler::new(
                context, toolchain,
            )),
        }
    }
}

/// A toolkit tool beside nvcc, in the toolkit's `bin/`, or on `PATH` (not a build input: `cc`
/// does not track `PATH` either).
fn locate_tool(toolchain: &Toolchain, name: &str) -> Option<PathBuf> {
    let beside_nvcc = toolchain.nvcc.parent().map(|bin| bin.join(name));
    let in_home = toolchain.cuda_home.join("bin").join(name);
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(name));
    beside_nvcc
        .into_iter()
        .chain(std::iter::once(in_home))
        .chain(on_path)
        .find(|path| path.is_file())
}

/// What the SASS stage must read for one compiled source: decided by the caller from ptxas's
/// records and the lint levels, so that nvdisasm (about 0.2 s of CPU per cubin however small)
/// runs only where a SASS lint above `allow` can fire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SassDemand {
    /// Read every function of every arch whatever the lints (`OCCUPANCY_SASS=all`): facts for
    /// every row of the report, for `explain`, HTML and tests.
    pub everything: bool,
    /// Every kernel of the source (the functions that are not callees).
    pub entries: BTreeSet<String>,
    /// The SASS lints above `allow` for at least one kernel of the source. A lint whose trigger is
    /// in the PTX (`call`, `fp64`, `setmaxnreg_*`) makes every arch of the source needed when the
    /// PTX has that operation.
    pub enabled_lints: BTreeSet<LintId>,
    /// Per arch, the kernels of the source that use local memory there (spills, a stack frame,
    /// local bytes) and have a lint that reads it above `allow` (`spill_in_loop`, the
    /// hottest-spill note of `spills`, `local_array`): every `LDL`/`STL` is in ptxas's stack
    /// frame, so other kernels and archs cannot have one.
    pub local_memory: BTreeMap<String, BTreeSet<String>>,
}

/// What to disassemble of one binary: every function of every arch, or named kernels per arch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Selection {
    All,
    /// Per arch, the kernels to read; with `callees`, every non-kernel function too (the
    /// callees a `call` finding measures).
    Kernels {
        kernels: BTreeMap<String, BTreeSet<String>>,
        callees: bool,
    },
}

impl Selection {
    /// Whether facts read for `self` include everything `wanted` asks for.
    fn covers(&self, wanted: &Selection) -> bool {
        match (self, wanted) {
            (Selection::All, _) => true,
            (Selection::Kernels { .. }, Selection::All) => false,
            (
                Selection::Kernels {
                    kernels: read,
                    callees: read_callees,
                },
                Selection::Kernels { kernels, callees },
            ) => {
                (*read_callees || !callees)
                    && kernels.iter().all(|(arch, kernels)| {
                        read.get(arch).is_some_and(|read| kernels.is_subset(read))
                    })
            }
        }
    }

    fn has_arch(&self, arch: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Kernels { kernels, .. } => kernels.contains_key(arch),
        }
    }

    /// The kernels to disassemble on `arch` (`None`: all of its functions).
    fn kernels_on(&self, arch: &str) -> Option<&BTreeSet<String>> {
        match self {
            Selection::All => None,
            Selection::Kernels { kernels, .. } => kernels.get(arch),
        }
    }

    /// Whether non-kernel functions are read too.
    fn callees(&self) -> bool {
        matches!(self, Selection::Kernels { callees: true, .. })
    }

    fn has(&self, facts: &SassFacts) -> bool {
        let arch = facts.arch.as_deref().unwrap_or_default();
        self.kernels_on(arch)
            .map_or(self.has_arch(arch), |kernels| {
                kernels.contains(&facts.kernel)
            })
    }
}

/// The PTX operations that can become what a SASS lint reports, and the lints that read them:
/// `call` (a non-inlined call), FP64 arithmetic, `setmaxnreg`. (ptxas's own subroutines for
/// IEEE division or 64-bit integer division are not `call` findings and trigger nothing.)
const PTX_TRIGGERS: [(&str, &[LintId]); 3] = [
    ("call", &[LintId::Call]),
    ("f64", &[LintId::Fp64]),
    (
        "setmaxnreg",
        &[LintId::SetmaxnregIgnored, LintId::SetmaxnregBudget],
    ),
];

/// What of `source` to disassemble (`None`: nothing): the kernels whose PTX has an operation
/// whose lint is enabled (`call`, FP64, `setmaxnreg`), on every arch and with the callees, and
/// the kernels with local memory on the archs where they have it.
fn selection(
    programs: &[ProgramScan],
    demand: Option<&SassDemand>,
    called: &mut BTreeSet<String>,
) -> Option<Selection> {
    let demand = demand?;
    if demand.everything {
        return Some(Selection::All);
    }
    let mut kernels = demand.local_memory.clone();
    let mut callees = false;
    for program in programs
        .iter()
        .filter(|program| !program.triggered.is_empty())
    {
        callees = true;
        called.extend(program.called.iter().cloned());
        for arch in &program.archs {
            kernels
                .entry(arch.clone())
                .or_default()
                .extend(program.triggered.iter().cloned());
        }
    }
    (!kernels.is_empty()).then_some(Selection::Kernels { kernels, callees })
}

/// What one PTX program says before any disassembly (its text read once).
#[derive(Debug, Default)]
struct ProgramScan {
    /// The archs whose SASS came from it.
    archs: Vec<String>,
    /// Kernels with `setmaxnreg`.
    setmaxnreg: BTreeSet<String>,
    /// Kernels whose code has an operation whose lint the demand enables.
    triggered: BTreeSet<String>,
    /// The functions it calls by name (`*` for an indirect call), when some kernel triggered.
    called: BTreeSet<String>,
}

/// Reads each program's PTX once: its `setmaxnreg` kernels and, for `demand`'s enabled lints,
/// the kernels whose code triggers them and the functions called.
fn scan_programs(source: &CompiledSource, demand: Option<&SassDemand>) -> Vec<ProgramScan> {
    let triggers: Vec<&str> = PTX_TRIGGERS
        .iter()
        .filter(|(_, lints)| {
            demand
                .is_some_and(|demand| lints.iter().any(|lint| demand.enabled_lints.contains(lint)))
        })
        .map(|(operation, _)| *operation)
        .collect();
    source
        .programs
        .iter()
        .map(|program| {
            let ptx = std::fs::read_to_string(&program.ptx).unwrap_or_default();
            let triggered = if triggers.is_empty() {
                BTreeSet::new()
            } else {
                sass::ptx_entries_with_operations(&ptx, &triggers)
            };
            ProgramScan {
                archs: program.archs.clone(),
                setmaxnreg: sass::ptx_entries_with_operations(&ptx, &["setmaxnreg"]),
                called: if triggered.is_empty() {
                    BTreeSet::new()
                } else {
                    ptx_called_functions(&ptx)
                },
                triggered,
            }
        })
        .collect()
}

/// Reads the SASS of every compiled source that has a binary and a [`SassDemand`] that needs it
/// (keyed by the source's path). `spills_reported(kernel, arch)`: ptxas reported spill bytes.
pub fn read_evidence(
    tools: &SassTools,
    compiled: &[CompiledSource],
    demands: &BTreeMap<PathBuf, SassDemand>,
    spills_reported: &dyn Fn(&str, &str) -> bool,
) -> Result<SassEvidence, Error> {
    let mut evidence = SassEvidence::default();
    let tools = match (&tools.nvdisasm, &tools.cuobjdump) {
        (Some(nvdisasm), Some(cuobjdump)) => Some(Disassembler {
            cuobjdump,
            nvdisasm,
            line_tables: tools.line_tables.as_ref(),
            spills_reported,
        }),
        _ => {
            evidence.unavailable = Some(
                "nvdisasm or cuobjdump was not found (set OCCUPANCY_NVDISASM and OCCUPANCY_CUOBJDUMP, put them beside nvcc, or `pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump`)".to_owned(),
            );
            None
        }
    };
    for source in compiled {
        if source.compiler_log.contains(C7508) {
            evidence.c7508_sources.insert(source.source.clone());
        }
        let demand = demands.get(&source.source);
        // Every program's PTX: with `ptx_per_arch` a kernel may differ between them.
        let programs = scan_programs(source, demand);
        for program in &programs {
            evidence
                .setmaxnreg_entries
                .extend(program.setmaxnreg.iter().cloned());
        }
        let (Some(disassembler), Some(binary)) = (&tools, &source.binary) else {
            continue;
        };
        let mut called = BTreeSet::new();
        let Some(selection) = selection(&programs, demand, &mut called) else {
            continue;
        };
        let entries = demand.map_or_else(BTreeSet::new, |demand| demand.entries.clone());
        let functions = Functions { entries, called };
        for facts in disassembler.facts_of_binary(source, binary, &selection, &functions)? {
            let arch = facts.arch.clone().unwrap_or_default();
            evidence.facts.insert((facts.kernel.clone(), arch), facts);
        }
    }
    Ok(evidence)
}

/// [`read_evidence`] for a build: says in a warning when the SASS lints could not run.
pub fn read_build_evidence(
    context: &crate::context::Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    demands: &BTreeMap<PathBuf, SassDemand>,
    spilled: &BTreeSet<(String, String)>,
    cargo: &mut crate::cargo_lines::CargoLines,
) -> Result<SassEvidence, Error> {
    let tools = SassTools::locate(context, toolchain);
    let evidence = read_evidence(&tools, compiled, demands, &|kernel, arch| {
        spilled.contains(&(kernel.to_owned(), arch.to_owned()))
    })?;
    if let Some(warning) = evidence.unavailable_warning() {
        cargo.warning(&format!("occupancy: {warning}"));
    }
    Ok(evidence)
}

impl SassEvidence {
    /// Why the SASS lints did not run, for a warning; `None` when they did.
    pub fn unavailable_warning(&self) -> Option<String> {
        self.unavailable.as_ref().map(|reason| {
            format!("{reason}: the SASS lints (spill_in_loop, local_array, call, fp64, setmaxnreg_ignored, setmaxnreg_budget) were not checked")
        })
    }

    /// The facts of `kernel` on `arch`, with source paths relative to `package_dir` when inside.
    pub fn facts_of(&self, kernel: &str, arch: &str, package_dir: &Path) -> Option<SassFacts> {
        let mut facts = self
            .facts
            .get(&(kernel.to_owned(), arch.to_owned()))?
            .clone();
        let relative = |file: &mut String| {
            if let Ok(inside) = Path::new(file.as_str()).strip_prefix(package_dir) {
                *file = inside.display().to_string();
            }
        };
        facts
            .lines
            .iter_mut()
            .for_each(|group| relative(&mut group.file));
        facts
            .loops
            .iter_mut()
            .filter_map(|found| found.file.as_mut())
            .for_each(relative);
        Some(facts)
    }

    /// The SASS findings of one kernel row.
    pub fn findings(&self, source: &Path, row: &KernelRow) -> Vec<Finding> {
        let Some(facts) = &row.sass else {
            return Vec::new();
        };
        sass::evaluate_sass(&sass::SassLintInputs {
            facts,
            kernel: row.display_name(),
            arch: &row.arch,
            block_threads: row.block,
            registers: row.registers,
            ptx_has_setmaxnreg: self.setmaxnreg_entries.contains(&row.name),
            c7508_warned: self.c7508_sources.contains(source),
        })
    }
}

/// Adds to a `spills` finding the line of the hottest spill on its architecture.
pub fn note_hottest_spill<'a>(finding: &mut Finding, rows: impl Iterator<Item = &'a KernelRow>) {
    let facts = rows
        .filter(|row| finding.arch.as_deref().is_none_or(|arch| arch == row.arch))
        .find_map(|row| row.sass.as_ref());
    if let Some(note) = facts.and_then(sass::hottest_spill_note) {
        finding.notes.push(note);
    }
}

fn cache_path(binary: &Path) -> PathBuf {
    let mut name = binary.as_os_str().to_owned();
    name.push(".sass.json");
    PathBuf::from(name)
}

/// The tools and what the reader needs from ptxas.
struct Disassembler<'a> {
    cuobjdump: &'a Path,
    nvdisasm: &'a Path,
    line_tables: Option<&'a crate::line_tables::LineTableCompiler>,
    spills_reported: &'a dyn Fn(&str, &str) -> bool,
}

impl Disassembler<'_> {
    /// The facts of `selection` of one binary: from the cache beside it when they cover it
    /// for the same bytes, else read and cached.
    fn facts_of_binary(
        &self,
        source: &CompiledSource,
        binary: &Path,
        selection: &Selection,
        functions: &Functions,
    ) -> Result<Vec<SassFacts>, Error> {
        let bytes = std::fs::read(binary).map_err(|error| Error::Io {
            path: binary.to_path_buf(),
            error,
        })?;
        let binary_sha256 = format!("{:x}", Sha256::digest(&bytes));
        let cache = cache_path(binary);
        if let Some(cached) = std::fs::read(&cache)
            .ok()
            .and_then(|text| serde_json::from_slice::<CacheFile>(&text).ok())
            .filter(|cached| cached.covers(&binary_sha256, selection))
        {
            return Ok(cached
                .kernels
                .into_iter()
                .filter(|facts| selection.has(facts))
                .collect());
        }
        let work = binary.with_file_name(format!("sass-work-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|error| Error::Io {
            path: work.clone(),
            error,
        })?;
        let result = self.disassemble(source, binary, &work, selection, functions);
        let _ = std::fs::remove_dir_all(&work);
        let file = CacheFile {
            schema: CACHE_SCHEMA,
            binary_sha256,
            selection: selection.clone(),
            kernels: result?,
        };
        let json = serde_json::to_vec(&file).expect("SASS facts are plain data");
        write_atomic(&cache, &json)?;
        Ok(file.kernels)
    }
}

/// The functions of a source a selection can name: its kernels, and the functions its PTX calls
/// by name (`*` for an indirect call: any non-kernel function may be the callee).
#[derive(Debug, Default)]
struct Functions {
    entries: BTreeSet<String>,
    called: BTreeSet<String>,
}

/// `nvdisasm -fun`'s list (symbol indices) for `kernels` of one cubin, and with `callees` the
/// functions the PTX calls; `None` (read the whole cubin) when a kernel is not in the symbol
/// table.
fn function_indices(
    cubin: &Path,
    kernels: &BTreeSet<String>,
    callees: bool,
    functions: &Functions,
) -> Option<String> {
    let bytes = std::fs::read(cubin).ok()?;
    let symbols = crate::cubin::function_symbols(&bytes)?;
    if !kernels.iter().all(|kernel| symbols.contains_key(kernel)) {
        return None;
    }
    let any_callee = functions.called.contains("*");
    let wanted = |name: &str| {
        kernels.contains(name)
            || (callees
                && (functions.called.contains(name)
                    || (any_callee && !functions.entries.contains(name))))
    };
    let indices: BTreeSet<usize> = symbols
        .iter()
        .filter(|(name, _)| wanted(name))
        .map(|(_, index)| *index)
        .collect();
    Some(
        indices
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// Every function the PTX calls by name, in kernels and functions alike (so callees of callees
/// too), one pass; an indirect call (`call %rd4, ...`) adds `*`. A call's operands may span lines
/// (`call.uni (retval0),\n\tname,\n\t(param0);`).
fn ptx_called_functions(ptx: &str) -> BTreeSet<String> {
    let mut called = BTreeSet::new();
    let mut pending: Option<String> = None;
    for line in ptx.lines() {
        let code = line.split("//").next().unwrap_or("").trim();
        let text = match pending.take() {
            Some(mut so_far) => {
                so_far.push(' ');
                so_far.push_str(code);
                so_far
            }
            None if code.starts_with("call") => code.to_owned(),
            None => continue,
        };
        let Some((operands, _)) = text.split_once(';') else {
            pending = Some(text);
            continue;
        };
        let operands = operands
            .split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest);
        let callee = operands
            .split(',')
            .map(str::trim)
            .find(|part| !part.starts_with('(') && !part.is_empty());
        match callee {
            Some(name) if name.starts_with('%') => called.insert("*".to_owned()),
            Some(name) => called.insert(name.to_owned()),
            None => false,
        };
    }
    called
}

/// Per arch, the kernels `selection` reads of `source` (for [`Selection::All`], every kernel on
/// every arch of its programs).
fn selected_kernels(
    source: &CompiledSource,
    selection: &Selection,
    functions: &Functions,
) -> BTreeMap<String, BTreeSet<String>> {
    match selection {
        Selection::Kernels { kernels, .. } => kernels.clone(),
        Selection::All => source
            .programs
            .iter()
            .flat_map(|program| program.archs.iter())
            .map(|arch| (arch.clone(), functions.entries.clone()))
            .collect(),
    }
}

/// The arch of a cubin cuobjdump extracted (`name.1.sm_90a.cubin` -> `sm_90a`).
fn cubin_arch(path: &Path) -> Option<&str> {
    path.file_stem()?.to_str()?.rsplit('.').next()
}

fn run_tool(command: &mut Command, source: &CompiledSource) -> Result<String, Error> {
    let rendered = crate::compile::render_command(command);
    let output = command.output().map_err(|error| Error::ToolNotStarted {
        command: rendered.clone(),
        error,
    })?;
    if !output.status.success() {
        return Err(Error::UnreadableOutput {
            file: source.source.clone(),
            message: format!(
                "`{rendered}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

impl Disassembler<'_> {
    /// Extracts the binary's cubins (or, for a binary without line tables, assembles cubins
    /// with them: `crate::line_tables`), disassembles those of `selection` in parallel (only the
    /// selected kernels' functions where it names them), reads the facts.
    fn disassemble(
        &self,
        source: &CompiledSource,
        binary: &Path,
        work: &Path,
        selection: &Selection,
        functions: &Functions,
    ) -> Result<Vec<SassFacts>, Error> {
        let cubins = match (self.line_tables, &source.lineinfo_ptx) {
            (Some(compiler), Some(_)) => {
                let kernels = selected_kernels(source, selection, functions);
                crate::line_tables::line_cubins(compiler, source, &kernels, work)?
                    .into_iter()
                    .map(|(_, cubin)| cubin)
                    .collect()
            }
            _ => self.extract_cubins(source, binary, work, selection)?,
        };
        self.disassemble_cubins(source, binary, &cubins, selection, functions)
    }

    /// `cuobjdump -xelf all`: the binary's cubins of the archs `selection` reads.
    fn extract_cubins(
        &self,
        source: &CompiledSource,
        binary: &Path,
        work: &Path,
        selection: &Selection,
    ) -> Result<Vec<PathBuf>, Error> {
        run_tool(
            Command::new(self.cuobjdump)
                .args(["-xelf", "all"])
                .arg(binary)
                .current_dir(work),
            source,
        )?;
        let mut cubins: Vec<PathBuf> = std::fs::read_dir(work)
            .map_err(|error| Error::Io {
                path: work.to_path_buf(),
                error,
            })?
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cubin"))
            .filter(|path| cubin_arch(path).is_some_and(|arch| selection.has_arch(arch)))
            .collect();
        cubins.sort();
        Ok(cubins)
    }

    /// Disassembles `cubins` in parallel and reads the facts.
    fn disassemble_cubins(
        &self,
        source: &CompiledSource,
        binary: &Path,
        cubins: &[PathBuf],
        selection: &Selection,
        functions: &Functions,
    ) -> Result<Vec<SassFacts>, Error> {
        let nvdisasm = self.nvdisasm;
        let texts: Vec<Result<String, Error>> = std::thread::scope(|scope| {
            let handles: Vec<_> = cubins
                .iter()
                .map(|cubin| {
                    let functions = cubin_arch(cubin)
                        .and_then(|arch| selection.kernels_on(arch))
                        .and_then(|kernels| {
                            function_indices(cubin, kernels, selection.callees(), functions)
                        });
                    scope.spawn(move || {
                        let mut command = Command::new(nvdisasm);
                        command.args(["-c", "-g", "-ndf"]);
                        if let Some(functions) = functions {
                            command.arg("-fun").arg(functions);
                        }
                        run_tool(command.arg(cubin), source)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("nvdisasm runner does not panic"))
                .collect()
        });
        let mut kernels = Vec::new();
        for text in texts {
            kernels.extend(self.read_facts(source, binary, &text?)?);
        }
        Ok(kernels)
    }

    /// The facts of one cubin's disassembly.
    fn read_facts(
        &self,
        source: &CompiledSource,
        binary: &Path,
        text: &str,
    ) -> Result<Vec<SassFacts>, Error> {
        let arch = text
            .lines()
            .find_map(|line| line.trim().strip_prefix(".target"))
            .map(|rest| rest.trim().to_owned())
            .unwrap_or_default();
        sass::analyze(text, |kernel| (self.spills_reported)(kernel, &arch)).map_err(|error| {
            Error::UnreadableOutput {
                file: source.source.clone(),
                message: format!("nvdisasm's SASS of {}: {error}", binary.display()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn called_functions_are_read_across_lines() {
        let ptx = "\tcall.uni (retval0), \n\t__internal_trig_reduction_slowpathd, \n\t(\n\tparam0\n\t);\n\tcall.uni _Z6helperv, ();\n\t// call.uni commented, ();\n\tcall %rd4, (param0), prototype_0;\n\tadd.s32 %r1, %r2, %r3;\n";
        let called: Vec<String> = ptx_called_functions(ptx).into_iter().collect();
        assert_eq!(
            called,
            ["*", "_Z6helperv", "__internal_trig_reduction_slowpathd"]
        );
    }

    #[test]
    fn only_operations_in_a_kernels_code_trigger_it() {
        let ptx = ".extern .func (.param .b32 r) vprintf\n.func helper()\n{\n\tadd.f64 %fd1, %fd2, %fd3;\n\tret;\n}\n.visible .entry saxpy(\n)\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret; // call me\n}\n.visible .entry caller(\n)\n{\n\tcall.uni helper, ();\n\tret;\n}\n.entry _Z6doublev()\n{\n\tadd.f64 %fd1, %fd2, %fd3;\n\tdiv.rn.f32 %f1, %f2, %f3;\n}\n";
        let names = |ops: &[&str]| -> Vec<String> {
            sass::ptx_entries_with_operations(ptx, ops)
                .into_iter()
                .collect()
        };
        assert_eq!(
            names(&["call"]),
            ["caller"],
            "a comment or directive is no call"
        );
        assert_eq!(
            names(&["f64"]),
            ["_Z6doublev"],
            "a .func's FP64 is its caller's call"
        );
        // IEEE division becomes one of ptxas's own subroutines, which no lint reports.
        assert!(names(&["setmaxnreg"]).is_empty());
        let every_trigger: Vec<&str> = PTX_TRIGGERS
            .iter()
            .map(|(operation, _)| *operation)
            .collect();
        assert_eq!(names(&every_trigger), ["_Z6doublev", "caller"]);
    }

    #[test]
    fn cached_facts_are_used_only_for_what_they_cover() {
        let kernels = |pairs: &[(&str, &[&str])]| Selection::Kernels {
            kernels: pairs
                .iter()
                .map(|(arch, names)| {
                    let names = names.iter().map(|name| (*name).to_owned()).collect();
                    ((*arch).to_owned(), names)
                })
                .collect(),
            callees: false,
        };
        let file = |selection: Selection| CacheFile {
            schema: CACHE_SCHEMA,
            binary_sha256: "ab".into(),
            selection,
            kernels: Vec::new(),
        };
        let spill = kernels(&[("sm_90", &["spill"])]);
        assert!(file(Selection::All).covers("ab", &Selection::All));
        assert!(file(Selection::All).covers("ab", &spill));
        assert!(
            !file(Selection::All).covers("cd", &Selection::All),
            "another binary"
        );
        assert!(!file(spill.clone()).covers("ab", &Selection::All));
        assert!(file(kernels(&[("sm_90", &["spill", "other"])])).covers("ab", &spill));
        assert!(!file(kernels(&[("sm_80", &["spill"])])).covers("ab", &spill));
        assert!(!file(kernels(&[("sm_90", &["other"])])).covers("ab", &spill));
        let with_callees = |selection: Selection| match selection {
            Selection::Kernels { kernels, .. } => Selection::Kernels {
                kernels,
                callees: true,
            },
            all => all,
        };
        assert!(!file(spill.clone()).covers("ab", &with_callees(spill.clone())));
        assert!(file(with_callees(spill.clone())).covers("ab", &spill));
        assert_eq!(cubin_arch(Path::new("/w/k.2.sm_90a.cubin")), Some("sm_90a"));
        assert_eq!(cubin_arch(Path::new("k.1.sm_80.cubin")), Some("sm_80"));
    }

    #[test]
    fn a_source_is_read_only_where_an_enabled_lint_can_fire() {
        let dir =
            std::env::temp_dir().join(format!("occupancy-sass-demand-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx = dir.join("k.ptx");
        std::fs::write(
            &ptx,
            ".visible .entry k()\n{\n\tadd.f64 %fd1, %fd2, %fd3;\n\tret;\n}\n",
        )
        .unwrap();
        let source = CompiledSource {
            source: dir.join("k.cu"),
            kind: crate::compile::SourceKind::Cuda,
            ptx: ptx.clone(),
            binary: Some(dir.join("k.fatbin")),
            lineinfo_ptx: None,
            kernel_lines: None,
            compiler_log: String::new(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
            ptx_target: Some("compute_80".into()),
            programs: vec![crate::compile::Program {
                ptx_target: Some("compute_80".into()),
                ptx,
                archs: vec!["sm_80".into(), "sm_90".into()],
            }],
        };
        let demand = |lints: &[LintId], archs: &[&str]| SassDemand {
            everything: false,
            entries: BTreeSet::from(["k".to_owned()]),
            enabled_lints: lints.iter().copied().collect(),
            local_memory: archs
                .iter()
                .map(|arch| ((*arch).to_owned(), BTreeSet::from(["k".to_owned()])))
                .collect(),
        };
        let mut called = BTreeSet::new();
        let mut selection = |source: &CompiledSource, demand: Option<&SassDemand>| {
            selection(&scan_programs(source, demand), demand, &mut called)
        };
        assert_eq!(selection(&source, None), None, "no demand");
        // FP64 in the PTX, but `fp64` at its default `allow` and no local memory: nothing to read.
        let quiet = demand(&[LintId::Call, LintId::Spills], &[]);
        assert_eq!(selection(&source, Some(&quiet)), None);
        let fp64 = demand(&[LintId::Fp64], &[]);
        let k = || BTreeSet::from(["k".to_owned()]);
        assert_eq!(
            selection(&source, Some(&fp64)),
            Some(Selection::Kernels {
                kernels: BTreeMap::from([("sm_80".to_owned(), k()), ("sm_90".to_owned(), k())]),
                callees: true,
            })
        );
        let only_sm_90 = demand(&[LintId::Spills], &["sm_90"]);
        assert_eq!(
            selection(&source, Some(&only_sm_90)),
            Some(Selection::Kernels {
                kernels: BTreeMap::from([("sm_90".to_owned(), BTreeSet::from(["k".to_owned()]))]),
                callees: false,
            })
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_cache_sits_beside_the_binary() {
        assert_eq!(
            cache_path(Path::new("/c/entry/k.fatbin")),
            PathBuf::from("/c/entry/k.fatbin.sass.json")
        );
    }
}
