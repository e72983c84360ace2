//! The one engine: compile → parse → calculate → lint → report. `Build::compile_ptx` /
//! `compile_lib` and the `cargo occupancy` CLI both call [`run`] / [`compile_and_check`]; there
//! is no second copy of this pipeline anywhere.
//!
//! This module sequences the steps and owns the cargo protocol (`cargo:` lines); parsing, arch
//! facts, the calculator and lint evaluation are in `occupancy-core`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::compile::{compile_source, CompileSettings, CompiledSource, Product, SourceKind};
use crate::config::{self, OccupancySettings};
use crate::fsutil::write_if_changed;
use crate::targets::{self, ArchInputs, ArchSource, SmArch};
use crate::toolchain::Toolchain;
use crate::{jobs, Build, Cudart, Error, Output};

pub use crate::report::Report;

/// Where a build runs: resolved once from the builder and the environment.
#[derive(Debug, Clone)]
pub struct Context {
    pub out_dir: PathBuf,
    pub manifest_dir: PathBuf,
    pub crate_name: String,
    pub settings: OccupancySettings,
    /// Every arch checked: the targets, then the JIT-only ones (sorted; the lowest is a target).
    pub archs: Vec<SmArch>,
    /// Archs checked only as what the driver's JIT makes of the shipped PTX (`jit_archs`).
    pub jit_archs: Vec<SmArch>,
    /// One PTX per target arch (`.ptx_per_arch(true)`, else `ptx_per_arch` in the metadata).
    pub ptx_per_arch: bool,
    pub arch_source: ArchSource,
    /// `OCCUPANCY_SKIP=1` or `DOCS_RS`: compile if possible, check nothing, say so.
    pub skip_reason: Option<String>,
}

/// Resolves the context of a build from the builder, the (tracked) environment and the
/// package's settings, read with `cargo metadata` (the build's `$CARGO`).
pub fn context(build: &Build) -> Result<Context, Error> {
    let manifest_dir = manifest_dir(build)?;
    let cargo = build.env.get("CARGO").map(PathBuf::from);
    let settings = config::load(&manifest_dir, cargo.as_deref())?;
    context_with_settings(build, settings)
}

/// The package root: `.manifest_dir(...)`, else `CARGO_MANIFEST_DIR`.
fn manifest_dir(build: &Build) -> Result<PathBuf, Error> {
    match &build.manifest_dir {
        Some(dir) => Ok(dir.clone()),
        None => Ok(PathBuf::from(build.env.get("CARGO_MANIFEST_DIR").ok_or_else(|| Error::Config {
            message: "CARGO_MANIFEST_DIR is not set: call occupancy-build from build.rs, or give `.manifest_dir(...)`".into(),
        })?)),
    }
}

/// [`context`] with the settings given rather than read from a package: for a caller that
/// checks sources outside any package (`cargo occupancy check`), with default settings.
pub fn context_with_settings(build: &Build, settings: OccupancySettings) -> Result<Context, Error> {
    let env = &build.env;
    let nvcc = || crate::NvccArchs::installed(env);
    if let Some(first) = build.arch_errors.first() {
        return Err(targets::unknown("in `.arch(...)`", first.clone(), &nvcc));
    }
    let out_dir = match &build.out_dir {
        Some(dir) => dir.clone(),
        None => PathBuf::from(env.get("OUT_DIR").ok_or_else(|| Error::Config {
            message: "OUT_DIR is not set: call occupancy-build from build.rs, or give `.out_dir(...)`".into(),
        })?),
    };
    let manifest_dir = manifest_dir(build)?;
    let crate_name = env
        .get("CARGO_PKG_NAME")
        .or_else(|| settings.package_name.clone())
        .unwrap_or_else(|| "crate".to_string());
    let (archs, arch_source) = targets::resolve(
        ArchInputs {
            builder: &build.archs,
            occupancy_archs_env: env.get("OCCUPANCY_ARCHS"),
            cuda_compute_cap_env: env.get("CUDA_COMPUTE_CAP"),
            metadata: settings.archs.clone(),
        },
        targets::query_installed_gpus,
        &nvcc,
    )?;
    let (archs, jit_archs) = with_jit_archs(build, &settings, archs, &nvcc)?;
    let ptx_per_arch = build
        .ptx_per_arch
        .or(settings.ptx_per_arch)
        .unwrap_or(false);
    let skip_reason = if env.flag("OCCUPANCY_SKIP") {
        Some("OCCUPANCY_SKIP is set".to_string())
    } else if env.get("DOCS_RS").is_some() {
        Some("building on docs.rs (DOCS_RS is set)".to_string())
    } else {
        None
    };
    Ok(Context {
        out_dir,
        manifest_dir,
        crate_name,
        settings,
        archs,
        jit_archs,
        ptx_per_arch,
        arch_source,
        skip_reason,
    })
}

