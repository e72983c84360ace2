//! Registers ptxas spills to shared memory (`.pragma "enable_smem_spilling"`, CUDA 13): the
//! `smem_spill` check, which counts the spill area apart from the kernel's own shared memory
//! (`crate::ptxas::smem_spill_bytes`) and says what it costs in resident blocks, and
//! [`SmemSpillRoom`], what letting ptxas spill there would take, for the help of
//! `spill_in_loop` (`sass.rs`). ptxas sizes the area for the compiled block (`.maxntid`, else
//! the most a block can have) within the 48 KiB a kernel's static shared memory can take
//! (docs/ptxas-formats.md, "Shared-memory register spilling").

use super::finding::{ptxas_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::arch::ArchFacts;
use crate::calc::{self, Carveout, KernelFacts, Launch};
use crate::ptxas::{smem_spill_bytes, PtxEntry};
use crate::spec::KernelSpec;

/// The most static shared memory ptxas gives a kernel (its `0xc000 max`).
const STATIC_SMEM_LIMIT_BYTES: u64 = 48 * 1024;

/// How to write the pragma in a kernel's body.
const PRAGMA_SOURCE: &str = "asm volatile(\".pragma \\\"enable_smem_spilling\\\";\");";

/// The threads per block ptxas sizes a spill area for: the compiled maximum (`.reqntid` or
/// `.maxntid`), else the most a block can have on `arch`; and whether it was a compiled bound.
fn sized_threads(arch: &ArchFacts, ptx: Option<&PtxEntry>) -> (u32, bool) {
    let bound = ptx.and_then(|entry| entry.reqntid.as_ref().or(entry.maxntid.as_ref()));
    match bound {
        Some(dimensions) => (dimensions.iter().map(|&d| d.max(1)).product(), true),
        None => (arch.max_threads_per_block, false),
    }
}

/// `76 bytes per thread x 256 threads`, or `about 76.0 bytes per thread for 256 threads`.
fn per_thread(bytes: u64, threads: u32) -> String {
    let threads_u64 = u64::from(threads.max(1));
    if bytes.is_multiple_of(threads_u64) {
        format!(
            "{} bytes per thread x {threads} threads",
            bytes / threads_u64
        )
    } else {
        format!(
            "about {:.1} bytes per thread for {threads} threads",
            bytes as f64 / threads_u64 as f64
        )
    }
}

/// Resident blocks of the kernel of `record` at `spec`'s launch with `static_smem` bytes of
/// static shared memory (the driver's default carveout, as the build and `check` launch).
fn blocks_with(
    on: &CompiledOnArch<'_>,
    spec: &KernelSpec,
    bound: Option<u32>,
    static_smem: u64,
) -> u32 {
    let record = on.record;
    let facts = KernelFacts {
        registers_per_thread: record.registers.unwrap_or(0),
        static_smem_bytes: u32::try_from(static_smem).unwrap_or(u32::MAX),
        barriers: record.barriers.unwrap_or(u32::from(record.entry)),
        max_threads_per_block: bound,
        max_dynamic_smem_bytes: None,
    };
    let launch = Launch {
        block_threads: on.occupancy.block_threads,
        dynamic_smem_bytes: spec.dynamic_smem_bytes,
        carveout: Carveout::Default,
    };
    calc::blocks_per_sm(on.arch, &facts, &launch)
}

/// `smem_spill`: ptxas spilled registers to shared memory; the finding gives the spill area and
/// whether it costs a resident block.
pub(super) fn smem_spill(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let Some(area) = smem_spill_bytes(record, on.ptx) else {
        return;
    };
    let arch = on.arch.name;
    let (sized, bounded) = sized_threads(on.arch, on.ptx);
    let bound = bounded.then_some(sized);
    let with = blocks_with(on, spec, bound, record.static_smem_bytes);
    let without = blocks_with(on, spec, bound, record.static_smem_bytes - area);
    let block = on.occupancy.block_threads;
    let mut notes = vec![cost_note(arch, block, with, without)];
    if block < sized {
        notes.push(sized_note(sized, bounded, block, area));
    }
    if record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0 {
        notes.push(format!(
            "ptxas still spilled {} bytes of stores and {} bytes of loads to local memory, beside the area (the `spills` lint)",
            record.spill_store_bytes.unwrap_or(0),
            record.spill_load_bytes.unwrap_or(0)
        ));
    }
    notes.push(ptxas_note(record));
    let help = match without > with {
        true => format!(
            "the area costs {} resident block{} on {arch}: give ptxas more registers so that fewer values spill (a lower minimum blocks per SM, a higher register cap), or remove `enable_smem_spilling` from the kernel; or {}",
            without - with,
            if without - with == 1 { "" } else { "s" },
            origin.allow(LintId::SmemSpill)
        ),
        false => format!(
            "shared memory is on-chip and the area costs no block here: keep it where the spilled values are hot, reduce live values to be rid of it, or {}",
            origin.allow(LintId::SmemSpill)
        ),
    };
    findings.push(Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}` spills registers to shared memory on {arch}: {area} of its {} bytes of static shared memory are ptxas's spill area (`enable_smem_spilling`), {}",
            record.name,
            record.static_smem_bytes,
            per_thread(area, sized)
        ),
        notes,
        help: Some(help),
        ..Finding::new(LintId::SmemSpill)
    });
}

/// Whether the spill area costs resident blocks at the launch.
fn cost_note(arch: &str, block: u32, with: u32, without: u32) -> String {
    if without > with {
        format!(
            "the spill area costs {} resident block{} on {arch}: {with} blocks of {block} threads fit with it, {without} without",
            without - with,
            if without - with == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "the spill area costs no resident block on {arch}: {with} blocks of {block} threads fit with it and without"
        )
    }
}

/// ptxas sized the area for more threads than the launch has.
fn sized_note(sized: u32, bounded: bool, block: u32, area: u64) -> String {
    let why = match bounded {
        true => "the kernel's `__launch_bounds__` maximum".to_string(),
        false => "no `__launch_bounds__`: the most a block can have".to_string(),
    };
    format!(
        "ptxas sized the area for {sized} threads ({why}) and the launch has {block}: `__launch_bounds__({block})` would size it for the block (about {} bytes)",
        area * u64::from(block) / u64::from(sized.max(1))
    )
}

/// What letting ptxas spill a kernel's registers to shared memory would take on one
/// architecture, for the help of `spill_in_loop`: built by [`SmemSpillRoom::of`] where the
/// pragma can apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmemSpillRoom {
    /// Local memory per thread ptxas spilled to (its stack frame): what could move.
    pub frame_bytes: u64,
    /// The threads per block ptxas would size the area for: the compiled maximum (`.reqntid`
    /// or `.maxntid`), else the most a block can have.
    pub sized_threads: u32,
    /// Whether `sized_threads` is the kernel's compiled bound.
    pub bounded: bool,
    /// Threads per block of the launch.
    pub block_threads: u32,
    /// Shared memory per block the launch can add and keep its resident blocks (the
    /// calculator's headroom), within the 48 KiB of static shared memory a kernel can have.
    pub spare_bytes: u64,
    /// Resident blocks per SM at the launch.
    pub blocks_per_sm: u32,
}

impl SmemSpillRoom {
    /// The room of a kernel with a stack frame and static shared memory of these bytes and
    /// `ptx` at the launch whose answer is `occupancy`;
    /// `None` where the pragma cannot apply: a kernel that already has it or uses dynamic
    /// shared memory (ptxas refuses the pragma there), no local memory, or an architecture
    /// before sm_75 (CUDA 13's ptxas, which documents the pragma, targets sm_75 and later).
    pub fn of(
        arch: &ArchFacts,
        (frame_bytes, static_smem_bytes): (u64, u64),
        ptx: Option<&PtxEntry>,
        occupancy: &calc::Occupancy,
    ) -> Option<SmemSpillRoom> {
        let blocked = ptx
            .is_some_and(|entry| entry.smem_spilling.is_some() || !entry.dynamic_shared.is_empty());
        if blocked || frame_bytes == 0 || (arch.major, arch.minor) < (7, 5) {
            return None;
        }
        let (sized_threads, bounded) = sized_threads(arch, ptx);
        let static_room = STATIC_SMEM_LIMIT_BYTES.saturating_sub(static_smem_bytes);
        Some(SmemSpillRoom {
            frame_bytes,
            sized_threads,
            bounded,
            block_threads: occupancy.block_threads,
            spare_bytes: u64::from(occupancy.headroom.smem_addable_bytes).min(static_room),
            blocks_per_sm: occupancy.blocks_per_sm,
        })
    }

    /// The note and the help line that suggest the pragma, when the spills fit the room: the
    /// whole frame for the threads ptxas sizes the area for, or, for a kernel without bounds,
    /// for the launch's block once `__launch_bounds__` says it.
    pub fn suggestion(&self, kernel: &str, arch: &str) -> Option<(String, String)> {
        let needed = |threads: u32| self.frame_bytes * u64::from(threads);
        let fits = |threads: u32| self.blocks_per_sm > 0 && needed(threads) <= self.spare_bytes;
        let bounds = if fits(self.sized_threads) {
            None
        } else if !self.bounded && fits(self.block_threads) {
            Some(self.block_threads)
        } else {
            return None;
        };
        let threads = bounds.unwrap_or(self.sized_threads);
        let note = format!(
            "shared memory has room for these spills on {arch}: {} bytes of stack frame x {threads} threads = {} bytes, within the {} bytes per block the launch can add and keep its {} resident block{}",
            self.frame_bytes,
            needed(threads),
            self.spare_bytes,
            self.blocks_per_sm,
            if self.blocks_per_sm == 1 { "" } else { "s" }
        );
        let bounds_text = match bounds {
            Some(block) => format!(" with `__launch_bounds__({block})` (without bounds ptxas sizes the area for {} threads)", self.sized_threads),
            None => String::new(),
        };
        let help = format!(
            "or let ptxas spill to shared memory (CUDA 13): `{PRAGMA_SOURCE}` at the top of `{kernel}`{bounds_text}; the `smem_spill` lint then reports the area it takes"
        );
        Some((note, help))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::lookup;
    use crate::calc::occupancy;
    use crate::ptxas::{KernelRecord, SmemSpilling};

    fn record(smem: u64, frame: u64) -> KernelRecord {
        KernelRecord {
            registers: Some(32),
            barriers: Some(0),
            static_smem_bytes: smem,
            stack_frame_bytes: Some(frame),
            spill_store_bytes: Some(frame),
            spill_load_bytes: Some(frame),
            ..KernelRecord::new(
                "hot",
                None,
                "sm_80".into(),
                true,
                crate::ptxas::RecordSource::PtxasLog,
            )
        }
    }

    fn bounded(threads: u32, declared: Option<u64>) -> PtxEntry {
        PtxEntry {
            maxntid: Some(vec![threads, 1, 1]),
            minnctapersm: Some(8),
            smem_spilling: declared.map(|bytes| SmemSpilling::declaring(Some(bytes))),
            ..PtxEntry::default()
        }
    }

    fn evaluate(arch: &str, record: &KernelRecord, ptx: &PtxEntry, block: u32) -> Vec<Finding> {
        let arch = lookup(arch).unwrap();
        let facts = KernelFacts {
            registers_per_thread: 32,
            static_smem_bytes: record.static_smem_bytes as u32,
            barriers: 0,
            max_threads_per_block: Some(256),
            max_dynamic_smem_bytes: None,
        };
        let answer = occupancy(arch, &facts, &Launch::new(block));
        let on = CompiledOnArch {
            arch,
            record,
            ptx: Some(ptx),
            occupancy: &answer,
            chosen: None,
        };
        let spec = KernelSpec::with_block(crate::spec::BlockDim::linear(block));
        let mut findings = Vec::new();
        smem_spill(&spec, &on, LaunchOrigin::CommandLine, &mut findings);
        findings
    }

    /// sm_80, `__launch_bounds__(256, 8)`: ptxas's 20480-byte area and the driver's 1 KiB per
    /// block leave 7 of the 8 blocks the registers allow.
    #[test]
    fn the_spill_area_is_counted_apart_and_its_lost_block_named() {
        let found = evaluate("sm_80", &record(20480, 88), &bounded(256, Some(0)), 256);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            found[0].message,
            "kernel `hot` spills registers to shared memory on sm_80: 20480 of its 20480 bytes of static shared memory are ptxas's spill area (`enable_smem_spilling`), 80 bytes per thread x 256 threads"
        );
        assert_eq!(
            found[0].notes[0],
            "the spill area costs 1 resident block on sm_80: 7 blocks of 256 threads fit with it, 8 without"
        );
        assert!(found[0].notes[1].starts_with("ptxas still spilled 88 bytes"));
        assert!(found[0]
            .help
            .as_deref()
            .unwrap()
            .contains("`--allow smem_spill`"));
        // sm_90 has room for it; a kernel's own 4096 bytes are not spill area.
        let found = evaluate("sm_90", &record(19456, 96), &bounded(256, Some(4096)), 256);
        assert!(
            found[0].message.contains("15360 of its 19456 bytes"),
            "{}",
            found[0].message
        );
        assert!(found[0]
            .message
            .ends_with("60 bytes per thread x 256 threads"));
        assert_eq!(
            found[0].notes[0],
            "the spill area costs no resident block on sm_90: 8 blocks of 256 threads fit with it and without"
        );
        // Launched with 128 threads, the area sized for 256 costs 5 of 16 blocks.
        let found = evaluate("sm_90", &record(19456, 96), &bounded(256, Some(4096)), 128);
        assert_eq!(
            found[0].notes[..2],
            [
                "the spill area costs 5 resident blocks on sm_90: 11 blocks of 128 threads fit with it, 16 without".to_string(),
                "ptxas sized the area for 256 threads (the kernel's `__launch_bounds__` maximum) and the launch has 128: `__launch_bounds__(128)` would size it for the block (about 7680 bytes)".to_string(),
            ]
        );
    }

    #[test]
    fn no_pragma_or_no_area_is_no_finding() {
        assert!(evaluate("sm_90", &record(4096, 96), &bounded(256, None), 256).is_empty());
        assert!(evaluate("sm_90", &record(4096, 0), &bounded(256, Some(4096)), 256).is_empty());
    }

    #[test]
    fn the_pragma_is_suggested_where_the_frame_fits_the_headroom() {
        let arch = lookup("sm_90").unwrap();
        let room = |record: &KernelRecord, ptx: &PtxEntry, block: u32| {
            let facts = KernelFacts {
                registers_per_thread: 40,
                static_smem_bytes: record.static_smem_bytes as u32,
                barriers: 0,
                max_threads_per_block: None,
                max_dynamic_smem_bytes: None,
            };
            let answer = occupancy(arch, &facts, &Launch::new(block));
            let sizes = (
                record.stack_frame_bytes.unwrap_or(0),
                record.static_smem_bytes,
            );
            SmemSpillRoom::of(arch, sizes, Some(ptx), &answer)
        };
        // 40 registers, 256 threads: 6 blocks, each may add 37888 bytes; 112 x 256 = 28672.
        let bounds = bounded(256, None);
        let fits = room(&record(0, 112), &bounds, 256).unwrap();
        let (note, help) = fits.suggestion("m6", "sm_90").unwrap();
        assert_eq!(note, "shared memory has room for these spills on sm_90: 112 bytes of stack frame x 256 threads = 28672 bytes, within the 37888 bytes per block the launch can add and keep its 6 resident blocks");
        assert!(
            help.contains(PRAGMA_SOURCE) && !help.contains("__launch_bounds__("),
            "{help}"
        );
        // 160 bytes x 256 = 40960: more than the headroom.
        assert_eq!(
            room(&record(0, 160), &bounds, 256)
                .unwrap()
                .suggestion("m", "sm_90"),
            None
        );
        // Without bounds ptxas sizes the area for 1024 threads; bounds for the block fit.
        let unbounded = PtxEntry::default();
        let (_, help) = room(&record(0, 112), &unbounded, 256)
            .unwrap()
            .suggestion("m", "sm_90")
            .unwrap();
        assert!(help.contains("with `__launch_bounds__(256)` (without bounds ptxas sizes the area for 1024 threads)"), "{help}");
        // Not where ptxas refuses it or it is on already, nor before sm_75.
        let dynamic = PtxEntry {
            dynamic_shared: vec!["smem".into()],
            ..bounded(256, None)
        };
        assert_eq!(room(&record(0, 112), &dynamic, 256), None);
        assert_eq!(room(&record(0, 112), &bounded(256, Some(0)), 256), None);
        let old = lookup("sm_70").unwrap();
        let answer = occupancy(old, &KernelFacts::default(), &Launch::new(256));
        assert_eq!(
            SmemSpillRoom::of(old, (112, 0), Some(&bounds), &answer),
            None
        );
    }
}
