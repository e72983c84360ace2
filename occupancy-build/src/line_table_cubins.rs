//! Cubins with line tables for the SASS stage, for a source whose binary has none.
//!
//! A `compile_ptx` source's fatbin is assembled from the stripped PTX that ships
//! (`crate::compile::two_step`), so its cubins cannot say which source line an instruction came from.
//! Only the findings about local memory name lines, so the SASS stage reads the kernels it wants
//! that use local memory on an arch from a cubin with line tables (and the others from the
//! fatbin): instead of assembling the whole `-lineinfo` PTX again, [`line_cubins`] assembles,
//! per arch, a module of just those kernels and the functions they reach
//! ([`occupancy_core::ptxas::subset_ptx`]), with `-lineinfo`:
//! `nvcc -cubin -arch=sm_<a> -lineinfo -Xptxas -v [user args] <subset>.ptx`.
//!
//! **Verified, or not used.** ptxas compiles each function of a module on its own, so a kernel
//! with its callees assembles to the same code alone as among the others; this is checked every
//! time: ptxas's report of each kept kernel in the subset compile must equal the build's
//! (registers, barriers, stack frame, spill stores and loads, static shared memory; where the
//! build's report is silent, as behind a compiler cache that replays no compiler output, ptxas's
//! report of the shipped PTX the binary was assembled from, assembled again). When one
//! differs, or the module cannot be cut (`subset_ptx` refuses it) or the subset does not
//! compile, that arch's cubin is assembled from the whole `-lineinfo` PTX instead (correct,
//! slower), and checked the same way; a difference there fails the build, naming the source:
//! the SASS read would not be the shipped code's.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use occupancy_core::ptxas::{self, KernelRecord};

use crate::compile::{file_stem, CompiledSource};
use crate::context::Context;
use crate::process::{render_command, run_bounded, ToolKind};
use crate::toolchain::Toolchain;
use crate::Error;

/// What assembles line-table cubins: nvcc, and the build's arguments, so that ptxas gets the
/// options it got for the build's binary (`-maxrregcount`, `-Xptxas ...`).
#[derive(Debug, Clone)]
pub struct LineTableCompiler {
    toolchain: Toolchain,
    user_args: Vec<OsString>,
}

impl LineTableCompiler {
    pub(crate) fn new(context: &Context, toolchain: &Toolchain) -> LineTableCompiler {
        LineTableCompiler {
            toolchain: toolchain.clone(),
            user_args: context.nvcc_args.clone(),
        }
    }
}

/// What ptxas reported of one kernel that the line-table compile must reproduce.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resources {
    registers: Option<u32>,
    barriers: Option<u32>,
    stack_frame_bytes: Option<u64>,
    spill_store_bytes: Option<u64>,
    spill_load_bytes: Option<u64>,
    static_smem_bytes: u64,
}

impl From<&KernelRecord> for Resources {
    fn from(record: &KernelRecord) -> Resources {
        Resources {
            registers: record.registers,
            barriers: record.barriers,
            stack_frame_bytes: record.stack_frame_bytes,
            spill_store_bytes: record.spill_store_bytes,
            spill_load_bytes: record.spill_load_bytes,
            static_smem_bytes: record.static_smem_bytes,
        }
    }
}

/// Each kernel's resources by (kernel, arch), from a ptxas report.
type Reported = BTreeMap<(String, String), Resources>;

/// Per arch of `kernels_by_arch`, a cubin with line tables holding those kernels and the
/// functions they reach, written into `work` as `<stem>.<arch>.cubin` (module docs: verified
/// against the build's report, else from the whole `-lineinfo` PTX). `source` must have its
/// `-lineinfo` PTX ([`CompiledSource::lineinfo_ptx`]).
pub fn line_cubins(
    compiler: &LineTableCompiler,
    source: &CompiledSource,
    kernels_by_arch: &BTreeMap<String, BTreeSet<String>>,
    work: &Path,
) -> Result<Vec<(String, PathBuf)>, Error> {
    let unreadable = |message: String| Error::UnreadableOutput {
        file: source.source.clone(),
        message,
    };
    let whole = source
        .lineinfo_ptx
        .as_deref()
        .ok_or_else(|| unreadable("no -lineinfo PTX to assemble line tables from".into()))?;
    let text = std::fs::read_to_string(whole).map_err(|error| Error::Io {
        path: whole.to_path_buf(),
        error,
    })?;
    let built = reported(&source.compiler_log)
        .map_err(|message| unreadable(format!("ptxas's report: {message}")))?;
    let subsets = write_subsets(&text, kernels_by_arch, &file_stem(&source.source), work)?;
    let job = ArchJob {
        compiler,
        source,
        whole,
        built: &built,
        work,
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = kernels_by_arch
            .iter()
            .map(|(arch, kernels)| {
                let subset = subsets.get(kernels).and_then(Option::as_deref);
                let job = &job;
                scope.spawn(move || job.cubin(arch, kernels, subset))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a line-table compile does not panic"))
            .collect()
    })
}

/// One subset module per distinct kernel set, `<stem>.subset<N>.ptx` in `work`; `None` for a
/// set the module cannot be cut to (then the whole module is assembled).
fn write_subsets<'k>(
    text: &str,
    kernels_by_arch: &'k BTreeMap<String, BTreeSet<String>>,
    stem: &str,
    work: &Path,
) -> Result<BTreeMap<&'k BTreeSet<String>, Option<PathBuf>>, Error> {
    let mut subsets = BTreeMap::new();
    for kernels in kernels_by_arch.values() {
        if subsets.contains_key(kernels) {
            continue;
        }
        let path = work.join(format!("{stem}.subset{}.ptx", subsets.len()));
        let written = match ptxas::subset_ptx(text, kernels) {
            Ok(subset) => {
                crate::fsutil::write_atomic(&path, subset.as_bytes())?;
                Some(path)
            }
            Err(_) => None,
        };
        subsets.insert(kernels, written);
    }
    Ok(subsets)
}

