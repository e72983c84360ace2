//! Disassembly for the SASS stage: the selected kernels of every binary that needs reading,
//! with one nvdisasm per architecture for all of them.
//!
//! `cuobjdump -xelf all` takes each binary's per-arch cubins out. From each cubin the kernels to
//! read are cut out by their ELF symbols ([`crate::cubin`]: each kernel's section of code, the
//! subroutines ptxas placed in it, the symbols its relocations name, its `-lineinfo` rows), laid
//! one after another per architecture, and `nvdisasm -c --binary SMxx` disassembles each
//! architecture's code of the whole build in one process ([`occupancy_core::sass::raw`] splits
//! the text back into one section per kernel). nvdisasm spends about 0.15 s of CPU starting up
//! for an architecture, however little it reads, so a build pays that per architecture instead of
//! per cubin. A cubin this cannot cut (an arch before sm_75, which raw mode does not read; a
//! symbol or line table it does not know), and an architecture whose raw disassembly fails, is
//! disassembled whole by nvdisasm's ELF mode (`nvdisasm -c -g -ndf`) as before; both readings
//! give the same facts (`tests` below compares them on the kernel corpus). Either way the cubin's
//! function symbols and constant-bank slots ([`Cubin::call_symbols`]) name the callee of a call
//! through a register, which no disassembly prints.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use occupancy_core::sass::raw::{FunctionCode, RawBinary};
use occupancy_core::sass::{self, FunctionSymbols, SassFacts};

use crate::compile::CompiledSource;
use crate::cubin::Cubin;
use crate::line_table_cubins::LineTableCompiler;
use crate::process::{render_command, run_bounded, ToolKind, ToolTimeouts};
use crate::Error;

/// One cubin of a wanted binary, its arch, and the kernels to read of it (`None`: all).
struct CubinRead {
    arch: String,
    path: PathBuf,
    kernels: Option<BTreeSet<String>>,
}

/// One binary to read and, per arch, which kernels (`None` for an arch: all of them).
pub struct Wanted<'a> {
    pub source: &'a CompiledSource,
    pub binary: &'a Path,
    /// The archs to read from `binary`, each with its kernels (`None`: every kernel).
    pub kernels: BTreeMap<String, Option<BTreeSet<String>>>,
    /// Per arch, the kernels to read from cubins with line tables assembled from the source's
    /// `-lineinfo` PTX ([`crate::line_table_cubins`]), because `binary` has none; never also in
    /// `kernels`. Empty when the binary has line tables.
    pub from_line_tables: BTreeMap<String, BTreeSet<String>>,
}

/// The tools and what the reader needs from ptxas.
pub struct Disassembler<'a> {
    pub cuobjdump: &'a Path,
    pub nvdisasm: Nvdisasm<'a>,
    /// What assembles line-table cubins for [`Wanted::from_line_tables`].
    pub line_tables: Option<&'a LineTableCompiler>,
}

/// nvdisasm, and what its reader needs from ptxas.
pub struct Nvdisasm<'a> {
    pub path: &'a Path,
    /// `(kernel, arch)`: ptxas reported spill bytes.
    pub spills_reported: &'a (dyn Fn(&str, &str) -> bool + Sync),
    /// How long cuobjdump and nvdisasm may run.
    pub timeouts: ToolTimeouts,
    /// Where a code's architecture that this nvdisasm refuses (13.x: `CUDA architecture "SM60"
    /// is deprecated`) is recorded, its code read no further, instead of failing the read:
    /// the binary front end, whose rows come from the cubins without it. `None`: an error.
    pub refused: Option<&'a std::sync::Mutex<BTreeSet<String>>>,
}

impl std::fmt::Debug for Nvdisasm<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Nvdisasm")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// nvdisasm's words when it refuses an architecture it no longer (or does not yet) know.
fn refused_architecture(error: &Error) -> Option<String> {
    let text = error.to_string();
    let line = text.lines().find(|line| {
        line.contains("is deprecated")
            || line.contains("Unsupported")
            || line.contains("not supported")
    })?;
    Some(
        line.split("fatal")
            .last()
            .unwrap_or(line)
            .trim_start_matches([' ', ':'])
            .trim()
            .to_owned(),
    )
}

/// The code of one architecture, from many cubins, and which owner each function is of.
#[derive(Default)]
struct ArchBatch {
    functions: Vec<FunctionCode>,
    owners: Vec<usize>,
    /// The cubins it came from, to read whole if raw mode fails.
    cubins: Vec<WholeCubin>,
}

