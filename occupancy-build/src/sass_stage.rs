//! The SASS stage: the machine code of the compile that already ran, read into per-kernel facts.
//!
//! For every compiled `.cu` whose [`SassDemand`] needs it, the kernels a lint above `allow` can
//! report on are disassembled from the cubins of the compile that already ran, all binaries of
//! the build in one batch ([`crate::disassemble`]: one `nvdisasm` per architecture); the text
//! goes to `occupancy_core::sass`. A binary assembled with `-lineinfo` (line tables; the code is
//! the same) is read as it is; a `compile_ptx` binary assembled from the stripped PTX has no line
//! tables, so its kernels that use local memory, whose findings name lines, are read from cubins
//! of just those kernels assembled from the `-lineinfo` PTX kept in the entry
//! ([`crate::line_table_cubins`]). The facts are cached next to the binary in the compile's cache entry
//! (`<binary>.sass.json`), keyed by the binary's size and modification time, so a cached compile
//! reads no SASS again.
//!
//! When nvdisasm or cuobjdump is missing, the stage reports why ([`SassEvidence::unavailable`])
//! and the caller says so in a warning: the SASS lints did not run. A disassembler that runs and
//! fails, or text the reader cannot read, fails the build (fail closed).

use occupancy_core::kernel::CompileNotes;
use occupancy_core::lint::evaluate::LevelSources;
use occupancy_core::lint::Level;

use crate::declarations::{Declarations, Declared};
use crate::levels::Levels;
use crate::matching::Matching;
use crate::parse::CompiledKernel;
use crate::sass_selection::{local_memory_is_read, spills, uses_local_memory, MachineCodeLints};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_core::lint::LintId;
use occupancy_core::sass::SassFacts;

use crate::compile::CompiledSource;
use crate::disassemble::{Disassembler, Nvdisasm, Wanted};
use crate::fsutil::write_atomic;
use crate::toolchain::Toolchain;
use crate::Error;

/// What ptxas's lines say when it drops a `setmaxnreg` (C7504, C7505, C7508, ...).
const SETMAXNREG_IGNORED: &str = "'setmaxnreg' ignored";

/// The cached facts' format and reader: bump it whenever `occupancy_core::sass` reads the same
/// SASS into other facts, so that cached facts of the old reader are read again (2: a call into
/// the kernel's own code is not a call; 3: what was read is recorded: all, or kernels per arch;
/// 4: kernels only, no callee functions, read by raw-mode batches; 5: keyed by the binary's
/// size and modification time, not its SHA-256; 6: a call through a register names the function
/// it reaches, or is indirect, instead of naming the register; 7: which kernels were read from
/// line-table cubins is recorded; 8: a branch's predicate operand, sm_100's `BRA.U UP0, ...`,
/// makes it conditional, so loops are found on sm_100 and later; 9: the local accesses of code
/// without a line table are kept under a line that names none).
const CACHE_SCHEMA: u32 = 9;

