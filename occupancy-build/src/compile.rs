//! Compiling each source once with nvcc, keeping ptxas's report, and caching by content.
//!
//! One nvcc process per source file, every target architecture in it:
//!
//! * `.compile_ptx()`: `nvcc -ptx -arch=compute_<lowest> -lineinfo --keep`, then
//!   `nvcc -fatbin -arch=compute_<lowest> -code=sm_<a>,sm_<b> -Xptxas -v` on that PTX stripped of
//!   its line information (`crate::line_info`; one `nvcc -fatbin -lineinfo` under a compiler
//!   cache). cicc runs once; ptxas assembles the PTX that ships for every target architecture,
//!   which is exactly what the driver's JIT will do with it at run time, and prints the resource
//!   report on stderr. The only work beyond a plain `nvcc -ptx` is ptxas itself, which is what
//!   measuring resources costs; no source is compiled twice.
//! * `.compile_lib()`: `nvcc -c -arch=compute_<lowest> -code=sm_<a>,...,compute_<lowest> -Xptxas -v
//!   --keep`: the object the crate links (SASS per arch plus PTX for newer GPUs), the same report,
//!   and the PTX kept for the launch-bound checks. Its sm_90 SASS is ptxas's work on the
//!   compute_80 PTX, like the JIT's, so those rows say `ptx_target = compute_80` too.
//! * `.ptx_per_arch(true)`: the same commands with one
//!   `-gencode arch=compute_<t>,code=[sm_<t>,...]` per target arch: cicc runs once per target,
//!   each arch's SASS (and each JIT arch's, from the highest target not above it) comes from its
//!   own PTX, kept (and shipped, line information included) as `<stem>.compute_<t>.ptx`, and
//!   ptxas's report is still that one compile's. `-G` compiles without `-lineinfo` (it has its
//!   own line information) and ships its PTX as it is.
//! * `.ptx_file()` (PTX made elsewhere): `nvcc -cubin -arch=sm_<a> -Xptxas -v` per architecture.
//!
//! `-MD -MF` makes nvcc list every header it read. The cache entry of a source (in OUT_DIR) is
//! keyed by nvcc's version, the full command line, the architectures, the program mode and the
//! JIT archs, and the contents of the source and of every header of its previous compile, so
//! touching one of N files recompiles that one, and the ptxas report is replayed from the entry on a hit. This module runs nvcc and
//! reads and writes files; it does not interpret the report.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::cache::{hex, Entry, Lookup, Slot, Staging};
use crate::context::Context;
pub use crate::context::SourceKind;
use crate::file_facts::FileFacts;
use crate::fsutil::{parse_dep_file, parse_line_markers};
use crate::input_watch::InputWatch;
use crate::jobs::Lender;
use crate::process::{render_command, run_bounded, ToolKind};
use crate::targets::SmArch;
use crate::toolchain::Toolchain;
use crate::Error;

/// What the crate ships from a CUDA source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Product {
    /// PTX text for runtime loading (plus a fatbin of SASS for every target arch).
    Ptx,
    /// An object file for a static library.
    Object,
}

/// Everything that decides what nvcc produces for one source, shared by all sources of a build.
#[derive(Debug, Clone)]
pub struct CompileSettings {
    pub toolchain: Toolchain,
    pub archs: Vec<SmArch>,
    /// Includes, defines and user flags, in the order given.
    pub user_args: Vec<OsString>,
    pub product: Product,
    /// `$OUT_DIR/occupancy/cache`.
    pub cache_root: PathBuf,
    /// One PTX per target arch (`.ptx_per_arch(true)`) instead of one for the lowest.
    pub ptx_per_arch: bool,
    /// The archs of `archs` checked only as JIT targets of the shipped PTX (`jit_archs`).
    pub jit_archs: Vec<SmArch>,
    /// Which kernels a `compile_ptx` build's ptxas makes line tables for.
    pub line_tables: LineTables,
}

/// Which kernels ptxas makes line tables for in a `compile_ptx` build (`crate::line_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTables {
    /// None in the build's binary (ptxas assembles the stripped PTX); the SASS stage assembles
    /// them for the kernels it reads that use local memory: few, in a build, where the SASS
    /// lints read what a declaration or a hard failure asks for.
    OnDemand,
    /// Every kernel, in the one compile (`nvcc -fatbin -lineinfo`): when the SASS stage reads
    /// the local memory of every kernel (`cargo occupancy check`, every lint on every kernel;
    /// `OCCUPANCY_SASS=all`), assembling each such kernel again would cost more than the 3.5%.
    Everywhere,
}

/// One PTX program of a source and the archs whose SASS ptxas assembled from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The PTX's virtual arch (`compute_90`); for a `.ptx_file`, its `.target` if readable.
    pub ptx_target: Option<String>,
    /// The PTX text's path.
    pub ptx: PathBuf,
    /// `sm_90` (and any JIT arch that loads this PTX), as ptxas names them in its report.
    pub archs: Vec<String>,
    /// Where the PTX's summary is cached (`crate::ptx_summary`): in the compile's cache entry,
    /// never beside a source; `None`: scanned each time it is needed.
    pub summary: Option<PathBuf>,
}