/// A cubin for nvdisasm's ELF mode, `symbols` only when given.
#[derive(Clone)]
struct WholeCubin {
    owner: usize,
    path: PathBuf,
    symbols: Option<Vec<usize>>,
}

/// The kernels' code of many cubins, by architecture: what one nvdisasm per architecture reads
/// (raw mode), and the cubins raw mode cannot read, each to be read whole. Each function belongs
/// to an *owner* the caller numbers (a binary of the build; a cubin of a binary input), whose
/// facts come back under that number. The build's SASS stage and the binary front end
/// (`occupancy_binary`'s `machine_code`) both fill one and read it with [`Nvdisasm::read`].
#[derive(Default)]
pub struct Batch {
    archs: BTreeMap<String, ArchBatch>,
    whole: Vec<WholeCubin>,
    /// The bytes of code in `archs`: what a caller bounds its memory by.
    code_bytes: usize,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Batch")
            .field("archs", &self.archs.keys().collect::<Vec<_>>())
            .field("whole", &self.whole.len())
            .field("code_bytes", &self.code_bytes)
            .finish()
    }
}

impl Batch {
    /// Puts the wanted `kernels` (`None`: every kernel) of the cubin `bytes`, kept at `path`,
    /// into its arch's batch, or the cubin into the ones read whole when raw mode cannot cut it
    /// (an arch before sm_75, a symbol or line table this does not know, a wanted kernel it does
    /// not have).
    pub fn add(
        &mut self,
        owner: usize,
        arch: &str,
        path: PathBuf,
        bytes: &[u8],
        kernels: Option<&BTreeSet<String>>,
    ) {
        let parsed = Cubin::parse(bytes);
        let symbols = parsed
            .as_ref()
            .and_then(|cubin| cubin.kernel_symbols(kernels));
        let code = parsed
            .as_ref()
            .zip(symbols.as_ref())
            .filter(|_| raw_arch(arch).is_some())
            .and_then(|(cubin, symbols)| cubin.code_of(symbols));
        let cubin = WholeCubin {
            owner,
            path,
            symbols,
        };
        match code {
            Some(code) => {
                let batch = self.archs.entry(arch.to_owned()).or_default();
                self.code_bytes += code
                    .iter()
                    .map(|function| function.code.len())
                    .sum::<usize>();
                batch.owners.extend(std::iter::repeat_n(owner, code.len()));
                batch.functions.extend(code);
                batch.cubins.push(cubin);
            }
            None => self.whole.push(cubin),
        }
    }

    /// The bytes of code to read in raw mode.
    pub fn code_bytes(&self) -> usize {
        self.code_bytes
    }
}

