//! The evaluate stage of a build: every compiled kernel's rows (`rows`) at its declared
//! launch, or at the launch undeclared kernels get, and its findings: the lints of
//! `occupancy_core::lint::evaluate::check_kernel` and the machine-code lints (`sass`), at the
//! levels that apply (`levels`), and the baseline's. `pipeline::evaluate_product` orders it with
//! the other stages.
use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::lint::evaluate::{self, CheckedLaunch, Launch};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::spec::KernelSpec;

use crate::baseline::ToolchainStamp;
use crate::compile::CompiledSource;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::fsutil::display_path;
use crate::kernel_tables::KernelTables;
use crate::levels::{Gathered, Levels};
use crate::matching::Matching;
use crate::parse::CompiledKernel;
use crate::report::for_build;
use crate::rows::{build_launch, kernel_rows};
use crate::toolchain::Toolchain;
use crate::Error;
use occupancy_core::kernel::KernelOnArch;
use occupancy_core::report::{KernelRow, Report, SourceFile};

/// What checking one product found: its report (rows and the findings of its kernels), which
/// declarations its kernels matched and which expectations they fulfilled (the crate-level
/// questions `crate_view` settles over every product), and its rendered errors.
#[derive(Debug, Default)]
pub(crate) struct CheckedProduct {
    /// This product's rows, sources and findings.
    pub(crate) report: Report,
    /// Every compiled kernel's name (for a missing declaration's suggestions).
    pub(crate) compiled_kernels: Vec<String>,
    /// Declarations (indices into the build's `Declarations`) a kernel of this product matched.
    pub(crate) matched: BTreeSet<usize>,
    /// `expect(lint)` of a declaration that a finding of this product fulfilled.
    pub(crate) fulfilled: BTreeSet<(usize, LintId)>,
    /// Deny findings rendered as rustc-style errors.
    pub(crate) denials: Vec<String>,
    /// Toolchain changes since the baseline (said first in a failure).
    pub(crate) toolchain_changes: Vec<String>,
    /// The toolchain stamp when blessing: the crate view writes the baseline.
    pub(crate) bless_stamp: Option<ToolchainStamp>,
    /// Why nothing was checked (`.check(false)`, `OCCUPANCY_SKIP`); `None`: checked.
    pub(crate) unchecked: Option<String>,
}

/// The product's report before its kernels: the build's fields and its compiled sources (the
/// names the baseline groups its entries by).
pub(crate) fn product_report(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
) -> Report {
    let mut report = for_build(context, Some(toolchain.release.clone()), None);
    report.sources = compiled
        .iter()
        .map(|source| SourceFile {
            path: display_path(&context.manifest_dir, &source.source),
            from_cache: source.from_cache,
            product: None,
        })
        .collect();
    report
}

/// The frame of an accepted spill is accepted too: a `stack_frame` finding on an arch where the
/// kernel's spill stands accepted (within `max_spill_bytes`, or allowed or expected with a
/// reason) is allowed when the frame holds nothing but that spill (the SASS shows no local
/// array, stack data or call; without the SASS, the frame is no bigger than the spill stores).
pub(crate) fn accept_frames_of_accepted_spills(gathered: &mut [Gathered], report: &Report) {
    let rows: BTreeMap<(&str, &str), &KernelRow> = report
        .kernels
        .iter()
        .map(|row| ((row.name.as_str(), row.arch.as_str()), row))
        .collect();
    let reported_spills: BTreeSet<(String, String)> = gathered
        .iter()
        .filter(|found| found.finding.lint == LintId::Spills && found.finding.level != Level::Allow)
        .filter_map(|found| Some((found.kernel.clone(), found.finding.arch.clone()?)))
        .collect();
    for found in gathered.iter_mut() {
        let finding = &found.finding;
        let Some(arch) = finding.arch.as_deref() else {
            continue;
        };
        let Some(row) = rows.get(&(found.kernel.as_str(), arch)) else {
            continue;
        };
        let accepted_spill = row.spill_bytes() > 0
            && !reported_spills.contains(&(found.kernel.clone(), arch.to_string()));
        let frame_is_the_spill = match &row.sass {
            Some(sass) => {
                sass.local_array_accesses == 0
                    && sass.stack_data_accesses == 0
                    && sass.calls.is_empty()
            }
            None => row.stack_frame_bytes <= row.spill_store_bytes,
        };
        if finding.lint == LintId::StackFrame && accepted_spill && frame_is_the_spill {
            found.finding.level = Level::Allow;
            found.finding.notes.push(
                "the frame holds the kernel's accepted spill, and nothing else: accepted with it"
                    .to_string(),
            );
        }
    }
}