impl CompileSettings {
    /// The PTX programs a `.cu` source compiles to, as (virtual arch, SASS archs from it):
    /// one from the lowest target for every arch, or per arch (`ptx_per_arch`) one per target arch, each
    /// JIT arch going to the highest target not above it (the PTX the driver picks there).
    pub fn program_archs(&self) -> Vec<(SmArch, Vec<SmArch>)> {
        let targets: Vec<SmArch> = self
            .archs
            .iter()
            .filter(|arch| !self.jit_archs.contains(arch))
            .copied()
            .collect();
        if !self.ptx_per_arch {
            return targets
                .first()
                .map(|lowest| vec![(*lowest, self.archs.clone())])
                .unwrap_or_default();
        }
        let mut programs: Vec<(SmArch, Vec<SmArch>)> =
            targets.iter().map(|arch| (*arch, vec![*arch])).collect();
        for jit in &self.jit_archs {
            if let Some(program) = programs.iter_mut().rev().find(|(target, _)| target <= jit) {
                program.1.push(*jit);
            }
        }
        programs
    }
}

/// The result of compiling one source (fresh or from the cache).
#[derive(Debug, Clone)]
pub struct CompiledSource {
    pub source: PathBuf,
    pub kind: SourceKind,
    /// The PTX (for `.cu`, cicc's output; for `.ptx_file`, the file itself).
    pub ptx: PathBuf,
    /// The fatbin (PTX product) or object (library product) in the cache.
    pub binary: Option<PathBuf>,
    /// nvcc's complete stderr: ptxas's `-v` report interleaved with any warnings.
    pub compiler_log: String,
    /// Every file nvcc read (the source and all its headers), from `-MD`.
    pub dependencies: Vec<PathBuf>,
    /// True when nothing ran and the entry was replayed.
    pub from_cache: bool,
    /// Set when the compiler cache in front of nvcc (`RUSTC_WRAPPER`, e.g. sccache) failed this
    /// compile and nvcc alone succeeded: what the cache printed, for a warning.
    pub wrapper_failure: Option<String>,
    /// What the user should know about how this source was compiled (an input changed during
    /// the compile, a cache entry not trusted), one line each, for warnings.
    pub notes: Vec<String>,
    /// The virtual arch of the shipped PTX `ptx` (`compute_80`): the lowest target for a
    /// `.cu`, the `.target` of a `.ptx_file`.
    pub ptx_target: Option<String>,
    /// Every PTX program and the archs whose rows come from it: one for a `.ptx_file` or a
    /// default build (the lowest target's PTX for every arch), one per target arch with
    /// `ptx_per_arch`. The first is `ptx`.
    pub programs: Vec<Program>,
    /// The `-lineinfo` PTX that `ptx` was stripped from, when the binary was assembled from the
    /// stripped PTX and so has no line tables: the SASS stage assembles line-table cubins of the
    /// kernels it reads that use local memory from it (`crate::line_tables`). `None` when the
    /// binary has line tables or there is no such PTX.
    pub lineinfo_ptx: Option<PathBuf>,
    /// Where each kernel is defined (JSON, from the `-lineinfo` PTX's `.file`/`.loc`), when the
    /// shipped `ptx` was stripped of them; `None`: `ptx` itself says (or nothing does).
    pub kernel_lines: Option<PathBuf>,
}

#[cfg(test)]
impl CompiledSource {
    /// A compiled `.cu` with only its path and binary, for tests of the stages after compiling.
    pub fn for_tests(source: PathBuf, binary: PathBuf) -> CompiledSource {
        CompiledSource {
            ptx: source.with_extension("ptx"),
            source,
            kind: SourceKind::Cuda,
            binary: Some(binary),
            compiler_log: String::new(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
            notes: Vec::new(),
            ptx_target: None,
            programs: Vec::new(),
            lineinfo_ptx: None,
            kernel_lines: None,
        }
    }
}

/// Compiles every source of the build (at most `context.max_jobs` at once, cached) and returns
/// them in order. A source named twice (`a.cu` and `./a.cu`, a file inside a `.source_dir`) is
/// compiled once; a missing one is an error naming it; with several failures, every one is said.
pub fn compile_all(
    context: &Context,
    toolchain: &Toolchain,
    product: Product,
    line_tables: LineTables,
) -> Result<Vec<CompiledSource>, Error> {
    let settings = CompileSettings {
        toolchain: toolchain.clone(),
        archs: context.archs.clone(),
        user_args: context.nvcc_args.clone(),
        product,
        cache_root: context.out_dir.join("occupancy").join("cache"),
        ptx_per_arch: context.ptx_per_arch,
        jit_archs: context.jit_archs.clone(),
        line_tables,
    };
    for (path, _) in &context.sources {
        if !path.is_file() {
            return Err(Error::SourceMissing { path: path.clone() });
        }
    }
    let inputs = unique_sources(context.sources.clone());
    if inputs.is_empty() {
        return Err(Error::NoSources);
    }
    crate::trust::open_cache_root(&settings.cache_root, &context.out_dir)?;
    let files = FileFacts::load(&settings.cache_root);
    let (settings, files) = (&settings, &files);
    // The biggest sources first (by size, a cheap stand-in for compile time): the last compile
    // to finish then is a small one, and the build's tail is short.
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&index| {
        std::cmp::Reverse(std::fs::metadata(&inputs[index].0).map_or(0, |meta| meta.len()))
    });
    let tasks: Vec<_> = order
        .iter()
        .map(|&index| {
            let (path, kind) = &inputs[index];
            move |lender: &Lender<'_>| compile_source(settings, path, *kind, lender, files)
        })
        .collect();
    let mut results: Vec<Option<Result<CompiledSource, Error>>> =
        crate::jobs::run_all(tasks, context.max_jobs)
            .into_iter()
            .map(Some)
            .collect();
    files.save();
    let in_order = (0..inputs.len()).map(|index| {
        let at = order
            .iter()
            .position(|&task| task == index)
            .unwrap_or(index);
        results[at].take().expect("one result per source")
    });
    let (compiled, mut failures): (Vec<_>, Vec<_>) = in_order.partition(Result::is_ok);
    let mut failures: Vec<Error> = failures.drain(..).filter_map(Result::err).collect();
    match failures.len() {
        0 => Ok(compiled.into_iter().filter_map(Result::ok).collect()),
        1 => Err(failures.remove(0)),
        _ => Err(Error::Several(failures)),
    }
}

