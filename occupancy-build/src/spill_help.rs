//! The probe stage after evaluate: advice a spill finding can follow. ptxas is run again on the
//! kernel's PTX with lower `.minnctapersm` to find the `min_blocks_per_sm` that keeps it
//! spill-free. The evaluate stage runs no process (docs/architecture.md): it makes the `spills`
//! finding, and this stage, which `pipeline::evaluate_product` runs right after it, gives the
//! finding its help.

use occupancy_core::lint::LintId;
use occupancy_core::ptxas::{self};
use occupancy_core::spec::DeclaredKernel;

use crate::context::Context;
use crate::declarations::Declarations;
use crate::levels::Gathered;
use crate::matching::Matching;
use crate::parse::CompiledKernel;
use crate::process::{run_bounded, ToolKind};
use crate::toolchain::Toolchain;
use occupancy_core::kernel::KernelOnArch;
use occupancy_core::report::RowLaunch;

/// Gives each declared kernel's `spills` finding the help [`spill_free_help`] finds (a finding
/// whose probe finds nothing keeps the help it had).
pub(crate) fn add_spill_free_help(
    (toolchain, context): (&Toolchain, &Context),
    (kernels, matching): (&[CompiledKernel<'_>], &Matching),
    declarations: &Declarations,
    gathered: &mut [Gathered],
) {
    for found in gathered.iter_mut() {
        let Some(declaration) = found.declaration else {
            continue;
        };
        if found.undeclared || found.finding.lint != LintId::Spills {
            continue;
        }
        let kernel = kernels.iter().enumerate().find(|(index, kernel)| {
            kernel.name == found.kernel && matching.by_kernel.get(index) == Some(&declaration)
        });
        let Some((_, kernel)) = kernel else {
            continue;
        };
        let declared = &declarations.kernels[declaration].kernel;
        let arch = found.finding.arch.as_deref();
        if let Some(help) = spill_free_help(toolchain, context, kernel, declared, arch) {
            found.finding.help = Some(help);
        }
    }
}

/// For a spilling kernel compiled with `min_blocks_per_sm = B`: re-runs ptxas on the same PTX
/// with `.minnctapersm` lowered (B-1, B-2, ... 1) and returns a help line naming the largest value
/// with no spills, verified, not estimated.
fn spill_free_help(
    toolchain: &Toolchain,
    context: &Context,
    kernel: &CompiledKernel<'_>,
    declared: &DeclaredKernel,
    arch: Option<&str>,
) -> Option<String> {
    let arch = arch?;
    // A number written: a minimum the build chose for "auto" already passed the objective, whose
    // report (the row's `tuning`) says what each lower minimum does.
    let blocks = declared.spec.min_blocks_per_sm?.fixed()?;
    let ptx_path = kernel
        .programs
        .get(arch)
        .map_or(&kernel.source.ptx, |(program, _)| &program.ptx);
    let ptx_text = std::fs::read_to_string(ptx_path).ok()?;
    let directive = minnctapersm_position(&ptx_text, &kernel.name)?;
    let probe_dir = context.out_dir.join("occupancy").join("probe");
    std::fs::create_dir_all(&probe_dir).ok()?;
    for candidate in (1..blocks).rev() {
        let patched = format!(
            "{}.minnctapersm {candidate}{}",
            &ptx_text[..directive.start],
            &ptx_text[directive.end..]
        );
        let ptx_path = probe_dir.join(format!("{}-{arch}-{candidate}.ptx", kernel.name));
        std::fs::write(&ptx_path, &patched).ok()?;
        // Not through the compiler cache: sccache 0.16 refuses `nvcc -cubin x.ptx` ("PCH not
        // supported by nvcc"), and a probe that fails would only weaken the help line.
        let mut command = toolchain.command_without_wrapper();
        command
            .args(["-cubin", &format!("-arch={arch}"), "-Xptxas", "-v", "-o"])
            .arg(probe_dir.join("probe.cubin"))
            .arg(&ptx_path);
        // Help, not a check: a probe that fails or runs past its limit only drops the help line.
        let output = run_bounded(&mut command, &toolchain.timeouts, ToolKind::Work).ok()?;
        if !output.status.success() {
            return None;
        }
        let log = String::from_utf8_lossy(&output.stderr);
        let parsed = ptxas::parse_log(&log).ok()?;
        let record = parsed
            .kernels
            .iter()
            .find(|record| record.entry && record.name == kernel.name && record.arch == arch)?;
        if record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) == 0 {
            let threads = declared.spec.block.threads();
            let launch = RowLaunch {
                block: threads,
                dynamic_smem_bytes: u64::from(declared.spec.dynamic_smem_bytes),
                carveout_percent: None,
            };
            // The probe's bound: the declared block as the `.maxntid` the kernel compiles under.
            let mut bounded = kernel.ptx_on(arch).cloned().unwrap_or_default();
            bounded.maxntid = Some(vec![threads]);
            bounded.reqntid = None;
            let row = KernelOnArch::new(record.clone(), Some(bounded), launch)
                .ok()?
                .row;
            return Some(format!(
                "`min_blocks_per_sm = {candidate}` lets ptxas keep `{}` spill-free on {arch} ({} registers per thread, {} blocks per SM, {:.0}% occupancy; checked by re-running ptxas on this PTX)",
                kernel.name,
                row.registers,
                row.blocks_per_sm,
                row.occupancy * 100.0
            ));
        }
    }
    Some(format!(
        "even `min_blocks_per_sm = 1` spills on {arch} (checked by re-running ptxas): reduce live values in `{}`, or accept the spills with `max_spill_bytes = N`",
        kernel.name
    ))
}

/// The byte range of `.minnctapersm N` in the directives of `.entry <name>`.
pub(crate) fn minnctapersm_position(ptx: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let entry = ptx.find(&format!(".entry {name}("))?;
    let body = entry + ptx[entry..].find('{')?;
    let relative = ptx[entry..body].find(".minnctapersm")?;
    let start = entry + relative;
    let end = start + ptx[start..].find('\n').unwrap_or(body - start);
    Some(start..end)
}