/// The target archs plus the GPUs the shipped PTX must also run on (`.jit_arch(...)`, else
/// `jit_archs` in the metadata), sorted; and the JIT-only ones. The PTX targets the lowest
/// target arch, so a JIT arch below it could not load the PTX at all: an error.
fn with_jit_archs(
    build: &Build,
    settings: &OccupancySettings,
    mut archs: Vec<SmArch>,
    nvcc: &dyn Fn() -> Option<crate::NvccArchs>,
) -> Result<(Vec<SmArch>, Vec<SmArch>), Error> {
    let (names, setting) = if build.jit_archs.is_empty() {
        (
            settings.jit_archs.clone().unwrap_or_default(),
            "`jit_archs` in [package.metadata.occupancy]",
        )
    } else {
        (build.jit_archs.clone(), "`.jit_arch(...)`")
    };
    let jit = targets::parse_list(&names.join(","), setting, nvcc)?;
    let lowest = archs.first().copied();
    if let (Some(lowest), Some(older)) = (lowest, jit.iter().find(|arch| Some(**arch) < lowest)) {
        return Err(Error::Config {
            message: format!(
                "{setting}: {older} is older than the lowest target arch {lowest}, whose PTX ({}) ships; that PTX cannot be JIT-compiled for {older}: add {older} to the target archs instead",
                lowest.virtual_name()
            ),
        });
    }
    let jit_only: Vec<SmArch> = jit
        .into_iter()
        .filter(|arch| !archs.contains(arch))
        .collect();
    archs.extend(jit_only.iter().copied());
    archs.sort();
    Ok((archs, jit_only))
}

/// Compiles every source of the build (in parallel, cached) and returns them in order.
pub fn compile_all(
    build: &Build,
    toolchain: &Toolchain,
    context: &Context,
    product: Product,
) -> Result<Vec<CompiledSource>, Error> {
    let settings = CompileSettings {
        toolchain: toolchain.clone(),
        archs: context.archs.clone(),
        // OUT_DIR first, for the generated occupancy_bounds.h.
        user_args: std::iter::once(std::ffi::OsString::from("-I"))
            .chain(std::iter::once(context.out_dir.as_os_str().to_owned()))
            .chain(build.user_args())
            .collect(),
        product,
        cache_root: context.out_dir.join("occupancy").join("cache"),
        ptx_per_arch: context.ptx_per_arch,
        jit_archs: context.jit_archs.clone(),
    };
    let mut inputs: Vec<(PathBuf, SourceKind)> = Vec::new();
    for file in &build.cuda_sources(&context.manifest_dir) {
        inputs.push((
            resolve_source(&context.manifest_dir, file)?,
            SourceKind::Cuda,
        ));
    }
    for file in &build.ptx_files {
        inputs.push((
            resolve_source(&context.manifest_dir, file)?,
            SourceKind::Ptx,
        ));
    }
    // One file named twice (`.file(x)` and a `.source_dir` holding x, `a.cu` and `./a.cu`) is
    // one source: compiling it twice would race on its cache slot and its OUT_DIR products.
    let inputs = unique_sources(inputs);
    if inputs.is_empty() {
        return Err(Error::Config {
            message: "no CUDA sources: add some with `.file(...)`, `.files(...)`, `.source_dir(...)` or `.ptx_file(...)`".into(),
        });
    }
    let mut stems = BTreeSet::new();
    for (path, _) in &inputs {
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !stems.insert(stem.clone()) {
            return Err(Error::Config {
                message: format!("two sources are named `{stem}`: their outputs would collide in OUT_DIR; rename one ({})", path.display()),
            });
        }
    }
    let settings = &settings;
    let tasks: Vec<_> = inputs
        .iter()
        .map(|(path, kind)| move || compile_source(settings, path, *kind))
        .collect();
    let results = jobs::run_all(tasks, jobs::max_parallel_jobs(&build.env));
    let mut compiled = Vec::new();
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(source) => compiled.push(source),
            Err(error) => failures.push(error),
        }
    }
    match failures.len() {
        0 => Ok(compiled),
        1 => Err(failures.remove(0)),
        _ => Err(Error::Tool {
            message: failures
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n\n"),
        }),
    }
}