/// Two sources with one stem would write one `OUT_DIR/<stem>.ptx`: an error naming the second.
pub fn check_unique_stems(sources: &[(PathBuf, SourceKind)]) -> Result<(), Error> {
    let mut stems = std::collections::BTreeSet::new();
    for (source, _) in &unique_sources(sources.to_vec()) {
        let stem = source
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !stems.insert(stem.clone()) {
            return Err(Error::DuplicateStem {
                stem,
                path: source.clone(),
            });
        }
    }
    Ok(())
}

/// The inputs without repeats of one file under another name, first mention kept.
fn unique_sources(mut inputs: Vec<(PathBuf, SourceKind)>) -> Vec<(PathBuf, SourceKind)> {
    let mut seen = std::collections::BTreeSet::new();
    inputs.retain(|(path, _)| seen.insert(canonical(path)));
    inputs
}

/// The path with symlinks and `.`/`..` resolved: one name per file.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Compiles (or replays) one source.
pub fn compile_source(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    lender: &Lender<'_>,
    files: &FileFacts,
) -> Result<CompiledSource, Error> {
    let config = config_key(settings, source, kind);
    let slot = Slot::new(&settings.cache_root, &file_stem(source), &config);
    let current_key =
        |dependencies: &[PathBuf]| cache_key(settings, &config, dependencies, files).ok();
    let mut notes = Vec::new();
    match slot.find(current_key) {
        Lookup::Hit(entry) => {
            return Ok(compiled_from_entry(
                settings, source, kind, entry, true, None,
            ))
        }
        Lookup::Miss => {}
        Lookup::Untrusted(reason) => notes.push(format!(
            "the cached compile of {} is not used: {reason}, and another user could have written it; compiled again",
            source.display()
        )),
    }
    let staging = slot.staging()?;
    let work = staging.dir.join("keep");
    std::fs::create_dir_all(&work).map_err(|error| Error::Io {
        path: work.clone(),
        error,
    })?;
    let two_steps = compiles_in_two_steps(settings, kind, &slot);
    let mut watched = slot.previous_dependencies();
    watched.push(absolute(source));
    let watch = InputWatch::before(&settings.toolchain.cuda_home, watched);
    let fresh = run_nvcc(settings, source, kind, &work, two_steps, lender)?;
    let products = move_products(settings, source, kind, &fresh, &staging, two_steps)?;
    let key = cache_key(settings, &config, &fresh.dependencies, files)?;
    let named: Vec<(&str, &str)> = products
        .iter()
        .map(|(role, name)| (role.as_str(), name.as_str()))
        .collect();
    // After the key: a file changed while the key was taken is caught too.
    let changed = watch.changed(&fresh.dependencies);
    let entry = match changed.is_none() && slot.accepts_entries() {
        true => slot.publish(staging, key, fresh.dependencies, &named)?,
        false => slot.keep_unpublished(staging, key, fresh.dependencies, &named)?,
    };
    let mut compiled =
        compiled_from_entry(settings, source, kind, entry, false, fresh.wrapper_failure);
    compiled.notes = notes;
    compiled.notes.extend(changed.map(|changed| {
        format!(
            "{} changed while nvcc compiled {}: this run checks what nvcc read, which may not be the file as it is now, and does not cache it (the next run compiles it again)",
            changed.display(),
            source.display()
        )
    }));
    Ok(compiled)
}

/// Moves a fresh compile's products from nvcc's work dir to the staging root under fixed names
/// (nvcc's intermediates go) and writes its log; returns each product's (role, name).
fn move_products(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    fresh: &FreshOutput,
    staging: &Staging,
    two_steps: bool,
) -> Result<Vec<(String, String)>, Error> {
    let work = staging.dir.join("keep");
    let stem = file_stem(source);
    let mut products: Vec<(String, String)> = Vec::new();
    if crate::line_info::strips(settings, kind) {
        products.extend(crate::line_info::products(
            &work,
            &staging.dir,
            &stem,
            two_steps,
        )?);
    }
    if kind == SourceKind::Cuda {
        for (target, ptx) in &fresh.ptx {
            let name = format!("{stem}.{target}.ptx");
            rename(ptx, &staging.dir.join(&name))?;
            products.push((ptx_role(target), name));
        }
    }
    if let Some(binary) = &fresh.binary {
        let name = binary
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{stem}.bin"));
        rename(binary, &staging.dir.join(&name))?;
        products.push(("binary".into(), name));
    }
    crate::fsutil::write_atomic(&staging.dir.join("nvcc.log"), fresh.compiler_log.as_bytes())?;
    products.push(("log".into(), "nvcc.log".into()));
    let _ = std::fs::remove_dir_all(&work);
    Ok(products)
}

/// Whether this compile runs in two steps (`crate::line_info`): when the source may and line
/// tables are made on demand, unless its previous compile in `slot` (the source before its last
/// change) spilled in many kernels.
fn compiles_in_two_steps(settings: &CompileSettings, kind: SourceKind, slot: &Slot) -> bool {
    crate::line_info::two_steps(settings, kind)
        && settings.line_tables == LineTables::OnDemand
        && !slot
            .previous_product("log")
            .and_then(|log| std::fs::read_to_string(log).ok())
            .is_some_and(|log| crate::line_info::spills_are_common(&log))
}

