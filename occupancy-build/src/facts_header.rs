//! `$OUT_DIR/occupancy_facts.h`: what the build compiled and checked, as `constexpr` values for
//! C++ host code, as `occupancy_facts.json` is for the attribute's const. Per declared kernel
//! (namespace `occupancy::facts::<symbol>`) and per target arch (`sm_90`): registers, shared
//! memory, spills, stack and resident blocks at the declared launch; the declared launch
//! (`launch`, the assumed grid); per GPU of `gpus` the blocks resident on it; and `constexpr`
//! functions of the arch number (`major * 10 + minor`) for a launcher that learns the device at
//! run time.
//!
//! The facts come from compiling the kernels, so the header is written after them, with the
//! crate's other files (`crate_view.rs`): it is for host code compiled after occupancy-build in
//! the same build script (the `cc` crate, a second `Build`), never for the kernels' own `.cu`
//! files, which take their bounds from `occupancy_bounds.h`. A build that checked nothing
//! (`OCCUPANCY_SKIP`, docs.rs) writes `OCCUPANCY_FACTS_CHECKED 0` and no arch's facts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use occupancy_core::arch::{lookup, preset};
use occupancy_core::report::{KernelRow, Report};
use occupancy_core::spec::KernelSpec;

use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::fsutil::write_if_changed;
use crate::Error;

/// The file's name in `OUT_DIR`.
pub(crate) const HEADER_FILE: &str = "occupancy_facts.h";

/// C++ words a kernel's symbol may be but a namespace may not.
const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Whether `name` can name a C++ namespace.
fn is_cpp_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
        && !CPP_KEYWORDS.contains(&name)
}

/// The arch number a launcher compares with `prop.major * 10 + prop.minor` (`sm_90a`: 90).
fn arch_number(arch: &str) -> Option<u32> {
    lookup(arch)
        .ok()
        .map(|facts| facts.major * 10 + facts.minor)
}

/// One kernel's rows, one per arch number (the first product's, should two compile it).
struct KernelFacts<'a> {
    name: &'a str,
    rows: Vec<(u32, &'a KernelRow)>,
}

/// The kernels a declaration covers, by symbol: its rows in the report (a family's members each
/// under its own name), or its declared symbol with no rows when nothing was compiled.
fn kernels_of<'a>(
    report: &'a Report,
    declarations: &Declarations,
    declared: &'a Declared,
) -> Vec<KernelFacts<'a>> {
    let at = declarations.location(declared);
    let mut kernels: BTreeMap<&str, Vec<(u32, &KernelRow)>> = BTreeMap::new();
    for row in &report.kernels {
        let Some(declaration) = &row.declaration else {
            continue;
        };
        if (
            declaration.path.as_str(),
            declaration.line,
            declaration.column,
        ) != (at.path.as_str(), at.line, at.column)
        {
            continue;
        }
        let rows = kernels.entry(row.name.as_str()).or_default();
        if let Some(number) = arch_number(&row.arch) {
            if rows.iter().all(|(seen, _)| *seen != number) {
                rows.push((number, row));
            }
        }
    }
    if kernels.is_empty() && declared.kernel.spec.family.is_none() {
        kernels.insert(declared.kernel.kernel_name.as_str(), Vec::new());
    }
    kernels
        .into_iter()
        .map(|(name, rows)| KernelFacts { name, rows })
        .collect()
}

