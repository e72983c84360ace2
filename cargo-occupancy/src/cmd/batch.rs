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
//! Lines are read in place from the reader's buffer and parsed by a fast scanner for flat
//! objects of integers, plain strings and `null`; any other JSON (escapes, fractions, nested
//! values) goes through serde_json, with the same answers (a property test holds the two equal).
//! Answers are written by [`AnswerWriter`] into one buffer that goes out in 64 KiB pieces.
//!
//! A line may hold at most 1 MiB ([`crate::lines`]): a longer one, or input with no newline at
//! all (`/dev/zero`), ends the batch with one message naming the line and the cap, exit 2.

use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::{Carveout, KernelFacts, Launch};
use serde_json::Value;
use std::io::{BufRead, Write};

use crate::archs::ArchNames;
use crate::lines::{BoundedLines, LineError, MAX_LINE_BYTES};
use fast::Scalar;

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

impl BatchLine {
    /// Parses one line (without its newline), reading its `arch` with `archs`.
    pub fn parse(line: &str, archs: &ArchNames) -> Result<BatchLine, String> {
        match parse_fast(line, archs) {
            Some(result) => result,
            None => parse_with_serde(line, archs),
        }
    }

    /// Sets `key` to `value`; `seen` has a bit per key of [`KEYS`] already given.
    fn set(
        &mut self,
        seen: &mut u16,
        key: &str,
        value: Scalar<'_>,
        archs: &ArchNames,
    ) -> Result<(), String> {
        let index = key_index(key)
            .ok_or_else(|| format!("unknown key `{key}`; known keys: {}", KEYS.join(", ")))?;
        if *seen & (1 << index) != 0 {
            return Err(format!("`{key}` is given twice"));
        }
        *seen |= 1 << index;
        if matches!(value, Scalar::Null) {
            return Ok(());
        }
        let slot = match index {
            0 => {
                self.arch = Some(arch_value(value, archs)?);
                return Ok(());
            }
            7 => {
                self.carveout = Some(carveout_value(value)?);
                return Ok(());
            }
            1 => &mut self.block,
            2 => &mut self.registers,
            3 => &mut self.static_smem,
            4 => &mut self.dynamic_smem,
            5 => &mut self.barriers,
            6 => &mut self.max_threads,
            _ => &mut self.max_dynamic_smem,
        };
        *slot = Some(count_value(key, value)?);
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

/// The position of `key` in [`KEYS`] (a `match`: compared by length first, then bytes).
fn key_index(key: &str) -> Option<usize> {
    let index = match key {
        "arch" => 0,
        "block" => 1,
        "registers" => 2,
        "static_smem" => 3,
        "dynamic_smem" => 4,
        "barriers" => 5,
        "max_threads" => 6,
        "carveout" => 7,
        "max_dynamic_smem" => 8,
        _ => return None,
    };
    debug_assert_eq!(KEYS[index], key);
    Some(index)
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

fn arch_value(value: Scalar<'_>, archs: &ArchNames) -> Result<&'static ArchFacts, String> {
    match value {
        // A row's own name (`sm_90`) is that row: no grammar to run.
        Scalar::Text(name) => match occupancy_core::arch::all()
            .iter()
            .find(|facts| facts.name == name)
        {
            Some(facts) => Ok(facts),
            None => archs.lookup(name),
        },
        Scalar::Unsigned(number) => archs.lookup(&number.to_string()),
        Scalar::OtherNumber(text) => archs.lookup(text),
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
        Scalar::Unsigned(number) => match u8::try_from(number) {
            Ok(percent) if percent <= 100 => Ok(Carveout::Percent(percent)),
            _ => Err(invalid(occupancy_core::calc::CalcError::InvalidCarveout(
                number.to_string(),
            ))),
        },
        Scalar::Other(text) => Err(format!(
            "`carveout` must be \"default\" or 0..100, got {text}"
        )),
        Scalar::Null => unreachable!("null is absent"),
    }
}

/// A flat line of plain values, read by the fast scanner; `None`: any other JSON (or none).
fn parse_fast(line: &str, archs: &ArchNames) -> Option<Result<BatchLine, String>> {
    let mut parsed = BatchLine::default();
    let mut seen = 0u16;
    let scanned = fast::scan(line, |key, value| parsed.set(&mut seen, key, value, archs))?;
    Some(scanned.map(|()| parsed))
}

/// Any JSON the fast scanner leaves: serde_json reads it, the same rules apply.
fn parse_with_serde(line: &str, archs: &ArchNames) -> Result<BatchLine, String> {
    let object = match serde_json::from_str::<Members>(line) {
        Ok(Members(members)) => members,
        Err(error) => {
            return Err(match serde_json::from_str::<Value>(line) {
                Ok(_) => "expected a JSON object".into(),
                Err(_) => format!("not JSON: {error}"),
            })
        }
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
        parsed.set(&mut seen, key, scalar, archs)?;
    }
    Ok(parsed)
}

/// A JSON object's members in order, every one kept: a `serde_json` map keeps the last of a
/// key given twice, so `{"bl\u006fck": 1, "block": 2}` (the fast reader leaves escapes to this
/// one) read as one `block` (issue #35, class 9).
struct Members(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Members, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = access.next_entry::<String, Value>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

mod fast;
mod write;

pub use write::{AnswerWriter, Field};

/// How a batch ended (a write that failed, a closed pipe among them, is the `io::Error` of
/// [`answer_all`]: the caller says what it means).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchEnd {
    /// Every line answered; this many were bad (each got an `{"error": ...}` answer).
    Finished { bad_lines: u64 },
    /// The reader stopped answering, or a line ran past [`MAX_LINE_BYTES`] (`/dev/zero`): the
    /// batch ends here with this message.
    ReadError(String),
}

/// Answers every line of `input` on `out`. Lines are read in place from the reader's buffer
/// (copied only when one spans the buffer's end, up to [`MAX_LINE_BYTES`]) and answers gather
/// in one buffer written out in 64 KiB pieces. A line longer than the cap ends the batch with a
/// message naming its number and the cap: memory never holds more than one line of 1 MiB.
pub fn answer_all(
    input: &mut impl BufRead,
    input_name: &str,
    out: &mut impl Write,
    archs: &ArchNames,
    defaults: (Option<&'static ArchFacts>, Option<u32>),
    fields: Option<&[Field]>,
) -> std::io::Result<BatchEnd> {
    answer_all_capped(
        input,
        input_name,
        out,
        archs,
        defaults,
        fields,
        MAX_LINE_BYTES,
    )
}

/// [`answer_all`] with lines of at most `max_line_bytes`.
fn answer_all_capped(
    input: &mut impl BufRead,
    input_name: &str,
    out: &mut impl Write,
    archs: &ArchNames,
    defaults: (Option<&'static ArchFacts>, Option<u32>),
    fields: Option<&[Field]>,
    max_line_bytes: usize,
) -> std::io::Result<BatchEnd> {
    let mut batch = Batch {
        writer: AnswerWriter::new(fields),
        archs,
        defaults,
        answers: Vec::with_capacity(OUTPUT_CHUNK_BYTES + 4096),
        bad_lines: 0,
    };
    let mut lines = BoundedLines::new(input, max_line_bytes);
    loop {
        match lines.next_line(|line, number| batch.answer(line, number)) {
            Ok(Some(())) => {}
            Ok(None) => break,
            Err(LineError::Read { line, error }) => {
                return batch.stop(out, input_name, line, &error)
            }
            Err(too_long @ LineError::TooLong { .. }) => {
                let message = format!(
                    "{}; the batch stops here (a batch line holds one JSON object)",
                    too_long.message(&format!("the batch input {input_name}"))
                );
                return batch.end(out, message);
            }
        }
        if batch.answers.len() >= OUTPUT_CHUNK_BYTES {
            batch.flush(out)?;
        }
    }
    batch.flush(out)?;
    Ok(BatchEnd::Finished {
        bad_lines: batch.bad_lines,
    })
}

/// Answers gather until this many bytes, then go out in one write.
const OUTPUT_CHUNK_BYTES: usize = 1 << 16;

/// A batch in progress: the answer writer, the defaults and the answers not yet written out.
struct Batch<'f> {
    writer: AnswerWriter<'f>,
    archs: &'f ArchNames,
    defaults: (Option<&'static ArchFacts>, Option<u32>),
    answers: Vec<u8>,
    bad_lines: u64,
}

impl Batch<'_> {
    /// Appends the answer to line `number` (without its newline).
    fn answer(&mut self, line: &[u8], number: u64) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let answered = std::str::from_utf8(line)
            .map_err(|_| "not UTF-8".to_string())
            .and_then(|line| BatchLine::parse(line, self.archs))
            .and_then(|parsed| parsed.resolve(self.defaults.0, self.defaults.1));
        match answered {
            Ok((arch, kernel, launch)) => {
                self.writer.write(&mut self.answers, arch, &kernel, &launch)
            }
            Err(message) => {
                self.bad_lines += 1;
                let error = serde_json::json!({ "error": format!("line {number}: {message}") });
                self.answers.extend_from_slice(error.to_string().as_bytes());
                self.answers.push(b'\n');
            }
        }
    }

    /// Ends the batch at a read error: the answers so far go out, then the one message.
    fn stop(
        &mut self,
        out: &mut impl Write,
        input_name: &str,
        number: u64,
        error: &std::io::Error,
    ) -> std::io::Result<BatchEnd> {
        self.end(
            out,
            format!(
                "reading the batch input {input_name} at line {number}: {error}; the batch stops here"
            ),
        )
    }

    /// Ends the batch: the answers so far go out, then `message`.
    fn end(&mut self, out: &mut impl Write, message: String) -> std::io::Result<BatchEnd> {
        self.flush(out)?;
        Ok(BatchEnd::ReadError(message))
    }

    /// Writes the gathered answers out.
    fn flush(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        let written = out.write_all(&self.answers);
        self.answers.clear();
        written
    }
}

#[cfg(test)]
mod tests;
