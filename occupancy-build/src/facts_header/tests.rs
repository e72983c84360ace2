//! The header's text for a cooperative kernel compiled for two archs, a family and a skipped
//! build; `tests/tests/build_examples.rs` compiles a real one with the C++ compiler.

use super::*;
use occupancy_core::report::{Location, LocationKind};

const LIB_RS: &str = "#[occupancy::kernel(block = 512, launch = \"cooperative\", grid_blocks_per_sm = 3, gpus = [\"h100\", \"H20\", \"l4\"])]\nfn grid_sum();\n\n#[occupancy::kernel(family = \"scale_*\", block = 256)]\nfn scale();\n\n#[occupancy::kernel(block = 128, name = \"_Z5twicePf\")]\nfn twice();\n";

/// A row of `name` on `arch` at `block` threads and `registers`, declared at `line` of
/// src/lib.rs.
fn row(name: &str, arch: &str, block: u32, registers: u32, line: u32) -> KernelRow {
    let mut row = KernelRow {
        registers,
        declaration: Some(Location {
            kind: LocationKind::RustAttribute,
            path: "src/lib.rs".into(),
            line,
            column: 1,
        }),
        ..KernelRow::new(name, arch, block)
    };
    row.compute(lookup(arch).unwrap());
    row
}

fn header(report: &Report) -> String {
    let declarations = Declarations::of_lib_rs(LIB_RS);
    let declared: Vec<(&Declarations, &Declared)> = declarations
        .kernels
        .iter()
        .map(|declared| (&declarations, declared))
        .collect();
    render(report, &declared)
}

#[test]
fn each_kernel_and_arch_gets_its_constexpr_facts() {
    let report = Report {
        kernels: vec![
            row("grid_sum", "sm_80", 512, 32, 1),
            row("grid_sum", "sm_90", 512, 40, 1),
            row("scale_f32", "sm_90", 256, 16, 4),
            row("scale_f16", "sm_90", 256, 16, 4),
            row("_Z5twicePf", "sm_90", 128, 8, 7),
        ],
        ..Report::default()
    };
    let text = header(&report);
    assert!(
        text.contains("#define OCCUPANCY_FACTS_CHECKED 1\n"),
        "{text}"
    );
    for expected in [
        "// `grid_sum` (Rust `grid_sum`), declared at src/lib.rs:1\nnamespace grid_sum {\n",
        "constexpr unsigned block_threads = 512;\nconstexpr unsigned dynamic_smem_bytes = 0;\nconstexpr bool cooperative = true;\nconstexpr bool persistent = false;\nconstexpr unsigned grid_blocks_per_sm = 3;\n",
        // 32 registers x 512 threads: 4 blocks on sm_80; 40 registers: 3 on sm_90.
        "namespace sm_80 {\nconstexpr unsigned arch = 80;\nconstexpr unsigned registers = 32;\n",
        "constexpr unsigned blocks_per_sm = 3;\nconstexpr unsigned warps_per_sm = 48;\nconstexpr double occupancy = 0.75;\n}  // namespace sm_90\n",
        "namespace h100 {  // H100 SXM5: 132 SMs (",
        "constexpr unsigned sm_count = 78;\nconstexpr bool compiled = true;\nconstexpr unsigned blocks_per_sm = 3;\nconstexpr unsigned long long resident_blocks = 234ull;\n",
        "namespace l4 {  // L4: 58 SMs (",
        "constexpr unsigned arch = 89;\nconstexpr unsigned sm_count = 58;\nconstexpr bool compiled = false;  // the build did not compile sm_89: no blocks known\nconstexpr unsigned blocks_per_sm = 0;\nconstexpr unsigned long long resident_blocks = 0ull;\n",
        "constexpr unsigned blocks_per_sm_everywhere = 3;\n",
        "constexpr unsigned blocks_per_sm(unsigned arch) { return arch == 80u ? sm_80::blocks_per_sm : arch == 90u ? sm_90::blocks_per_sm : 0u; }\n",
        "constexpr bool compiled(unsigned arch) { return arch == 80u || arch == 90u || false; }\n",
        // A family's members each under their own symbol, with the family's launch.
        "namespace scale_f16 {\nconstexpr unsigned block_threads = 256;",
        "namespace scale_f32 {",
        "namespace _Z5twicePf {",
    ] {
        assert!(text.contains(expected), "{expected}\nin:\n{text}");
    }
    // Sorted by symbol, closed once.
    let position = |needle: &str| text.find(needle).unwrap();
    assert!(position("namespace _Z5twicePf") < position("namespace grid_sum"));
    assert!(position("namespace grid_sum") < position("namespace scale_f16"));
    assert!(text.ends_with("}  // namespace facts\n}  // namespace occupancy\n"));
}