/// The inputs without repeats of one file under another name, first mention kept.
fn unique_sources(mut inputs: Vec<(PathBuf, SourceKind)>) -> Vec<(PathBuf, SourceKind)> {
    let mut seen = BTreeSet::new();
    inputs.retain(|(path, _)| seen.insert(canonical(path)));
    inputs
}

/// The path with symlinks and `.`/`..` resolved: one name per file.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

fn resolve_source(manifest_dir: &Path, file: &Path) -> Result<PathBuf, Error> {
    let path = if file.is_absolute() {
        file.to_path_buf()
    } else {
        manifest_dir.join(file)
    };
    if !path.is_file() {
        return Err(Error::Config {
            message: format!(
                "source {} does not exist (paths are relative to the package root)",
                path.display()
            ),
        });
    }
    Ok(path)
}

/// The engine's entry for callers that are not a build script (the `cargo occupancy` CLI):
/// the same pipeline as [`Build::compile_ptx`]/[`Build::compile_lib`], on a builder that names
/// its `out_dir` and `manifest_dir` and usually sets `cargo_metadata(false)`. A library product
/// is archived as `liboccupancy_check.a` in the out dir. Never exits; deny findings come back as
/// [`Error::Denied`] with the rendered diagnostics, after the reports were written.
pub fn compile_and_check(build: &Build, product: Product) -> Result<Output, Error> {
    run(
        build,
        product,
        (product == Product::Object).then_some("occupancy_check"),
    )
}

/// The whole pipeline for a build: compile, write products, check, report, cargo lines.
pub fn run(build: &Build, product: Product, library_name: Option<&str>) -> Result<Output, Error> {
    let mut cargo = CargoLines::new(build.cargo_metadata);
    let context = context(build);
    let result = match &context {
        Ok(context) => run_in(build, context, product, library_name, &mut cargo),
        Err(_) => Err(Error::Tool {
            message: String::new(),
        }),
    };
    if let (Ok(context), Err(error)) = (&context, &result) {
        // A denied build wrote its report with the findings; any other failure checked
        // nothing, and the report must say so rather than keep the last good run's numbers.
        if !matches!(error, Error::Denied { .. }) {
            let _ = crate::report::write_failed(context, &crate::report::failure_summary(error));
        }
    }
    // Whatever happened, cargo must rerun us when an input we read changes.
    match &context {
        Ok(context) => {
            for path in &context.settings.manifest_paths {
                cargo.rerun_if_changed(path);
            }
        }
        Err(_) => {
            if let Some(dir) = build
                .manifest_dir
                .clone()
                .or_else(|| build.env.get("CARGO_MANIFEST_DIR").map(PathBuf::from))
            {
                cargo.rerun_if_changed(&dir.join("Cargo.toml"));
            }
        }
    }
    for name in build.env.read_names() {
        if !set_by_cargo(&name) {
            cargo.line(&format!("cargo:rerun-if-env-changed={name}"));
        }
    }
    cargo.flush();
    // A context error is the one to report (the result is a placeholder then).
    context?;
    result
}

