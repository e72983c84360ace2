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
/// the kernel's own code is not a call; 3: the archs read are recorded, not all).
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
    /// The archs whose cubins were read (`None`: all of the binary's).
    archs: Option<BTreeSet<String>>,
    kernels: Vec<SassFacts>,
}

impl CacheFile {
    /// Whether these facts cover `wanted` archs (`None`: all) of this binary.
    fn covers(&self, binary_sha256: &str, wanted: Option<&BTreeSet<String>>) -> bool {
        self.schema == CACHE_SCHEMA
            && self.binary_sha256 == binary_sha256
            && match (&self.archs, wanted) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(read), Some(wanted)) => wanted.is_subset(read),
            }
    }
}

/// The SASS stage's tools: `OCCUPANCY_NVDISASM`/`OCCUPANCY_CUOBJDUMP` (resolved into the
/// context), else beside nvcc, else the toolkit's `bin/`, else `PATH`.
#[derive(Debug, Clone, Default)]
pub struct SassTools {
    pub nvdisasm: Option<PathBuf>,
    pub cuobjdump: Option<PathBuf>,
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
    /// The SASS lints above `allow` for at least one kernel of the source. A lint whose trigger is
    /// in the PTX (`call`, `fp64`, `setmaxnreg_*`) makes every arch of the source needed when the
    /// PTX has that operation.
    pub enabled_lints: BTreeSet<LintId>,
    /// Archs where a kernel of the source uses local memory (spills, a stack frame, local bytes)
    /// and a lint that reads it (`spill_in_loop`, the hottest-spill note of `spills`,
    /// `local_array`) is above `allow` for it: every `LDL`/`STL` is in ptxas's stack frame, so
    /// other archs cannot have one.
    pub local_memory_archs: BTreeSet<String>,
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

/// The archs of `source` to disassemble (`None`: none). All of them when its PTX has an
/// operation whose lint is enabled; else those with local memory.
fn archs_to_read(
    source: &CompiledSource,
    demand: Option<&SassDemand>,
) -> Option<Option<BTreeSet<String>>> {
    let demand = demand?;
    let triggers: Vec<&str> = PTX_TRIGGERS
        .iter()
        .filter(|(_, lints)| lints.iter().any(|lint| demand.enabled_lints.contains(lint)))
        .map(|(operation, _)| *operation)
        .collect();
    let triggered = !triggers.is_empty()
        && source.programs.iter().any(|program| {
            let ptx = std::fs::read_to_string(&program.ptx).unwrap_or_default();
            ptx_has_operation(&ptx, &triggers)
        });
    if triggered {
        return Some(None);
    }
    (!demand.local_memory_archs.is_empty()).then(|| Some(demand.local_memory_archs.clone()))
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
    for source in compiled {
        if source.compiler_log.contains(C7508) {
            evidence.c7508_sources.insert(source.source.clone());
        }
        // Every program's PTX: with `ptx_per_arch` a kernel may differ between them.
        for program in &source.programs {
            if let Ok(ptx) = std::fs::read_to_string(&program.ptx) {
                evidence
                    .setmaxnreg_entries
                    .extend(sass::ptx_entries_with_setmaxnreg(&ptx));
            }
        }
    }
    let (Some(nvdisasm), Some(cuobjdump)) = (&tools.nvdisasm, &tools.cuobjdump) else {
        evidence.unavailable = Some(
            "nvdisasm or cuobjdump was not found (set OCCUPANCY_NVDISASM and OCCUPANCY_CUOBJDUMP, put them beside nvcc, or `pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump`)".to_owned(),
        );
        return Ok(evidence);
    };
    let disassembler = Disassembler {
        cuobjdump,
        nvdisasm,
        spills_reported,
    };
    for source in compiled {
        let Some(binary) = &source.binary else {
            continue;
        };
        let Some(archs) = archs_to_read(source, demands.get(&source.source)) else {
            continue;
        };
        for facts in disassembler.facts_of_binary(source, binary, archs.as_ref())? {
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
    if let Some(reason) = &evidence.unavailable {
        cargo.warning(&format!(
            "occupancy: {reason}: the SASS lints (spill_in_loop, local_array, call, fp64, setmaxnreg_ignored, setmaxnreg_budget) were not checked"
        ));
    }
    Ok(evidence)
}

impl SassEvidence {
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
        .filter(|row| {
            finding
                .arch
                .as_deref()
                .map_or(true, |arch| arch == row.arch)
        })
        .find_map(|row| row.sass.as_ref());
    if let Some(note) = facts.and_then(sass::hottest_spill_note) {
        finding.notes.push(note);
    }
}

/// Whether the PTX's code (not its directives or comments) has one of `operations`: one
/// linear scan.
fn ptx_has_operation(ptx: &str, operations: &[&str]) -> bool {
    ptx.lines().any(|line| {
        let code = line.split("//").next().unwrap_or("").trim_start();
        !code.starts_with('.') && operations.iter().any(|operation| code.contains(operation))
    })
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
    spills_reported: &'a dyn Fn(&str, &str) -> bool,
}

impl Disassembler<'_> {
    /// The facts of `archs` (`None`: every arch) of one binary: from the cache beside it when
    /// they cover those archs of the same bytes, else read and cached.
    fn facts_of_binary(
        &self,
        source: &CompiledSource,
        binary: &Path,
        archs: Option<&BTreeSet<String>>,
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
            .filter(|cached| cached.covers(&binary_sha256, archs))
        {
            return Ok(cached
                .kernels
                .into_iter()
                .filter(|facts| wanted(archs, facts.arch.as_deref().unwrap_or_default()))
                .collect());
        }
        let work = binary.with_file_name(format!("sass-work-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|error| Error::Io {
            path: work.clone(),
            error,
        })?;
        let result = self.disassemble(source, binary, &work, archs);
        let _ = std::fs::remove_dir_all(&work);
        let file = CacheFile {
            schema: CACHE_SCHEMA,
            binary_sha256,
            archs: archs.cloned(),
            kernels: result?,
        };
        let json = serde_json::to_vec(&file).expect("SASS facts are plain data");
        write_atomic(&cache, &json)?;
        Ok(file.kernels)
    }
}

/// Whether `arch` is among `archs` (`None`: all).
fn wanted(archs: Option<&BTreeSet<String>>, arch: &str) -> bool {
    archs.map_or(true, |archs| archs.contains(arch))
}

/// The arch of a cubin cuobjdump extracted (`name.1.sm_90a.cubin` -> `sm_90a`).
fn cubin_arch(path: &Path) -> Option<&str> {
    path.file_stem()?.to_str()?.rsplit('.').next()
}

fn run_tool(command: &mut Command, source: &CompiledSource) -> Result<String, Error> {
    let rendered = crate::compile::render_command(command);
    let output = command.output().map_err(|error| Error::Tool {
        message: format!("could not run `{rendered}`: {error}"),
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
    /// Extracts the binary's cubins of `archs`, disassembles them in parallel, reads the facts.
    fn disassemble(
        &self,
        source: &CompiledSource,
        binary: &Path,
        work: &Path,
        archs: Option<&BTreeSet<String>>,
    ) -> Result<Vec<SassFacts>, Error> {
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
            .filter(|path| cubin_arch(path).is_some_and(|arch| wanted(archs, arch)))
            .collect();
        cubins.sort();
        let nvdisasm = self.nvdisasm;
        let texts: Vec<Result<String, Error>> = std::thread::scope(|scope| {
            let handles: Vec<_> = cubins
                .iter()
                .map(|cubin| {
                    scope.spawn(move || {
                        run_tool(
                            Command::new(nvdisasm).args(["-c", "-g", "-ndf"]).arg(cubin),
                            source,
                        )
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
    fn only_operations_in_code_trigger() {
        let clean = ".visible .entry saxpy(\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n}\n";
        assert!(!ptx_has_operation(clean, &["call", "f64"]));
        let double = clean.replace("fma.rn.f32", "fma.rn.f64");
        assert!(ptx_has_operation(&double, &["f64"]));
        assert!(!ptx_has_operation(&double, &["call"]));
        let call = clean.replace("ret;", "call.uni helper, ();");
        assert!(ptx_has_operation(&call, &["call"]));
        let commented = clean.replace("ret;", "ret; // call me");
        assert!(!ptx_has_operation(&commented, &["call"]));
        let directive =
            ".extern .func (.param .b32 r) vprintf\n.visible .entry k()\n{\n\tret;\n}\n";
        assert!(!ptx_has_operation(directive, &["f64"]));
        // IEEE division becomes one of ptxas's own subroutines, which no lint reports.
        let divide = clean.replace("fma.rn.f32 %f1, %f2, %f3, %f4", "div.rn.f32 %f1, %f2, %f3");
        let every_trigger: Vec<&str> = PTX_TRIGGERS
            .iter()
            .map(|(operation, _)| *operation)
            .collect();
        assert!(!ptx_has_operation(&divide, &every_trigger));
    }

    #[test]
    fn cached_facts_are_used_only_for_the_archs_they_cover() {
        let file = |archs: Option<&[&str]>| CacheFile {
            schema: CACHE_SCHEMA,
            binary_sha256: "ab".into(),
            archs: archs.map(|archs| archs.iter().map(|arch| (*arch).to_owned()).collect()),
            kernels: Vec::new(),
        };
        let set = |archs: &[&str]| {
            archs
                .iter()
                .map(|arch| (*arch).to_owned())
                .collect::<BTreeSet<_>>()
        };
        assert!(file(None).covers("ab", None));
        assert!(file(None).covers("ab", Some(&set(&["sm_90"]))));
        assert!(!file(None).covers("cd", None), "another binary");
        assert!(!file(Some(&["sm_90"])).covers("ab", None));
        assert!(file(Some(&["sm_80", "sm_90"])).covers("ab", Some(&set(&["sm_90"]))));
        assert!(!file(Some(&["sm_90"])).covers("ab", Some(&set(&["sm_80"]))));
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
            enabled_lints: lints.iter().copied().collect(),
            local_memory_archs: archs.iter().map(|arch| (*arch).to_owned()).collect(),
        };
        assert_eq!(archs_to_read(&source, None), None, "no demand");
        // FP64 in the PTX, but `fp64` at its default `allow` and no local memory: nothing to read.
        assert_eq!(
            archs_to_read(&source, Some(&demand(&[LintId::Call, LintId::Spills], &[]))),
            None
        );
        assert_eq!(
            archs_to_read(&source, Some(&demand(&[LintId::Fp64], &[]))),
            Some(None)
        );
        let only_sm_90 = demand(&[LintId::Spills], &["sm_90"]);
        assert_eq!(
            archs_to_read(&source, Some(&only_sm_90)),
            Some(Some(BTreeSet::from(["sm_90".to_owned()])))
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