/// `compute_80` from a PTX file's `.target sm_80[, ...]` directive (read from its header only).
fn ptx_file_target(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let line = std::io::BufReader::new(file)
        .lines()
        .take(200)
        .map_while(Result::ok)
        .find(|line| line.trim_start().starts_with(".target"))?;
    let target = line.trim_start().strip_prefix(".target")?.trim();
    let first = target
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()?;
    Some(first.replacen("sm_", "compute_", 1))
}

fn compiled_from_entry(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    entry: Entry,
    from_cache: bool,
    wrapper_failure: Option<String>,
) -> CompiledSource {
    let programs: Vec<Program> = match kind {
        SourceKind::Cuda => settings
            .program_archs()
            .into_iter()
            .map(|(target, archs)| {
                let role = ptx_role(&target.virtual_name());
                Program {
                    ptx_target: Some(target.virtual_name()),
                    ptx: entry.path(&role).unwrap_or_default(),
                    archs: archs.iter().map(ToString::to_string).collect(),
                    summary: Some(crate::ptx_summary::cache_path(&entry.dir, &role)),
                }
            })
            .collect(),
        SourceKind::Ptx => vec![Program {
            ptx_target: ptx_file_target(source),
            ptx: source.to_path_buf(),
            archs: settings.archs.iter().map(ToString::to_string).collect(),
            // In the entry (keyed by the source's content), not beside the user's file.
            summary: Some(crate::ptx_summary::cache_path(&entry.dir, "ptx")),
        }],
    };
    let shipped = programs.first().cloned();
    CompiledSource {
        ptx_target: shipped
            .as_ref()
            .and_then(|program| program.ptx_target.clone()),
        source: source.to_path_buf(),
        kind,
        ptx: shipped.map(|program| program.ptx).unwrap_or_default(),
        programs,
        binary: entry.path("binary"),
        lineinfo_ptx: entry.path(crate::line_info::LINEINFO_ROLE),
        kernel_lines: entry.path(crate::line_info::KERNEL_LINES_ROLE),
        compiler_log: entry.log,
        dependencies: entry.manifest.dependencies,
        from_cache,
        wrapper_failure,
        notes: Vec::new(),
    }
}

/// The cache role of the PTX for one virtual arch (`ptx.compute_90`).
fn ptx_role(target: &str) -> String {
    format!("ptx.{target}")
}

fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|error| Error::Io {
        path: to.to_path_buf(),
        error,
    })
}

struct FreshOutput {
    /// (virtual arch, PTX path) per program; empty for a `.ptx_file`.
    ptx: Vec<(String, PathBuf)>,
    binary: Option<PathBuf>,
    compiler_log: String,
    dependencies: Vec<PathBuf>,
    wrapper_failure: Option<String>,
}

/// `-arch=compute_<lowest> -code=sm_<a>,...` for one program, else one `-gencode` per program
/// (`ptx_per_arch`): `arch=compute_<t>,code=[sm_<t>,<its JIT archs>(,compute_<t>)]`.
pub(crate) fn arch_args(settings: &CompileSettings, with_ptx: bool) -> Vec<OsString> {
    let programs = settings.program_archs();
    let codes = |target: &SmArch, archs: &[SmArch]| {
        let mut codes: Vec<String> = archs.iter().map(ToString::to_string).collect();
        if with_ptx {
            codes.push(target.virtual_name());
        }
        codes.join(",")
    };
    if let [(target, archs)] = programs.as_slice() {
        return vec![
            format!("-arch={}", target.virtual_name()).into(),
            format!("-code={}", codes(target, archs)).into(),
        ];
    }
    programs
        .iter()
        .flat_map(|(target, archs)| {
            [
                OsString::from("-gencode"),
                format!(
                    "arch={},code=[{}]",
                    target.virtual_name(),
                    codes(target, archs)
                )
                .into(),
            ]
        })
        .collect()
}

/// The nvcc arguments for one source, without the wrapper and host args (shared with the cache
/// key), in two steps or one (`two_steps`, `crate::line_info`).
fn nvcc_args(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    work: &Path,
    two_steps: bool,
) -> Vec<Vec<OsString>> {
    let stem = file_stem(source);
    match kind {
        SourceKind::Cuda if two_steps => crate::line_info::two_step_args(settings, source, work),
        SourceKind::Cuda => {
            let mut args: Vec<OsString> = Vec::new();
            match settings.product {
                Product::Ptx => {
                    args.push("-fatbin".into());
                    args.extend(arch_args(settings, false));
                }
                Product::Object => {
                    args.push("-c".into());
                    args.extend(arch_args(settings, true));
                }
            }
            // -lineinfo: `.file`/`.loc` in the PTX say where each kernel is defined (a macro's
            // invocation, a header's line), and the SASS stage (crate::sass) maps instructions to
            // lines; it adds line tables only, not code. `-G` carries its own, and nvcc warns when
            // both are given.
            if !device_debug(settings) {
                args.push("-lineinfo".into());
            }
            args.extend([
                "-Xptxas".into(),
                "-v".into(),
                "--keep".into(),
                "--keep-dir".into(),
                work.as_os_str().to_owned(),
            ]);
            // Dependencies: for an object, nvcc's -MD comes with the host preprocessing it does
            // anyway; for PTX it would add a preprocessor pass, so the headers are read from the
            // line markers of the device preprocessor output that --keep leaves (`.cpp1.ii`).
            if settings.product == Product::Object {
                args.extend([
                    "-MD".into(),
                    "-MF".into(),
                    work.join("deps.d").into_os_string(),
                ]);
            }
            let output = match settings.product {
                Product::Ptx => work.join(format!("{stem}.fatbin")),
                Product::Object => work.join(format!("{stem}.o")),
            };
            args.extend(["-o".into(), output.into_os_string()]);
            args.extend(settings.user_args.iter().cloned());
            args.push(source.as_os_str().to_owned());
            vec![args]
        }
        SourceKind::Ptx => settings
            .archs
            .iter()
            .map(|arch| {
                let mut args: Vec<OsString> = vec!["-cubin".into(), format!("-arch={arch}").into()];
                args.extend(["-Xptxas".into(), "-v".into()]);
                args.extend([
                    "-o".into(),
                    work.join(format!("{stem}.{arch}.cubin")).into_os_string(),
                ]);
                args.extend(
                    settings
                        .user_args
                        .iter()
                        .filter(|arg| arg.to_string_lossy().starts_with("-X"))
                        .cloned(),
                );
                args.push(source.as_os_str().to_owned());
                args
            })
            .collect(),
    }
}

