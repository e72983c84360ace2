//! `unlaunchable` and `bounds_mismatch`: the declared launch against what the kernel was
//! compiled for (its PTX launch bounds) and what fits an SM.

use super::finding::{ptxas_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::spec::KernelSpec;

/// `unlaunchable`: the launch cannot start, because the kernel was compiled for smaller
/// blocks or because no block fits an SM.
pub(super) fn unlaunchable(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let arch = on.arch.name;
    let threads = spec.block.threads();
    let compiled_max = on
        .ptx
        .and_then(|ptx| ptx.maxntid.as_ref().or(ptx.reqntid.as_ref()))
        .map(|dims| dims.iter().product::<u32>());
    if let Some(max) = compiled_max {
        if threads > max {
            findings.push(Finding {
                lint: LintId::Unlaunchable,
                arch: Some(arch.to_string()),
                message: format!(
                    "kernel `{}` was compiled for at most {max} threads per block, but is {} with {}",
                    record.name,
                    match origin {
                        LaunchOrigin::Declaration => "declared",
                        LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => "checked",
                    },
                    origin.block_setting(threads)
                ),
                notes: vec![format!("the PTX of `{}` says `.maxntid`/`.reqntid` {max}", record.name)],
                help: Some(match origin {
                    LaunchOrigin::Declaration => format!("launch at most {max} threads, or take `__launch_bounds__` from the declaration (occupancy_bounds.h)"),
                    LaunchOrigin::CommandLine => format!("check the launch you use: `--block {max}` or less, or raise `__launch_bounds__` in the source"),
                    LaunchOrigin::CrateDefault => format!("declare the kernel with the block it is launched with (at most {max}), or lower the crate's `block`"),
                }),
            });
            return;
        }
    }
    if on.occupancy.blocks_per_sm == 0 {
        let reason = on
            .occupancy
            .reason
            .clone()
            .unwrap_or_else(|| "no block fits on an SM".to_string());
        findings.push(Finding {
            lint: LintId::Unlaunchable,
            arch: Some(arch.to_string()),
            message: match origin {
                LaunchOrigin::Declaration => format!("the declared launch of kernel `{}` cannot start on {arch}: {reason}", record.name),
                LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!("kernel `{}` cannot start on {arch} with {}: {reason}", record.name, origin.block_setting(threads)),
            },
            notes: vec![ptxas_note(record)],
            help: Some(match origin {
                LaunchOrigin::Declaration => "make the block smaller, cap registers (`min_blocks_per_sm`, `max_registers`), lower `dynamic_smem`, or drop the arch from `archs`".into(),
                LaunchOrigin::CommandLine => "check a smaller block (`--block`), cap registers (`__launch_bounds__`, `-maxrregcount`), lower `--dynamic-smem`, or leave the arch out (`--arch`)".into(),
                LaunchOrigin::CrateDefault => "declare the kernel with the block it is launched with, cap its registers (`__launch_bounds__`), or lower the crate's `block`".into(),
            }),
        });
    }
}

/// `bounds_mismatch`: the PTX's launch bounds differ from the declaration's. Only a declaration
/// has bounds for the compiled ones to disagree with.
pub(super) fn bounds_mismatch(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(ptx) = on.ptx.filter(|_| origin == LaunchOrigin::Declaration) else {
        return;
    };
    let record = on.record;
    let threads = spec.block.threads();
    let mut differences = Vec::new();
    let compiled_max = ptx
        .maxntid
        .as_ref()
        .map(|dims| dims.iter().product::<u32>());
    if let Some(blocks) = spec.min_blocks_per_sm {
        if ptx.minnctapersm != Some(blocks) {
            differences.push(format!(
                "min blocks per SM: declared {blocks}, compiled {}",
                ptx.minnctapersm
                    .map_or("none (.minnctapersm absent)".to_string(), |value| value
                        .to_string())
            ));
        }
        if compiled_max != Some(threads) {
            differences.push(format!(
                "max threads per block: declared {threads}, compiled {}",
                compiled_max.map_or("none (.maxntid absent)".to_string(), |value| value
                    .to_string())
            ));
        }
    } else if let Some(max) = compiled_max {
        if max > threads {
            differences.push(format!(
                "max threads per block: declared {threads}, compiled {max}"
            ));
        }
    }
    if let Some(registers) = spec.max_registers {
        if ptx.maxnreg != Some(registers) {
            differences.push(format!(
                "max registers: declared {registers}, compiled {}",
                ptx.maxnreg
                    .map_or("none (.maxnreg absent)".to_string(), |value| value
                        .to_string())
            ));
        }
    }
    if !differences.is_empty() {
        findings.push(Finding {
            lint: LintId::BoundsMismatch,
            arch: Some(on.arch.name.to_string()),
            message: format!("kernel `{}` was not compiled with the declared launch bounds", record.name),
            notes: differences,
            help: Some(format!(
                "take the bounds from the declaration: `__global__ void OCCUPANCY_BOUNDS_{0} {0}(...)` with `#include \"occupancy_bounds.h\"` (generated in OUT_DIR), or make the two sides agree",
                record.name
            )),
        });
    }
}
