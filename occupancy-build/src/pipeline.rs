//! The build's pipeline over a resolved [`Context`], and the only place that orders stages:
//! declarations -> compile (and, for `"auto"` bounds, tune -> compile again) -> products ->
//! evaluate (parse, match, SASS, rows and lints, baseline, expectations, render) -> the crate
//! view, which writes the crate's files. The stages live in their own modules (`declarations`,
//! `compile`, `auto_bounds`, `products`, `parse`, `matching`, `sass`, `evaluate`, `baseline`,
//! `expectations`, `render`, `crate_view`); this module only sequences them. `Build::compile_ptx`/`compile_lib` call [`run`]; `Build::check_sources` (the
//! `cargo occupancy check` entry) calls [`check_sources`], the same stages without a package,
//! or, for the sources of a package that declares kernels, its build's stages up to the
//! evaluation (`check_package_sources`: no crate view, nothing written into the package).

use std::path::Path;

use std::path::PathBuf;

use crate::auto_bounds::engine::FrontEnd;
use crate::auto_bounds::{front_end, Tuned};
use crate::baseline::{BaselineFile, Judged};
use crate::bounds_notes::DefinedBounds;
use crate::cargo_lines::CargoLines;
use crate::compile::{self, CompiledSource, Product};
use crate::context::Context;
use crate::crate_view::{self, ProductKey, RecordedProduct};
use crate::declarations::Declarations;
use crate::evaluate::{self, CheckedProduct};
use crate::kernel_tables::KernelTables;
use crate::launch_check::{self, SourceCheck, SourceCheckOutput};
use crate::levels::Levels;
use crate::sass_stage as sass;
use crate::toolchain::Toolchain;
use crate::{products, Error, Report};
use occupancy_core::lint::evaluate::resolve_undeclared_level;
use occupancy_core::tune::{Bound, Knob};

/// What a successful [`Build::compile_ptx`](crate::Build::compile_ptx) or [`Build::compile_lib`](crate::Build::compile_lib) produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// PTX files in OUT_DIR, by kernel-file stem (`saxpy` for `saxpy.cu`).
    pub ptx_files: Vec<(String, PathBuf)>,
    /// The generated Rust module of `include_str!` constants (PTX builds).
    pub ptx_module: Option<PathBuf>,
    /// The static library (library builds).
    pub library: Option<PathBuf>,
    /// The per-kernel x per-arch report with every finding.
    pub report: Report,
}

/// The whole pipeline for a build whose toolchain was looked up (`toolchain`): compile, write
/// products, check, report. Under `OCCUPANCY_SKIP`/docs.rs without nvcc: placeholders.
pub fn run(
    context: &Context,
    toolchain: Result<Toolchain, Error>,
    product: Product,
    library_name: Option<&str>,
    cargo: &mut CargoLines,
) -> Result<Output, Error> {
    // The lint levels of the package's settings, read once for every stage that levels findings.
    let levels = Levels::read(context)?;
    let toolchain = match toolchain {
        Ok(toolchain) => toolchain,
        Err(Error::NvccNotFound { looked }) if context.skip_reason.is_some() => {
            let reason = context.skip_reason.as_deref().unwrap_or_default();
            cargo.warning(&format!(
                "occupancy: {reason} and nvcc was not found ({looked}): no kernel was compiled and nothing was checked"
            ));
            return placeholder_output(context, &levels, product, library_name, cargo);
        }
        Err(error) => return Err(error),
    };
    watch_sources(context, cargo);
    if context.settings.unchecked.is_some() {
        cargo.warning("occupancy: `unchecked` in [package.metadata.occupancy] has no effect: this crate's occupancy build checks its kernels; remove it");
    }
    let key = ProductKey::of(context, product, library_name);
    if product == Product::Ptx {
        check_stems_across_products(context, &key)?;
    }
    let (declarations, compiled, tuned) = compile_declared(context, &toolchain, product, cargo)?;
    watch_compiled(context, &toolchain, &compiled, cargo);
    let mut output = Output {
        ptx_files: Vec::new(),
        ptx_module: None,
        library: None,
        report: crate::report::for_build(context, Some(toolchain.release.clone()), None),
    };
    let mut ptx = Vec::new();
    match product {
        Product::Ptx => {
            let products = products::write_ptx(context, &compiled)?;
            output.ptx_files = products.files;
            output.ptx_module = Some(context.out_dir.join("occupancy_ptx.rs"));
            ptx = products.sources;
        }
        Product::Object => {
            let name = library_name.expect("compile_lib passes its name");
            output.library = Some(products::write_library(
                context, &toolchain, &compiled, name, cargo,
            )?);
        }
    }
    let checked = if context.check && context.skip_reason.is_none() {
        let first = crate_view::first_to_compare(context, &key);
        evaluate_product(
            context,
            &levels,
            &toolchain,
            (&compiled, &tuned),
            &declarations,
            first,
            cargo,
        )?
    } else {
        unchecked_product(context, &toolchain, cargo)
    };
    let (report, verdict) =
        record_and_write(context, &levels, key, ptx, declarations, checked, cargo)?;
    output.report = report;
    verdict?;
    Ok(output)
}

