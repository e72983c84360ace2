//! The macro and the build helper's scanner read every fixture declaration identically:
//! the consts the real macro generated equal what `occupancy_core::spec::scan_source` reads
//! from the same file, key by key (both are the model's `KernelSpec`), including the source
//! line and column.

#![deny(warnings)]

// The fixtures' own fns are never called here (the extern ones are not even linked): only
// the user's items are allowed to be dead, the expansion is still checked under deny(warnings).
#[allow(dead_code)]
mod fixtures {
    include!("fixtures/declarations.rs");
}

use occupancy::{KernelDeclaration, LintLevel};
use occupancy_core::spec::{scan_source, DeclaredKernel, Key};

const FIXTURES: &str = include_str!("fixtures/declarations.rs");

fn generated() -> Vec<KernelDeclaration> {
    vec![
        fixtures::SAXPY_OCCUPANCY,
        fixtures::TRANSPOSE_OCCUPANCY,
        fixtures::STENCIL_LAUNCH_OCCUPANCY,
        fixtures::ADD_KERNEL_OCCUPANCY,
        fixtures::LAUNCH_SGEMM_OCCUPANCY,
        fixtures::ffi::LAUNCH_SCALE_OCCUPANCY,
        fixtures::ffi::LAUNCH_REDUCE_OCCUPANCY,
    ]
}

/// The const and the scanner hold the same model type (`occupancy_model::KernelSpec`), in two
/// storages: every key's value and every lint setting must read the same.
fn assert_same(generated: &KernelDeclaration, scanned: &DeclaredKernel) {
    let spec = &scanned.spec;
    let name = scanned.rust_name.as_str();
    assert_eq!(generated.rust_name, scanned.rust_name);
    assert_eq!(generated.kernel_name, scanned.kernel_name, "{name}");
    for key in Key::ALL {
        let (made, read) = (generated.spec.value(key), spec.value(key));
        assert_eq!(made.is_set(), read.is_set(), "{name}: {key}");
        assert_eq!(made.to_string(), read.to_string(), "{name}: {key}");
    }
    let generated_levels: Vec<(&str, LintLevel)> = generated.lint_levels.to_vec();
    let scanned_levels: Vec<(&str, LintLevel)> = spec
        .lint_levels
        .iter()
        .map(|(lint, lint_level)| (lint.as_str(), *lint_level))
        .collect();
    assert_eq!(generated_levels, scanned_levels, "{name}");
    let scanned_expected: Vec<&str> = spec
        .expected_lints
        .iter()
        .map(|lint| lint.as_str())
        .collect();
    assert_eq!(generated.expected_lints, scanned_expected, "{name}");
    let scanned_reasons: Vec<(&str, &str)> = spec
        .lint_reasons
        .iter()
        .map(|(lint, reason)| (lint.as_str(), reason.as_str()))
        .collect();
    assert_eq!(generated.lint_reasons, scanned_reasons, "{name}");
    // The canonical form, which prints every key and lint list, too.
    assert_eq!(generated.spec.to_string(), spec.to_string(), "{name}");
    assert!(
        generated.source.file.ends_with("fixtures/declarations.rs"),
        "{}",
        generated.source.file
    );
    assert_eq!(
        (
            generated.source.line as usize,
            generated.source.column as usize
        ),
        (scanned.attribute.start.line, scanned.attribute.start.column),
        "{name}: the const's line!/column! and the scanner's span disagree"
    );
}

#[test]
fn macro_and_scanner_read_every_fixture_identically() {
    let scanned = scan_source(FIXTURES).expect("fixtures scan cleanly");
    let generated = generated();
    assert_eq!(
        scanned.len(),
        generated.len(),
        "every declaration in the fixtures is listed in generated()"
    );
    for (generated, scanned) in generated.iter().zip(&scanned) {
        assert_same(generated, scanned);
    }
    let const_names: Vec<&str> = scanned
        .iter()
        .map(|kernel| kernel.const_name.as_str())
        .collect();
    assert_eq!(
        const_names,
        [
            "SAXPY_OCCUPANCY",
            "TRANSPOSE_OCCUPANCY",
            "STENCIL_LAUNCH_OCCUPANCY",
            "ADD_KERNEL_OCCUPANCY",
            "LAUNCH_SGEMM_OCCUPANCY",
            "LAUNCH_SCALE_OCCUPANCY",
            "LAUNCH_REDUCE_OCCUPANCY"
        ]
    );
}

#[test]
fn launch_helpers() {
    let saxpy = fixtures::SAXPY_OCCUPANCY;
    assert_eq!(saxpy.threads_per_block(), 256);
    assert_eq!(saxpy.grid_for(0), 0);
    assert_eq!(saxpy.grid_for(1), 1);
    assert_eq!(saxpy.grid_for(256), 1);
    assert_eq!(saxpy.grid_for(257), 2);
    assert_eq!(saxpy.grid_for(u32::MAX), 16_777_216);
    let stencil = fixtures::STENCIL_LAUNCH_OCCUPANCY;
    assert_eq!(fixtures::stencil_launch(1000), 4); // 1000 cells / 256 threads
    assert_eq!(stencil.grid_for_3d(17, 8, 9), (3, 1, 3));
    let dims = stencil.launch_dims(512);
    assert_eq!(
        dims,
        occupancy::LaunchDims {
            grid: (2, 1, 1),
            block: (8, 8, 4),
            dynamic_smem_bytes: 16384
        }
    );
    assert_eq!(
        fixtures::TRANSPOSE_OCCUPANCY.grid_for_2d(1920, 1080),
        (60, 135, 1)
    );
    assert_eq!(
        fixtures::TRANSPOSE_OCCUPANCY.lint_level("spills"),
        Some(LintLevel::Warn)
    );
    assert_eq!(fixtures::TRANSPOSE_OCCUPANCY.lint_level("regression"), None);
    // Usable in const context: no run-time cost.
    const GRID: u32 = fixtures::SAXPY_OCCUPANCY.grid_for(1 << 20);
    assert_eq!(GRID, 4096);
    const BLOCK: occupancy::BlockDim = fixtures::TRANSPOSE_OCCUPANCY.spec.block;
    const SMEM: u32 = fixtures::STENCIL_LAUNCH_OCCUPANCY.spec.dynamic_smem_bytes;
    assert_eq!((BLOCK.as_tuple(), SMEM), ((32, 8, 1), 16384));
    // Outside a const the keys read through the declaration.
    assert_eq!(fixtures::TRANSPOSE_OCCUPANCY.block, BLOCK);
}

#[cfg(feature = "cudarc")]
#[test]
fn cudarc_launch_config() {
    let config = fixtures::STENCIL_LAUNCH_OCCUPANCY.launch_config(512);
    assert_eq!(
        (config.grid_dim, config.block_dim, config.shared_mem_bytes),
        ((2, 1, 1), (8, 8, 4), 16384)
    );
    let config = fixtures::TRANSPOSE_OCCUPANCY.launch_config_2d(64, 64);
    assert_eq!((config.grid_dim, config.block_dim), ((2, 8, 1), (32, 8, 1)));
}