/// What the SASS of a build says, per kernel and architecture.
#[derive(Debug, Clone, Default)]
pub struct SassEvidence {
    /// `(kernel symbol, arch)` → facts.
    pub facts: BTreeMap<(String, String), SassFacts>,
    /// Kernels whose PTX has `setmaxnreg`.
    pub setmaxnreg_entries: BTreeSet<String>,
    /// Per source, the lines of its compile that say ptxas ignored a `setmaxnreg` (each once).
    pub setmaxnreg_warnings: BTreeMap<PathBuf, Vec<String>>,
    /// Why no SASS was read (a tool missing); `None` when it was.
    pub unavailable: Option<String>,
    /// Whether ptxas could spill registers to shared memory in this build
    /// ([`SassTools::smem_spilling`]): `spill_in_loop` may suggest `enable_smem_spilling`.
    pub smem_spilling: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct CacheFile {
    schema: u32,
    /// Which binary the facts were read from (`crate::cache::file_stamp`).
    binary_stamp: String,
    /// What was read.
    selection: Selection,
    /// Per arch, the kernels read from line-table cubins (their facts have source lines).
    #[serde(default)]
    lined: BTreeMap<String, BTreeSet<String>>,
    kernels: Vec<SassFacts>,
}

impl CacheFile {
    /// Whether these facts cover `wanted` of this binary, with lines for the kernels of
    /// `lined` (per arch).
    fn covers(
        &self,
        binary_stamp: &str,
        wanted: &Selection,
        lined: &BTreeMap<String, BTreeSet<String>>,
    ) -> bool {
        self.schema == CACHE_SCHEMA
            && self.binary_stamp == binary_stamp
            && self.selection.covers(wanted)
            && lined.iter().all(|(arch, kernels)| {
                self.lined
                    .get(arch)
                    .is_some_and(|read| read.is_superset(kernels))
            })
    }
}

/// The SASS stage's tools: `OCCUPANCY_NVDISASM`/`OCCUPANCY_CUOBJDUMP` (resolved into the
/// context), else beside nvcc, else the toolkit's `bin/`, else `PATH`.
#[derive(Debug, Clone, Default)]
pub struct SassTools {
    pub nvdisasm: Option<PathBuf>,
    pub cuobjdump: Option<PathBuf>,
    /// For sources whose binary has no line tables: what assembles cubins that have them.
    pub line_tables: Option<crate::line_table_cubins::LineTableCompiler>,
    /// How long cuobjdump and nvdisasm may run (the toolchain's limits).
    pub timeouts: crate::process::ToolTimeouts,
    /// Whether ptxas can spill registers to shared memory in this build
    /// ([`smem_spilling_available`]).
    pub smem_spilling: bool,
}

impl SassTools {
    pub fn locate(context: &crate::context::Context, toolchain: &Toolchain) -> SassTools {
        SassTools {
            nvdisasm: context
                .nvdisasm
                .clone()
                .or_else(|| toolchain.locate_tool("nvdisasm")),
            cuobjdump: context
                .cuobjdump
                .clone()
                .or_else(|| toolchain.locate_tool("cuobjdump")),
            line_tables: Some(crate::line_table_cubins::LineTableCompiler::new(
                context, toolchain,
            )),
            timeouts: toolchain.timeouts,
            smem_spilling: smem_spilling_available(toolchain, &context.nvcc_args),
        }
    }
}

/// Whether ptxas can spill registers to shared memory in a build with `toolchain` and these
/// nvcc arguments: CUDA 13.0 or later (the release that documents `enable_smem_spilling`; 12.9's
/// ptxas honours it too, undocumented) and whole-program compilation (ptxas refuses the pragma
/// under `-rdc=true`, `-dc`).
pub(crate) fn smem_spilling_available(
    toolchain: &Toolchain,
    nvcc_args: &[std::ffi::OsString],
) -> bool {
    let major = toolchain
        .release
        .split('.')
        .next()
        .and_then(|major| major.parse::<u32>().ok());
    let relocatable = nvcc_args.iter().enumerate().any(|(index, arg)| {
        let arg = arg.to_string_lossy();
        let value = |flag: &str| -> Option<String> {
            match arg.strip_prefix(flag)? {
                "" => Some(nvcc_args.get(index + 1)?.to_string_lossy().into_owned()),
                rest => Some(rest.strip_prefix('=')?.to_owned()),
            }
        };
        matches!(arg.as_ref(), "-dc" | "--device-c")
            || ["-rdc", "--relocatable-device-code"]
                .iter()
                .any(|flag| value(flag).is_some_and(|value| value == "true"))
    });
    major.is_some_and(|major| major >= 13) && !relocatable
}

impl SassTools {
    /// The tools the parse stage reads the build's own binaries with (a build's binary holds a
    /// cubin for every arch it checks).
    pub fn binary_tools(&self) -> crate::own_binary::BinaryTools {
        crate::own_binary::BinaryTools {
            cuobjdump: self.cuobjdump.clone(),
            timeouts: self.timeouts,
        }
    }
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
    /// Per arch, the kernels of the source that use local memory there and whose findings name
    /// lines (a declared kernel's, or every kernel's when everything is read): when the binary
    /// has no line tables (`CompiledSource::lineinfo_ptx`), these kernels are read from
    /// line-table cubins. Another kernel's facts from such a binary lack the source lines.
    pub uses_local_memory: BTreeMap<String, BTreeSet<String>>,
}

/// What to disassemble of one binary: every function of every arch, or named kernels per arch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Selection {
    All,
    /// Per arch, the kernels to read.
    Kernels {
        kernels: BTreeMap<String, BTreeSet<String>>,
    },
}

