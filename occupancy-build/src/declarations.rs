//! Declarations: the `#[occupancy::kernel]` attributes found in the package's Rust sources, and the
//! `occupancy_bounds.h` header generated from them (written before any `.cu` that includes it
//! is compiled). The spec grammar is `occupancy_core::spec`; this module finds and reads files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_core::spec::{self, DeclaredKernel, Tunable};
use occupancy_core::tune::{Bound, Knob};

use crate::cargo_lines::CargoLines;
use crate::context::Context;
use crate::diagnostics::{self, SourceText};
use crate::fsutil::display_path;
use crate::fsutil::write_if_changed;
use crate::Error;
use occupancy_core::report::{Location, LocationKind};

/// A declaration found in the package's Rust sources.
#[derive(Debug, Clone)]
pub struct Declared {
    pub kernel: DeclaredKernel,
    /// Index into the source texts.
    pub source_index: usize,
}

/// All declarations of the package, with the sources they were read from.
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    pub kernels: Vec<Declared>,
    pub sources: Vec<SourceText>,
}

impl Declarations {
    /// The declarations of one Rust source's text, as if it were the package's `src/lib.rs`.
    #[cfg(test)]
    pub(crate) fn of_lib_rs(text: &str) -> Declarations {
        Declarations {
            kernels: occupancy_core::spec::scan_source(text)
                .unwrap()
                .into_iter()
                .map(|kernel| Declared {
                    kernel,
                    source_index: 0,
                })
                .collect(),
            sources: vec![SourceText {
                display_path: "src/lib.rs".into(),
                text: text.into(),
            }],
        }
    }

    pub(crate) fn location(&self, declared: &Declared) -> Location {
        Location {
            kind: LocationKind::RustAttribute,
            path: self.sources[declared.source_index].display_path.clone(),
            line: u32::try_from(declared.kernel.attribute.start.line).unwrap_or(u32::MAX),
            column: u32::try_from(declared.kernel.attribute.start.column).unwrap_or(u32::MAX),
        }
    }
}

pub(crate) fn collect_rust_files(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_file() {
        if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        collect_rust_files(&path, found);
    }
}