/// What evaluating a kernel needs besides the kernel: the stages before this one's outputs.
pub(crate) struct EvaluateInputs<'a> {
    pub(crate) context: &'a Context,
    pub(crate) declarations: &'a Declarations,
    pub(crate) levels: &'a Levels,
    pub(crate) evidence: &'a crate::sass_stage::SassEvidence,
    pub(crate) tables: &'a KernelTables,
    /// The bounds chosen for `"auto"` declarations (`crate::auto_bounds`).
    pub(crate) tuned: &'a crate::auto_bounds::Tuned,
}

/// Every compiled kernel's report rows and findings, with the declaration `matching` gave it.
pub(crate) fn evaluate_kernels(
    inputs: &EvaluateInputs<'_>,
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
) -> Result<(Vec<Gathered>, Vec<KernelRow>), Error> {
    let mut gathered = Vec::new();
    let mut rows = Vec::new();
    for (kernel_index, kernel) in kernels.iter().enumerate() {
        let declared = matching
            .by_kernel
            .get(&kernel_index)
            .map(|&index| (&inputs.declarations.kernels[index], index));
        let (found, kernel_rows) = check_one_kernel(inputs, kernel, declared)?;
        gathered.extend(found);
        rows.extend(kernel_rows);
    }
    Ok((gathered, rows))
}

/// One compiled kernel: its report rows, and its findings (its declaration's lints, or an
/// undeclared kernel's hard failures at the crate's launch), from the core's one
/// [`occupancy_core::kernel::evaluate`]. Baseline findings are made once for the whole build
/// ([`baseline_findings`]).
fn check_one_kernel(
    inputs: &EvaluateInputs<'_>,
    kernel: &CompiledKernel<'_>,
    declared: Option<(&Declared, usize)>,
) -> Result<(Vec<Gathered>, Vec<KernelRow>), Error> {
    let spec = declared.map(|(declared, _)| &declared.kernel.spec);
    let launch = build_launch(inputs.context, kernel, spec, inputs.tables);
    let rows = kernel_values(inputs, kernel, declared, &launch)?;
    // Expected lints and lints allowed with a reason are evaluated as warnings here, so that
    // `expectations::settle` sees them; it sets their level back to allow.
    let attribute_levels = spec.map(crate::expectations::evaluated_levels);
    let mut level_sources =
        (inputs.levels).sources(declared.map(|(declared, _)| declared), &kernel.name);
    if let Some(attribute_levels) = &attribute_levels {
        level_sources.attribute = Some(attribute_levels);
    }
    let undeclared_spec =
        occupancy_core::kernel::launch_spec(launch.block, launch.dynamic_smem_bytes);
    let evaluated_at = match spec {
        Some(spec) => Launch::Declared(spec),
        None => Launch::Undeclared(&undeclared_spec),
    };
    let gathered = |finding| Gathered {
        finding,
        declaration: declared.map(|(_, index)| index),
        kernel: kernel.name.clone(),
        undeclared: declared.is_none(),
        reason: None,
        launch: None,
    };
    let mut found: Vec<Gathered> =
        occupancy_core::kernel::evaluate(evaluated_at, &rows, &level_sources)
            .into_iter()
            .map(gathered)
            .collect();
    match spec {
        Some(spec) => help_ptx_bounds(inputs, kernel, spec, &rows, &mut found),
        None => {
            let source = rows.first().and_then(|on| on.row.source.clone());
            let source_text = source.map_or_else(String::new, |source| source.to_string());
            found.extend(Gathered::leveled(
                evaluate::undeclared_kernel(&kernel.name, &source_text),
                &level_sources,
                None,
                &kernel.name,
                true,
            ));
            for gathered in &mut found {
                gathered
                    .finding
                    .notes
                    .push(format!("checked at {}", launch.origin));
                gathered.launch = Some(launch.origin.clone());
            }
        }
    }
    Ok((found, rows.into_iter().map(|on| on.row).collect()))
}

/// The kernel's values on its archs at `launch`, with what the build read for them: the SASS
/// facts and the compile's notes for the machine-code lints, and for a declared kernel the
/// bounds chosen for its `"auto"` keys (tuned under its name).
fn kernel_values(
    inputs: &EvaluateInputs<'_>,
    kernel: &CompiledKernel<'_>,
    declared: Option<(&Declared, usize)>,
    launch: &CheckedLaunch,
) -> Result<Vec<KernelOnArch>, Error> {
    let (context, evidence) = (inputs.context, inputs.evidence);
    let mut rows = kernel_rows(context, kernel, declared, launch, inputs.declarations)?;
    for on in &mut rows {
        // The record's arch as ptxas named it (`sm_90a`), which the SASS says too; the row's is
        // the table's (`sm_90`).
        let arch = on.record.arch.as_str();
        on.row.sass = evidence.facts_of(&kernel.name, arch, &context.manifest_dir);
        on.compile = evidence.compile_notes(&kernel.source.source, &kernel.name);
        if declared.is_some() {
            on.row.tuning = inputs.tuned.tuning(&kernel.name, arch).cloned();
            on.chosen = inputs.tuned.chosen(&kernel.name, arch);
        }
    }
    Ok(rows)
}