impl Selection {
    /// Whether facts read for `self` include everything `wanted` asks for.
    fn covers(&self, wanted: &Selection) -> bool {
        match (self, wanted) {
            (Selection::All, _) => true,
            (Selection::Kernels { .. }, Selection::All) => false,
            (Selection::Kernels { kernels: read }, Selection::Kernels { kernels }) => kernels
                .iter()
                .all(|(arch, kernels)| read.get(arch).is_some_and(|read| kernels.is_subset(read))),
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

    /// Per arch to read, its kernels (`None`: every kernel); `archs` are the binary's.
    fn kernels_by_arch<'a>(
        &'a self,
        archs: impl Iterator<Item = &'a String>,
    ) -> BTreeMap<String, Option<&'a BTreeSet<String>>> {
        match self {
            Selection::All => archs.map(|arch| (arch.clone(), None)).collect(),
            Selection::Kernels { kernels } => kernels
                .iter()
                .map(|(arch, kernels)| (arch.clone(), Some(kernels)))
                .collect(),
        }
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
/// whose lint is enabled (`call`, FP64, `setmaxnreg`), on every arch, and the kernels with local
/// memory on the archs where they have it. A kernel's facts come from its own code section
/// (ptxas places its private subroutines there); other functions are never read.
fn selection(programs: &[ProgramScan], demand: Option<&SassDemand>) -> Option<Selection> {
    let demand = demand?;
    if demand.everything {
        return Some(Selection::All);
    }
    let mut kernels = demand.local_memory.clone();
    for program in programs {
        for arch in program
            .archs
            .iter()
            .filter(|_| !program.triggered.is_empty())
        {
            kernels
                .entry(arch.clone())
                .or_default()
                .extend(program.triggered.iter().cloned());
        }
    }
    (!kernels.is_empty()).then_some(Selection::Kernels { kernels })
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
}

/// Each program's `setmaxnreg` kernels and, for `demand`'s enabled lints, the kernels whose code
/// triggers them, from its summary (`crate::ptx_summary`: the PTX scanned once per compile).
fn scan_programs(
    source: &CompiledSource,
    demand: Option<&SassDemand>,
) -> Result<Vec<ProgramScan>, Error> {
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
            let summary = crate::ptx_summary::summary(source, program)?;
            let with = |operation: &str| {
                (summary.kernels_by_operation.get(operation).cloned()).unwrap_or_default()
            };
            Ok(ProgramScan {
                archs: program.archs.clone(),
                setmaxnreg: with("setmaxnreg"),
                triggered: triggers
                    .iter()
                    .flat_map(|operation| with(operation))
                    .collect(),
            })
        })
        .collect()
}

/// A binary whose facts are not cached for what it needs: read by the batch.
struct Pending<'a> {
    source: &'a CompiledSource,
    demand: &'a SassDemand,
    binary: &'a Path,
    selection: Selection,
    binary_stamp: String,
}

