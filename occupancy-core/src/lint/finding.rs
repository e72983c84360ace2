//! What every check makes and reads: a [`Finding`] (the toolkit's one finding type, from
//! `crate::finding`), the compiled kernel a launch check looks at ([`CompiledOnArch`]), where the launch
//! came from ([`LaunchOrigin`], which words the messages), and the notes every check shares.
//! Names no check and no registry: the checks, the registry and [`super::evaluate`] import it.

use super::id::LintId;
use super::level::Level;
use crate::arch::ArchFacts;
use crate::calc::{Limiter, Occupancy};
pub use crate::finding::Finding;
use crate::ptxas::{KernelRecord, PtxEntry};
use crate::spec::{KernelSpec, Tunable};
use crate::tune::Bound;

/// A compiled kernel on one target architecture, with the calculator's answer for the launch.
#[derive(Debug, Clone, Copy)]
pub struct CompiledOnArch<'a> {
    /// The arch's facts.
    pub arch: &'a ArchFacts,
    /// ptxas's record for the kernel on this arch.
    pub record: &'a KernelRecord,
    /// The kernel's `.entry` directives in the PTX that was assembled, when known.
    pub ptx: Option<&'a PtxEntry>,
    /// Occupancy of the declared launch.
    pub occupancy: &'a Occupancy,
    /// The bound the build chose on this arch for a key written `"auto"`
    /// (`crate::tune`); `None` when no key of the declaration is `"auto"`.
    pub chosen: Option<Bound>,
}

/// Where a bound in effect comes from: the number written, or the build's choice for `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoundOrigin {
    /// `min_blocks_per_sm = 4`.
    Declared,
    /// `min_blocks_per_sm = "auto"`, resolved by the build on this arch.
    Chosen,
}

impl BoundOrigin {
    /// `declared` or `chosen for `min_blocks_per_sm = "auto"``.
    pub(crate) fn words(self, key: &str) -> String {
        match self {
            BoundOrigin::Declared => "declared".to_string(),
            BoundOrigin::Chosen => format!("chosen for `{key} = \"auto\"`"),
        }
    }
}

impl CompiledOnArch<'_> {
    /// The minimum blocks per SM the declaration asks for on this arch: the number written, or
    /// the build's choice for `"auto"` (`None` when it chose none).
    pub(crate) fn min_blocks_per_sm(&self, spec: &KernelSpec) -> Option<(u32, BoundOrigin)> {
        match spec.min_blocks_per_sm? {
            Tunable::Fixed(blocks) => Some((blocks, BoundOrigin::Declared)),
            Tunable::Auto => Some((self.chosen?.min_blocks_per_sm()?, BoundOrigin::Chosen)),
        }
    }

    /// The `.entry` directives that compile the kernel with the bounds the declaration asks for
    /// on this arch, as nvcc writes them for `OCCUPANCY_BOUNDS_<kernel>`: `.maxntid T, 1, 1
    /// .minnctapersm B` for a minimum, `.maxnreg R` for a cap, `.maxntid T, 1, 1` for neither
    /// (what a PTX written by hand or by another compiler must hold, as it takes no header).
    pub fn entry_directives(&self, spec: &KernelSpec) -> String {
        let threads = spec.block.threads();
        match (self.min_blocks_per_sm(spec), self.max_registers(spec)) {
            (Some((blocks, _)), _) => format!(".maxntid {threads}, 1, 1 .minnctapersm {blocks}"),
            (None, Some((registers, _))) => format!(".maxnreg {registers}"),
            (None, None) => format!(".maxntid {threads}, 1, 1"),
        }
    }

    /// The register cap the declaration asks for on this arch, likewise.
    pub(crate) fn max_registers(&self, spec: &KernelSpec) -> Option<(u32, BoundOrigin)> {
        match spec.max_registers? {
            Tunable::Fixed(registers) => Some((registers, BoundOrigin::Declared)),
            Tunable::Auto => Some((self.chosen?.max_registers()?, BoundOrigin::Chosen)),
        }
    }
}

pub(super) fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
    }
}

