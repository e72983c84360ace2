//! `cargo occupancy calc --batch FILE` (`-` for stdin): one JSON object per line in, one JSON
//! answer per line out, in order.
//!
//! A line holds any of `arch`, `block`, `registers`, `static_smem`, `dynamic_smem`, `barriers`,
//! `max_threads`, `carveout` (`"default"` or 0..=100), `max_dynamic_smem`; absent keys default as
//! in `calc`, and `arch` / `block` may come from `--arch` / `--gpu` / `--block`. Validated
//! strictly: an unknown key is named, a key given twice, a number that is negative, fractional or
//! beyond 32 bits, or an unknown architecture is an `{"error": "line N: ..."}` answer and the exit
//! code is 2 at the end. A read error (a directory, a device error) ends the batch at once with
//! one message and exit 2: nothing repeats.
//!
//! `--fields blocks_per_sm,limiters` prints only those fields (in that order); the headroom
//! search, the expensive part, runs only when `headroom` or `reason` is asked for.
//!
//! Lines are parsed by a fast scanner for flat objects of integers, plain strings and `null`;
//! any other JSON (escapes, fractions, nested values) goes through serde_json, with the same
//! answers (a property test holds the two equal).

use super::arch::parse_arch;
use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::{occupancy, resources, Carveout, KernelFacts, Launch, Occupancy};
use serde_json::Value;
use std::io::{BufRead, Write};

/// Keys a batch line may carry.
pub const KEYS: [&str; 9] = [
    "arch",
    "block",
    "registers",
    "static_smem",
    "dynamic_smem",
    "barriers",
    "max_threads",
    "carveout",
    "max_dynamic_smem",
];

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

    /// The JSON key (the field of [`Occupancy`]).
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
    fn needs_full_answer(self) -> bool {
        matches!(self, Field::Headroom | Field::Reason)
    }
}

/// Parses `--fields`: comma-separated names of [`Field::ALL`], each once.
pub fn parse_fields(text: &str) -> Result<Vec<Field>, String> {
    let mut fields = Vec::new();
    for name in text.split(',').map(str::trim) {
        let field = Field::ALL
            .into_iter()
            .find(|field| field.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Field::ALL.iter().map(|field| field.name()).collect();
                format!(
                    "--fields: unknown field `{name}`; known: {}",
                    known.join(", ")
                )
            })?;
        if fields.contains(&field) {
            return Err(format!("--fields: `{name}` is listed twice"));
        }
        fields.push(field);
    }
    Ok(fields)
}

/// What a batch line asks for; `None`: the key is absent (or null).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchLine {
    pub arch: Option<&'static ArchFacts>,
    pub block: Option<u32>,
    pub registers: Option<u32>,
    pub static_smem: Option<u32>,
    pub dynamic_smem: Option<u32>,
    pub barriers: Option<u32>,
    pub max_threads: Option<u32>,
    pub carveout: Option<Carveout>,
    pub max_dynamic_smem: Option<u32>,
}