/// Reads the SASS of every compiled source that has a binary and a [`SassDemand`] that needs it
/// (keyed by the source's path): cached facts where they cover it, the rest in one batch (one
/// nvdisasm per arch, [`crate::disassemble`]). `spills_reported(kernel, arch)`: ptxas reported
/// spill bytes.
pub fn read_evidence(
    tools: &SassTools,
    compiled: &[CompiledSource],
    demands: &BTreeMap<PathBuf, SassDemand>,
    spills_reported: &(dyn Fn(&str, &str) -> bool + Sync),
) -> Result<SassEvidence, Error> {
    let mut evidence = SassEvidence {
        smem_spilling: tools.smem_spilling,
        ..SassEvidence::default()
    };
    let disassembler = match (&tools.nvdisasm, &tools.cuobjdump) {
        (Some(nvdisasm), Some(cuobjdump)) => Some(Disassembler {
            cuobjdump,
            nvdisasm: Nvdisasm {
                path: nvdisasm,
                spills_reported,
                timeouts: tools.timeouts,
                refused: None,
            },
            line_tables: tools.line_tables.as_ref(),
        }),
        _ => {
            evidence.unavailable = Some(
                "nvdisasm or cuobjdump was not found (set OCCUPANCY_NVDISASM and OCCUPANCY_CUOBJDUMP, put them beside nvcc, or `pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump`)".to_owned(),
            );
            None
        }
    };
    let mut pending: Vec<Pending> = Vec::new();
    for source in compiled {
        let mut dropped: Vec<String> = Vec::new();
        for line in source.compiler_log.lines() {
            let line = line.trim();
            if line.contains(SETMAXNREG_IGNORED) && !dropped.iter().any(|held| held == line) {
                dropped.push(line.to_string());
            }
        }
        if !dropped.is_empty() {
            evidence
                .setmaxnreg_warnings
                .insert(source.source.clone(), dropped);
        }
        let demand = demands.get(&source.source);
        // Every program's PTX: with `ptx_per_arch` a kernel may differ between them.
        let programs = scan_programs(source, demand)?;
        for program in &programs {
            evidence
                .setmaxnreg_entries
                .extend(program.setmaxnreg.iter().cloned());
        }
        let (Some(_), Some(binary)) = (&disassembler, &source.binary) else {
            continue;
        };
        let (Some(demand), Some(selection)) = (demand, selection(&programs, demand)) else {
            continue;
        };
        let lined = lined_kernels(source, demand, &selection);
        let (binary_stamp, cached) = cached_facts(binary, &selection, &lined)?;
        match cached {
            Some(facts) => evidence.insert(facts),
            None => pending.push(Pending {
                source,
                demand,
                binary,
                selection,
                binary_stamp,
            }),
        }
    }
    if let (Some(disassembler), Some(first)) = (&disassembler, pending.first()) {
        let work = first
            .binary
            .with_file_name(format!("sass-work-{}", std::process::id()));
        let wanted: Vec<Wanted> = pending.iter().map(Pending::wanted).collect();
        for (pending, facts) in pending.iter().zip(disassembler.read(&wanted, &work)?) {
            // Like the PTX summaries: a cache that cannot be written costs the next run a read.
            let _ = write_cache(pending, &facts);
            evidence.insert(facts);
        }
    }
    Ok(evidence)
}

impl Pending<'_> {
    fn wanted(&self) -> Wanted<'_> {
        let archs = self
            .source
            .programs
            .iter()
            .flat_map(|program| &program.archs);
        let mut kernels: BTreeMap<String, Option<BTreeSet<String>>> = (self.selection)
            .kernels_by_arch(archs)
            .into_iter()
            .map(|(arch, kernels)| (arch, kernels.cloned()))
            .collect();
        let from_line_tables = lined_kernels(self.source, self.demand, &self.selection);
        // What comes from line-table cubins is not read from the binary too.
        for (arch, lined) in &from_line_tables {
            if let Some(read) = kernels.get_mut(arch) {
                let all = read.take().unwrap_or_else(|| self.demand.entries.clone());
                *read = Some(all.difference(lined).cloned().collect());
            }
        }
        Wanted {
            source: self.source,
            binary: self.binary,
            kernels,
            from_line_tables,
        }
    }
}