fn run_in(
    build: &Build,
    context: &Context,
    product: Product,
    library_name: Option<&str>,
    cargo: &mut CargoLines,
) -> Result<Output, Error> {
    let toolchain = match Toolchain::find(&build.env, true) {
        Ok(toolchain) => toolchain,
        Err(Error::NvccNotFound { looked }) if context.skip_reason.is_some() => {
            let reason = context.skip_reason.as_deref().unwrap_or_default();
            cargo.warning(&format!(
                "occupancy: {reason} and nvcc was not found ({looked}): no kernel was compiled and nothing was checked"
            ));
            return placeholder_output(build, context, product);
        }
        Err(error) => return Err(error),
    };
    for dir in &build.source_dirs {
        // A directory: cargo reruns the script when a file in it is added or changed.
        cargo.rerun_if_changed(&context.manifest_dir.join(dir));
    }
    for file in build
        .cuda_sources(&context.manifest_dir)
        .iter()
        .chain(&build.ptx_files)
    {
        cargo.rerun_if_changed(
            &resolve_source(&context.manifest_dir, file).unwrap_or_else(|_| file.clone()),
        );
    }
    if context.settings.unchecked.is_some() {
        cargo.warning("occupancy: `unchecked` in [package.metadata.occupancy] has no effect: this crate's occupancy build checks its kernels; remove it");
    }
    // Declarations first: occupancy_bounds.h must exist before a .cu includes it.
    let declarations = crate::check::scan_declarations(build, context, cargo)?;
    crate::check::write_bounds_header(context, &declarations)?;
    let compiled = compile_all(build, &toolchain, context, product)?;
    // The toolkit is tracked by its identity (nvcc, ptxas, cicc, version.json), not by the
    // hundreds of its headers a source includes; NVCC/CUDA_HOME are tracked as variables.
    for file in &toolchain.identity_files {
        cargo.rerun_if_changed(file);
    }
    for source in &compiled {
        for dependency in &source.dependencies {
            // Files this build script writes (occupancy_bounds.h) are outputs, not inputs: their
            // own inputs (the declarations in src/) are tracked, and watching them would rerun
            // the script on every build.
            if is_tracked_dependency(dependency, &context.out_dir, &toolchain.cuda_home) {
                cargo.rerun_if_changed(dependency);
            }
        }
        for line in compiler_messages(&source.compiler_log) {
            cargo.warning(&format!("{}: {line}", source.source.display()));
        }
        if let (Some(failure), Some(wrapper)) = (&source.wrapper_failure, &toolchain.wrapper) {
            cargo.warning(&format!(
                "occupancy: {} failed to compile {} and nvcc alone succeeded, so it was compiled without the compiler cache (checked as usual); the cache said (ptxas's report left out):\n{}",
                wrapper.to_string_lossy(),
                source.source.display(),
                compiler_messages(failure).join("\n")
            ));
        }
    }
    let mut output = Output {
        ptx_files: Vec::new(),
        ptx_module: None,
        library: None,
        report: crate::report::for_build(context, Some(toolchain.release.clone()), None),
    };
    match product {
        Product::Ptx => write_ptx_products(context, &compiled, &mut output)?,
        Product::Object => {
            let name = library_name.expect("compile_lib passes its name");
            output.library = Some(archive(build, context, &toolchain, &compiled, name, cargo)?);
        }
    }
    output.report = if build.check && context.skip_reason.is_none() {
        crate::check::check(build, context, &toolchain, &compiled, &declarations, cargo)?
    } else {
        let reason = context
            .skip_reason
            .clone()
            .unwrap_or_else(|| "`.check(false)` on the builder".to_string());
        if context.skip_reason.is_some() {
            cargo.warning(&format!(
                "occupancy: {reason}: kernels were compiled but nothing was checked"
            ));
        }
        let report =
            crate::report::for_build(context, Some(toolchain.release.clone()), Some(reason));
        crate::report::write_reports(context, &report)?;
        crate::facts::write(context, &crate::facts::of_report(&report, &declarations))?;
        report
    };
    Ok(output)
}

/// Whether a file nvcc read gets its own `rerun-if-changed`: not the files this build script
/// writes (occupancy_bounds.h in OUT_DIR: their inputs are tracked), not the toolkit's headers
/// (the toolkit is tracked by its identity files); every user header is.
fn is_tracked_dependency(path: &Path, out_dir: &Path, cuda_home: &Path) -> bool {
    !path.starts_with(out_dir) && !path.starts_with(cuda_home)
}

/// Variables cargo itself sets for a build script: a change to one already reruns it.
fn set_by_cargo(name: &str) -> bool {
    name.starts_with("CARGO_")
        || matches!(
            name,
            "CARGO"
                | "OUT_DIR"
                | "NUM_JOBS"
                | "TARGET"
                | "HOST"
                | "PROFILE"
                | "OPT_LEVEL"
                | "DEBUG"
        )
}

/// Lines of nvcc's stderr that are not ptxas's `-v` report: warnings the user should see.
fn compiler_messages(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| {
            let trimmed = line.trim();
            !trimmed.is_empty()
                && !trimmed.starts_with("ptxas info")
                && !(line.starts_with("    ")
                    && (trimmed.contains("bytes stack frame")
                        || trimmed.ends_with("bytes spill loads")))
        })
        .filter(|line| {
            !line.trim_start().starts_with("ptxas warning")
                && !line.trim_start().starts_with("ptxas info")
        })
        .collect()
}