impl Disassembler<'_> {
    /// The facts of every wanted binary, in order. `work` is a scratch directory, removed after.
    pub fn read(&self, wanted: &[Wanted], work: &Path) -> Result<Vec<Vec<SassFacts>>, Error> {
        let _ = std::fs::remove_dir_all(work);
        let result = self.read_in(wanted, work);
        let _ = std::fs::remove_dir_all(work);
        result
    }

    fn read_in(&self, wanted: &[Wanted], work: &Path) -> Result<Vec<Vec<SassFacts>>, Error> {
        let extracted = self.extract_all(wanted, work)?;
        let mut batch = Batch::default();
        for (owner, cubins) in extracted.into_iter().enumerate() {
            for read in cubins {
                let bytes = std::fs::read(&read.path).map_err(|error| Error::Io {
                    path: read.path.clone(),
                    error,
                })?;
                batch.add(owner, &read.arch, read.path, &bytes, read.kernels.as_ref());
            }
        }
        let files: Vec<&Path> = wanted
            .iter()
            .map(|wanted| wanted.source.source.as_path())
            .collect();
        let mut facts: Vec<Vec<SassFacts>> = wanted.iter().map(|_| Vec::new()).collect();
        for (owner, found) in self.nvdisasm.read(&batch, work, &files)? {
            facts[owner].extend(found);
        }
        Ok(facts)
    }

    /// Every wanted binary's cubins on the archs it reads, by arch (cuobjdump in parallel).
    fn extract_all(&self, wanted: &[Wanted], work: &Path) -> Result<Vec<Vec<CubinRead>>, Error> {
        std::thread::scope(|scope| {
            let runs: Vec<_> = wanted
                .iter()
                .enumerate()
                .map(|(owner, binary)| {
                    let dir = work.join(owner.to_string());
                    scope.spawn(move || self.extract(binary, &dir))
                })
                .collect();
            runs.into_iter()
                .map(|run| run.join().expect("cuobjdump runner does not panic"))
                .collect()
        })
    }

    /// The cubins of one binary on the archs it reads, by arch, each with the kernels to read of
    /// it: the binary's own, and line-table cubins for [`Wanted::from_line_tables`].
    fn extract(&self, wanted: &Wanted, dir: &Path) -> Result<Vec<CubinRead>, Error> {
        let mut reads: Vec<CubinRead> = Vec::new();
        for (arch, path) in self.extract_binary(wanted, dir)? {
            let kernels = wanted.kernels.get(&arch).cloned().flatten();
            if kernels.as_ref().is_none_or(|kernels| !kernels.is_empty()) {
                reads.push(CubinRead {
                    arch,
                    path,
                    kernels,
                });
            }
        }
        if wanted.from_line_tables.is_empty() {
            return Ok(reads);
        }
        let compiler = self.line_tables.ok_or_else(|| Error::UnreadableOutput {
            file: wanted.source.source.clone(),
            message: "its binary has no line tables and nothing assembles them".to_owned(),
        })?;
        let lined = &wanted.from_line_tables;
        let cubins = crate::line_table_cubins::line_cubins(
            compiler,
            wanted.source,
            lined,
            &dir.join("lines"),
        )?;
        for (arch, path) in cubins {
            let kernels = lined.get(&arch).cloned();
            reads.push(CubinRead {
                arch,
                path,
                kernels,
            });
        }
        Ok(reads)
    }

    /// The binary's own cubins on the archs it reads, by arch, sorted.
    fn extract_binary(&self, wanted: &Wanted, dir: &Path) -> Result<Vec<(String, PathBuf)>, Error> {
        let timeouts = &self.nvdisasm.timeouts;
        let mut cubins = extract_cubins(
            self.cuobjdump,
            wanted.binary,
            &wanted.source.source,
            dir,
            timeouts,
        )?;
        cubins.retain(|(arch, _)| wanted.kernels.contains_key(arch));
        Ok(cubins)
    }
}

/// Every cubin of a build's `binary` (its `.fatbin` or `.o`), by arch, sorted: `cuobjdump -xelf
/// all` writes them into `dir` (created). An error names `source`, the file compiled.
pub fn extract_cubins(
    cuobjdump: &Path,
    binary: &Path,
    source: &Path,
    dir: &Path,
    timeouts: &ToolTimeouts,
) -> Result<Vec<(String, PathBuf)>, Error> {
    let io = |error| Error::Io {
        path: dir.to_path_buf(),
        error,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut command = Command::new(cuobjdump);
    command.args(["-xelf", "all"]).arg(binary).current_dir(dir);
    run_tool(&mut command, source, timeouts)?;
    let mut cubins: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map_err(io)?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "cubin"))
        .filter_map(|path| Some((cubin_arch(&path)?.to_owned(), path)))
        .collect();
    cubins.sort();
    Ok(cubins)
}