/// For a binary without line tables (`lineinfo_ptx`), per arch of `selection`, the kernels to
/// read from line-table cubins: those whose findings name lines and that use local memory there
/// (`SassDemand::uses_local_memory`; others' facts lack only their loops' lines), or every one
/// when everything is read (`explain` and HTML show every loop's line). Empty for a binary with
/// line tables of its own.
fn lined_kernels(
    source: &CompiledSource,
    demand: &SassDemand,
    selection: &Selection,
) -> BTreeMap<String, BTreeSet<String>> {
    if source.lineinfo_ptx.is_none() {
        return BTreeMap::new();
    }
    let archs = source.programs.iter().flat_map(|program| &program.archs);
    let no_kernels = BTreeSet::new();
    selection
        .kernels_by_arch(archs)
        .into_iter()
        .filter_map(|(arch, kernels)| {
            let read = kernels.unwrap_or(&demand.entries);
            let lined: BTreeSet<String> = match demand.everything {
                true => read.clone(),
                false => {
                    let local = demand.uses_local_memory.get(&arch);
                    read.intersection(local.unwrap_or(&no_kernels))
                        .cloned()
                        .collect()
                }
            };
            (!lined.is_empty()).then_some((arch, lined))
        })
        .collect()
}

/// The binary's stamp (`crate::cache::file_stamp`) and, when the facts cached beside it cover
/// `selection` of this binary, those facts.
fn cached_facts(
    binary: &Path,
    selection: &Selection,
    lined: &BTreeMap<String, BTreeSet<String>>,
) -> Result<(String, Option<Vec<SassFacts>>), Error> {
    let binary_stamp = crate::cache::file_stamp(binary)?;
    let cached = std::fs::read(cache_path(binary))
        .ok()
        .and_then(|text| serde_json::from_slice::<CacheFile>(&text).ok())
        .filter(|cached| cached.covers(&binary_stamp, selection, lined))
        .map(|cached| {
            (cached.kernels.into_iter())
                .filter(|facts| selection.has(facts))
                .collect()
        });
    Ok((binary_stamp, cached))
}

/// Caches the facts read for `pending` beside its binary.
fn write_cache(pending: &Pending, facts: &[SassFacts]) -> Result<(), Error> {
    let file = CacheFile {
        schema: CACHE_SCHEMA,
        binary_stamp: pending.binary_stamp.clone(),
        selection: pending.selection.clone(),
        lined: lined_kernels(pending.source, pending.demand, &pending.selection),
        kernels: facts.to_vec(),
    };
    let json = serde_json::to_vec(&file).expect("SASS facts are plain data");
    write_atomic(&cache_path(pending.binary), &json)
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
    fn insert(&mut self, facts: Vec<SassFacts>) {
        for facts in facts {
            let arch = facts.arch.clone().unwrap_or_default();
            self.facts.insert((facts.kernel.clone(), arch), facts);
        }
    }

    /// Why the SASS lints did not run, for a warning; `None` when they did.
    pub fn unavailable_warning(&self) -> Option<String> {
        self.unavailable.as_ref().map(|reason| {
            format!("{reason}: the SASS lints (spill_in_loop, local_array, call, fp64, setmaxnreg_ignored, setmaxnreg_budget) were not checked")
        })
    }

    /// The facts of `kernel` on `arch`, with source paths relative to `package_dir` when inside.
    pub fn facts_of(&self, kernel: &str, arch: &str, package_dir: &Path) -> Option<SassFacts> {
        let facts = self.facts.get(&(kernel.to_owned(), arch.to_owned()))?;
        Some(relative_facts(facts.clone(), package_dir))
    }

    /// What the machine-code lints need to know of `kernel`'s compile of `source` besides its
    /// SASS facts.
    pub fn compile_notes(&self, source: &Path, kernel: &str) -> CompileNotes {
        CompileNotes {
            ptx_has_setmaxnreg: self.setmaxnreg_entries.contains(kernel),
            setmaxnreg_warnings: self
                .setmaxnreg_warnings
                .get(source)
                .cloned()
                .unwrap_or_default(),
            smem_spilling: self.smem_spilling,
        }
    }
}