fn const_name(stem: &str) -> String {
    let mut name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) || name.is_empty() {
        name.insert(0, '_');
    }
    name
}

fn write_ptx_products(
    context: &Context,
    compiled: &[CompiledSource],
    output: &mut Output,
) -> Result<(), Error> {
    let mut module = String::from(
        "// @generated by occupancy-build: the PTX of each CUDA source, for runtime loading.\n",
    );
    let mut all = Vec::new();
    for source in compiled {
        let stem = source
            .source
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = crate::fsutil::read(&source.ptx)?;
        let destination = context.out_dir.join(format!("{stem}.ptx"));
        write_if_changed(&destination, &text)?;
        let constant = const_name(&stem);
        module.push_str(&format!(
            "/// PTX compiled from `{}`.\n#[allow(dead_code)]\npub const {constant}: &str = include_str!({:?});\n",
            source.source.display(),
            destination.display().to_string()
        ));
        all.push(format!("({stem:?}, {constant})"));
        if context.ptx_per_arch && source.kind == SourceKind::Cuda {
            module.push_str(&per_arch_ptx(context, source, &stem, output)?);
        }
        output.ptx_files.push((stem, destination));
    }
    module.push_str(&format!(
        "/// Every PTX module as (source stem, PTX text).\n#[allow(dead_code)]\npub const ALL: &[(&str, &str)] = &[{}];\n",
        all.join(", ")
    ));
    let module_path = context.out_dir.join("occupancy_ptx.rs");
    write_if_changed(&module_path, module.as_bytes())?;
    output.ptx_module = Some(module_path);
    Ok(())
}

/// A `ptx_per_arch` source's per-arch PTX: `$OUT_DIR/<stem>.compute_90.ptx`, a constant each
/// (`SAXPY_SM_90`) and the picker `fn saxpy(major, minor) -> Option<&'static str>`.
fn per_arch_ptx(
    context: &Context,
    source: &CompiledSource,
    stem: &str,
    output: &mut Output,
) -> Result<String, Error> {
    let constant = const_name(stem);
    let mut module = String::new();
    let mut choices = Vec::new();
    for program in &source.programs {
        let Some(target) = program.ptx_target.as_deref() else {
            continue;
        };
        let Ok(arch) = SmArch::parse(target) else {
            continue;
        };
        let text = crate::fsutil::read(&program.ptx)?;
        let destination = context.out_dir.join(format!("{stem}.{target}.ptx"));
        write_if_changed(&destination, &text)?;
        let arch_constant = format!("{constant}_{}", const_name(&arch.to_string()));
        module.push_str(&format!(
            "/// PTX compiled from `{}` for {arch} ({target}).\n#[allow(dead_code)]\npub const {arch_constant}: &str = include_str!({:?});\n",
            source.source.display(),
            destination.display().to_string()
        ));
        choices.push((arch, arch_constant));
        output
            .ptx_files
            .push((format!("{stem}.{arch}"), destination));
    }
    module.push_str(&picker(&source.source, stem, choices));
    Ok(module)
}

/// The picker over a source's per-arch PTX: the PTX compiled for the highest target arch the
/// GPU can load (an `a` target only on its exact capability, an `f` target on its family), as
/// the driver picks from a fatbin; `None` on a GPU older than every target.
fn picker(source: &Path, stem: &str, mut choices: Vec<(SmArch, String)>) -> String {
    use occupancy_core::arch::Variant;
    choices.sort_by_key(|(arch, _)| std::cmp::Reverse((arch.number(), arch.variant())));
    let mut body = String::from("    let capability = major * 10 + minor;\n");
    for (arch, constant) in &choices {
        let number = arch.number();
        let condition = match arch.variant() {
            Variant::Portable => format!("capability >= {number}"),
            Variant::ArchSpecific => format!("capability == {number}"),
            Variant::FamilySpecific => {
                format!(
                    "capability / 10 == {} && capability >= {number}",
                    number / 10
                )
            }
        };
        body.push_str(&format!(
            "    if {condition} {{\n        return Some({constant});\n    }}\n"
        ));
    }
    body.push_str("    None\n");
    let name = picker_name(stem);
    format!(
        "/// The PTX of `{}` to load on a GPU of compute capability `major.minor`: the one compiled\n/// for the highest target arch that GPU can load; `None` when it is older than every target.\n#[allow(dead_code)]\npub fn {name}(major: u32, minor: u32) -> Option<&'static str> {{\n{body}}}\n",
        source.display()
    )
}