impl Nvdisasm<'_> {
    /// Reads every function of `batch`: one nvdisasm per arch batch and per cubin read whole,
    /// all at once; the facts each with its owner. An error names `files[owner]`. `work` is a
    /// directory that exists (each arch's raw code is written there while it is read).
    pub fn read(
        &self,
        batch: &Batch,
        work: &Path,
        files: &[&Path],
    ) -> Result<Vec<(usize, Vec<SassFacts>)>, Error> {
        std::thread::scope(|scope| {
            let batch_runs: Vec<_> = (batch.archs.iter())
                .map(|(arch, code)| scope.spawn(move || self.read_batch(files, arch, code, work)))
                .collect();
            let whole_runs: Vec<_> = (batch.whole.iter())
                .map(|cubin| {
                    scope.spawn(move || {
                        let found = self.read_whole(files[cubin.owner], cubin)?;
                        Ok(vec![(cubin.owner, found)])
                    })
                })
                .collect();
            let mut all = Vec::new();
            for run in batch_runs.into_iter().chain(whole_runs) {
                match run.join().expect("nvdisasm runner does not panic") {
                    Ok(found) => all.extend(found),
                    Err(error) => match (self.refused, refused_architecture(&error)) {
                        (Some(refused), Some(why)) => {
                            refused.lock().expect("not poisoned").insert(why);
                        }
                        _ => return Err(error),
                    },
                }
            }
            Ok(all)
        })
    }

    /// One arch's code through one raw-mode nvdisasm; when that fails, each cubin read whole.
    fn read_batch(
        &self,
        files: &[&Path],
        arch: &str,
        batch: &ArchBatch,
        work: &Path,
    ) -> Result<Vec<(usize, Vec<SassFacts>)>, Error> {
        let Some(&first_owner) = batch.owners.first() else {
            return Ok(Vec::new());
        };
        let file = files[first_owner];
        let raw = RawBinary::new(&batch.functions);
        let text = match &raw {
            Some(raw) => self.disassemble_raw(raw, arch, work, file)?,
            None => None,
        };
        let (Some(raw), Some(text)) = (raw, text) else {
            return (batch.cubins.iter())
                .map(|cubin| Ok((cubin.owner, self.read_whole(files[cubin.owner], cubin)?)))
                .collect();
        };
        let sections = raw
            .sections(&text, arch)
            .map_err(|error| Error::UnreadableOutput {
                file: file.to_path_buf(),
                message: format!("nvdisasm's SASS of the {arch} code: {error}"),
            })?;
        sections
            .iter()
            .zip(&batch.owners)
            .map(|(section, &owner)| {
                let facts = sass::analyze_sections(std::slice::from_ref(section), |kernel| {
                    (self.spills_reported)(kernel, arch)
                })
                .map_err(|error| Error::UnreadableOutput {
                    file: files[owner].to_path_buf(),
                    message: format!("nvdisasm's SASS of `{}` on {arch}: {error}", section.name),
                })?;
                Ok((owner, facts))
            })
            .collect()
    }

    /// The raw-mode text of one arch's code; `None` when raw mode cannot read it (the caller
    /// reads each cubin whole instead). An nvdisasm past its time limit is an error: reading
    /// whole cubins would only hang again.
    fn disassemble_raw(
        &self,
        raw: &RawBinary,
        arch: &str,
        work: &Path,
        file: &Path,
    ) -> Result<Option<String>, Error> {
        let path = work.join(format!("{arch}.sass.bin"));
        let Some(binary_arch) = raw_arch(arch) else {
            return Ok(None);
        };
        if std::fs::write(&path, &raw.bytes).is_err() {
            return Ok(None);
        }
        let mut command = Command::new(self.path);
        command.args(["-c", "-b", binary_arch.as_str()]).arg(&path);
        let result = run_tool(&mut command, file, &self.timeouts);
        let _ = std::fs::remove_file(&path);
        match result {
            Ok(text) => Ok(Some(text)),
            Err(error @ Error::ToolTimedOut { .. }) => Err(error),
            Err(_) => Ok(None),
        }
    }

    /// One cubin through nvdisasm's ELF mode.
    fn read_whole(&self, file: &Path, cubin: &WholeCubin) -> Result<Vec<SassFacts>, Error> {
        let mut command = Command::new(self.path);
        command.args(["-c", "-g", "-ndf"]);
        if let Some(symbols) = &cubin.symbols {
            let list: Vec<String> = symbols.iter().map(ToString::to_string).collect();
            command.arg("-fun").arg(list.join(","));
        }
        let text = run_tool(command.arg(&cubin.path), file, &self.timeouts)?;
        let functions = call_symbols(&cubin.path)?;
        read_elf_mode(&text, functions, self.spills_reported).map_err(|error| {
            Error::UnreadableOutput {
                file: file.to_path_buf(),
                message: format!("nvdisasm's SASS of {}: {error}", cubin.path.display()),
            }
        })
    }
}

/// What the cubin at `path` says about the callees of calls through registers; `None` when it
/// is not an ELF file this reads (those calls are then indirect).
fn call_symbols(path: &Path) -> Result<Option<Arc<FunctionSymbols>>, Error> {
    let bytes = std::fs::read(path).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(Cubin::parse(&bytes).map(|cubin| Arc::new(cubin.call_symbols())))
}

/// The facts of nvdisasm's ELF-mode text of one cubin, whose function symbols are `functions`
/// ([`Cubin::call_symbols`]).
pub fn read_elf_mode(
    text: &str,
    functions: Option<Arc<FunctionSymbols>>,
    spills_reported: &(dyn Fn(&str, &str) -> bool + Sync),
) -> Result<Vec<SassFacts>, sass::SassError> {
    let arch = text
        .lines()
        .find_map(|line| line.trim().strip_prefix(".target"))
        .map(|rest| rest.trim().to_owned())
        .unwrap_or_default();
    let mut sections = sass::parse_nvdisasm(text)?;
    for section in &mut sections {
        section.functions = functions.clone();
    }
    sass::analyze_sections(&sections, |kernel| spills_reported(kernel, &arch))
}