/// What every arch's compile shares.
struct ArchJob<'a> {
    compiler: &'a LineTableCompiler,
    source: &'a CompiledSource,
    /// The whole `-lineinfo` PTX.
    whole: &'a Path,
    /// The build's report.
    built: &'a Reported,
    work: &'a Path,
}

impl ArchJob<'_> {
    /// `arch`'s cubin: from `subset` when its report agrees with the build's for `kernels`, else
    /// from the whole `-lineinfo` PTX, which must agree.
    fn cubin(
        &self,
        arch: &str,
        kernels: &BTreeSet<String>,
        subset: Option<&Path>,
    ) -> Result<(String, PathBuf), Error> {
        let stem = file_stem(&self.source.source);
        let cubin = self.work.join(format!("{stem}.{arch}.cubin"));
        let built = self.built_on(arch, kernels)?;
        if let Some(subset) = subset {
            let log = self.compile(arch, subset, &cubin, true).ok();
            if log.is_some_and(|log| agrees(&built, &log, arch, kernels).is_ok()) {
                return Ok((arch.to_owned(), cubin));
            }
        }
        let log = self.compile(arch, self.whole, &cubin, true)?;
        agrees(&built, &log, arch, kernels)
            .map_err(|message| Error::UnreadableOutput {
                file: self.source.source.clone(),
                message: format!(
                    "the -lineinfo PTX {} assembles differently from the PTX that ships on {arch}: {message}",
                    self.whole.display()
                ),
            })?;
        Ok((arch.to_owned(), cubin))
    }

    /// The build's report of `kernels` on `arch`. Where it is silent (a compiler cache or
    /// wrapper that replays no compiler output: the build read those facts from its binary),
    /// ptxas's report of the PTX that binary was assembled from, the shipped PTX, assembled again
    /// here without the cache (once per arch, only then).
    fn built_on(
        &self,
        arch: &str,
        kernels: &BTreeSet<String>,
    ) -> Result<std::borrow::Cow<'_, Reported>, Error> {
        let silent = kernels
            .iter()
            .any(|kernel| !self.built.contains_key(&(kernel.clone(), arch.to_owned())));
        if !silent {
            return Ok(std::borrow::Cow::Borrowed(self.built));
        }
        let stem = file_stem(&self.source.source);
        let cubin = self.work.join(format!("{stem}.{arch}.shipped.cubin"));
        let log = self.compile(arch, &self.source.ptx, &cubin, false)?;
        let mut built = self.built.clone();
        for (key, resources) in reported(&log).map_err(|message| Error::UnreadableOutput {
            file: self.source.source.clone(),
            message: format!("ptxas's report of the shipped PTX: {message}"),
        })? {
            built.entry(key).or_insert(resources);
        }
        Ok(std::borrow::Cow::Owned(built))
    }

    /// `nvcc -cubin -arch=<arch> [-lineinfo] -Xptxas -v [user args] -o <cubin> <ptx>`: ptxas's
    /// report. Not through the compiler cache: ptxas's report must be this run's.
    fn compile(&self, arch: &str, ptx: &Path, cubin: &Path, lines: bool) -> Result<String, Error> {
        let mut command = self.compiler.toolchain.command_without_wrapper();
        command.args(["-cubin", &format!("-arch={arch}")]);
        if lines {
            command.arg("-lineinfo");
        }
        command
            .args(["-Xptxas", "-v"])
            .arg("-o")
            .arg(cubin)
            .args(&self.compiler.user_args)
            .arg(ptx);
        let rendered = render_command(&command);
        let timeouts = &self.compiler.toolchain.timeouts;
        let output = run_bounded(&mut command, timeouts, ToolKind::Work)?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(Error::NvccFailed {
                file: self.source.source.clone(),
                status: output.status.to_string(),
                diagnostics: format!("{stdout}{stderr}"),
                command: rendered,
                notes: Vec::new(),
            });
        }
        Ok(format!("{stdout}{stderr}"))
    }
}

/// Whether `log` reports for each of `kernels` on `arch` what the build's report (`built`) does.
fn agrees(
    built: &Reported,
    log: &str,
    arch: &str,
    kernels: &BTreeSet<String>,
) -> Result<(), String> {
    let ours = reported(log)?;
    for kernel in kernels {
        let key = (kernel.clone(), arch.to_owned());
        let (expected, found) = (built.get(&key), ours.get(&key));
        if expected != found {
            return Err(format!(
                "ptxas reported {found:?} for kernel `{kernel}`, the build {expected:?}"
            ));
        }
    }
    Ok(())
}

/// The kernels' resources in a ptxas report (none when it has no kernel).
fn reported(log: &str) -> Result<Reported, String> {
    let parsed = match ptxas::parse_log(log) {
        Ok(parsed) => parsed,
        Err(ptxas::ParseError::NoKernels { .. }) => return Ok(Reported::new()),
        Err(error) => return Err(error.to_string()),
    };
    Ok(parsed
        .kernels
        .iter()
        .filter(|record| record.entry)
        .map(|record| {
            (
                (record.name.clone(), record.arch.clone()),
                Resources::from(record),
            )
        })
        .collect())
}
