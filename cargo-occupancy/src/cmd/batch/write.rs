//! Writing a batch line's answer: every field (exactly `serde_json`'s rendering of
//! [`Occupancy`](occupancy_core::calc::Occupancy)) or the selected ones, straight into one output
//! buffer. This is the batch's hot path: each line's figures are derived once, the headroom search
//! runs only when `headroom` or `reason` is asked for, the reason is written into a buffer reused
//! across lines, and nothing else is allocated per line.

use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::{
    headroom, resources, write_zero_block_reason, BlockLimits, Headroom, KernelFacts, Launch,
    Resources,
};

/// A field of the answer, as named in `--fields` and in the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Arch,
    BlockThreads,
    BlocksPerSm,
    WarpsPerSm,
    ThreadsPerSm,
    Occupancy,
    Limiters,
    BlockLimits,
    AllocatedRegistersPerBlock,
    AllocatedSmemPerBlock,
    SmemConfigPerSm,
    SmemLimitPerBlock,
    Headroom,
    Reason,
}

impl Field {
    pub const ALL: [Field; 14] = [
        Field::Arch,
        Field::BlockThreads,
        Field::BlocksPerSm,
        Field::WarpsPerSm,
        Field::ThreadsPerSm,
        Field::Occupancy,
        Field::Limiters,
        Field::BlockLimits,
        Field::AllocatedRegistersPerBlock,
        Field::AllocatedSmemPerBlock,
        Field::SmemConfigPerSm,
        Field::SmemLimitPerBlock,
        Field::Headroom,
        Field::Reason,
    ];

    /// The JSON key (the field of [`Occupancy`](occupancy_core::calc::Occupancy)).
    pub fn name(self) -> &'static str {
        match self {
            Field::Arch => "arch",
            Field::BlockThreads => "block_threads",
            Field::BlocksPerSm => "blocks_per_sm",
            Field::WarpsPerSm => "warps_per_sm",
            Field::ThreadsPerSm => "threads_per_sm",
            Field::Occupancy => "occupancy",
            Field::Limiters => "limiters",
            Field::BlockLimits => "block_limits",
            Field::AllocatedRegistersPerBlock => "allocated_registers_per_block",
            Field::AllocatedSmemPerBlock => "allocated_smem_per_block",
            Field::SmemConfigPerSm => "smem_config_per_sm",
            Field::SmemLimitPerBlock => "smem_limit_per_block",
            Field::Headroom => "headroom",
            Field::Reason => "reason",
        }
    }

    /// Whether the field needs the full answer (the headroom search).
    pub(crate) fn needs_full_answer(self) -> bool {
        matches!(self, Field::Headroom | Field::Reason)
    }
}

/// Writes answers for one `--fields` selection (`None`: every field).
pub struct AnswerWriter<'f> {
    fields: &'f [Field],
    /// The fields are [`Field::ALL`] in order: the full answer, written in one piece.
    every_field: bool,
    needs_headroom: bool,
    /// The zero-block reason of the current line.
    reason: String,
}

/// What one line's answer is written from.
struct Figures<'a> {
    arch: &'static ArchFacts,
    launch: &'a Launch,
    resources: Resources,
    blocks: u32,
    warps: u32,
    /// With `headroom` or `reason` asked for.
    headroom: Option<Headroom>,
}

impl<'f> AnswerWriter<'f> {
    pub fn new(fields: Option<&'f [Field]>) -> Self {
        let fields = fields.unwrap_or(&Field::ALL);
        AnswerWriter {
            fields,
            every_field: fields == Field::ALL,
            needs_headroom: fields.iter().any(|field| field.needs_full_answer()),
            reason: String::new(),
        }
    }