/// nvdisasm's `--binary` name of an arch it reads raw (`sm_90a` → `SM90a`), sm_75 and later.
fn raw_arch(arch: &str) -> Option<String> {
    let rest = arch.strip_prefix("sm_")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let suffix = &rest[digits.len()..];
    let number: u32 = digits.parse().ok()?;
    let known_suffix = suffix.is_empty() || suffix == "a" || suffix == "f";
    (number >= 75 && known_suffix).then(|| format!("SM{digits}{suffix}"))
}

/// The arch of a cubin cuobjdump extracted (`name.1.sm_90a.cubin` -> `sm_90a`).
pub fn cubin_arch(path: &Path) -> Option<&str> {
    path.file_stem()?.to_str()?.rsplit('.').next()
}

/// Runs a SASS tool (within the work limit) and returns its standard output; a failure is an
/// unreadable output of `file` (the source or binary whose code it reads).
pub fn run_tool(
    command: &mut Command,
    file: &Path,
    timeouts: &ToolTimeouts,
) -> Result<String, Error> {
    let rendered = render_command(command);
    let output = run_bounded(command, timeouts, ToolKind::Work)?;
    if !output.status.success() {
        return Err(Error::UnreadableOutput {
            file: file.to_path_buf(),
            message: format!(
                "`{rendered}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    // The text as it came when it is UTF-8 (always, for nvdisasm's), not a copy of it.
    Ok(String::from_utf8(output.stdout)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_mode_names_the_archs_it_reads() {
        assert_eq!(raw_arch("sm_90a").as_deref(), Some("SM90a"));
        assert_eq!(raw_arch("sm_100f").as_deref(), Some("SM100f"));
        assert_eq!(raw_arch("sm_75").as_deref(), Some("SM75"));
        assert_eq!(raw_arch("sm_70"), None, "raw mode reads sm_75 and later");
        assert_eq!(raw_arch("compute_90"), None);
        assert_eq!(cubin_arch(Path::new("/w/k.2.sm_90a.cubin")), Some("sm_90a"));
        assert_eq!(cubin_arch(Path::new("k.1.sm_80.cubin")), Some("sm_80"));
    }

    fn tool(variable: &str, beside_nvcc: &str) -> PathBuf {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let nvcc =
                    std::env::var_os("NVCC").expect("NVCC: source <(scripts/setup-cuda.sh --env)");
                Path::new(&nvcc).with_file_name(beside_nvcc)
            })
    }

    /// A fatbin of `source` for sm_80, sm_90 and sm_120 (or sm_90a, sm_100), with line tables.
    fn fatbin(source: &Path, out: &Path) -> PathBuf {
        let binary = out.join(format!(
            "{}.fatbin",
            source.file_stem().unwrap().to_string_lossy()
        ));
        // Clusters need sm_90; the warp-specialised `setmaxnreg` kernels sm_90a.
        let codes = match source.file_stem().unwrap().to_str() {
            Some("launch_bounds") => "arch=compute_90,code=[sm_90,sm_100]",
            Some("setmaxnreg") => "arch=compute_90a,code=sm_90a",
            _ => "arch=compute_80,code=[sm_80,sm_90,sm_120]",
        };
        let status = Command::new(tool("NVCC", "nvcc"))
            .args(["-fatbin", "-lineinfo", "-gencode", codes, "-o"])
            .arg(&binary)
            .arg(source)
            .status()
            .unwrap();
        assert!(status.success(), "nvcc {}", source.display());
        binary
    }

    /// The `.cu` files of `scripts/gen-kernel-crate.py --scale small`: macro-generated kernel
    /// families, kernels in headers, FP16/BF16, inline-asm loops, a spilling kernel.
    fn generated_crate_sources(out: &Path) -> Vec<PathBuf> {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let status = Command::new("python3")
            .arg(repo.join("scripts/gen-kernel-crate.py"))
            .arg(out.join("crate"))
            .args(["--scale", "small"])
            .status()
            .expect("python3 runs the generator");
        assert!(status.success());
        let mut sources: Vec<PathBuf> = std::fs::read_dir(out.join("crate/kernels"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "cu"))
            .collect();
        sources.sort();
        sources
    }

    /// The batched raw-mode reading gives, for every kernel of the corpus on every arch, the
    /// same facts (counts, loops, lines, calls, local kinds) as nvdisasm's ELF mode on the whole
    /// cubin (the full-scale generated crate, 935 kernels on sm_80/90/120, also agreed when
    /// tried), which the counts test (`tests/tests/sass_counts.rs`) holds to `cuobjdump -sass`.
    #[test]
    fn raw_batches_read_what_elf_mode_reads() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels");
        let out = std::env::temp_dir().join(format!("occupancy-raw-{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let names = [
            "sass_evidence",
            "spills",
            "device_frames",
            "setmaxnreg",
            "launch_bounds",
            "shared_memory",
            "constants",
            "calls",
        ];
        let mut paths: Vec<PathBuf> = names
            .iter()
            .map(|name| root.join(format!("{name}.cu")))
            .collect();
        paths.extend(generated_crate_sources(&out));
        let sources: Vec<CompiledSource> = paths
            .into_iter()
            .map(|path| {
                let binary = fatbin(&path, &out);
                CompiledSource::for_tests(path, binary)
            })
            .collect();
        let archs = ["sm_80", "sm_90", "sm_90a", "sm_100", "sm_120"];
        let wanted: Vec<Wanted> = sources
            .iter()
            .map(|source| Wanted {
                source,
                binary: source.binary.as_deref().unwrap(),
                kernels: archs
                    .iter()
                    .map(|arch| ((*arch).to_owned(), None))
                    .collect(),
                from_line_tables: BTreeMap::new(),
            })
            .collect();
        let (cuobjdump, nvdisasm) = (
            tool("OCCUPANCY_CUOBJDUMP", "cuobjdump"),
            tool("OCCUPANCY_NVDISASM", "nvdisasm"),
        );
        // nvdisasm behind a script that logs its arguments: the batch must use raw mode only.
        let logged = out.join("nvdisasm");
        let log = out.join("nvdisasm.log");
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            nvdisasm.display()
        );
        std::fs::write(&logged, script).unwrap();
        let mut permissions = std::fs::metadata(&logged).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&logged, permissions).unwrap();
        let spills_reported = |_: &str, _: &str| true;
        let disassembler = Disassembler {
            cuobjdump: &cuobjdump,
            nvdisasm: Nvdisasm {
                path: &logged,
                spills_reported: &spills_reported,
                timeouts: ToolTimeouts::default(),
                refused: None,
            },
            line_tables: None,
        };
        let batched = disassembler.read(&wanted, &out.join("work")).unwrap();
        let runs = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            runs.lines().count(),
            archs.len(),
            "one nvdisasm per arch: {runs}"
        );
        assert!(
            runs.lines().all(|run| run.starts_with("-c -b SM")),
            "raw mode only: {runs}"
        );
        let mut compared = 0;
        for (index, wanted) in wanted.iter().enumerate() {
            let dir = out.join(format!("whole-{index}"));
            let mut elf_mode = Vec::new();
            for read in disassembler.extract(wanted, &dir).unwrap() {
                let text = run_tool(
                    Command::new(&nvdisasm)
                        .args(["-c", "-g", "-ndf"])
                        .arg(&read.path),
                    &wanted.source.source,
                    &ToolTimeouts::default(),
                )
                .unwrap();
                let functions = call_symbols(&read.path).unwrap();
                elf_mode.extend(read_elf_mode(&text, functions, &spills_reported).unwrap());
            }
            let key = |facts: &SassFacts| (facts.kernel.clone(), facts.arch.clone());
            let mut raw = batched[index].clone();
            raw.sort_by_key(key);
            elf_mode.sort_by_key(key);
            assert_eq!(raw.len(), elf_mode.len(), "{}", wanted.binary.display());
            for (raw, elf) in raw.iter().zip(&elf_mode) {
                assert_eq!(raw, elf, "{} on {:?}", raw.kernel, raw.arch);
                compared += 1;
            }
        }
        assert!(compared > 150, "only {compared} kernels compared");
        // Both readings name `assert`'s callee, which the SASS calls through a register.
        let asserts: Vec<&SassFacts> = (batched.iter().flatten())
            .filter(|facts| facts.kernel == "asserts")
            .collect();
        assert_eq!(
            asserts.len(),
            3,
            "calls.cu is built for sm_80, sm_90 and sm_120"
        );
        for facts in asserts {
            let callees: Vec<&str> = facts
                .calls
                .iter()
                .map(|call| call.callee.as_str())
                .collect();
            assert_eq!(callees, ["__assertfail"], "{:?}", facts.arch);
        }
        let _ = std::fs::remove_dir_all(out);
    }
}