/// `saxpy` for `saxpy.cu`: the stem as a lowercase identifier, `_ptx` appended to a keyword.
fn picker_name(stem: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
        "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
        "true", "try", "type", "unsafe", "use", "where", "while", "abstract", "become", "box",
        "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield",
    ];
    let name = const_name(stem).to_ascii_lowercase();
    if KEYWORDS.contains(&name.as_str()) {
        format!("{name}_ptx")
    } else {
        name
    }
}

/// Without nvcc under OCCUPANCY_SKIP/docs.rs: empty PTX constants so the crate still compiles.
fn placeholder_output(build: &Build, context: &Context, product: Product) -> Result<Output, Error> {
    let mut output = Output {
        ptx_files: Vec::new(),
        ptx_module: None,
        library: None,
        report: crate::report::for_build(
            context,
            None,
            Some(context.skip_reason.clone().unwrap_or_default()),
        ),
    };
    crate::report::write_reports(context, &output.report)?;
    crate::facts::write(
        context,
        &crate::facts::of_report(&output.report, &Default::default()),
    )?;
    if product == Product::Ptx {
        let mut module = String::from(
            "// @generated by occupancy-build: nvcc was not available, every module is empty.\n",
        );
        let mut all = Vec::new();
        for file in build
            .cuda_sources(&context.manifest_dir)
            .iter()
            .chain(&build.ptx_files)
        {
            let stem = file
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            module.push_str(&format!(
                "#[allow(dead_code)]\npub const {}: &str = \"\";\n",
                const_name(&stem)
            ));
            if context.ptx_per_arch && build.cuda_sources(&context.manifest_dir).contains(file) {
                module.push_str(&placeholder_per_arch(context, file, &stem));
            }
            all.push(format!("({stem:?}, {})", const_name(&stem)));
        }
        module.push_str(&format!(
            "#[allow(dead_code)]\npub const ALL: &[(&str, &str)] = &[{}];\n",
            all.join(", ")
        ));
        let module_path = context.out_dir.join("occupancy_ptx.rs");
        write_if_changed(&module_path, module.as_bytes())?;
        output.ptx_module = Some(module_path);
    }
    Ok(output)
}

/// The empty per-arch constants and picker of a `ptx_per_arch` source, so the crate compiles.
fn placeholder_per_arch(context: &Context, source: &Path, stem: &str) -> String {
    let mut module = String::new();
    let mut choices = Vec::new();
    for arch in context
        .archs
        .iter()
        .filter(|arch| !context.jit_archs.contains(arch))
    {
        let constant = format!("{}_{}", const_name(stem), const_name(&arch.to_string()));
        module.push_str(&format!(
            "#[allow(dead_code)]\npub const {constant}: &str = \"\";\n"
        ));
        choices.push((*arch, constant));
    }
    module.push_str(&picker(source, stem, choices));
    module
}

fn archive(
    build: &Build,
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    name: &str,
    cargo: &mut CargoLines,
) -> Result<PathBuf, Error> {
    let objects: Vec<&PathBuf> = compiled
        .iter()
        .filter_map(|source| source.binary.as_ref())
        .collect();
    let mut archiver = cc::Build::new();
    archiver
        .cuda(true)
        .out_dir(&context.out_dir)
        .cargo_metadata(false)
        .cargo_warnings(false);
    if build.env.get("TARGET").is_none() {
        archiver
            .target(env!("OCCUPANCY_BUILD_HOST"))
            .host(env!("OCCUPANCY_BUILD_HOST"))
            .opt_level(0);
    }
    // Only objects: `cc` archives them (its `ar`, its deterministic mode) without compiling.
    archiver.objects(objects);
    archiver.try_compile(name).map_err(|error| Error::Tool {
        message: format!("archiving lib{name}.a failed: {error}"),
    })?;
    let library = context.out_dir.join(format!("lib{name}.a"));
    cargo.line(&format!(
        "cargo:rustc-link-search=native={}",
        context.out_dir.display()
    ));
    cargo.line(&format!("cargo:rustc-link-lib=static={name}"));
    if build.cudart != Cudart::None {
        if let Some(dir) = toolchain.cudart_dir() {
            cargo.line(&format!("cargo:rustc-link-search=native={}", dir.display()));
        }
        match build.cudart {
            Cudart::Static => {
                cargo.line("cargo:rustc-link-lib=static=cudart_static");
                if build
                    .env
                    .get("CARGO_CFG_TARGET_OS")
                    .as_deref()
                    .unwrap_or("linux")
                    == "linux"
                {
                    for system in ["dl", "rt", "pthread"] {
                        cargo.line(&format!("cargo:rustc-link-lib={system}"));
                    }
                }
            }
            Cudart::Shared => cargo.line("cargo:rustc-link-lib=cudart"),
            Cudart::None => {}
        }
        // nvcc's host code is C++: the C++ runtime comes with it.
        cargo.line("cargo:rustc-link-lib=stdc++");
    }
    Ok(library)
}