/// A `bounds_mismatch` of a kernel written in PTX gets as its help the directives to write in
/// the `.entry`, for the declared bounds.
fn help_ptx_bounds(
    inputs: &EvaluateInputs<'_>,
    kernel: &CompiledKernel<'_>,
    spec: &KernelSpec,
    rows: &[KernelOnArch],
    found: &mut [Gathered],
) {
    if kernel.source.kind != crate::context::SourceKind::Ptx {
        return;
    }
    let shown = display_path(&inputs.context.manifest_dir, &kernel.source.source);
    for gathered in found.iter_mut() {
        let finding = &mut gathered.finding;
        if finding.lint != LintId::BoundsMismatch {
            continue;
        }
        let on = rows
            .iter()
            .find(|on| Some(on.arch.name) == finding.arch.as_deref());
        if let Some(on) = on {
            let directives = on.entry_directives(spec);
            finding.help = Some(crate::bounds_notes::ptx_input_help(&shown, &directives));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::Program;
    use crate::declarations::write_bounds_header;
    use crate::matching::match_declarations;
    use crate::parse::cuda_definition_lines;
    use crate::pipeline::parse_stage;
    use crate::ptx_summary::entry_definition_lines;
    use crate::rows::kernel_location;
    use crate::spill_help::minnctapersm_position;
    use occupancy_core::ptxas::{self, EntrySourceLine};
    use occupancy_core::spec::BlockDim;
    use std::path::Path;

    #[test]
    fn definition_lines_find_c_and_template_kernels_in_one_pass() {
        let text = "#include <x>\n\n__global__ void __launch_bounds__(256)\nsaxpy(int n) {}\n\ntemplate <int N>\n__global__ void tiled(float* x) {}\n\n\n\n\nvoid host(int) {}\n";
        let lines = cuda_definition_lines(text);
        assert_eq!(lines.get("saxpy"), Some(&4));
        assert_eq!(lines.get("tiled"), Some(&7));
        assert_eq!(lines.get("host"), None, "no __global__ within three lines");
        let ptx = "//\n.visible .entry k1(\n)\n{\n}\n.entry _Z2k2v()\n{\n}\n";
        let entries = entry_definition_lines(ptx);
        assert_eq!(entries.get("k1"), Some(&2));
        assert_eq!(entries.get("_Z2k2v"), Some(&6));
    }

    #[test]
    fn finds_the_minnctapersm_of_one_entry() {
        let ptx = ".visible .entry other(\n)\n.minnctapersm 2\n{\n}\n.visible .entry hot(\n\t.param .u32 hot_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 8\n{\n}\n";
        let range = minnctapersm_position(ptx, "hot").unwrap();
        assert_eq!(&ptx[range], ".minnctapersm 8");
        assert!(minnctapersm_position(ptx, "missing").is_none());
    }

    fn context_for(archs: &[&str], dir: &Path) -> Context {
        Context::for_tests(dir, archs)
    }

    fn compiled(dir: &Path, log: &str) -> CompiledSource {
        let ptx = dir.join("k.ptx");
        std::fs::write(
            &ptx,
            ".version 9.0\n.target sm_80\n.visible .entry k(\n)\n{\nret;\n}\n",
        )
        .unwrap();
        CompiledSource {
            source: dir.join("k.cu"),
            kind: crate::context::SourceKind::Cuda,
            programs: vec![Program {
                ptx_target: Some("compute_80".into()),
                ptx: ptx.clone(),
                archs: vec!["sm_80".into(), "sm_90".into()],
                summary: None,
            }],
            ptx,
            binary: None,
            lineinfo_ptx: None,
            kernel_lines: None,
            compiler_log: log.to_string(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
            notes: Vec::new(),
            ptx_target: Some("compute_80".into()),
        }
    }

    const REPORT_SM_90: &str = "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 8 registers, used 0 barriers\n";

    #[test]
    fn unreadable_compiler_output_fails_closed() {
        let dir = std::env::temp_dir().join(format!("occupancy-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let context = context_for(&["sm_90"], &dir);
        // A complete report parses.
        let good = [compiled(&dir, REPORT_SM_90)];
        assert_eq!(
            parse_stage(&good, &context, &Default::default())
                .unwrap()
                .kernels
                .len(),
            1
        );
        // A line that looks like ptxas's but is not understood.
        let garbled = [compiled(
            &dir,
            &REPORT_SM_90.replace("Used 8 registers", "Used eight registers"),
        )];
        let error = parse_stage(&garbled, &context, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("could not read the compiler's output"),
            "{error}"
        );
        // No report for a target arch the PTX was assembled for.
        let two_archs = context_for(&["sm_80", "sm_90"], &dir);
        let error = parse_stage(&good, &two_archs, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("ptxas reported nothing for kernel `k` on sm_80"),
            "{error}"
        );
        // A kernel in the PTX with no report at all.
        let error = parse_stage(&[compiled(&dir, "")], &context, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("ptxas's report"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn kernels_named<'a>(source: &'a CompiledSource, names: &[&str]) -> Vec<CompiledKernel<'a>> {
        names
            .iter()
            .map(|name| CompiledKernel {
                name: (*name).to_string(),
                demangled: None,
                source,
                ptx: None,
                defined_at: None,
                entry_line: None,
                records: BTreeMap::new(),
                programs: BTreeMap::new(),
            })
            .collect()
    }

    const FAMILIES: &str = "#[occupancy::kernel(family = \"affine_*\", block = 256)]\nfn affine();\n\n#[occupancy::kernel(block = 128)]\nfn affine_f64();\n\n#[occupancy::kernel(family = \"cast_*\", block = 64)]\nfn cast();\n";

    #[test]
    fn families_match_by_pattern_and_exact_declarations_win() {
        let dir = std::env::temp_dir().join(format!("occupancy-match-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let kernels = kernels_named(&source, &["affine_f32", "affine_f64", "uneg_f32"]);
        let declarations = Declarations::of_lib_rs(FAMILIES);
        let matching = match_declarations(&kernels, &declarations).unwrap();
        let declared = |kernel: usize| {
            matching
                .by_kernel
                .get(&kernel)
                .map(|&index| declarations.kernels[index].kernel.rust_name.as_str())
        };
        assert_eq!(declared(0), Some("affine"));
        assert_eq!(declared(1), Some("affine_f64"));
        assert_eq!(declared(2), None);
        // `cast_*` matches nothing: reported as missing at its attribute.
        let unmatched: Vec<&str> = (0..declarations.kernels.len())
            .filter(|index| !matching.matched.contains(index))
            .map(|index| declarations.kernels[index].kernel.rust_name.as_str())
            .collect();
        assert_eq!(unmatched, ["cast"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn two_patterns_matching_one_kernel_is_an_error_naming_both() {
        let dir = std::env::temp_dir().join(format!("occupancy-two-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let kernels = kernels_named(&source, &["affine_f32"]);
        let declarations = Declarations::of_lib_rs(
            "#[occupancy::kernel(family = \"affine_*\", block = 256)]\nfn affine();\n#[occupancy::kernel(family = \"*_f32\", block = 256)]\nfn f32s();\n",
        );
        let error = match_declarations(&kernels, &declarations).err().unwrap();
        assert!(
            matches!(&error, Error::AmbiguousFamily { kernel, families }
                if kernel == "affine_f32" && families[1].pattern == "*_f32"),
            "{error:?}"
        );
        let error = error.to_string();
        assert!(
            error.contains("kernel `affine_f32` matches two family declarations")
                && error.contains("`family = \"affine_*\"` (src/lib.rs:1:1)")
                && error.contains("`family = \"*_f32\"` (src/lib.rs:3:1)"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_kernel_table_naming_no_kernel_of_any_product_is_settled_with_a_suggestion() {
        use crate::compile::Product;
        use crate::crate_view::{CrateView, ProductKey, RecordedProduct};
        let dir = std::env::temp_dir().join(format!("occupancy-tables-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let declarations = Declarations::of_lib_rs(FAMILIES);
        let mut context = context_for(&["sm_90"], &dir);
        context.settings.package_kernel_tables =
            vec!["saxpy".into(), "affine".into(), "mul_mat_vec_*".into()];
        let product = |library: Option<&str>, kernels: &[&str]| RecordedProduct {
            key: ProductKey {
                product: if library.is_some() {
                    Product::Object
                } else {
                    Product::Ptx
                },
                library: library.map(str::to_string),
                sources: Default::default(),
            },
            report: Report::default(),
            declarations: declarations.clone(),
            compiled_kernels: kernels.iter().map(|name| name.to_string()).collect(),
            matched: Default::default(),
            fulfilled: Default::default(),
            ptx: Vec::new(),
            bless_stamp: None,
            unchecked: None,
        };
        let mut view = CrateView {
            products: vec![product(None, &["spill", "saxpy"])],
        };
        let crate_wide = |view: &CrateView, context: &Context| -> Vec<String> {
            let levels = Levels::read(context).unwrap();
            view.settle(&levels, context)
                .into_iter()
                .filter(|settled| settled.at.is_none())
                .map(|settled| settled.finding.message)
                .collect()
        };
        // The pattern names a kernel of a product not built yet: nothing is settled about it
        // until then, and it is a finding only if no product of the build script has one.
        let unknown = crate_wide(&view, &context);
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert!(unknown[0].contains("kernels.mul_mat_vec_*]"), "{unknown:?}");
        view.products
            .push(product(Some("moe"), &["_Z13mul_mat_vec_qILi1EEvPKfS1_Pfi"]));
        assert_eq!(crate_wide(&view, &context), Vec::<String>::new());
        context.settings.package_kernel_tables.push("spil".into());
        let unknown = crate_wide(&view, &context);
        assert!(
            unknown.len() == 1
                && unknown[0]
                    .contains("[package.metadata.occupancy.kernels.spil] names no compiled kernel")
                && unknown[0].contains("did you mean `spill`?"),
            "{unknown:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_bounds_header_has_one_macro_per_family() {
        let dir = std::env::temp_dir().join(format!("occupancy-header-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let context = context_for(&["sm_90"], &dir);
        let declarations = Declarations::of_lib_rs(
            "#[occupancy::kernel(family = \"uneg_*\", block = 256, min_blocks_per_sm = 4)]\nfn uneg();\n#[occupancy::kernel(block = 128)]\nfn saxpy();\n",
        );
        let header = std::fs::read_to_string(
            write_bounds_header(&context, &declarations, &Default::default()).unwrap(),
        )
        .unwrap();
        for line in [
            "#define OCCUPANCY_BOUNDS_FAMILY(family) OCCUPANCY_BOUNDS_FAMILY_##family",
            "#define OCCUPANCY_BOUNDS_FAMILY_uneg __launch_bounds__(256, 4)",
            "#define OCCUPANCY_BLOCK_THREADS_FAMILY_uneg 256",
            "#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(128)",
        ] {
            assert!(header.contains(line), "{line}\n{header}");
        }
        assert!(!header.contains("OCCUPANCY_BOUNDS_uneg_*"), "{header}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn kernels_are_located_by_line_info_and_undeclared_blocks_respect_bounds() {
        let dir = std::env::temp_dir().join(format!("occupancy-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let mut context = context_for(&["sm_90"], &dir);
        let mut kernels = kernels_named(&source, &["uneg_f32"]);
        kernels[0].defined_at = Some(EntrySourceLine {
            file: dir.join("kernels/unary.cu").display().to_string(),
            line: 8,
        });
        let location = kernel_location(&context, &kernels[0]);
        assert_eq!(
            (location.path.as_str(), location.line),
            ("kernels/unary.cu", 8)
        );
        let launch = |context: &Context, kernel: &CompiledKernel<'_>| {
            let launch = build_launch(context, kernel, None, &KernelTables::of(&context.settings));
            (
                launch.block.to_string(),
                launch.dynamic_smem_bytes,
                launch.origin,
            )
        };
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "256");
        assert!(
            origin.contains("the default for undeclared kernels (set `block`"),
            "{origin}"
        );
        context.settings.block = Some(BlockDim::linear(1024));
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "1024");
        assert!(origin.contains("the crate's `block`"), "{origin}");
        // A kernel table for a pattern gives its launch, 2-D blocks and dynamic smem too.
        context.settings.kernel_launches.insert(
            "uneg_*".into(),
            crate::config::KernelLaunch {
                block: Some(BlockDim::new(32, 4, 1)),
                dynamic_smem_bytes: Some(4096),
            },
        );
        assert_eq!(
            launch(&context, &kernels[0]),
            (
                "(32, 4)".to_string(),
                4096,
                "block (32, 4) from [package.metadata.occupancy.kernels.\"uneg_*\"]".to_string()
            )
        );
        context.settings.kernel_launches.clear();
        kernels[0].ptx = ptxas::parse_ptx_directives(
            ".visible .entry uneg_f32(\n)\n.maxntid 512, 1, 1\n{\nret;\n}\n",
        )
        .into_iter()
        .next();
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "512");
        assert!(origin.contains("`__launch_bounds__` maximum"), "{origin}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