    /// Appends the answer (one JSON object and a newline) to `out`.
    pub fn write(
        &mut self,
        out: &mut Vec<u8>,
        arch: &'static ArchFacts,
        kernel: &KernelFacts,
        launch: &Launch,
    ) {
        let resources = resources(arch, kernel, launch);
        let blocks = resources.limits.blocks_per_sm();
        let figures = Figures {
            arch,
            launch,
            resources,
            blocks,
            warps: blocks * launch.block_threads.div_ceil(arch.warp_size),
            headroom: self
                .needs_headroom
                .then(|| headroom(arch, kernel, launch, &resources)),
        };
        self.reason.clear();
        if self.needs_headroom && blocks == 0 {
            write_zero_block_reason(&mut self.reason, arch, kernel, launch, &resources)
                .expect("writing to a String never fails");
        }
        if self.every_field {
            self.write_every_field(out, &figures);
        } else {
            out.push(b'{');
            for (index, field) in self.fields.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(field.name().as_bytes());
                out.extend_from_slice(b"\":");
                self.write_field(out, *field, &figures);
            }
            out.extend_from_slice(b"}\n");
        }
    }

    /// Every field in [`Field::ALL`]'s order with the keys as literals (the full answer's
    /// fast path; a property test holds it equal to serde_json's rendering).
    fn write_every_field(&self, out: &mut Vec<u8>, figures: &Figures<'_>) {
        let resources = &figures.resources;
        out.extend_from_slice(b"{\"arch\":\"");
        out.extend_from_slice(figures.arch.name.as_bytes());
        out.extend_from_slice(b"\",\"block_threads\":");
        write_u32(out, figures.launch.block_threads);
        out.extend_from_slice(b",\"blocks_per_sm\":");
        write_u32(out, figures.blocks);
        out.extend_from_slice(b",\"warps_per_sm\":");
        write_u32(out, figures.warps);
        out.extend_from_slice(b",\"threads_per_sm\":");
        write_threads(out, figures);
        out.extend_from_slice(b",\"occupancy\":");
        write_occupancy(out, figures);
        out.extend_from_slice(b",\"limiters\":");
        write_limiters(out, &resources.limits);
        out.extend_from_slice(b",\"block_limits\":");
        write_block_limits(out, &resources.limits);
        out.extend_from_slice(b",\"allocated_registers_per_block\":");
        write_u32(out, resources.allocated_registers_per_block);
        out.extend_from_slice(b",\"allocated_smem_per_block\":");
        write_u32(out, resources.allocated_smem_per_block);
        out.extend_from_slice(b",\"smem_config_per_sm\":");
        write_u32(out, resources.smem_config_per_sm);
        out.extend_from_slice(b",\"smem_limit_per_block\":");
        write_u32(out, resources.smem_limit_per_block);
        out.extend_from_slice(b",\"headroom\":");
        write_headroom(out, figures.headroom.as_ref());
        out.extend_from_slice(b",\"reason\":");
        self.write_reason(out, figures);
        out.extend_from_slice(b"}\n");
    }

    fn write_field(&self, out: &mut Vec<u8>, field: Field, figures: &Figures<'_>) {
        let resources = &figures.resources;
        match field {
            Field::Arch => {
                out.push(b'"');
                out.extend_from_slice(figures.arch.name.as_bytes());
                out.push(b'"');
            }
            Field::BlockThreads => write_u32(out, figures.launch.block_threads),
            Field::BlocksPerSm => write_u32(out, figures.blocks),
            Field::WarpsPerSm => write_u32(out, figures.warps),
            Field::ThreadsPerSm => write_threads(out, figures),
            Field::Occupancy => write_occupancy(out, figures),
            Field::Limiters => write_limiters(out, &resources.limits),
            Field::BlockLimits => write_block_limits(out, &resources.limits),
            Field::AllocatedRegistersPerBlock => {
                write_u32(out, resources.allocated_registers_per_block)
            }
            Field::AllocatedSmemPerBlock => write_u32(out, resources.allocated_smem_per_block),
            Field::SmemConfigPerSm => write_u32(out, resources.smem_config_per_sm),
            Field::SmemLimitPerBlock => write_u32(out, resources.smem_limit_per_block),
            Field::Headroom => write_headroom(out, figures.headroom.as_ref()),
            Field::Reason => self.write_reason(out, figures),
        }
    }

    fn write_reason(&self, out: &mut Vec<u8>, figures: &Figures<'_>) {
        if figures.blocks == 0 {
            write_str(out, &self.reason);
        } else {
            out.extend_from_slice(b"null");
        }
    }
}