/// Collects `cargo:` lines (deduplicated) and prints them at the end, or nothing outside cargo.
#[derive(Debug)]
pub struct CargoLines {
    enabled: bool,
    seen: BTreeSet<String>,
    lines: Vec<String>,
}

impl CargoLines {
    fn new(enabled: bool) -> CargoLines {
        CargoLines {
            enabled,
            seen: BTreeSet::new(),
            lines: Vec::new(),
        }
    }

    /// Adds a line once.
    pub fn line(&mut self, line: &str) {
        if self.seen.insert(line.to_string()) {
            self.lines.push(line.to_string());
        }
    }

    /// `cargo:rerun-if-changed=<path>`.
    pub fn rerun_if_changed(&mut self, path: &Path) {
        self.line(&format!("cargo:rerun-if-changed={}", path.display()));
    }

    /// One `cargo:warning=` per line of `message`.
    pub fn warning(&mut self, message: &str) {
        for line in message.lines() {
            self.line(&format!("cargo:warning={line}"));
        }
    }

    fn flush(&mut self) {
        if self.enabled {
            for line in self.lines.drain(..) {
                println!("{line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolkit_headers_are_not_tracked_one_by_one() {
        let (out, cuda) = (Path::new("/t/out"), Path::new("/opt/cuda"));
        assert!(!is_tracked_dependency(
            Path::new("/opt/cuda/include/cuda_fp16.hpp"),
            out,
            cuda
        ));
        assert!(!is_tracked_dependency(
            Path::new("/t/out/occupancy_bounds.h"),
            out,
            cuda
        ));
        assert!(is_tracked_dependency(
            Path::new("/src/kernels/common.cuh"),
            out,
            cuda
        ));
        assert!(is_tracked_dependency(
            Path::new("/usr/include/stdio.h"),
            out,
            cuda
        ));
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
    fn the_picker_loads_a_targets_only_where_the_driver_would() {
        let arch = |name: &str| SmArch::parse(name).unwrap();
        let choices = vec![
            (arch("sm_80"), "K_SM_80".to_string()),
            (arch("sm_90a"), "K_SM_90A".to_string()),
            (arch("sm_100f"), "K_SM_100F".to_string()),
            (arch("sm_90"), "K_SM_90".to_string()),
        ];
        let text = picker(Path::new("k.cu"), "type", choices);
        let conditions: Vec<&str> = text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("if "))
            .collect();
        assert_eq!(
            conditions,
            [
                "capability / 10 == 10 && capability >= 100 {",
                "capability == 90 {",
                "capability >= 90 {",
                "capability >= 80 {"
            ]
        );
        assert!(
            text.contains("pub fn type_ptx(major: u32, minor: u32)"),
            "{text}"
        );
    }

    #[test]
    fn const_names_are_rust_identifiers() {
        assert_eq!(const_name("saxpy"), "SAXPY");
        assert_eq!(const_name("tiled-gemm.v2"), "TILED_GEMM_V2");
        assert_eq!(const_name("3d"), "_3D");
    }

    #[test]
    fn compiler_messages_drop_the_ptxas_report_only() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nk.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n";
        assert_eq!(
            compiler_messages(log),
            vec!["k.cu(3): warning #177-D: variable \"x\" was declared but never referenced"]
        );
    }
}