/// The evaluate sequence of one product's compiled sources: parse, match the declarations, read
/// the SASS where a lint above `allow` can fire, evaluate every kernel (rows and findings),
/// compare with the baseline, settle the expectations its findings fulfil, render. Nothing is
/// written here: the crate view writes the crate's files from every product.
/// `first_to_compare`: no other product of the build script compared with the baseline before
/// this one (`crate_view::first_to_compare`), so this one judges what concerns the whole crate.
fn evaluate_product(
    context: &Context,
    levels: &Levels,
    toolchain: &Toolchain,
    (compiled, tuned): (&[CompiledSource], &Tuned),
    declarations: &Declarations,
    first_to_compare: bool,
    cargo: &mut CargoLines,
) -> Result<CheckedProduct, Error> {
    let mut report = evaluate::product_report(context, toolchain, compiled);
    crate::expectations::require_reasons(context, declarations)?;
    let binary = crate::compile_reads::BinaryReads {
        tools: sass::SassTools::locate(context, toolchain).binary_tools(),
        constant_banks: declarations
            .kernels
            .iter()
            .any(|declared| declared.kernel.spec.max_const_bytes.is_some()),
    };
    let parsed = parse_stage(compiled, context, &binary)?;
    for note in &parsed.notes {
        cargo.warning(&format!("occupancy: {note}"));
    }
    let kernels = parsed.kernels;
    let baseline = BaselineFile::load(context, first_to_compare, cargo)?;
    let matching = crate::matching::match_declarations(&kernels, declarations)?;
    let tables = KernelTables::of(&context.settings);
    crate::kernel_tables::check_table_ambiguity(&tables, &kernels, &matching, declarations)?;
    let demands = sass::sass_demands(
        &kernels,
        &matching,
        declarations,
        levels,
        context.read_all_sass,
        resolve_undeclared_level,
    );
    let spilled = sass::spilled_on(&kernels);
    let evidence =
        sass::read_build_evidence(context, toolchain, compiled, &demands, &spilled, cargo)?;
    let inputs = evaluate::EvaluateInputs {
        context,
        declarations,
        levels,
        evidence: &evidence,
        tables: &tables,
        tuned,
    };
    let (mut gathered, rows) = evaluate::evaluate_kernels(&inputs, &kernels, &matching)?;
    crate::spill_help::add_spill_free_help(
        (toolchain, context),
        (&kernels, &matching),
        declarations,
        &mut gathered,
    );
    report.kernels = rows;
    let judged = Judged {
        kernels: &kernels,
        matching: &matching,
        declarations,
        levels,
    };
    let compared = baseline.compare_or_stamp(context, toolchain, &judged, &report, cargo);
    gathered.extend(compared.found);
    let fulfilled = crate::expectations::settle(declarations, &mut gathered);
    evaluate::accept_frames_of_accepted_spills(&mut gathered, &report);
    let denials =
        crate::render::render_findings(gathered, context, declarations, &mut report, cargo);
    Ok(CheckedProduct {
        report,
        compiled_kernels: kernels.iter().map(|kernel| kernel.name.clone()).collect(),
        matched: matching.matched.clone(),
        fulfilled,
        denials,
        toolchain_changes: compared.toolchain_changes,
        bless_stamp: compared.bless_stamp,
        unchecked: None,
    })
}