/// One value of a line, as either parser found it.
#[derive(Debug)]
enum Scalar<'a> {
    Unsigned(u64),
    /// A number that is not a non-negative integer (`-1`, `1.5`, `1e3`), as written.
    OtherNumber(&'a str),
    Text(&'a str),
    Null,
    /// `true`, a list, an object: shown as JSON.
    Other(String),
}

impl BatchLine {
    /// Parses one line (without its newline).
    pub fn parse(line: &str) -> Result<BatchLine, String> {
        match fast::parse(line) {
            Some(result) => result,
            None => parse_with_serde(line),
        }
    }

    fn set(&mut self, seen: &mut u16, key: &str, value: Scalar<'_>) -> Result<(), String> {
        let index = KEYS
            .iter()
            .position(|known| *known == key)
            .ok_or_else(|| format!("unknown key `{key}`; known keys: {}", KEYS.join(", ")))?;
        if *seen & (1 << index) != 0 {
            return Err(format!("`{key}` is given twice"));
        }
        *seen |= 1 << index;
        if matches!(value, Scalar::Null) {
            return Ok(());
        }
        match key {
            "arch" => self.arch = Some(arch_value(value)?),
            "carveout" => self.carveout = Some(carveout_value(value)?),
            _ => {
                let number = count_value(key, value)?;
                let slot = match key {
                    "block" => &mut self.block,
                    "registers" => &mut self.registers,
                    "static_smem" => &mut self.static_smem,
                    "dynamic_smem" => &mut self.dynamic_smem,
                    "barriers" => &mut self.barriers,
                    "max_threads" => &mut self.max_threads,
                    _ => &mut self.max_dynamic_smem,
                };
                *slot = Some(number);
            }
        }
        Ok(())
    }

    /// The kernel and launch, with `calc`'s defaults for absent keys.
    pub fn resolve(
        &self,
        default_arch: Option<&'static ArchFacts>,
        default_block: Option<u32>,
    ) -> Result<(&'static ArchFacts, KernelFacts, Launch), String> {
        let arch = self
            .arch
            .or(default_arch)
            .ok_or("missing `arch` (or pass --arch)")?;
        let block = self
            .block
            .or(default_block)
            .ok_or("missing `block` (or pass --block)")?;
        let kernel = KernelFacts {
            registers_per_thread: self.registers.unwrap_or(0),
            static_smem_bytes: self.static_smem.unwrap_or(0),
            barriers: self.barriers.unwrap_or(1),
            max_threads_per_block: self.max_threads,
            max_dynamic_smem_bytes: self.max_dynamic_smem,
        };
        let launch = Launch {
            block_threads: block,
            dynamic_smem_bytes: self.dynamic_smem.unwrap_or(0),
            carveout: self.carveout.unwrap_or_default(),
        };
        Ok((arch, kernel, launch))
    }
}

fn count_value(key: &str, value: Scalar<'_>) -> Result<u32, String> {
    match value {
        Scalar::Unsigned(number) => u32::try_from(number)
            .map_err(|_| format!("`{key}` is {number}, larger than {}", u32::MAX)),
        Scalar::OtherNumber(text) | Scalar::Text(text) => Err(format!(
            "`{key}` must be a non-negative integer, got {}",
            shown(text, &value)
        )),
        Scalar::Other(text) => Err(format!(
            "`{key}` must be a non-negative integer, got {text}"
        )),
        Scalar::Null => unreachable!("null is absent"),
    }
}

/// A value as it appeared: strings quoted.
fn shown(text: &str, value: &Scalar<'_>) -> String {
    match value {
        Scalar::Text(_) => format!("\"{text}\""),
        _ => text.to_string(),
    }
}

fn arch_value(value: Scalar<'_>) -> Result<&'static ArchFacts, String> {
    match value {
        Scalar::Text(name) => Ok(parse_arch(name)?.facts()),
        Scalar::Unsigned(number) => Ok(parse_arch(&number.to_string())?.facts()),
        Scalar::OtherNumber(text) => Ok(parse_arch(text)?.facts()),
        Scalar::Other(text) => Err(format!(
            "`arch` must be a string like \"sm_90\", got {text}"
        )),
        Scalar::Null => unreachable!("null is absent"),
    }
}

fn carveout_value(value: Scalar<'_>) -> Result<Carveout, String> {
    let invalid = |error: occupancy_core::calc::CalcError| error.to_string();
    match value {
        Scalar::Text(text) | Scalar::OtherNumber(text) => text.parse().map_err(invalid),
        Scalar::Unsigned(number) => number.to_string().parse().map_err(invalid),
        Scalar::Other(text) => Err(format!(
            "`carveout` must be \"default\" or 0..100, got {text}"
        )),
        Scalar::Null => unreachable!("null is absent"),
    }
}

/// Any JSON the fast scanner leaves: serde_json reads it, the same rules apply.
fn parse_with_serde(line: &str) -> Result<BatchLine, String> {
    let value: Value = serde_json::from_str(line).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(object) = value else {
        return Err("expected a JSON object".into());
    };
    let mut parsed = BatchLine::default();
    let mut seen = 0u16;
    for (key, value) in &object {
        let number_text;
        let scalar = match value {
            Value::Null => Scalar::Null,
            Value::String(text) => Scalar::Text(text),
            Value::Number(number) => match number.as_u64() {
                Some(unsigned) => Scalar::Unsigned(unsigned),
                None => {
                    number_text = number.to_string();
                    Scalar::OtherNumber(&number_text)
                }
            },
            other => Scalar::Other(other.to_string()),
        };
        parsed.set(&mut seen, key, scalar)?;
    }
    Ok(parsed)
}

mod fast;

/// The answer to one line: every field (exactly `serde_json`'s rendering of [`Occupancy`]), or
/// the selected ones. Written by hand: this is the batch's hot path.
pub fn write_answer(
    out: &mut Vec<u8>,
    arch: &'static ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    fields: Option<&[Field]>,
) -> std::io::Result<()> {
    let fields = fields.unwrap_or(&Field::ALL);
    let answer = if fields.iter().any(|field| field.needs_full_answer()) {
        Answer::Full(occupancy(arch, kernel, launch))
    } else {
        Answer::Resources(resources(arch, kernel, launch))
    };
    out.push(b'{');
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(field.name().as_bytes());
        out.extend_from_slice(b"\":");
        answer.write_field(out, *field, arch, launch)?;
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

/// What a line's answer is written from: the full answer when headroom or reason is asked for,
/// else the per-resource limits alone.
enum Answer {
    Full(Occupancy),
    Resources(occupancy_core::calc::Resources),
}

impl Answer {
    fn limits(&self) -> &occupancy_core::calc::BlockLimits {
        match self {
            Answer::Full(answer) => &answer.block_limits,
            Answer::Resources(resources) => &resources.limits,
        }
    }

    /// (allocated registers, allocated shared memory, configuration, per-block limit).
    fn allocations(&self) -> [u32; 4] {
        match self {
            Answer::Full(answer) => [
                answer.allocated_registers_per_block,
                answer.allocated_smem_per_block,
                answer.smem_config_per_sm,
                answer.smem_limit_per_block,
            ],
            Answer::Resources(resources) => [
                resources.allocated_registers_per_block,
                resources.allocated_smem_per_block,
                resources.smem_config_per_sm,
                resources.smem_limit_per_block,
            ],
        }
    }

    fn write_field(
        &self,
        out: &mut Vec<u8>,
        field: Field,
        arch: &ArchFacts,
        launch: &Launch,
    ) -> std::io::Result<()> {
        let blocks = self.limits().blocks_per_sm();
        let warps = blocks * launch.block_threads.div_ceil(arch.warp_size);
        let [registers, smem, config, limit] = self.allocations();
        match field {
            Field::Arch => {
                out.push(b'"');
                out.extend_from_slice(arch.name.as_bytes());
                out.push(b'"');
            }
            Field::BlockThreads => write_u32(out, launch.block_threads),
            Field::BlocksPerSm => write_u32(out, blocks),
            Field::WarpsPerSm => write_u32(out, warps),
            Field::ThreadsPerSm => write_u32(out, blocks.saturating_mul(launch.block_threads)),
            Field::Occupancy => serde_json::to_writer(
                &mut *out,
                &(f64::from(warps) / f64::from(arch.max_warps_per_sm)),
            )?,
            Field::Limiters => write_limiters(out, self.limits()),
            Field::BlockLimits => write_block_limits(out, self.limits()),
            Field::AllocatedRegistersPerBlock => write_u32(out, registers),
            Field::AllocatedSmemPerBlock => write_u32(out, smem),
            Field::SmemConfigPerSm => write_u32(out, config),
            Field::SmemLimitPerBlock => write_u32(out, limit),
            Field::Headroom | Field::Reason => {
                let Answer::Full(answer) = self else {
                    unreachable!("headroom and reason come with the full answer")
                };
                if field == Field::Headroom {
                    write_headroom(out, &answer.headroom);
                } else {
                    match &answer.reason {
                        Some(reason) => write_str(out, reason)?,
                        None => out.extend_from_slice(b"null"),
                    }
                }
            }
        }
        Ok(())
    }
}

/// A number in decimal, without the formatting machinery (the batch's hot path).
fn write_u32(out: &mut Vec<u8>, value: u32) {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    let mut rest = value;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

fn write_optional(out: &mut Vec<u8>, value: Option<u32>) {
    match value {
        Some(value) => write_u32(out, value),
        None => out.extend_from_slice(b"null"),
    }
}

/// `{"key":value,...}` with `null` for `None`, as serde writes an all-number struct.
fn write_object(out: &mut Vec<u8>, entries: &[(&str, Option<u32>)]) {
    out.push(b'{');
    for (index, (key, value)) in entries.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        write_optional(out, *value);
    }
    out.push(b'}');
}

fn write_block_limits(out: &mut Vec<u8>, limits: &occupancy_core::calc::BlockLimits) {
    write_object(
        out,
        &[
            ("warps", Some(limits.warps)),
            ("blocks", Some(limits.blocks)),
            ("registers", limits.registers),
            ("shared_memory", limits.shared_memory),
            ("barriers", limits.barriers),
            ("launch_bounds", limits.launch_bounds),
        ],
    );
}

fn write_headroom(out: &mut Vec<u8>, headroom: &occupancy_core::calc::Headroom) {
    write_object(
        out,
        &[
            ("registers_addable", Some(headroom.registers_addable)),
            ("registers_to_gain_block", headroom.registers_to_gain_block),
            ("smem_addable_bytes", Some(headroom.smem_addable_bytes)),
            (
                "smem_to_gain_block_bytes",
                headroom.smem_to_gain_block_bytes,
            ),
        ],
    );
}

/// A JSON string: as is when nothing needs escaping, else through serde_json.
fn write_str(out: &mut Vec<u8>, text: &str) -> std::io::Result<()> {
    if text
        .bytes()
        .all(|byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, text).map_err(std::io::Error::from)
    }
}

fn write_limiters(out: &mut Vec<u8>, limits: &occupancy_core::calc::BlockLimits) {
    out.push(b'[');
    for (index, limiter) in limits.limiters().iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(limiter.name().as_bytes());
        out.push(b'"');
    }
    out.push(b']');
}

/// How a batch ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every line answered; this many were bad (each got an `{"error": ...}` answer).
    Finished { bad_lines: u64 },
    /// The reader stopped answering; the batch ends here.
    ReadError(String),
    /// Nobody reads our output any more (a closed pipe): stop quietly.
    Closed,
}

