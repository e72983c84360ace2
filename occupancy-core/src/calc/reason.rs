//! Why a launch can never run: the text of [`Occupancy::reason`](super::Occupancy::reason) when
//! 0 blocks fit, one clause per resource at 0, joined by `"; "`. Written into any
//! [`fmt::Write`], so that a caller answering many launches (the CLI's batch) reuses one buffer
//! instead of building a `String` per launch.

use super::{
    preferred_smem_per_sm, registers_per_warp, warps_per_block, KernelFacts, Launch, Resources,
};
use crate::arch::ArchFacts;
use std::fmt::{self, Write};

/// The reason as a new `String`.
pub(crate) fn zero_block_reason(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
) -> String {
    let mut reason = String::new();
    write_zero_block_reason(&mut reason, arch, kernel, launch, resources)
        .expect("writing to a String never fails");
    reason
}

/// Clauses separated by `"; "`.
struct Clauses<'a, W: Write> {
    out: &'a mut W,
    written: bool,
}

impl<W: Write> Clauses<'_, W> {
    fn add(&mut self, clause: fmt::Arguments<'_>) -> fmt::Result {
        if self.written {
            self.out.write_str("; ")?;
        }
        self.written = true;
        self.out.write_fmt(clause)
    }
}

/// Writes why no block fits (call it only when `resources` allow 0 blocks).
pub fn write_zero_block_reason(
    out: &mut impl Write,
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
) -> fmt::Result {
    let mut clauses = Clauses {
        out,
        written: false,
    };
    let block = launch.block_threads;
    let limits = &resources.limits;
    if block == 0 {
        clauses.add(format_args!("a block needs at least 1 thread"))?;
    } else if limits.warps == 0 {
        clauses.add(format_args!(
            "a block of {block} threads exceeds {}'s {} threads per block",
            arch.name, arch.max_threads_per_block
        ))?;
    }
    if limits.launch_bounds == Some(0) {
        clauses.add(format_args!(
            "a block of {block} threads exceeds the kernel's __launch_bounds__ maximum of {} threads; the launch fails",
            kernel.max_threads_per_block.unwrap_or(0)
        ))?;
    }
    if limits.registers == Some(0) {
        register_clause(&mut clauses, arch, kernel.registers_per_thread, block)?;
    }
    if limits.shared_memory == Some(0) {
        smem_clause(&mut clauses, arch, launch, resources)?;
    }
    if limits.barriers == Some(0) {
        clauses.add(format_args!(
            "{} barriers per block exceed {}'s {} barriers per SM",
            kernel.barriers, arch.name, arch.barriers_per_sm
        ))?;
    }
    if !clauses.written {
        clauses.add(format_args!("no block fits"))?;
    }
    Ok(())
}

fn register_clause(
    clauses: &mut Clauses<'_, impl Write>,
    arch: &ArchFacts,
    registers: u32,
    block: u32,
) -> fmt::Result {
    if registers > arch.max_regs_per_thread_accepted {
        return clauses.add(format_args!(
            "{registers} registers per thread exceed {}'s maximum of {}",
            arch.name, arch.max_regs_per_thread_accepted
        ));
    }
    clauses.add(format_args!(
        "{registers} registers per thread for {block} threads allocate {} registers per block (warps rounded up to {} sub-partitions), over {}'s {} registers per block",
        // Counted in 64 bits: the stored figure saturates at u32::MAX for huge blocks.
        registers_per_warp(arch, registers) * u64::from(warps_per_block(arch, block)),
        arch.register_check_sub_partitions,
        arch.name,
        arch.regs_per_block
    ))
}

fn smem_clause(
    clauses: &mut Clauses<'_, impl Write>,
    arch: &ArchFacts,
    launch: &Launch,
    resources: &Resources,
) -> fmt::Result {
    if let Err(error) = preferred_smem_per_sm(arch, launch.carveout) {
        clauses.add(format_args!("{error}"))
    } else if launch.dynamic_smem_bytes > resources.max_dynamic_smem_bytes {
        clauses.add(format_args!(
            "{} B of dynamic shared memory exceed the kernel's opt-in of {} B (cudaFuncAttributeMaxDynamicSharedMemorySize)",
            launch.dynamic_smem_bytes, resources.max_dynamic_smem_bytes
        ))
    } else {
        clauses.add(format_args!(
            "{} B of shared memory per block (static + dynamic + {} B reserved, in {} B units) exceed the per-block limit of {} B on {}",
            resources.allocated_smem_per_block,
            arch.reserved_smem_per_block,
            arch.smem_alloc_unit,
            resources.smem_limit_per_block,
            arch.name
        ))
    }
}