/// Finds every `#[occupancy::kernel]` under `src/` (or the builder's `.declarations(...)`).
pub fn scan_declarations(context: &Context, cargo: &mut CargoLines) -> Result<Declarations, Error> {
    let roots = &context.declaration_roots;
    let mut files = Vec::new();
    for root in roots {
        if root.exists() {
            // A directory: cargo reruns the build script when any file in it changes, so a new
            // declaration in a new file is seen too.
            cargo.rerun_if_changed(root);
        }
        collect_rust_files(root, &mut files);
    }
    let mut declarations = Declarations::default();
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|error| Error::Io {
            path: file.clone(),
            error,
        })?;
        if !text.contains("kernel") {
            continue;
        }
        let source = SourceText {
            display_path: display_path(&context.manifest_dir, &file),
            text,
        };
        match spec::scan_source(&source.text) {
            Ok(kernels) if kernels.is_empty() => {}
            Ok(kernels) => {
                let source_index = declarations.sources.len();
                declarations.sources.push(source);
                declarations
                    .kernels
                    .extend(kernels.into_iter().map(|kernel| Declared {
                        kernel,
                        source_index,
                    }));
            }
            Err(error) => {
                for diagnostic in error.diagnostics {
                    let finding = diagnostics::Diagnostic {
                        id: "declaration",
                        deny: true,
                        message: &diagnostic.message,
                        arch: None,
                        notes: &[],
                        help: None,
                    };
                    let span = (
                        (diagnostic.span.start.line, diagnostic.span.start.column),
                        (diagnostic.span.end.line, diagnostic.span.end.column),
                    );
                    problems.push(diagnostics::render(
                        &finding,
                        Some((&source, span.0, span.1)),
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::Denied {
            count: problems.len(),
            rendered: problems.join("\n"),
        });
    }
    let mut seen = BTreeMap::new();
    for declared in &declarations.kernels {
        if let Some(previous) = seen.insert(
            declared.kernel.kernel_name.clone(),
            declarations.location(declared),
        ) {
            return Err(Error::DeclaredTwice {
                kernel: declared.kernel.kernel_name.clone(),
                first: previous,
                second: declarations.location(declared),
            });
        }
    }
    Ok(declarations)
}

/// `$OUT_DIR/occupancy_bounds.h`: for each declared kernel `K`, macros a .cu file uses to take
/// its launch bounds from the Rust declaration:
/// `__global__ void OCCUPANCY_BOUNDS_K K(...)` or `__launch_bounds__(OCCUPANCY_LAUNCH_BOUNDS_K)`.
pub fn write_bounds_header(
    context: &Context,
    declarations: &Declarations,
    chosen: &crate::header_choices::HeaderChoices,
) -> Result<PathBuf, Error> {
    let path = context.out_dir.join("occupancy_bounds.h");
    write_bounds_header_at(&path, declarations, chosen)?;
    Ok(path)
}

/// [`write_bounds_header`] at `path` (the auto-bounds probe writes one without the choices).
pub(crate) fn write_bounds_header_at(
    path: &Path,
    declarations: &Declarations,
    chosen: &crate::header_choices::HeaderChoices,
) -> Result<(), Error> {
    write_if_changed(path, bounds_header_text(declarations, chosen).as_bytes())
}

/// The text of `occupancy_bounds.h` for `declarations` with the `"auto"` choices `chosen`.
pub(crate) fn bounds_header_text(
    declarations: &Declarations,
    chosen: &crate::header_choices::HeaderChoices,
) -> String {
    let mut header = String::from(
        "// @generated by occupancy-build from the #[occupancy::kernel] declarations: do not edit.\n\
         // For each declared kernel K:\n\
         //   OCCUPANCY_BLOCK_THREADS_K        threads per block of the declared launch\n\
         //   OCCUPANCY_MIN_BLOCKS_PER_SM_K    min_blocks_per_sm (when declared)\n\
         //   OCCUPANCY_LAUNCH_BOUNDS_K        the arguments of __launch_bounds__(...)\n\
         //   OCCUPANCY_BOUNDS_K               __launch_bounds__(...) or __maxnreg__(...) as declared\n\
         //   (a bound written \"auto\": the build's choice per target arch, under __CUDA_ARCH__)\n\
         #pragma once\n",
    );
    header.push_str(
        "// For each kernel family F (`family = \"pattern_*\"` on the Rust stub `F`), the same macros with\n\
         // FAMILY_F in place of K, and OCCUPANCY_BOUNDS_FAMILY(F) for use inside the C macro that\n\
         // generates the family: every instance compiles, declared on its own or not.\n\
         #define OCCUPANCY_BOUNDS_FAMILY(family) OCCUPANCY_BOUNDS_FAMILY_##family\n",
    );
    let mut kernels: Vec<&Declared> = declarations.kernels.iter().collect();
    kernels.sort_by(|left, right| left.kernel.kernel_name.cmp(&right.kernel.kernel_name));
    for declared in kernels {
        let Some(suffix) = bounds_suffix(declared) else {
            continue;
        };
        let location = declarations.location(declared);
        let what = match &declared.kernel.spec.family {
            Some(pattern) => format!("{suffix} (family `{pattern}`)"),
            None => suffix.clone(),
        };
        header.push_str(&format!(
            "\n// {what}: declared at {}:{}:{}\n",
            location.path, location.line, location.column
        ));
        header.push_str(&bounds_macros(
            &suffix,
            &declared.kernel.spec,
            chosen.of(&declared.kernel.kernel_name),
        ));
    }
    header
}

/// What follows `OCCUPANCY_BOUNDS_` in a declaration's macros: the kernel's name, or
/// `FAMILY_<stub>` for a family; `None` when that is no C identifier (no macros are written).
pub(crate) fn bounds_suffix(declared: &Declared) -> Option<String> {
    let suffix = match &declared.kernel.spec.family {
        Some(_) => format!("FAMILY_{}", declared.kernel.rust_name),
        None => declared.kernel.kernel_name.clone(),
    };
    suffix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(suffix)
}

/// The `#define`s of one declaration: `OCCUPANCY_BLOCK_THREADS_<suffix>`, ...,
/// `OCCUPANCY_BOUNDS_<suffix>`. A bound written `"auto"` takes the build's choices (`chosen`:
/// per `__CUDA_ARCH__` value, the bound of the archs compiled under it), each under its
/// `__CUDA_ARCH__` condition, the kernel without bounds elsewhere (the host's pass, an arch not
/// chosen for yet).
pub(crate) fn bounds_macros(
    suffix: &str,
    spec: &occupancy_core::spec::KernelSpec,
    chosen: Option<&crate::header_choices::KernelChoices>,
) -> String {
    let threads = spec.block.threads();
    let mut text = format!("#define OCCUPANCY_BLOCK_THREADS_{suffix} {threads}\n");
    let knob = match (spec.min_blocks_per_sm, spec.max_registers) {
        (Some(Tunable::Auto), _) => Knob::MinBlocksPerSm,
        (_, Some(Tunable::Auto)) => Knob::MaxRegisters,
        (minimum, cap) => {
            let bound = match (
                minimum.and_then(Tunable::fixed),
                cap.and_then(Tunable::fixed),
            ) {
                (Some(blocks), _) => Bound::MinBlocksPerSm(blocks),
                (None, Some(registers)) => Bound::MaxRegisters(registers),
                (None, None) => Bound::None,
            };
            if let (Some(registers), Some(_)) = (cap.and_then(Tunable::fixed), minimum) {
                // nvcc takes a minimum or a cap, not both: the minimum wins, the cap is told.
                text.push_str(&format!(
                    "#define OCCUPANCY_MAX_REGISTERS_{suffix} {registers}\n"
                ));
            }
            text.push_str(&bound_definitions(
                suffix,
                threads,
                Knob::MinBlocksPerSm,
                bound,
            ));
            return text;
        }
    };
    text.push_str(&format!(
        "// `{knob} = \"auto\"`: the bounds occupancy-build chose per target arch (see its report)\n"
    ));
    let branches = chosen
        .filter(|chosen| chosen.holds_for(knob, threads))
        .map(|chosen| {
            chosen
                .by_cuda_arch
                .iter()
                .rev()
                .filter(|(_, bound)| **bound != Bound::None)
        })
        .into_iter()
        .flatten();
    let mut keyword = "#if";
    for (cuda_arch, bound) in branches {
        text.push_str(&format!(
            "{keyword} defined(__CUDA_ARCH__) && __CUDA_ARCH__ == {cuda_arch}\n"
        ));
        text.push_str(&bound_definitions(suffix, threads, knob, *bound));
        keyword = "#elif";
    }
    if keyword == "#elif" {
        text.push_str("#else\n");
    }
    text.push_str(&bound_definitions(suffix, threads, knob, Bound::None));
    if keyword == "#elif" {
        text.push_str("#endif\n");
    }
    text
}

/// `OCCUPANCY_MIN_BLOCKS_PER_SM_`, `OCCUPANCY_MAX_REGISTERS_` (when the bound has one),
/// `OCCUPANCY_LAUNCH_BOUNDS_` and `OCCUPANCY_BOUNDS_` of one bound. nvcc refuses
/// `__maxnreg__` beside `__launch_bounds__`, so a register cap is `__maxnreg__` alone.
pub(crate) fn bound_definitions(suffix: &str, threads: u32, knob: Knob, bound: Bound) -> String {
    let mut text = String::new();
    if let Some(blocks) = bound.min_blocks_per_sm() {
        text.push_str(&format!(
            "#define OCCUPANCY_MIN_BLOCKS_PER_SM_{suffix} {blocks}\n"
        ));
    }
    if let Some(registers) = bound.max_registers() {
        text.push_str(&format!(
            "#define OCCUPANCY_MAX_REGISTERS_{suffix} {registers}\n"
        ));
    }
    let launch_bounds = bound
        .launch_bounds(knob, threads)
        .unwrap_or_else(|| threads.to_string());
    text.push_str(&format!(
        "#define OCCUPANCY_LAUNCH_BOUNDS_{suffix} {launch_bounds}\n"
    ));
    let definition = format!(
        "OCCUPANCY_BOUNDS_{suffix} {}",
        bound.qualifiers(knob, threads)
    );
    text.push_str(&format!("#define {}\n", definition.trim_end()));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header_choices::KernelChoices;

    fn spec_of(arguments: &str) -> occupancy_core::spec::KernelSpec {
        Declarations::of_lib_rs(&format!("#[occupancy::kernel({arguments})]\nfn k();\n"))
            .kernels
            .remove(0)
            .kernel
            .spec
    }

    #[test]
    fn a_chosen_bound_is_defined_under_its_archs_cuda_arch_and_none_elsewhere() {
        let spec = spec_of("block = 256, min_blocks_per_sm = \"auto\"");
        let before = bounds_macros("k", &spec, None);
        assert!(
            before.ends_with(
                "#define OCCUPANCY_LAUNCH_BOUNDS_k 256\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256)\n"
            ),
            "nothing chosen yet: the kernel without a minimum\n{before}"
        );
        assert!(!before.contains("#if"), "{before}");
        let chosen = KernelChoices {
            knob: Knob::MinBlocksPerSm,
            threads: 256,
            by_cuda_arch: [(800, Bound::None), (900, Bound::MinBlocksPerSm(5))].into(),
        };
        let text = bounds_macros("k", &spec, Some(&chosen));
        assert!(
            text.contains(
                "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900\n#define OCCUPANCY_MIN_BLOCKS_PER_SM_k 5\n#define OCCUPANCY_LAUNCH_BOUNDS_k 256, 5\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256, 5)\n#else\n#define OCCUPANCY_LAUNCH_BOUNDS_k 256\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256)\n#endif\n"
            ),
            "{text}"
        );
        assert!(!text.contains("== 800"), "no minimum on sm_80: {text}");
        // A choice made for another block is not used.
        let stale = KernelChoices {
            threads: 128,
            ..chosen
        };
        assert_eq!(bounds_macros("k", &spec, Some(&stale)), before);
    }

    #[test]
    fn a_register_cap_is_maxnreg_alone() {
        let fixed = bounds_macros("k", &spec_of("block = 256, max_registers = 40"), None);
        assert!(
            fixed.contains("#define OCCUPANCY_BOUNDS_k __maxnreg__(40)\n"),
            "nvcc refuses __maxnreg__ beside __launch_bounds__:\n{fixed}"
        );
        let spec = spec_of("block = 256, max_registers = \"auto\"");
        let chosen = KernelChoices {
            knob: Knob::MaxRegisters,
            threads: 256,
            by_cuda_arch: [(900, Bound::MaxRegisters(48))].into(),
        };
        let text = bounds_macros("k", &spec, Some(&chosen));
        assert!(
            text.contains("#define OCCUPANCY_MAX_REGISTERS_k 48\n#define OCCUPANCY_LAUNCH_BOUNDS_k 256\n#define OCCUPANCY_BOUNDS_k __maxnreg__(48)\n#else\n"),
            "{text}"
        );
        assert!(
            text.ends_with("#define OCCUPANCY_BOUNDS_k\n#endif\n"),
            "{text}"
        );
    }
}