/// Whether the user asked for device debug code (`-G`), which carries its own line information.
pub(crate) fn device_debug(settings: &CompileSettings) -> bool {
    settings
        .user_args
        .iter()
        .any(|arg| arg == "-G" || arg == "--device-debug")
}

fn run_nvcc(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    work: &Path,
    two_steps: bool,
    lender: &Lender<'_>,
) -> Result<FreshOutput, Error> {
    let commands = nvcc_args(settings, source, kind, work, two_steps);
    let stem = file_stem(source);
    let (compiler_log, wrapper_failure) = if two_steps {
        // cicc, the strip, then ptxas on the stripped PTX (crate::line_info).
        let (mut log, _) = run_nvcc_commands(settings, source, &commands[..1], lender)?;
        crate::line_info::strip(source, work, &stem)?;
        log.push_str(&run_nvcc_commands(settings, source, &commands[1..], lender)?.0);
        (log, None)
    } else {
        let output = run_nvcc_commands(settings, source, &commands, lender)?;
        if crate::line_info::strips(settings, kind) {
            crate::line_info::strip_kept(source, work, &stem)?;
        }
        output
    };
    match kind {
        SourceKind::Cuda => {
            let (ptx, binary, dependencies) = kept_outputs(settings, source, work)?;
            Ok(FreshOutput {
                ptx,
                binary: Some(binary),
                compiler_log,
                dependencies,
                wrapper_failure,
            })
        }
        SourceKind::Ptx => Ok(FreshOutput {
            ptx: Vec::new(),
            binary: None,
            compiler_log,
            dependencies: vec![absolute(source)],
            wrapper_failure,
        }),
    }
}

/// Runs the source's nvcc commands; returns their output (ptxas's report and any warnings) and,
/// when the compiler cache failed a compile nvcc alone passed, what the cache printed.
fn run_nvcc_commands(
    settings: &CompileSettings,
    source: &Path,
    commands: &[Vec<OsString>],
    lender: &Lender<'_>,
) -> Result<(String, Option<String>), Error> {
    let mut compiler_log = String::new();
    let mut wrapper_failure = None;
    let timeouts = &settings.toolchain.timeouts;
    let run = |mut command: std::process::Command| {
        let rendered = render_command(&command);
        run_bounded(&mut command, timeouts, ToolKind::Work).map(|output| (output, rendered))
    };
    for args in commands {
        let mut command = settings.toolchain.command();
        let threads = parallel_archs(settings, args, lender);
        if threads.count() > 0 {
            // Each arch's ptxas in a thread of its own, on slots idle right now; nvcc prints
            // each arch's report whole, one arch after another.
            command.arg(format!("--threads={}", threads.count() + 1));
        }
        command.args(args);
        let (mut output, mut rendered) = run(command)?;
        drop(threads);
        // A compiler cache must not be able to fail a build that nvcc passes: sccache 0.16, for
        // one, drops all but one ptxas step of `-arch=compute_X -code=sm_A,sm_B` and then fails
        // in fatbinary. Rerun such a compile with nvcc alone; its report is then nvcc's own.
        if !output.status.success() && settings.toolchain.wrapper.is_some() {
            let mut direct = settings.toolchain.command_without_wrapper();
            direct.args(args);
            let (direct_output, direct_rendered) = run(direct)?;
            if direct_output.status.success() {
                wrapper_failure = Some(format!(
                    "{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            (output, rendered) = (direct_output, direct_rendered);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(Error::NvccFailed {
                file: source.to_path_buf(),
                status: output.status.to_string(),
                diagnostics: format!("{stdout}{stderr}"),
                command: rendered,
                notes: Vec::new(),
            });
        }
        compiler_log.push_str(&stdout);
        compiler_log.push_str(&stderr);
    }
    Ok((compiler_log, wrapper_failure))
}

/// The idle slots a command may use to assemble its archs in parallel (nvcc `--threads`): one
/// fewer than the SASS archs of a command that assembles several (`-fatbin`, `-c`; not cicc's
/// `-ptx`, not a one-arch `-cubin`), none under a compiler cache (which may not know the flag).
fn parallel_archs<'a>(
    settings: &CompileSettings,
    args: &[OsString],
    lender: &Lender<'a>,
) -> crate::jobs::Borrowed<'a> {
    let assembles = args.iter().any(|arg| arg == "-fatbin" || arg == "-c");
    let archs = settings.archs.len();
    let wanted = match (assembles, &settings.toolchain.wrapper) {
        (true, None) if archs > 1 => archs - 1,
        _ => 0,
    };
    lender.borrow(wanted)
}