/// The header's text: every declaration's kernels, in the order of their symbols.
pub(crate) fn render(report: &Report, declared: &[(&Declarations, &Declared)]) -> String {
    let checked = report.skipped.is_none();
    let mut header = preamble(checked);
    let mut kernels: Vec<(KernelFacts<'_>, &Declarations, &Declared)> = declared
        .iter()
        .flat_map(|(declarations, declared)| {
            kernels_of(report, declarations, declared)
                .into_iter()
                .map(move |kernel| (kernel, *declarations, *declared))
        })
        .collect();
    kernels.sort_by(|left, right| left.0.name.cmp(right.0.name));
    let mut written: Vec<&str> = Vec::new();
    for (kernel, declarations, declared) in &kernels {
        let at = declarations.location(declared);
        let place = format!("{}:{}", at.path, at.line);
        if !is_cpp_name(kernel.name) || written.contains(&kernel.name) {
            let why = if written.contains(&kernel.name) {
                "declared twice"
            } else {
                "no C++ name"
            };
            let _ = writeln!(
                header,
                "\n// `{}` (declared at {place}): {why}, no facts written",
                kernel.name
            );
            continue;
        }
        written.push(kernel.name);
        header.push_str(&kernel_namespace(
            kernel,
            &declared.kernel.rust_name,
            &place,
            &declared.kernel.spec,
        ));
    }
    header.push_str("\n}  // namespace facts\n}  // namespace occupancy\n");
    header
}

/// What the header promises and how to use it, then the namespaces' opening.
fn preamble(checked: bool) -> String {
    format!(
        "// @generated by occupancy-build from the #[occupancy::kernel] declarations and the kernels it\n\
         // compiled and checked: do not edit. For C++ host code compiled after the kernels (by the cc\n\
         // crate after occupancy-build in build.rs); the kernels' .cu files use occupancy_bounds.h.\n\
         //\n\
         // occupancy::facts::K, for each declared kernel K (its symbol):\n\
         //   block_threads, dynamic_smem_bytes, cooperative, persistent, and grid_blocks_per_sm and\n\
         //     grid_blocks when declared: the launch the declaration states\n\
         //   sm_NN::registers, static_smem_bytes, spill_bytes, stack_frame_bytes, blocks_per_sm,\n\
         //     warps_per_sm, occupancy: each arch the build compiled and checked\n\
         //   G::arch, sm_count, compiled, blocks_per_sm, resident_blocks: each GPU G of `gpus`\n\
         //     (blocks per SM x its SMs; 0 when its arch was not compiled)\n\
         //   blocks_per_sm_everywhere: the fewest blocks per SM over the compiled archs\n\
         //   compiled(arch), registers(arch), blocks_per_sm(arch), persistent_grid(arch, sm_count):\n\
         //     arch = major * 10 + minor (cudaDeviceProp), 0 for an arch the build did not compile\n\
         // OCCUPANCY_FACTS_CHECKED is 0 when the build checked nothing (OCCUPANCY_SKIP, docs.rs): no\n\
         // arch's facts, every function 0. OCCUPANCY_FACTS_ARCH is the arch number in device code.\n\
         #pragma once\n\
         #define OCCUPANCY_FACTS_CHECKED {}\n\
         #if defined(__CUDA_ARCH__)\n\
         #define OCCUPANCY_FACTS_ARCH (__CUDA_ARCH__ / 10)\n\
         #endif\n\
         \n\
         namespace occupancy {{\n\
         namespace facts {{\n",
        u8::from(checked)
    )
}

/// `namespace K { ... }` for one kernel.
fn kernel_namespace(
    kernel: &KernelFacts<'_>,
    rust_name: &str,
    place: &str,
    spec: &KernelSpec,
) -> String {
    let name = kernel.name;
    let launch = spec.launch.as_deref();
    // A symbol may be a macro where the header is included: the C library's (`errno`, `assert`,
    // `EOF`, `stdin`), the compiler's (`linux`, `unix` in GNU modes) or this header's own
    // (`OCCUPANCY_FACTS_CHECKED`). Its namespace is written with the macro put aside and put
    // back after (issue #35, class 8), so the header compiles whatever was included before it.
    let mut text = format!(
        "\n#pragma push_macro(\"{name}\")\n#undef {name}\n\
         // `{name}` (Rust `{rust_name}`), declared at {place}\nnamespace {name} {{\n"
    );
    let _ = writeln!(
        text,
        "constexpr unsigned block_threads = {};",
        spec.block.threads()
    );
    let _ = writeln!(
        text,
        "constexpr unsigned dynamic_smem_bytes = {};",
        spec.dynamic_smem_bytes
    );
    let _ = writeln!(
        text,
        "constexpr bool cooperative = {};",
        launch == Some("cooperative")
    );
    let _ = writeln!(
        text,
        "constexpr bool persistent = {};",
        launch == Some("persistent")
    );
    if let Some(blocks) = spec.grid_blocks_per_sm {
        let _ = writeln!(text, "constexpr unsigned grid_blocks_per_sm = {blocks};");
    }
    if let Some(blocks) = spec.grid_blocks {
        let _ = writeln!(text, "constexpr unsigned grid_blocks = {blocks};");
    }
    for (number, row) in &kernel.rows {
        text.push_str(&arch_namespace(*number, row));
    }
    text.push_str(&gpu_namespaces(kernel, spec));
    let fewest = kernel
        .rows
        .iter()
        .map(|(_, row)| row.blocks_per_sm)
        .min()
        .unwrap_or(0);
    let _ = writeln!(
        text,
        "constexpr unsigned blocks_per_sm_everywhere = {fewest};"
    );
    text.push_str(&functions(kernel));
    let _ = writeln!(text, "}}  // namespace {name}");
    let _ = writeln!(text, "#pragma pop_macro(\"{name}\")");
    text
}

/// `namespace sm_90 { ... }`: one arch's facts.
fn arch_namespace(number: u32, row: &KernelRow) -> String {
    format!(
        "namespace {arch} {{\n\
         constexpr unsigned arch = {number};\n\
         constexpr unsigned registers = {};\n\
         constexpr unsigned long long static_smem_bytes = {};\n\
         constexpr unsigned long long spill_bytes = {};\n\
         constexpr unsigned long long stack_frame_bytes = {};\n\
         constexpr unsigned blocks_per_sm = {};\n\
         constexpr unsigned warps_per_sm = {};\n\
         constexpr double occupancy = {:?};\n\
         }}  // namespace {arch}\n",
        row.registers,
        row.static_smem_bytes,
        row.spill_store_bytes.saturating_add(row.spill_load_bytes),
        row.stack_frame_bytes,
        row.blocks_per_sm,
        row.warps_per_sm,
        row.occupancy,
        arch = row.arch,
    )
}

/// `namespace h20 { ... }` for each GPU of `gpus`: its arch, its SMs and the blocks resident on
/// it. A GPU whose arch the build did not compile gets `compiled = false` and zeros, as the
/// functions answer for that arch (and `grid_exceeds_resident` a finding, when `grid_blocks` is
/// checked there).
fn gpu_namespaces(kernel: &KernelFacts<'_>, spec: &KernelSpec) -> String {
    let mut text = String::new();
    for gpu in spec
        .gpus
        .iter()
        .flatten()
        .filter_map(|name| preset(name).ok())
    {
        let namespace = gpu.name.replace('-', "_");
        let number = arch_number(gpu.arch).unwrap_or(0);
        let row = kernel
            .rows
            .iter()
            .find(|(arch, _)| *arch == number)
            .map(|(_, row)| row);
        let blocks_per_sm = row.map_or(0, |row| row.blocks_per_sm);
        let _ = write!(
            text,
            "namespace {namespace} {{  // {}: {} SMs ({})\n\
             constexpr unsigned arch = {number};\n\
             constexpr unsigned sm_count = {};\n\
             constexpr bool compiled = {};{}\n\
             constexpr unsigned blocks_per_sm = {blocks_per_sm};\n\
             constexpr unsigned long long resident_blocks = {}ull;\n\
             }}  // namespace {namespace}\n",
            gpu.product,
            gpu.sm_count,
            gpu.source,
            gpu.sm_count,
            row.is_some(),
            if row.is_some() {
                String::new()
            } else {
                format!(
                    "  // the build did not compile {}: no blocks known",
                    gpu.arch
                )
            },
            u64::from(blocks_per_sm) * u64::from(gpu.sm_count),
        );
    }
    text
}

/// The `constexpr` functions of an arch number: a chain of `?:` (C++11) over the compiled archs.
fn functions(kernel: &KernelFacts<'_>) -> String {
    let chain = |field: &str| -> String {
        let mut chain = String::new();
        for (number, row) in &kernel.rows {
            let _ = write!(chain, "arch == {number}u ? {}::{field} : ", row.arch);
        }
        chain
    };
    format!(
        "constexpr bool compiled(unsigned arch) {{ return {}false; }}\n\
         constexpr unsigned registers(unsigned arch) {{ return {}0u; }}\n\
         constexpr unsigned blocks_per_sm(unsigned arch) {{ return {}0u; }}\n\
         constexpr unsigned long long persistent_grid(unsigned arch, unsigned sm_count) {{\n\
         \x20   return static_cast<unsigned long long>(blocks_per_sm(arch)) * sm_count;\n\
         }}\n",
        kernel
            .rows
            .iter()
            .map(|(number, _)| format!("arch == {number}u || "))
            .collect::<String>(),
        chain("registers"),
        chain("blocks_per_sm"),
    )
}

/// Writes the header into OUT_DIR, only when its text changed (a launcher compiled after it is
/// not rebuilt for nothing).
pub(crate) fn write(context: &Context, text: &str) -> Result<(), Error> {
    write_if_changed(&context.out_dir.join(HEADER_FILE), text.as_bytes())
}

#[cfg(test)]
mod tests;