/// The parse stage with the reads it needs (`crate::compile_reads`) around it: each compile's
/// files are read, its report parsed, what the report leaves open (`parse::Wants`) read from
/// the compile's own binary and source (`binary`: what may be read there; the binary's cubins
/// in a private directory under `OUT_DIR`), then every compiled kernel made from them.
pub(crate) fn parse_stage<'a>(
    compiled: &'a [CompiledSource],
    context: &Context,
    binary: &crate::compile_reads::BinaryReads,
) -> Result<crate::parse::Parsed<'a>, Error> {
    let archs = crate::parse::target_archs(context);
    let files = crate::compile_reads::read_files(compiled);
    let reported = crate::parse::reports(compiled, files);
    let wants = crate::parse::wants(&reported, &archs, binary.constant_banks);
    let reads =
        crate::compile_reads::read_wanted(compiled, &wants, &binary.tools, &context.out_dir);
    crate::parse::parse_compiled(reported, reads, &archs)
}

/// The compile of every source, and of a build with `"auto"` bounds (`crate::auto_bounds`)
/// the bounds' choice: compile once (with `memory`'s choices in the header), tune on it, and
/// while the choices differ from those the header holds, write them into the header, compile
/// again (a source whose bounds did not change is a cache hit) and check the new compile
/// against them (a bound refused there is chosen again without it). Each round refuses a bound
/// or ends, so the ladder bounds them. Nothing is tuned when the build checks nothing: the
/// header keeps the remembered choices.
fn compile_and_tune(
    context: &Context,
    toolchain: &Toolchain,
    declarations: &Declarations,
    product: Product,
    memory: crate::auto_bounds::Memory,
) -> Result<(Vec<CompiledSource>, Tuned), Error> {
    let line_tables = match context.read_all_sass {
        true => compile::LineTables::Everywhere,
        false => compile::LineTables::OnDemand,
    };
    // The choices reach `.cu` sources through the header and `.ptx` inputs through copies.
    let compile = |choices: &crate::auto_bounds::HeaderChoices| {
        let replaced = crate::ptx_bounds::write_ptx_bounds(context, declarations, choices)?;
        compile::compile_all_replacing(context, toolchain, product, line_tables, &replaced)
            .map_err(|error| crate::bounds_notes::annotate(error, &DefinedBounds::of(declarations)))
    };
    let compiling = crate::auto_bounds::Compiling {
        product,
        line_tables,
    };
    let mut compiled = compile(&memory.header_choices())?;
    if !crate::auto_bounds::any_auto(declarations)
        || !context.check
        || context.skip_reason.is_some()
    {
        return Ok((compiled, Tuned::default()));
    }
    let mut header = memory.header_choices();
    let mut session =
        crate::auto_bounds::Session::new(context, toolchain, declarations, compiling, memory);
    let mut tuned = session.tune(&compiled)?;
    loop {
        let choices = tuned.header_choices(&header);
        if choices == header {
            break;
        }
        crate::declarations::write_bounds_header(context, declarations, &choices)?;
        compiled = compile(&choices)?;
        header = choices;
        if !session.verify(&mut tuned, &compiled)? {
            break;
        }
    }
    session.finish(&tuned, &compiled)?;
    Ok((compiled, tuned))
}

/// Records the checked product in the crate view and writes the crate's files from every
/// product so far; returns the crate's report and this product's failure, if it denied.
fn record_and_write(
    context: &Context,
    levels: &Levels,
    key: ProductKey,
    ptx: Vec<crate::products::ModuleSource>,
    declarations: crate::declarations::Declarations,
    checked: CheckedProduct,
    cargo: &mut CargoLines,
) -> Result<(Report, Result<(), Error>), Error> {
    let at = |index: &usize| crate_view::at(&declarations, &declarations.kernels[*index]);
    let recorded = RecordedProduct {
        key,
        matched: checked.matched.iter().map(at).collect(),
        fulfilled: checked
            .fulfilled
            .iter()
            .map(|(index, lint)| (at(index), *lint))
            .collect(),
        report: checked.report,
        declarations: declarations.clone(),
        compiled_kernels: checked.compiled_kernels,
        ptx,
        bless_stamp: checked.bless_stamp,
        unchecked: checked.unchecked,
    };
    let view = crate_view::record(context, recorded);
    let (report, settled) = view.write(context, levels, cargo)?;
    let denied = crate_view::denied(
        context,
        &checked.toolchain_changes,
        &checked.denials,
        &settled,
    );
    Ok((report, denied))
}