#[test]
fn a_build_that_checked_nothing_says_so_and_has_no_arch() {
    let report = Report {
        skipped: Some("OCCUPANCY_SKIP is set".into()),
        ..Report::default()
    };
    let text = header(&report);
    assert!(
        text.contains("#define OCCUPANCY_FACTS_CHECKED 0\n"),
        "{text}"
    );
    assert!(!text.contains("namespace sm_"), "{text}");
    assert!(text.contains("namespace grid_sum {"), "{text}");
    assert!(
        text.contains("constexpr unsigned blocks_per_sm(unsigned arch) { return 0u; }"),
        "{text}"
    );
    // A family with no compiled member has nothing to name.
    assert!(!text.contains("scale"), "{text}");
}

#[test]
fn a_symbol_that_is_no_cpp_name_gets_a_comment() {
    assert!(is_cpp_name("grid_sum") && is_cpp_name("_Z5twicePf"));
    for bad in ["delete", "9lives", "a.b", "", "operator"] {
        assert!(!is_cpp_name(bad), "{bad}");
    }
    let report = Report {
        kernels: vec![row("new", "sm_90", 128, 8, 7)],
        ..Report::default()
    };
    let declarations = Declarations::of_lib_rs(
        "#[occupancy::kernel(block = 128, name = \"new\")]\nfn fresh();\n\n\n\n\n#[occupancy::kernel(block = 128, name = \"new\")]\nfn again();\n",
    );
    let declared: Vec<(&Declarations, &Declared)> = declarations
        .kernels
        .iter()
        .map(|declared| (&declarations, declared))
        .collect();
    let text = render(&report, &declared);
    assert!(
        text.contains("// `new` (declared at src/lib.rs:7): no C++ name, no facts written"),
        "{text}"
    );
}

/// Issue #35, class 8: kernels named like the C library's macros (`errno`, `assert`, `EOF`,
/// `stdin`, `NULL`), the compiler's (`linux`, `unix`) or the header's own
/// (`OCCUPANCY_FACTS_CHECKED`) no longer break the header in a launcher that includes
/// `<string>` and the C headers first: the C++ compiler accepts it, each kernel's facts are
/// there, and each macro means what it meant after the header.
#[test]
fn kernels_named_like_macros_compile_in_a_launcher_that_includes_the_standard_library() {
    let names = [
        "errno",
        "assert",
        "EOF",
        "stdin",
        "NULL",
        "linux",
        "unix",
        "OCCUPANCY_FACTS_CHECKED",
        "OCCUPANCY_FACTS_ARCH",
    ];
    let lib_rs: String = (names.iter().enumerate())
        .map(|(index, name)| {
            format!("#[occupancy::kernel(block = 128, name = \"{name}\")]\nfn k{index}();\n")
        })
        .collect();
    let declarations = Declarations::of_lib_rs(&lib_rs);
    let declared: Vec<(&Declarations, &Declared)> = declarations
        .kernels
        .iter()
        .map(|declared| (&declarations, declared))
        .collect();
    let report = Report {
        kernels: (names.iter().enumerate())
            .map(|(index, name)| row(name, "sm_90", 128, 8, 2 * index as u32 + 1))
            .collect(),
        ..Report::default()
    };
    let text = render(&report, &declared);
    for name in names {
        assert!(
            text.contains(&format!("#pragma push_macro(\"{name}\")\n#undef {name}\n")),
            "{name}: {text}"
        );
    }
    let dir = std::env::temp_dir().join(format!("occupancy-facts-macros-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("occupancy_facts.h"), &text).unwrap();
    std::fs::write(
        dir.join("launcher.cpp"),
        "#include <string>\n#include <cassert>\n#include <cerrno>\n#include <cstdio>\n\
         #include <cstdlib>\n#include \"occupancy_facts.h\"\n\
         static_assert(OCCUPANCY_FACTS_CHECKED == 1, \"the header's macro is back\");\n\
         static_assert(EOF < 0, \"EOF is back\");\n\
         int main() { assert(errno == 0 || errno != 0); return stdin == NULL; }\n",
    )
    .unwrap();
    let compiled = std::process::Command::new("c++")
        .args(["-std=gnu++17", "-fsyntax-only", "launcher.cpp"])
        .current_dir(&dir)
        .output();
    let Ok(compiled) = compiled else {
        eprintln!("no C++ compiler (`c++`): the header was not compiled");
        return;
    };
    assert!(
        compiled.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