/// The PTX of each program (virtual arch, path), the binary, and every file the compile read.
type KeptOutputs = (Vec<(String, PathBuf)>, PathBuf, Vec<PathBuf>);

/// A `.cu` compile's files in `work`: the PTX of each program (kept by `--keep`), the binary,
/// and every file the compile read; a missing one is an error naming it.
fn kept_outputs(
    settings: &CompileSettings,
    source: &Path,
    work: &Path,
) -> Result<KeptOutputs, Error> {
    let stem = file_stem(source);
    // --keep names one program's files `<stem>.ptx`, several `<stem>.compute_90.ptx`.
    let programs = settings.program_archs();
    let kept = |extension: &str, target: &SmArch| match programs.len() {
        1 => work.join(format!("{stem}.{extension}")),
        _ => work.join(format!("{stem}.{}.{extension}", target.virtual_name())),
    };
    let ptx: Vec<(String, PathBuf)> = programs
        .iter()
        .map(|(target, _)| (target.virtual_name(), kept("ptx", target)))
        .collect();
    let binary = match settings.product {
        Product::Ptx => work.join(format!("{stem}.fatbin")),
        Product::Object => work.join(format!("{stem}.o")),
    };
    let deps_path = match (settings.product, programs.first()) {
        (Product::Ptx, Some((lowest, _))) => kept("cpp1.ii", lowest),
        _ => work.join("deps.d"),
    };
    let mut expected: Vec<(&PathBuf, &str)> = ptx
        .iter()
        .map(|(_, path)| (path, "the PTX kept by --keep"))
        .collect();
    expected.extend([
        (&binary, "the output"),
        (
            &deps_path,
            "the dependency list (-MF file, or the preprocessed .cpp1.ii)",
        ),
    ]);
    for (path, what) in expected {
        if !path.is_file() {
            return Err(Error::UnreadableOutput {
                file: source.to_path_buf(),
                message: format!("nvcc succeeded but {what} ({}) is missing", path.display()),
            });
        }
    }
    let deps_text = std::fs::read_to_string(&deps_path).map_err(|error| Error::Io {
        path: deps_path.clone(),
        error,
    })?;
    let mut dependencies = match settings.product {
        Product::Object => parse_dep_file(&deps_text),
        Product::Ptx => parse_line_markers(&deps_text),
    };
    if dependencies.is_empty() {
        return Err(Error::UnreadableOutput {
            file: source.to_path_buf(),
            message: format!("{} lists no input file", deps_path.display()),
        });
    }
    dependencies = dependencies
        .into_iter()
        .map(|path| absolute(&path))
        .collect();
    Ok((ptx, binary, dependencies))
}

/// Absolute and lexically normalised (`bin/..//include` → `include`), so paths from nvcc's
/// dependency file compare with the toolkit root.
fn absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal
}

pub(crate) fn file_stem(source: &Path) -> String {
    source
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "source".into())
}

/// The `#define` lines of the generated header for exactly the macros `used`; `None` when a used
/// name is not one of its macros (token pasting, a typo): then the whole header counts.
fn selected_definitions(header: &str, used: &std::collections::BTreeSet<String>) -> Option<String> {
    let mut definitions = std::collections::BTreeMap::new();
    for line in header.lines() {
        if let Some(rest) = line.strip_prefix("#define ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            definitions.insert(name, line);
        }
    }
    let mut selected = String::new();
    for name in used {
        selected.push_str(definitions.get(name.as_str())?);
        selected.push('\n');
    }
    Some(selected)
}

/// Whether the cache fingerprints this header by size and mtime instead of content: see
/// [`crate::toolchain::is_system_header`].
fn is_system_header(settings: &CompileSettings, path: &Path) -> bool {
    crate::toolchain::is_system_header(&settings.toolchain.cuda_home, path)
}

/// Length-prefixed fields into one SHA-256, so no two field lists hash alike.
#[derive(Default)]
struct KeyHasher(Sha256);

