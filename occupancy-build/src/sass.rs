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
use occupancy_core::report::KernelRow;
use occupancy_core::sass::{self, SassFacts};
use sha2::{Digest, Sha256};

use crate::compile::CompiledSource;
use crate::env::TrackedEnv;
use crate::fsutil::write_atomic;
use crate::toolchain::Toolchain;
use crate::Error;

/// ptxas's warning that it dropped a `setmaxnreg`.
pub const C7508: &str = "(C7508)";

/// The cached facts' format and reader: bump it whenever `occupancy_core::sass` reads the same
/// SASS into other facts, so that cached facts of the old reader are read again (2: a call into
/// the kernel's own code is not a call).
const CACHE_SCHEMA: u32 = 2;

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
    kernels: Vec<SassFacts>,
}

/// The disassembler: `OCCUPANCY_NVDISASM`, else the toolkit's `bin/`, else `PATH`.
pub fn locate_tool(
    env: &TrackedEnv,
    toolchain: &Toolchain,
    name: &str,
    variable: &str,
) -> Option<PathBuf> {
    if let Some(path) = env.get(variable) {
        return Some(PathBuf::from(path));
    }
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

/// Reads the SASS of every compiled source that has a binary.
/// `spills_reported(kernel, arch)`: ptxas reported spill bytes for it.
/// `uses_local_memory(kernel)`: ptxas reported a stack frame, spills or local memory for it.
pub fn read_evidence(
    env: &TrackedEnv,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    spills_reported: &dyn Fn(&str, &str) -> bool,
    uses_local_memory: &dyn Fn(&str) -> bool,
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
    let nvdisasm = locate_tool(env, toolchain, "nvdisasm", "OCCUPANCY_NVDISASM");
    let cuobjdump = locate_tool(env, toolchain, "cuobjdump", "OCCUPANCY_CUOBJDUMP");
    let (Some(nvdisasm), Some(cuobjdump)) = (nvdisasm, cuobjdump) else {
        evidence.unavailable = Some(
            "nvdisasm or cuobjdump was not found (set OCCUPANCY_NVDISASM and OCCUPANCY_CUOBJDUMP, put them beside nvcc, or `pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump`)".to_owned(),
        );
        return Ok(evidence);
    };
    for source in compiled {
        let Some(binary) = &source.binary else {
            continue;
        };
        let needed = source.programs.iter().any(|program| {
            let ptx = std::fs::read_to_string(&program.ptx).unwrap_or_default();
            needs_disassembly(&ptx, uses_local_memory)
        });
        if !needed {
            continue;
        }
        for facts in facts_of_binary(&cuobjdump, &nvdisasm, source, binary, spills_reported)? {
            let arch = facts.arch.clone().unwrap_or_default();
            evidence.facts.insert((facts.kernel.clone(), arch), facts);
        }
    }
    Ok(evidence)
}

/// [`read_evidence`] for a build: says in a warning when the SASS lints could not run.
pub fn read_build_evidence(
    build: &crate::Build,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    spilled: &BTreeSet<(String, String)>,
    local_memory: &BTreeSet<String>,
    cargo: &mut crate::engine::CargoLines,
) -> Result<SassEvidence, Error> {
    let evidence = read_evidence(
        &build.env,
        toolchain,
        compiled,
        &|kernel, arch| spilled.contains(&(kernel.to_owned(), arch.to_owned())),
        &|kernel| local_memory.contains(kernel),
    )?;
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

/// PTX operations whose SASS can hold a `CALL` or FP64 instructions: `call`, double precision,
/// and the IEEE division, square root and reciprocal that ptxas expands into subroutines.
const PTX_TRIGGERS: [&str; 6] = ["call", "f64", "div.rn", "sqrt.rn", "rcp.rn", "setmaxnreg"];

/// Whether a source's SASS can show anything the SASS lints report. nvdisasm costs about 0.2 s
/// of CPU per cubin however small, so a source is disassembled only when a kernel in it uses
/// local memory (every `LDL`/`STL` is in ptxas's stack frame) or its PTX has an operation
/// that becomes a `CALL`, FP64 or `USETMAXREG` (one linear scan of the PTX).
pub fn needs_disassembly(ptx: &str, uses_local_memory: &dyn Fn(&str) -> bool) -> bool {
    let kernel_uses_local_memory = ptx.lines().any(|line| {
        line.trim_start()
            .strip_prefix(".visible .entry ")
            .or_else(|| line.trim_start().strip_prefix(".entry "))
            .and_then(|rest| rest.split(['(', ' ']).next())
            .is_some_and(uses_local_memory)
    });
    kernel_uses_local_memory
        || ptx.lines().any(|line| {
            let code = line.split("//").next().unwrap_or("").trim_start();
            !code.starts_with('.') && PTX_TRIGGERS.iter().any(|trigger| code.contains(trigger))
        })
}

fn cache_path(binary: &Path) -> PathBuf {
    let mut name = binary.as_os_str().to_owned();
    name.push(".sass.json");
    PathBuf::from(name)
}

fn facts_of_binary(
    cuobjdump: &Path,
    nvdisasm: &Path,
    source: &CompiledSource,
    binary: &Path,
    spills_reported: &dyn Fn(&str, &str) -> bool,
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
        .filter(|cached| cached.schema == CACHE_SCHEMA && cached.binary_sha256 == binary_sha256)
    {
        return Ok(cached.kernels);
    }
    let work = binary.with_file_name(format!("sass-work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|error| Error::Io {
        path: work.clone(),
        error,
    })?;
    let result = disassemble(cuobjdump, nvdisasm, source, binary, &work, spills_reported);
    let _ = std::fs::remove_dir_all(&work);
    let kernels = result?;
    let file = CacheFile {
        schema: CACHE_SCHEMA,
        binary_sha256,
        kernels,
    };
    let json = serde_json::to_vec(&file).expect("SASS facts are plain data");
    write_atomic(&cache, &json)?;
    Ok(file.kernels)
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

fn disassemble(
    cuobjdump: &Path,
    nvdisasm: &Path,
    source: &CompiledSource,
    binary: &Path,
    work: &Path,
    spills_reported: &dyn Fn(&str, &str) -> bool,
) -> Result<Vec<SassFacts>, Error> {
    run_tool(
        Command::new(cuobjdump)
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
        .collect();
    cubins.sort();
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
        let text = text?;
        let arch = text
            .lines()
            .find_map(|line| line.trim().strip_prefix(".target"))
            .map(|rest| rest.trim().to_owned())
            .unwrap_or_default();
        let facts =
            sass::analyze(&text, |kernel| spills_reported(kernel, &arch)).map_err(|error| {
                Error::UnreadableOutput {
                    file: source.source.clone(),
                    message: format!("nvdisasm's SASS of {}: {error}", binary.display()),
                }
            })?;
        kernels.extend(facts);
    }
    Ok(kernels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sources_whose_sass_can_matter_are_disassembled() {
        let clean = ".visible .entry saxpy(\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n}\n";
        assert!(!needs_disassembly(clean, &|_| false));
        assert!(needs_disassembly(clean, &|kernel| kernel == "saxpy"));
        let double = clean.replace("fma.rn.f32", "fma.rn.f64");
        assert!(needs_disassembly(&double, &|_| false));
        let call = clean.replace("ret;", "call.uni helper, ();");
        assert!(needs_disassembly(&call, &|_| false));
        let divide = clean.replace("fma.rn.f32 %f1, %f2, %f3, %f4", "div.rn.f32 %f1, %f2, %f3");
        assert!(needs_disassembly(&divide, &|_| false));
    }

    #[test]
    fn the_cache_sits_beside_the_binary() {
        assert_eq!(
            cache_path(Path::new("/c/entry/k.fatbin")),
            PathBuf::from("/c/entry/k.fatbin.sass.json")
        );
    }
}
