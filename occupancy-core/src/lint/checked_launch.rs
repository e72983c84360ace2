//! The one decision of the launch a kernel is checked at ([`checked_launch`]), for every path:
//! the build (declared and undeclared kernels), `cargo occupancy check` on sources, logs and
//! binaries, and `cargo occupancy build`. Callers look their settings up (the declaration that
//! matched, the kernel table that names the kernel, the command line, the crate's `block`, the
//! kernel's compiled bounds) and hand them in; what wins, and the words that say where the
//! launch came from, are decided here alone.

use super::finding::LaunchOrigin;
use crate::spec::{BlockDim, KernelSpec};

/// The block an undeclared kernel is checked at when the crate sets none: the common launch of
/// CUDA crates, and what `cargo occupancy check` assumes without `--block`.
pub const DEFAULT_UNDECLARED_BLOCK_THREADS: u32 = 256;

/// The launch a kernel table (`[package.metadata.occupancy.kernels."<name or pattern>"]`) gives
/// the kernels it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableLaunch<'a> {
    /// The table's name or pattern, as written.
    pub name: &'a str,
    /// `block = 256` or `block = [32, 4]`.
    pub block: Option<BlockDim>,
    /// `dynamic_smem = 4096`, bytes per block.
    pub dynamic_smem_bytes: Option<u32>,
}

/// Everything that may decide the launch of one kernel.
#[derive(Debug, Clone, Copy)]
pub struct LaunchSettings<'a> {
    /// Who asks: a build checks undeclared kernels at the crate's launch
    /// ([`LaunchOrigin::CrateDefault`]), `check` at the command line's
    /// ([`LaunchOrigin::CommandLine`]); a declared kernel is checked at its declaration whoever
    /// asks.
    pub origin: LaunchOrigin,
    /// The kernel's declaration (`#[occupancy::kernel(block = ..., dynamic_smem = ...)]`).
    pub declared: Option<&'a KernelSpec>,
    /// The kernel table that names the kernel.
    pub table: Option<TableLaunch<'a>>,
    /// `--block`: taken as given, never lowered to the kernel's bounds.
    pub given_block: Option<BlockDim>,
    /// `--dynamic-smem`, bytes per block (0 in a build).
    pub given_dynamic_smem_bytes: u64,
    /// The crate's `block` under `[package.metadata.occupancy]`.
    pub crate_block: Option<BlockDim>,
    /// The kernel's compiled maximum threads per block (`.maxntid`/`.reqntid`, from
    /// `__launch_bounds__`): a default block above it is lowered to it.
    pub compiled_max_threads: Option<u32>,
    /// `explain`: a kernel with a compiled maximum is explained at it, above the default block
    /// too (what it was built for); a check lowers the default block to it, never raises it.
    pub at_compiled_max: bool,
}

/// The launch a kernel is checked at, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedLaunch {
    /// Threads per block, as x, y, z.
    pub block: BlockDim,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_smem_bytes: u64,
    /// Where the block comes from, in words, with the setting that changes it
    /// (`block 256, the default for undeclared kernels (set ...)`): what a build says in every
    /// finding about an undeclared kernel.
    pub origin: String,
}

impl CheckedLaunch {
    /// Threads per block.
    pub fn block_threads(&self) -> u32 {
        self.block.threads()
    }
}

/// The launch a kernel is checked at, most binding first:
/// 1. its declaration's `block` and `dynamic_smem`;
/// 2. the block of the kernel table that names it, taken as written (a kernel compiled for fewer
///    threads is then `unlaunchable` there, which is the point);
/// 3. the block given on the command line (`--block`), as given;
/// 4. in a build, a table that names the kernel but no block: the crate's block, as written;
/// 5. for `explain` (`at_compiled_max`), the kernel's compiled maximum, when it has one;
/// 6. else the crate's block (default [`DEFAULT_UNDECLARED_BLOCK_THREADS`]), lowered to the
///    kernel's compiled maximum when that is smaller: it cannot be launched with more.
///
/// Dynamic shared memory: the declaration's, else the table's, else the command line's.
pub fn checked_launch(settings: &LaunchSettings<'_>) -> CheckedLaunch {
    if let Some(spec) = settings.declared {
        return CheckedLaunch {
            block: spec.block,
            dynamic_smem_bytes: u64::from(spec.dynamic_smem_bytes),
            origin: format!("block {}, declared", spec.block),
        };
    }
    let dynamic_smem_bytes = match settings.table.and_then(|table| table.dynamic_smem_bytes) {
        Some(bytes) => u64::from(bytes),
        None => settings.given_dynamic_smem_bytes,
    };
    let (block, origin) = undeclared_block(settings);
    CheckedLaunch {
        block,
        dynamic_smem_bytes,
        origin,
    }
}