/// Answers every line of `input` on `out`.
pub fn answer_all(
    input: &mut impl BufRead,
    input_name: &str,
    out: &mut impl Write,
    defaults: (Option<&'static ArchFacts>, Option<u32>),
    fields: Option<&[Field]>,
) -> std::io::Result<Outcome> {
    let mut buffer = Vec::with_capacity(256);
    let mut answer = Vec::with_capacity(1024);
    let mut bad_lines = 0u64;
    for number in 1u64.. {
        buffer.clear();
        match input.read_until(b'\n', &mut buffer) {
            Ok(0) => break,
            Ok(_) => {}
            Err(error) => {
                return Ok(Outcome::ReadError(format!(
                    "reading the batch input {input_name} at line {number}: {error}; the batch stops here"
                )))
            }
        }
        let line = trim_newline(&buffer);
        let answered = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8".to_string())
            .and_then(BatchLine::parse)
            .and_then(|parsed| parsed.resolve(defaults.0, defaults.1));
        answer.clear();
        match answered {
            Ok((arch, kernel, launch)) => {
                write_answer(&mut answer, arch, &kernel, &launch, fields)?
            }
            Err(message) => {
                bad_lines += 1;
                let error = serde_json::json!({ "error": format!("line {number}: {message}") });
                writeln!(answer, "{error}")?;
            }
        }
        let written = out.write_all(&answer);
        if let Err(error) = written {
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(Outcome::Closed);
            }
            return Err(error);
        }
    }
    Ok(Outcome::Finished { bad_lines })
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests;