impl KeyHasher {
    fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

/// The configuration half of the key: everything but the content of the files read. It names
/// the slot, so two configurations of one source (other `-D`, archs, toolkit) never share one.
fn config_key(settings: &CompileSettings, source: &Path, kind: SourceKind) -> String {
    let mut hasher = KeyHasher::default();
    // v6: `compile_ptx` assembles the stripped PTX it ships; the entry keeps the `-lineinfo`
    // PTX for the SASS stage's line tables (v5 assembled the `-lineinfo` PTX).
    // v7: a user file's part is its SHA-256 in hex (`file_facts`).
    hasher.field(b"occupancy-build cache v7");
    hasher.field(settings.toolchain.version_text.as_bytes());
    hasher.field(settings.toolchain.fingerprint.as_bytes());
    hasher.field(settings.toolchain.nvcc.as_os_str().as_encoded_bytes());
    for arg in &settings.toolchain.host_args {
        hasher.field(arg.as_encoded_bytes());
    }
    hasher.field(format!("{kind:?} {:?}", settings.product).as_bytes());
    for arch in &settings.archs {
        hasher.field(arch.to_string().as_bytes());
    }
    // The mode and the JIT archs decide which PTX each arch's SASS comes from.
    hasher.field(if settings.ptx_per_arch {
        b"ptx per arch"
    } else {
        b"one ptx"
    });
    for arch in &settings.jit_archs {
        hasher.field(arch.to_string().as_bytes());
    }
    hasher.field(absolute(source).as_os_str().as_encoded_bytes());
    // The arguments with a fixed work dir, so the key does not depend on the process id; the
    // two-step commands when the source may compile in two steps: whether it does (its previous
    // compile decides, `crate::line_info::spills_are_common`) changes only the binary's line
    // tables, never what ships or what ptxas reports, so both ways share the slot.
    let two_steps = crate::line_info::two_steps(settings, kind);
    for args in nvcc_args(settings, source, kind, Path::new("/work"), two_steps) {
        for arg in args {
            hasher.field(arg.as_encoded_bytes());
        }
    }
    hasher.finish()
}

/// The full key: the configuration and the content of every file the compile read.
fn cache_key(
    settings: &CompileSettings,
    config: &str,
    dependencies: &[PathBuf],
    files: &FileFacts,
) -> Result<String, Error> {
    let mut hasher = KeyHasher::default();
    hasher.field(config.as_bytes());
    let mut field = |bytes: &[u8]| hasher.field(bytes);
    let mut sorted: Vec<&PathBuf> = dependencies.iter().collect();
    sorted.sort();
    let generated_header = settings
        .cache_root
        .parent()
        .and_then(Path::parent)
        .map(|out_dir| out_dir.join("occupancy_bounds.h"));
    let mut used_macros: Option<std::collections::BTreeSet<String>> = Some(Default::default());
    for dependency in &sorted {
        if is_system_header(settings, dependency) || Some(*dependency) == generated_header.as_ref()
        {
            continue;
        }
        match (files.of(dependency), used_macros.as_mut()) {
            (Ok(facts), Some(used)) if facts.text => used.extend(facts.identifiers),
            _ => used_macros = None,
        }
    }
    for dependency in sorted {
        field(dependency.as_os_str().as_encoded_bytes());
        if Some(dependency) == generated_header.as_ref() {
            // occupancy_bounds.h holds every declared kernel's macros; a source depends only on
            // the ones it names, so changing one declaration recompiles only its kernel's file.
            let text = std::fs::read_to_string(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            match used_macros
                .as_ref()
                .and_then(|used| selected_definitions(&text, used))
            {
                Some(definitions) => field(definitions.as_bytes()),
                None => field(&Sha256::digest(text.as_bytes())),
            }
        } else if is_system_header(settings, dependency) {
            let metadata = std::fs::metadata(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            let modified = metadata
                .modified()
                .ok()
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|duration| duration.as_nanos())
                .unwrap_or(0);
            field(&metadata.len().to_le_bytes());
            field(&modified.to_le_bytes());
        } else {
            // Read once and remembered by size and time (`file_facts`): a rerun with no CUDA
            // change reads no header again.
            let facts = files.of(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            field(facts.digest.as_bytes());
        }
    }
    Ok(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toolchain whose nvcc cannot be started.
    fn absent_toolchain() -> Toolchain {
        Toolchain {
            nvcc: PathBuf::from("/nonexistent/occupancy/bin/nvcc"),
            cuda_home: PathBuf::from("/nonexistent/occupancy"),
            wrapper: None,
            host_args: Vec::new(),
            version_text: "Cuda compilation tools, release 13.0, V13.0.88".into(),
            release: "13.0".into(),
            identity_files: Vec::new(),
            fingerprint: String::new(),
            timeouts: Default::default(),
        }
    }

    #[test]
    fn source_errors_name_the_source_and_every_failed_compile_is_kept() {
        let dir = std::env::temp_dir().join(format!("occupancy-sources-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let mut context = crate::context::Context::for_tests(&dir, &["sm_90"]);
        let compile = |context: &crate::context::Context| {
            compile_all(
                context,
                &absent_toolchain(),
                Product::Ptx,
                LineTables::OnDemand,
            )
            .unwrap_err()
        };
        let error = compile(&context);
        assert!(matches!(error, Error::NoSources), "{error:?}");
        context.sources = vec![(dir.join("gone.cu"), SourceKind::Cuda)];
        let error = compile(&context);
        assert!(
            matches!(&error, Error::SourceMissing { path } if *path == dir.join("gone.cu")),
            "{error:?}"
        );
        for file in ["a/scale.cu", "b/scale.cu"] {
            std::fs::write(dir.join(file), "__global__ void scale() {}\n").unwrap();
        }
        context.sources = ["a/scale.cu", "b/scale.cu"]
            .iter()
            .map(|file| (dir.join(file), SourceKind::Cuda))
            .collect();
        let error = check_unique_stems(&context.sources).unwrap_err();
        assert!(
            matches!(&error, Error::DuplicateStem { stem, path }
                if stem == "scale" && *path == dir.join("b/scale.cu")),
            "{error:?}"
        );
        let Error::Several(failures) = compile(&context) else {
            panic!("two failed compiles are one error each");
        };
        assert_eq!(failures.len(), 2, "{failures:?}");
        for failure in &failures {
            let Error::ToolNotStarted { command, error } = failure else {
                panic!("{failure:?}");
            };
            assert!(
                command.starts_with("/nonexistent/occupancy/bin/nvcc "),
                "{command}"
            );
            assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn one_file_under_several_names_is_one_source() {
        let dir = std::env::temp_dir().join(format!("occupancy-unique-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.cu"), "").unwrap();
        std::fs::write(dir.join("b.cu"), "").unwrap();
        let inputs = vec![
            (dir.join("a.cu"), SourceKind::Cuda),
            (dir.join("./a.cu"), SourceKind::Cuda),
            (dir.join("sub/../a.cu"), SourceKind::Cuda),
            (dir.join("b.cu"), SourceKind::Cuda),
        ];
        let unique: Vec<PathBuf> = unique_sources(inputs)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(unique, [dir.join("a.cu"), dir.join("b.cu")]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_source_depends_only_on_the_bounds_it_names() {
        let header = "#pragma once\n#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(256, 4)\n#define OCCUPANCY_BOUNDS_scale __launch_bounds__(128)\n";
        let source = "#include \"occupancy_bounds.h\"\n__global__ void OCCUPANCY_BOUNDS_saxpy saxpy() {} // MY_OCCUPANCY_X is not ours";
        let used: std::collections::BTreeSet<String> =
            crate::file_facts::occupancy_identifiers(source)
                .into_iter()
                .collect();
        assert_eq!(used.iter().collect::<Vec<_>>(), ["OCCUPANCY_BOUNDS_saxpy"]);
        assert_eq!(
            selected_definitions(header, &used).unwrap(),
            "#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(256, 4)\n"
        );
        let pasted: std::collections::BTreeSet<String> =
            crate::file_facts::occupancy_identifiers("#define B(k) OCCUPANCY_BOUNDS_ ## k")
                .into_iter()
                .collect();
        assert!(
            selected_definitions(header, &pasted).is_none(),
            "token pasting: the whole header counts"
        );
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    fn settings(user_args: &[&str], archs: &[&str]) -> CompileSettings {
        CompileSettings {
            toolchain: Toolchain {
                nvcc: PathBuf::from("/cuda/bin/nvcc"),
                cuda_home: PathBuf::from("/cuda"),
                wrapper: None,
                host_args: Vec::new(),
                version_text: "Cuda compilation tools, release 13.0, V13.0.88".into(),
                release: "13.0".into(),
                identity_files: Vec::new(),
                fingerprint: "/cuda/bin/ptxas 100 1\n".into(),
                timeouts: Default::default(),
            },
            archs: archs
                .iter()
                .map(|arch| SmArch::parse(arch).unwrap())
                .collect(),
            user_args: user_args.iter().map(OsString::from).collect(),
            product: Product::Ptx,
            cache_root: PathBuf::from("/cache"),
            ptx_per_arch: false,
            jit_archs: Vec::new(),
            line_tables: LineTables::OnDemand,
        }
    }

    #[test]
    fn every_setting_that_decides_the_output_names_its_own_slot() {
        let source = Path::new("/src/k.cu");
        let key = |settings: &CompileSettings| config_key(settings, source, SourceKind::Cuda);
        let base = key(&settings(&["-DWIDTH=1"], &["sm_80"]));
        assert_eq!(base, key(&settings(&["-DWIDTH=1"], &["sm_80"])), "stable");
        let mut other_ptxas = settings(&["-DWIDTH=1"], &["sm_80"]);
        other_ptxas.toolchain.fingerprint = "/cuda/bin/ptxas 101 2\n".into();
        let variants = [
            key(&settings(&["-DWIDTH=2"], &["sm_80"])),
            key(&settings(&["-DWIDTH=1"], &["sm_80", "sm_90"])),
            key(&other_ptxas),
            config_key(
                &settings(&["-DWIDTH=1"], &["sm_80"]),
                Path::new("/src/j.cu"),
                SourceKind::Cuda,
            ),
        ];
        for variant in variants {
            assert_ne!(base, variant);
        }
        let slot_dir = |settings: &CompileSettings| {
            format!("{:?}", Slot::new(&settings.cache_root, "k", &key(settings)))
        };
        assert_ne!(
            slot_dir(&settings(&["-DWIDTH=1"], &["sm_80"])),
            slot_dir(&settings(&["-DWIDTH=2"], &["sm_80"])),
            "two -D configurations never share a slot"
        );
        // Where the line tables are made changes neither what ships nor ptxas's report.
        let mut everywhere = settings(&["-DWIDTH=1"], &["sm_80"]);
        everywhere.line_tables = LineTables::Everywhere;
        assert_eq!(key(&everywhere), base, "line tables do not name a slot");
    }

    fn arch(name: &str) -> SmArch {
        SmArch::parse(name).unwrap()
    }

    #[test]
    fn the_program_mode_and_the_jit_archs_name_their_own_slot() {
        let source = Path::new("/src/k.cu");
        let two = settings(&[], &["sm_80", "sm_90"]);
        let per_arch = CompileSettings {
            ptx_per_arch: true,
            ..two.clone()
        };
        let jit = CompileSettings {
            jit_archs: vec![arch("sm_90")],
            ..two.clone()
        };
        let key = |settings: &CompileSettings| config_key(settings, source, SourceKind::Cuda);
        assert_ne!(key(&two), key(&per_arch));
        assert_ne!(key(&two), key(&jit));
        assert_ne!(key(&per_arch), key(&jit));
    }

    #[test]
    fn ptx_per_arch_gives_each_target_its_own_program_and_jit_archs_the_highest_below() {
        let settings = CompileSettings {
            ptx_per_arch: true,
            jit_archs: vec![arch("sm_89"), arch("sm_120")],
            ..settings(&[], &["sm_80", "sm_89", "sm_90", "sm_120"])
        };
        assert_eq!(
            settings.program_archs(),
            vec![
                (arch("sm_80"), vec![arch("sm_80"), arch("sm_89")]),
                (arch("sm_90"), vec![arch("sm_90"), arch("sm_120")]),
            ]
        );
        let args: Vec<String> = arch_args(&settings, true)
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "-gencode",
                "arch=compute_80,code=[sm_80,sm_89,compute_80]",
                "-gencode",
                "arch=compute_90,code=[sm_90,sm_120,compute_90]"
            ]
        );
        let one = CompileSettings {
            ptx_per_arch: false,
            ..settings
        };
        assert_eq!(
            one.program_archs(),
            vec![(arch("sm_80"), one.archs.clone())],
            "one program: the lowest target's PTX for every arch"
        );
    }
}