/// `facts` with source paths relative to `dir` when inside it (as rows show them), each the
/// file nvdisasm meant ([`nvdisasm_file`]).
pub fn relative_facts(mut facts: SassFacts, dir: &Path) -> SassFacts {
    let relative = |file: &mut String| {
        *file = nvdisasm_file(file);
        if let Ok(inside) = Path::new(file.as_str()).strip_prefix(dir) {
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
    facts
}

/// The file nvdisasm's `//## File "..."` names. nvdisasm prints a line table's name as the
/// compiler wrote it into the PTX (a non-ASCII byte in octal, a newline as `\n`) and reads the
/// name's last backslash as a directory separator: `s-é.cu` is printed `s-\303/251.cu`,
/// `s<newline>x.cu` `s/nx.cu` (issue #35, class 9: findings showed the octal). The printed name
/// when that file exists; else the one whose last `/` was a backslash, escapes undone, when it
/// exists; else the printed name with its escapes undone (a binary's sources may be elsewhere).
pub(crate) fn nvdisasm_file(printed: &str) -> String {
    let unescaped = |name: &str| {
        String::from_utf8_lossy(&occupancy_core::ptxas::unescape_quoted(name)).into_owned()
    };
    if Path::new(printed).exists() {
        return printed.to_owned();
    }
    if let Some(split) = printed.rfind('/') {
        let joined = unescaped(&format!("{}\\{}", &printed[..split], &printed[split + 1..]));
        if Path::new(&joined).exists() {
            return joined;
        }
    }
    unescaped(printed)
}

fn cache_path(binary: &Path) -> PathBuf {
    let mut name = binary.as_os_str().to_owned();
    name.push(".sass.json");
    PathBuf::from(name)
}

/// How a lint's level is found for a kernel without a declaration.
pub(crate) type LevelOf = fn(LintId, &LevelSources<'_>) -> Level;

/// The SASS lints, and `spills` (whose finding carries the hottest spill's line), that are above
/// `allow` for one kernel, with its declaration's levels as check evaluates them (for a kernel
/// without one, `undeclared_level`: [`evaluate::resolve_undeclared_level`] in a build, where it
/// is checked against the hard limits only, [`evaluate::resolve_level`] in `cargo occupancy
/// check`, where the command line gives every kernel its launch).
fn machine_code_lints(
    levels: &Levels,
    declared: Option<&Declared>,
    kernel_name: &str,
    undeclared_level: LevelOf,
) -> BTreeSet<LintId> {
    let attribute_levels =
        declared.map(|declared| crate::expectations::evaluated_levels(&declared.kernel.spec));
    let mut sources = levels.sources(declared, kernel_name);
    if let Some(attribute_levels) = &attribute_levels {
        sources.attribute = Some(attribute_levels);
    }
    [
        LintId::Spills,
        LintId::SpillInLoop,
        LintId::LocalArray,
        LintId::Call,
        LintId::Fp64,
        LintId::SetmaxnregIgnored,
        LintId::SetmaxnregBudget,
    ]
    .into_iter()
    .filter(|&lint| {
        let level = match declared {
            Some(_) => occupancy_core::lint::evaluate::resolve_level(lint, &sources),
            None => undeclared_level(lint, &sources),
        };
        level != Level::Allow
    })
    .collect()
}

impl MachineCodeLints {
    /// At `levels` over the lints' defaults, as `check` levels every kernel.
    pub fn at(levels: &BTreeMap<LintId, Level>, everything: bool) -> MachineCodeLints {
        let levels = Levels::uniform(levels.clone());
        MachineCodeLints {
            enabled: machine_code_lints(
                &levels,
                None,
                "",
                occupancy_core::lint::evaluate::resolve_level,
            ),
            everything,
        }
    }

    /// At `levels`, reading everything under `OCCUPANCY_SASS=all` as a build does.
    pub fn from_environment(
        levels: &BTreeMap<LintId, Level>,
        env: &crate::TrackedEnv,
    ) -> Result<MachineCodeLints, Error> {
        Ok(MachineCodeLints::at(levels, sass_setting(env)?))
    }
}

/// `OCCUPANCY_SASS`: `all` reads every kernel's SASS; `needed` (the default) only where a lint
/// can fire.
pub(crate) fn sass_setting(env: &crate::TrackedEnv) -> Result<bool, Error> {
    match env.get("OCCUPANCY_SASS").as_deref().map(str::trim) {
        None | Some("needed") => Ok(false),
        Some("all") => Ok(true),
        Some(other) => Err(Error::BadSassSetting {
            value: other.to_string(),
        }),
    }
}

/// What the SASS stage must read per source: the machine-code lints above `allow` for some
/// kernel of it, and the archs where such a kernel has local memory for them to read.
pub(crate) fn sass_demands(
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
    read_all: bool,
    undeclared_level: LevelOf,
) -> BTreeMap<PathBuf, crate::sass_stage::SassDemand> {
    let mut demands: BTreeMap<PathBuf, crate::sass_stage::SassDemand> = BTreeMap::new();
    for (index, kernel) in kernels.iter().enumerate() {
        let declared = matching
            .by_kernel
            .get(&index)
            .map(|&at| &declarations.kernels[at]);
        let enabled = machine_code_lints(levels, declared, &kernel.name, undeclared_level);
        let demand = demands.entry(kernel.source.source.clone()).or_default();
        demand.everything = read_all;
        demand.entries.insert(kernel.name.clone());
        for (arch, record) in &kernel.records {
            // Lines where a person reads them: a declared kernel's findings are rendered in
            // full (the hottest spill's line, each in-loop spill's line); an undeclared kernel's
            // are summarized, so its facts come from the binary, exact but for the source lines
            // (assembling its line tables cost candle's PTX build 2.7% more ptxas).
            if uses_local_memory(record) && (declared.is_some() || read_all) {
                demand
                    .uses_local_memory
                    .entry(arch.clone())
                    .or_default()
                    .insert(kernel.name.clone());
            }
            if local_memory_is_read(record, &enabled) {
                demand
                    .local_memory
                    .entry(arch.clone())
                    .or_default()
                    .insert(kernel.name.clone());
            }
        }
        demand.enabled_lints.extend(enabled);
    }
    demands
}

/// Every (kernel, arch) ptxas reported spill bytes for: what the SASS reader calls a spill.
pub(crate) fn spilled_on(kernels: &[CompiledKernel<'_>]) -> BTreeSet<(String, String)> {
    kernels
        .iter()
        .flat_map(|kernel| {
            kernel
                .records
                .iter()
                .filter(|(_, record)| spills(record))
                .map(|(arch, _)| (kernel.name.clone(), arch.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// Issue #35, class 9: the names nvdisasm printed for `s-é.cu` and `s<newline>x.cu` (their
    /// last backslash read as `/`) name those files; a name that exists is kept.
    #[test]
    fn nvdisasm_names_are_read_back_as_the_files() {
        let dir =
            std::env::temp_dir().join(format!("occupancy-nvdisasm-names-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("s")).unwrap();
        for name in ["s-\u{e9}.cu", "s\nx.cu", "k.cu"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let at = |name: &str| format!("{}/{name}", dir.display());
        assert_eq!(
            super::nvdisasm_file(&at("s-\\303/251.cu")),
            at("s-\u{e9}.cu")
        );
        assert_eq!(super::nvdisasm_file(&at("s/nx.cu")), at("s\nx.cu"));
        assert_eq!(super::nvdisasm_file(&at("k.cu")), at("k.cu"));
        assert_eq!(
            super::nvdisasm_file("/elsewhere/\\303\\251.cu"),
            "/elsewhere/\u{e9}.cu"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    #[test]
    fn shared_memory_spilling_needs_cuda_13_and_whole_program_compilation() {
        let toolchain = |release: &str| Toolchain {
            nvcc: PathBuf::from("/cuda/bin/nvcc"),
            cuda_home: PathBuf::from("/cuda"),
            wrapper: None,
            host_args: Vec::new(),
            version_text: format!("Cuda compilation tools, release {release}, V{release}.0"),
            release: release.into(),
            identity_files: Vec::new(),
            fingerprint: String::new(),
            timeouts: Default::default(),
            search_path: Vec::new(),
        };
        let args = |args: &[&str]| -> Vec<std::ffi::OsString> {
            args.iter().map(std::ffi::OsString::from).collect()
        };
        assert!(smem_spilling_available(&toolchain("13.0"), &args(&["-O3"])));
        assert!(!smem_spilling_available(&toolchain("12.9"), &[]));
        for relocatable in [
            &["-rdc=true"][..],
            &["-rdc", "true"],
            &["--relocatable-device-code=true"],
            &["-dc"],
        ] {
            assert!(
                !smem_spilling_available(&toolchain("13.2"), &args(relocatable)),
                "{relocatable:?}"
            );
        }
        assert!(smem_spilling_available(
            &toolchain("13.2"),
            &args(&["-rdc=false"])
        ));
    }

    #[test]
    fn only_operations_in_a_kernels_code_trigger_it() {
        let ptx = ".extern .func (.param .b32 r) vprintf\n.func helper()\n{\n\tadd.f64 %fd1, %fd2, %fd3;\n\tret;\n}\n.visible .entry saxpy(\n)\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret; // call me\n}\n.visible .entry caller(\n)\n{\n\tcall.uni helper, ();\n\tret;\n}\n.entry _Z6doublev()\n{\n\tadd.f64 %fd1, %fd2, %fd3;\n\tdiv.rn.f32 %f1, %f2, %f3;\n}\n";
        let names = |ops: &[&str]| -> Vec<String> {
            occupancy_core::sass::ptx_entries_with_operations(ptx, ops)
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
    fn every_trigger_operation_is_one_the_ptx_summary_records() {
        for (operation, _) in PTX_TRIGGERS {
            assert!(
                crate::ptx_summary::OPERATIONS.contains(&operation),
                "{operation}"
            );
        }
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
        };
        let file = |selection: Selection| CacheFile {
            schema: CACHE_SCHEMA,
            binary_stamp: "ab".into(),
            selection,
            lined: BTreeMap::new(),
            kernels: Vec::new(),
        };
        let spill = kernels(&[("sm_90", &["spill"])]);
        let none = BTreeMap::new();
        assert!(file(Selection::All).covers("ab", &Selection::All, &none));
        assert!(file(Selection::All).covers("ab", &spill, &none));
        assert!(
            !file(Selection::All).covers("cd", &Selection::All, &none),
            "another binary"
        );
        assert!(!file(spill.clone()).covers("ab", &Selection::All, &none));
        assert!(file(kernels(&[("sm_90", &["spill", "other"])])).covers("ab", &spill, &none));
        assert!(!file(kernels(&[("sm_80", &["spill"])])).covers("ab", &spill, &none));
        assert!(!file(kernels(&[("sm_90", &["other"])])).covers("ab", &spill, &none));
        // Facts read without line tables do not stand in for facts that need their lines (a
        // kernel declared since).
        let lined = BTreeMap::from([("sm_90".to_string(), BTreeSet::from(["spill".to_string()]))]);
        assert!(!file(spill.clone()).covers("ab", &spill, &lined));
        let mut with_lines = file(spill.clone());
        with_lines.lined = lined.clone();
        assert!(with_lines.covers("ab", &spill, &lined));
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
            notes: Vec::new(),
            ptx_target: Some("compute_80".into()),
            programs: vec![crate::compile::Program {
                ptx_target: Some("compute_80".into()),
                ptx,
                archs: vec!["sm_80".into(), "sm_90".into()],
                summary: None,
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
            uses_local_memory: BTreeMap::new(),
        };
        let selection = |source: &CompiledSource, demand: Option<&SassDemand>| {
            selection(&scan_programs(source, demand).unwrap(), demand)
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
            })
        );
        let only_sm_90 = demand(&[LintId::Spills], &["sm_90"]);
        assert_eq!(
            selection(&source, Some(&only_sm_90)),
            Some(Selection::Kernels {
                kernels: BTreeMap::from([("sm_90".to_owned(), BTreeSet::from(["k".to_owned()]))]),
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