/// A product compiled without its checks (`.check(false)`, `OCCUPANCY_SKIP`, docs.rs).
fn unchecked_product(
    context: &Context,
    toolchain: &Toolchain,
    cargo: &mut CargoLines,
) -> CheckedProduct {
    let reason = context
        .skip_reason
        .clone()
        .unwrap_or_else(|| "`.check(false)` on the builder".to_string());
    if context.skip_reason.is_some() {
        cargo.warning(&format!(
            "occupancy: {reason}: kernels were compiled but nothing was checked"
        ));
    }
    CheckedProduct {
        report: crate::report::for_build(
            context,
            Some(toolchain.release.clone()),
            Some(reason.clone()),
        ),
        unchecked: Some(reason),
        ..CheckedProduct::default()
    }
}

/// A source of a PTX product must not ship under a stem another PTX product of the crate
/// uses: their files share `OUT_DIR`, and their constants the module.
fn check_stems_across_products(context: &Context, key: &ProductKey) -> Result<(), Error> {
    let others = crate_view::other_ptx_stems(context, key);
    for (source, _) in &context.sources {
        let stem = source
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some((_, other)) = others.iter().find(|(used, _)| *used == stem) {
            return Err(Error::DuplicateStem {
                stem,
                path: other.clone(),
            });
        }
    }
    Ok(())
}

/// `rerun-if-changed` for every source directory and source.
fn watch_sources(context: &Context, cargo: &mut CargoLines) {
    for dir in &context.source_dirs {
        // A directory: cargo reruns the script when a file in it is added or changed.
        cargo.rerun_if_changed(dir);
    }
    for (file, _) in &context.sources {
        cargo.rerun_if_changed(file);
    }
}