/// `2 blocks x 256 threads = 16 of 64 warps (25%)`, and what binds.
pub(crate) fn occupancy_note(on: &CompiledOnArch<'_>) -> String {
    let occupancy = on.occupancy;
    let limiters: Vec<&str> = occupancy
        .limiters
        .iter()
        .map(|limiter| limiter.name())
        .collect();
    let mut note = format!(
        "on {}: {} block{} of {} threads = {} of {} warps per SM ({})",
        on.arch.name,
        occupancy.blocks_per_sm,
        if occupancy.blocks_per_sm == 1 {
            ""
        } else {
            "s"
        },
        occupancy.block_threads,
        occupancy.warps_per_sm,
        on.arch.max_warps_per_sm,
        percent(occupancy.occupancy)
    );
    if !limiters.is_empty() {
        note.push_str(&format!("; limited by {}", limiters.join(" and ")));
    }
    if occupancy.limiters.contains(&Limiter::Registers) {
        note.push_str(&format!(
            " ({} registers/thread, {} allocated per block of {})",
            on.record.registers.unwrap_or(0),
            occupancy.allocated_registers_per_block,
            on.arch.regs_per_sm
        ));
    }
    if occupancy.limiters.contains(&Limiter::SharedMemory) {
        note.push_str(&format!(
            " ({} bytes allocated per block of {} per SM)",
            occupancy.allocated_smem_per_block, occupancy.smem_config_per_sm
        ));
    }
    note
}

/// `ptxas: 128 registers, 0 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads`.
pub(crate) fn ptxas_note(record: &KernelRecord) -> String {
    let said = match record.source {
        crate::ptxas::RecordSource::Cubin => "the binary holds",
        _ => "ptxas reported",
    };
    format!(
        "{said} for {} on {}: {} registers, {} barriers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads, {} bytes static shared memory",
        record.name,
        record.arch,
        record.registers.unwrap_or(0),
        record.barriers.unwrap_or(0),
        record.stack_frame_bytes.unwrap_or(0),
        record.spill_store_bytes.unwrap_or(0),
        record.spill_load_bytes.unwrap_or(0),
        record.static_smem_bytes
    )
}

/// Where the launch and limits a kernel is checked against came from. The lints are the same
/// either way; only the wording of their messages and help lines differs (what to edit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchOrigin {
    /// An `#[occupancy::kernel(...)]` declaration: the user edits its keys.
    Declaration,
    /// `cargo occupancy check` flags (`--block`, `--dynamic-smem`) with the default limits: the
    /// user changes flags or levels (`--allow`/`--warn`).
    CommandLine,
    /// A kernel with no declaration, checked at the crate's default launch
    /// (`[package.metadata.occupancy] block`) with the default limits: the user declares the
    /// kernel, or sets the crate's level of the lint.
    CrateDefault,
}

impl LaunchOrigin {
    /// `block = 256` as the user wrote it.
    pub(super) fn block_setting(self, threads: u32) -> String {
        match self {
            LaunchOrigin::Declaration => format!("`block = {threads}`"),
            LaunchOrigin::CommandLine => format!("`--block {threads}`"),
            LaunchOrigin::CrateDefault => {
                format!("the crate's default launch of {threads} threads (`[package.metadata.occupancy] block`)")
            }
        }
    }

    /// `at most 0 declared` / `at most 0 allowed`.
    pub(super) fn limit(self, max: u64) -> String {
        match self {
            LaunchOrigin::Declaration => format!("at most {max} declared"),
            LaunchOrigin::CommandLine => format!("at most {max} allowed"),
            LaunchOrigin::CrateDefault => format!("at most {max} allowed for an undeclared kernel"),
        }
    }

    /// How a user silences `lint` for this kernel: `allow(lint)` in the attribute, or the flag.
    pub(super) fn allow(self, lint: LintId) -> String {
        match self {
            LaunchOrigin::Declaration => format!("`allow({})`", lint.as_str()),
            LaunchOrigin::CommandLine => format!("`--allow {}`", lint.as_str()),
            LaunchOrigin::CrateDefault => format!(
                "`{}` under `[package.metadata.occupancy.kernels.<name>.lints]`",
                lint.config_line(Level::Allow)
            ),
        }
    }

    /// How a user accepts a finding of `lint` as it is.
    pub(super) fn accept(self, declaration_key: &str, lint: LintId) -> String {
        match self {
            LaunchOrigin::Declaration => format!("declare `{declaration_key}`"),
            LaunchOrigin::CommandLine => {
                format!(
                    "accept it with `--warn {0}` or `--allow {0}`",
                    lint.as_str()
                )
            }
            LaunchOrigin::CrateDefault => format!(
                "declare the kernel with `{declaration_key}`, or set `{}` under `[package.metadata.occupancy.lints]`",
                lint.config_line(Level::Warn)
            ),
        }
    }
}