fn write_threads(out: &mut Vec<u8>, figures: &Figures<'_>) {
    write_u32(
        out,
        figures.blocks.saturating_mul(figures.launch.block_threads),
    );
}

/// Resident warps over the warp slots, as serde_json writes an `f64`.
fn write_occupancy(out: &mut Vec<u8>, figures: &Figures<'_>) {
    let occupancy = f64::from(figures.warps) / f64::from(figures.arch.max_warps_per_sm);
    serde_json::to_writer(&mut *out, &occupancy).expect("a finite f64 always serializes");
}

/// A number (32 or 64 bits) in decimal, without the formatting machinery (`itoa`: two digits per
/// step).
fn write_u32(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

fn write_optional(out: &mut Vec<u8>, value: Option<impl itoa::Integer>) {
    match value {
        Some(value) => write_u32(out, value),
        None => out.extend_from_slice(b"null"),
    }
}

/// `{"warps":..,"blocks":..,...}` with `null` for `None`, as serde writes [`BlockLimits`].
fn write_block_limits(out: &mut Vec<u8>, limits: &BlockLimits) {
    out.extend_from_slice(b"{\"warps\":");
    write_u32(out, limits.warps);
    out.extend_from_slice(b",\"blocks\":");
    write_u32(out, limits.blocks);
    out.extend_from_slice(b",\"registers\":");
    write_optional(out, limits.registers);
    out.extend_from_slice(b",\"shared_memory\":");
    write_optional(out, limits.shared_memory);
    out.extend_from_slice(b",\"barriers\":");
    write_optional(out, limits.barriers);
    out.extend_from_slice(b",\"launch_bounds\":");
    write_optional(out, limits.launch_bounds);
    out.push(b'}');
}

/// [`Headroom`] as serde writes it; present whenever the headroom or reason field is asked for.
fn write_headroom(out: &mut Vec<u8>, headroom: Option<&Headroom>) {
    let headroom = headroom.expect("the headroom is computed when its field is asked for");
    out.extend_from_slice(b"{\"registers_addable\":");
    write_u32(out, headroom.registers_addable);
    out.extend_from_slice(b",\"registers_to_gain_block\":");
    write_optional(out, headroom.registers_to_gain_block);
    out.extend_from_slice(b",\"smem_addable_bytes\":");
    write_u32(out, headroom.smem_addable_bytes);
    out.extend_from_slice(b",\"smem_to_gain_block_bytes\":");
    write_optional(out, headroom.smem_to_gain_block_bytes);
    out.push(b'}');
}

/// A JSON string: as is when nothing needs escaping, else through serde_json.
fn write_str(out: &mut Vec<u8>, text: &str) {
    // Every byte looked at without an early exit: the compiler checks many at once.
    let needs_escape = text.bytes().fold(false, |found, byte| {
        found | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
    });
    if !needs_escape {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, text).expect("a string always serializes");
    }
}

fn write_limiters(out: &mut Vec<u8>, limits: &BlockLimits) {
    out.push(b'[');
    for (index, limiter) in limits.limiters_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(limiter.name().as_bytes());
        out.push(b'"');
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        for text in [
            "plain text; 1024 B",
            "a \"quote\"",
            "back\\slash",
            "tab\there",
            "",
        ] {
            let mut out = Vec::new();
            write_str(&mut out, text);
            assert_eq!(out, serde_json::to_vec(text).unwrap(), "{text:?}");
        }
        for value in [0, 7, 10, 99, 100, 65_536, u32::MAX] {
            let mut out = Vec::new();
            write_u32(&mut out, value);
            assert_eq!(out, value.to_string().into_bytes());
        }
    }
}