/// `rerun-if-changed` for the toolkit's identity and every user header a compile read, and a
/// warning for each compiler message that is not ptxas's report.
fn watch_compiled(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    cargo: &mut CargoLines,
) {
    // The toolkit is tracked by its identity (nvcc, ptxas, cicc, version.json), not by the
    // hundreds of its headers a source includes; NVCC/CUDA_HOME are tracked as variables.
    for file in &toolchain.identity_files {
        cargo.rerun_if_changed(file);
    }
    for source in compiled {
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
        for note in &source.notes {
            cargo.warning(&format!("occupancy: {note}"));
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
}

/// Without nvcc under OCCUPANCY_SKIP/docs.rs: a report that says so, and empty PTX constants
/// so the crate still compiles.
fn placeholder_output(
    context: &Context,
    levels: &Levels,
    product: Product,
    library_name: Option<&str>,
    cargo: &mut CargoLines,
) -> Result<Output, Error> {
    let reason = context.skip_reason.clone().unwrap_or_default();
    let checked = CheckedProduct {
        report: crate::report::for_build(context, None, Some(reason.clone())),
        unchecked: Some(reason),
        ..CheckedProduct::default()
    };
    let ptx = match product {
        Product::Ptx => products::placeholder_ptx(context),
        Product::Object => Vec::new(),
    };
    let key = ProductKey::of(context, product, library_name);
    let (report, verdict) = record_and_write(
        context,
        levels,
        key,
        ptx,
        Default::default(),
        checked,
        cargo,
    )?;
    verdict?;
    Ok(Output {
        ptx_files: Vec::new(),
        ptx_module: (product == Product::Ptx).then(|| context.out_dir.join("occupancy_ptx.rs")),
        library: None,
        report,
    })
}

/// Whether a file nvcc read gets its own `rerun-if-changed`: not the files this build script
/// writes (occupancy_bounds.h in OUT_DIR: their inputs are tracked), not the toolkit's or the
/// system's headers (the toolkit is tracked by its identity files;
/// [`crate::toolchain::is_system_header`]); every user header is.
fn is_tracked_dependency(path: &Path, out_dir: &Path, cuda_home: &Path) -> bool {
    !path.starts_with(out_dir) && !crate::toolchain::is_system_header(cuda_home, path)
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

/// Sources outside any package (`check`, `tune`), resolved and compiled to PTX with `line_tables`.
fn compile_outside_package(
    build: &crate::Build,
    line_tables: compile::LineTables,
) -> Result<(Context, Toolchain, Vec<CompiledSource>), Error> {
    let context = build.resolve_without_package()?;
    let toolchain = Toolchain::find(&build.env, false, &context.tool_timeouts)?;
    let compiled = compile::compile_all(&context, &toolchain, Product::Ptx, line_tables)
        .map_err(|error| crate::bounds_notes::annotate(error, &DefinedBounds::without_package()))?;
    Ok((context, toolchain, compiled))
}

/// The sequence of a check of sources outside any package (`Build::check_sources`, what
/// `cargo occupancy check` runs): compile every source (line tables everywhere: every lint runs
/// on every kernel, so the SASS stage reads every kernel with local memory), parse, read the
/// SASS where a lint above `allow` can fire, compute every kernel's rows at the request's launch
/// and evaluate them. Nothing is written but the compile cache.
pub(crate) fn check_sources(
    build: &crate::Build,
    request: &SourceCheck,
) -> Result<SourceCheckOutput, Error> {
    if request.in_package {
        return check_package_sources(build, request);
    }
    let (context, toolchain, compiled) =
        compile_outside_package(build, compile::LineTables::Everywhere)?;
    let sass_tools = sass::SassTools::locate(&context, &toolchain);
    let binary = crate::compile_reads::BinaryReads {
        tools: sass_tools.binary_tools(),
        constant_banks: false,
    };
    let parsed = parse_stage(&compiled, &context, &binary)?;
    let (kernels, without_kernels) = (parsed.kernels, parsed.without_kernels);
    let levels = Levels::uniform(request.lint_levels.clone());
    let demands = sass::sass_demands(
        &kernels,
        &crate::matching::Matching::default(),
        &Declarations::default(),
        &levels,
        context.read_all_sass,
        occupancy_core::lint::evaluate::resolve_level,
    );
    let spilled = sass::spilled_on(&kernels);
    let evidence = sass::read_evidence(&sass_tools, &compiled, &demands, &|kernel, arch| {
        spilled.contains(&(kernel.to_owned(), arch.to_owned()))
    })?;
    let checked = launch_check::rows_at_launch(&context, &kernels, &evidence, request)?;
    let findings = occupancy_core::kernel::evaluate_at_launch(&checked, &request.lint_levels);
    Ok(SourceCheckOutput {
        report: Report {
            kernels: checked.into_iter().map(|checked| checked.row).collect(),
            findings,
            ..Report::default()
        },
        without_kernels: without_kernels.into_iter().map(PathBuf::from).collect(),
        warnings: compiled
            .iter()
            .flat_map(|source| source.notes.iter().cloned())
            .chain(parsed.notes)
            .chain(evidence.unavailable_warning())
            .collect(),
        toolchain: (request.stamp_toolchain)
            .then(|| crate::baseline::ToolchainStamp::of(&context.stamped_flags, &toolchain)),
    })
}

/// The sequence of a check of sources of a package that declares kernels
/// (`SourceCheck::in_package`): the build's own stages for its sources as one PTX product
/// (declarations, `occupancy_bounds.h`, compile and `"auto"` bounds, evaluate with its
/// declarations, levels and settings) into `.out_dir(...)`, the package's files untouched. What
/// concerns the crate as a whole (declarations no source compiled, the baseline's deleted
/// sources) is not judged: the check may be given some of the crate's sources.
fn check_package_sources(
    build: &crate::Build,
    request: &SourceCheck,
) -> Result<SourceCheckOutput, Error> {
    let context = build.resolve_package_check(request)?;
    let toolchain = Toolchain::find(&build.env, false, &context.tool_timeouts)?;
    let levels = Levels::read(&context)?;
    let mut cargo = CargoLines::new(false);
    let (declarations, compiled, tuned) =
        compile_declared(&context, &toolchain, Product::Ptx, &mut cargo)?;
    let checked = evaluate_product(
        &context,
        &levels,
        &toolchain,
        (&compiled, &tuned),
        &declarations,
        false,
        &mut cargo,
    )?;
    Ok(SourceCheckOutput {
        report: checked.report,
        without_kernels: Vec::new(),
        warnings: compiled
            .iter()
            .flat_map(|source| source.notes.iter().cloned())
            // The build's notes; its findings are in the report, not repeated as warnings.
            .chain(
                cargo
                    .warnings()
                    .iter()
                    .filter_map(|line| line.strip_prefix("occupancy: ").map(str::to_string)),
            )
            .collect(),
        toolchain: (request.stamp_toolchain)
            .then(|| crate::baseline::ToolchainStamp::of(&context.stamped_flags, &toolchain)),
    })
}

/// A package's sources compiled as its build compiles them: its declarations first, and their
/// `occupancy_bounds.h` (which must exist before a .cu includes it), then the compile and the
/// `"auto"` bounds.
fn compile_declared(
    context: &Context,
    toolchain: &Toolchain,
    product: Product,
    cargo: &mut CargoLines,
) -> Result<(Declarations, Vec<CompiledSource>, Tuned), Error> {
    let declarations = crate::declarations::scan_declarations(context, cargo)?;
    let memory = crate::auto_bounds::Memory::load(context);
    crate::declarations::write_bounds_header(context, &declarations, &memory.header_choices())?;
    compile::check_unique_stems(&context.sources)?;
    let (compiled, tuned) = compile_and_tune(context, toolchain, &declarations, product, memory)?;
    Ok((declarations, compiled, tuned))
}

/// `cargo occupancy tune`'s sequence (`Build::tune_kernel`): compile the sources as `check`
/// does (in a declaring package, as its build does, with its `occupancy_bounds.h`; `"auto"`
/// kernels without bounds), then tune the query's kernel with the engine the build's `"auto"`
/// bounds use (`crate::auto_bounds::engine`), for the request the query and the kernel's
/// declaration make. A block of 0 there takes the kernel's `.maxntid`.
pub(crate) fn tune_kernel(
    build: &crate::Build,
    query: &crate::auto_bounds::TuneQuery,
) -> Result<crate::auto_bounds::TuneAnswer, Error> {
    let (context, toolchain, compiled, declarations, alone) = match query.in_package {
        true => {
            let (context, toolchain, compiled, declarations) = compile_package_for_tuning(build)?;
            (context, toolchain, compiled, declarations, None)
        }
        false => {
            let (context, toolchain, compiled, alone) = compile_outside_for_tuning(build, query)?;
            (context, toolchain, compiled, Declarations::default(), alone)
        }
    };
    let declared =
        (declarations.kernels.iter()).find(|declared| declared.kernel.kernel_name == query.kernel);
    let mut request = query.request(declared);
    let fail = |message: String| Error::AutoBounds {
        kernel: query.kernel.clone(),
        knob: request.knob.key(),
        message,
    };
    let source = crate::auto_bounds::source_defining(&compiled, &query.kernel).map_err(fail)?;
    if request.block_threads == 0 {
        request.block_threads = crate::auto_bounds::compiled_block(source, &request.kernel)
            .ok_or_else(|| fail("its PTX has no `.maxntid` (no `__launch_bounds__`): give the block it is launched with, `--block N`".to_string()))?;
    }
    let tools = sass::SassTools::locate(&context, &toolchain);
    let nvdisasm = tools.nvdisasm.ok_or_else(|| {
        fail(
            "nvdisasm, which reads each candidate's loops, was not found beside nvcc or on PATH"
                .to_string(),
        )
    })?;
    let header = match (query.in_package, alone.as_ref()) {
        (true, _) => Some(front_end::Header::Declared(&declarations)),
        (false, Some(path)) if *path == source.source => Some(front_end::Header::Alone),
        (false, _) => None,
    };
    let front = (header.filter(|_| source.kind == compile::SourceKind::Cuda)).map(|header| {
        front_end::SourceAtBound {
            context: &context,
            toolchain: &toolchain,
            compiling: crate::auto_bounds::Compiling {
                product: Product::Ptx,
                line_tables: compile::LineTables::OnDemand,
            },
            source: source.source.clone(),
            kernel: request.kernel.clone(),
            knob: request.knob,
            threads: request.block_threads,
            header,
        }
    });
    let mut engine = crate::auto_bounds::engine_for(&context, &toolchain, nvdisasm);
    engine.front_end = front.as_ref().map(|front| front as &dyn FrontEnd);
    let tuned = engine.tune(source, &request, &query.refused)?;
    Ok(crate::auto_bounds::TuneAnswer {
        tuned,
        request,
        declared_at: declared.map(|declared| declarations.location(declared)),
        compiled_per_bound: front.is_some(),
    })
}

/// The sources outside a package compiled for `tune`. A `.cu` source that names
/// `OCCUPANCY_BOUNDS_<kernel>` takes the kernel's bound from a header, as a crate's kernel does:
/// it compiles with one that gives it none (`__launch_bounds__(block)`), and its path is
/// returned, so that each candidate compiles from it at its bound. That needs the block.
fn compile_outside_for_tuning(
    build: &crate::Build,
    query: &crate::auto_bounds::TuneQuery,
) -> Result<(Context, Toolchain, Vec<CompiledSource>, Option<PathBuf>), Error> {
    let context = build.resolve_without_package()?;
    let toolchain = Toolchain::find(&build.env, false, &context.tool_timeouts)?;
    let alone = (context.sources.iter())
        .find(|(path, kind)| {
            *kind == compile::SourceKind::Cuda && front_end::takes_bounds_macro(path, &query.kernel)
        })
        .map(|(path, _)| path.clone());
    let mut compiling = context.clone();
    if let Some(path) = &alone {
        let threads = query.block_threads.ok_or_else(|| Error::AutoBounds {
            kernel: query.kernel.clone(),
            knob: query.knob.unwrap_or(Knob::MinBlocksPerSm).key(),
            message: format!("{} takes its bound from `OCCUPANCY_BOUNDS_{}`, whose `__launch_bounds__` needs the block it is launched with: give `--block N`", path.display(), query.kernel),
        })?;
        let front = front_end::SourceAtBound {
            context: &context,
            toolchain: &toolchain,
            compiling: crate::auto_bounds::Compiling {
                product: Product::Ptx,
                line_tables: compile::LineTables::OnDemand,
            },
            source: path.clone(),
            kernel: query.kernel.clone(),
            knob: query.knob.unwrap_or(Knob::MinBlocksPerSm),
            threads,
            header: front_end::Header::Alone,
        };
        let dir = front.write_header(Bound::None, &[])?;
        compiling.nvcc_args.insert(0, dir.into_os_string());
        compiling.nvcc_args.insert(0, "-I".into());
    }
    let compiled = compile::compile_all(
        &compiling,
        &toolchain,
        Product::Ptx,
        compile::LineTables::OnDemand,
    )
    .map_err(|error| crate::bounds_notes::annotate(error, &DefinedBounds::without_package()))?;
    Ok((context, toolchain, compiled, alone))
}

/// A declaring package's sources compiled for `tune`: its declarations' header without the
/// choices of `"auto"` (those kernels compile without bounds, the PTX the engine tunes).
fn compile_package_for_tuning(
    build: &crate::Build,
) -> Result<(Context, Toolchain, Vec<CompiledSource>, Declarations), Error> {
    let context = build.resolve()?;
    let toolchain = Toolchain::find(&build.env, false, &context.tool_timeouts)?;
    let declarations =
        crate::declarations::scan_declarations(&context, &mut CargoLines::new(false))?;
    crate::declarations::write_bounds_header(&context, &declarations, &Default::default())?;
    let compiled = compile::compile_all(
        &context,
        &toolchain,
        Product::Ptx,
        compile::LineTables::OnDemand,
    )
    .map_err(|error| crate::bounds_notes::annotate(error, &DefinedBounds::of(&declarations)))?;
    Ok((context, toolchain, compiled, declarations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolkit_and_system_headers_are_not_tracked_one_by_one() {
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
        // The host compiler's headers change with the compiler, as the toolkit's do: 190 lines
        // of `rerun-if-changed` on the generated kernel crate that cargo echoed before every
        // error. The compile cache still fingerprints them.
        for system in [
            "/usr/include/stdio.h",
            "/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h",
        ] {
            assert!(
                !is_tracked_dependency(Path::new(system), out, cuda),
                "{system}"
            );
        }
        assert!(is_tracked_dependency(
            Path::new("/usr/local/include/mylib.h"),
            out,
            cuda
        ));
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