/// Rules 2 to 6 of [`checked_launch`]: the block of a kernel nothing declares.
fn undeclared_block(settings: &LaunchSettings<'_>) -> (BlockDim, String) {
    let crate_block = settings
        .crate_block
        .unwrap_or(BlockDim::linear(DEFAULT_UNDECLARED_BLOCK_THREADS));
    let in_build = settings.origin == LaunchOrigin::CrateDefault;
    match (settings.table, settings.given_block) {
        (Some(table), _) if table.block.is_some() || in_build => {
            let block = table.block.unwrap_or(crate_block);
            let name = table.name;
            let origin =
                format!("block {block} from [package.metadata.occupancy.kernels.{name:?}]");
            return (block, origin);
        }
        (_, Some(given)) => return (given, format!("block {given}, given (`--block`)")),
        _ => {}
    }
    let compiled_max = settings
        .compiled_max_threads
        .filter(|&max| max < crate_block.threads() || settings.at_compiled_max);
    let how = "set `block` under [package.metadata.occupancy], or per kernel or pattern under [package.metadata.occupancy.kernels.\"<name or pattern*>\"]";
    match (compiled_max, settings.crate_block) {
        (Some(max), _) if max < crate_block.threads() => (
            BlockDim::linear(max),
            format!("block {max}, the kernel's `__launch_bounds__` maximum (below the crate's {crate_block})"),
        ),
        (Some(max), _) => (
            BlockDim::linear(max),
            format!("block {max}, the kernel's `__launch_bounds__` maximum, the block it was built for"),
        ),
        (None, Some(_)) => (
            crate_block,
            format!("block {crate_block}, the crate's `block` under [package.metadata.occupancy]"),
        ),
        (None, None) => (
            crate_block,
            format!("block {crate_block}, the default for undeclared kernels ({how})"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(origin: LaunchOrigin) -> LaunchSettings<'static> {
        LaunchSettings {
            origin,
            declared: None,
            table: None,
            given_block: None,
            given_dynamic_smem_bytes: 0,
            crate_block: None,
            compiled_max_threads: None,
            at_compiled_max: false,
        }
    }

    fn decided(settings: &LaunchSettings<'_>) -> (u32, u64) {
        let launch = checked_launch(settings);
        (launch.block_threads(), launch.dynamic_smem_bytes)
    }

    #[test]
    fn a_declaration_wins_over_every_other_setting() {
        let mut spec = KernelSpec::with_block(BlockDim::linear(128));
        spec.dynamic_smem_bytes = 512;
        let table = TableLaunch {
            name: "k",
            block: Some(BlockDim::linear(64)),
            dynamic_smem_bytes: Some(4096),
        };
        let settings = LaunchSettings {
            declared: Some(&spec),
            table: Some(table),
            given_block: Some(BlockDim::linear(32)),
            crate_block: Some(BlockDim::linear(1024)),
            compiled_max_threads: Some(96),
            ..settings(LaunchOrigin::CommandLine)
        };
        assert_eq!(decided(&settings), (128, 512));
    }

    #[test]
    fn a_table_block_is_taken_as_written_and_a_given_block_as_given() {
        let table = TableLaunch {
            name: "uneg_*",
            block: Some(BlockDim::new(32, 4, 1)),
            dynamic_smem_bytes: Some(4096),
        };
        let tabled = LaunchSettings {
            table: Some(table),
            given_block: Some(BlockDim::linear(64)),
            given_dynamic_smem_bytes: 100,
            compiled_max_threads: Some(32),
            ..settings(LaunchOrigin::CommandLine)
        };
        assert_eq!(decided(&tabled), (128, 4096));
        assert_eq!(
            checked_launch(&tabled).origin,
            "block (32, 4) from [package.metadata.occupancy.kernels.\"uneg_*\"]"
        );
        let given = LaunchSettings {
            table: None,
            ..tabled
        };
        assert_eq!(decided(&given), (64, 100), "not lowered to the bounds");
    }

    #[test]
    fn a_default_block_is_lowered_to_the_compiled_maximum() {
        let bounded = LaunchSettings {
            compiled_max_threads: Some(128),
            ..settings(LaunchOrigin::CommandLine)
        };
        assert_eq!(decided(&bounded), (128, 0));
        let build = LaunchSettings {
            crate_block: Some(BlockDim::linear(1024)),
            compiled_max_threads: Some(512),
            ..settings(LaunchOrigin::CrateDefault)
        };
        assert_eq!(decided(&build), (512, 0));
        assert!(checked_launch(&build)
            .origin
            .contains("`__launch_bounds__` maximum (below the crate's 1024)"));
        let above = LaunchSettings {
            compiled_max_threads: Some(512),
            ..settings(LaunchOrigin::CrateDefault)
        };
        assert_eq!(decided(&above), (256, 0));
        assert!(checked_launch(&above)
            .origin
            .contains("the default for undeclared kernels"));
    }

    #[test]
    fn explain_takes_the_compiled_maximum_above_the_default_too() {
        let explained = LaunchSettings {
            compiled_max_threads: Some(1024),
            at_compiled_max: true,
            ..settings(LaunchOrigin::CommandLine)
        };
        assert_eq!(decided(&explained), (1024, 0));
        assert!(checked_launch(&explained)
            .origin
            .contains("`__launch_bounds__` maximum, the block it was built for"));
        let checked = LaunchSettings {
            at_compiled_max: false,
            ..explained
        };
        assert_eq!(
            decided(&checked),
            (256, 0),
            "a check never raises the block"
        );
        let below = LaunchSettings {
            compiled_max_threads: Some(128),
            ..explained
        };
        assert_eq!(decided(&below), (128, 0));
        let given = LaunchSettings {
            given_block: Some(BlockDim::linear(64)),
            ..explained
        };
        assert_eq!(decided(&given), (64, 0), "`--block` wins");
        let unbounded = LaunchSettings {
            compiled_max_threads: None,
            ..explained
        };
        assert_eq!(decided(&unbounded), (256, 0));
    }

    #[test]
    fn a_table_without_a_block_keeps_the_crates_block_in_a_build_only() {
        let table = TableLaunch {
            name: "k",
            block: None,
            dynamic_smem_bytes: Some(2048),
        };
        let build = LaunchSettings {
            table: Some(table),
            compiled_max_threads: Some(128),
            ..settings(LaunchOrigin::CrateDefault)
        };
        assert_eq!(decided(&build), (256, 2048));
        let check = LaunchSettings {
            origin: LaunchOrigin::CommandLine,
            ..build
        };
        assert_eq!(decided(&check), (128, 2048));
    }
}
