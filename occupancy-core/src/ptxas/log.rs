//! The streaming parser of ptxas's `-v` report (also what `nvcc --resource-usage` prints).
//!
//! A report is a sequence of sections, one per ptxas run (one per architecture and
//! translation unit):
//!
//! ```text
//! ptxas info    : 400 bytes gmem, 1024 bytes cmem[3]                 <- module line, opens a section
//! ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'      <- entry record starts
//! ptxas info    : Function properties for _Z1kPf
//!     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem <- entry record complete
//! ptxas info    : Compile time = 1.3 ms                              <- optional, joins the record
//! ptxas info    : Function properties for _Z3devPfi                  <- device function record
//!     136 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//! ```
//!
//! Memory is bounded by the records not yet taken (and the warnings), never by the log: lines
//! from other tools are classified and counted, not stored; a reader that takes finished
//! records as it goes ([`LogParser::take_finished_kernels`]) holds only the open ones; a line
//! longer than [`MAX_LINE_BYTES`] is skipped without being held.

use super::text;
use super::{
    demangle, may_be_mangled, BuildFailure, CompilerError, Diagnostic, KernelRecord, ParseError,
    ParseOutput, RecordSource, StackSize, MAX_BUILD_FAILURES, MAX_LINE_BYTES,
};

mod markers;
mod numbers;
mod prefix;
mod run_wide;

use numbers::{count, item_count};
use prefix::strip_ci_prefix;
use run_wide::{unquoted_entry_name, RunWide};

/// What one line of a log was, as returned by [`LogParser::feed_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineKind {
    /// Not ptxas's: another tool's output, passed through as context.
    Context,
    /// A ptxas line that was understood.
    Ptxas,
    /// A ptxas-looking line that was not understood or out of place; a [`Diagnostic`] was recorded.
    Diagnostic,
    /// A line that makes the log fail ([`LogParser::finish`] returns the first): a resource line
    /// that belongs to no record, or a figure of a record that cannot be read.
    Failure,
}

/// Parses a whole log. See [`LogParser`] for the streaming form.
pub fn parse_log(text: &str) -> Result<ParseOutput, ParseError> {
    let mut parser = LogParser::new();
    // A trailing newline ends the last line; it does not start an empty one.
    let body = text.strip_suffix('\n').unwrap_or(text);
    if !text.is_empty() {
        for line in body.split('\n') {
            parser.feed_line(line);
        }
    }
    parser.finish()
}

#[derive(Debug)]
struct OpenRecord {
    record: KernelRecord,
    has_properties: bool,
    awaiting_stack_line: bool,
    has_used_line: bool,
}

#[derive(Debug, Default)]
struct Section {
    arch: Option<String>,
    global_memory_bytes: Option<u64>,
    module_cmem: Vec<(u32, u64)>,
}

/// A warning or error naming a function whose record has not opened yet.
#[derive(Debug)]
struct PendingNote {
    /// Order of arrival, so that unclaimed warnings keep log order.
    sequence: usize,
    text: String,
    /// Index in `output.errors` for an error (its arch is filled in when a record claims it).
    error_index: Option<usize>,
}

/// What makes two callee records the same: name, arch, and frame, spill and stack figures.
type CalleeKey = (String, String, [Option<u64>; 4]);

/// Diagnostics kept per log; a log of garbage that looks like ptxas's is counted past this.
const MAX_DIAGNOSTICS: usize = 1000;

/// Demangled names cached per parser; past this many distinct names the cache starts over, so
/// that a log of millions of distinct kernels does not keep every name twice (a kernel's
/// records for its architectures come close together, which is what the cache is for).
const DEMANGLE_CACHE_ENTRIES: usize = 1 << 16;

/// A line over [`MAX_LINE_BYTES`] being skipped: its start (for the diagnostic) and length.
#[derive(Debug)]
struct LongLine {
    start: Vec<u8>,
    bytes: usize,
}

/// Streaming parser: feed it lines ([`feed_line`](Self::feed_line)) or byte chunks
/// ([`feed`](Self::feed)), then [`finish`](Self::finish).
#[derive(Debug)]
#[non_exhaustive]
pub struct LogParser {
    source: RecordSource,
    line_number: usize,
    partial_line: Vec<u8>,
    output: ParseOutput,
    section: Section,
    open_entry: Option<OpenRecord>,
    open_device: Option<OpenRecord>,
    /// Index in `output.kernels` of the record a following `Compile time` line belongs to.
    last_completed: Option<usize>,
    /// Device records read before their section named its architecture (`-G` prints them first).
    awaiting_arch: Vec<usize>,
    /// Notes by the function they name: claiming is one lookup per record.
    pending_notes: std::collections::HashMap<String, Vec<PendingNote>>,
    note_sequence: usize,
    /// Warnings that change every entry of a ptxas run (`run_wide`).
    run_wide: RunWide,
    /// Entry records already handed out by [`take_finished_kernels`](Self::take_finished_kernels).
    kernels_taken: usize,
    /// Module lines (`N bytes gmem`) read.
    modules_read: usize,
    long_line: Option<LongLine>,
    /// The longest line held: [`MAX_LINE_BYTES`] (smaller in tests).
    max_line_bytes: usize,
    seen_warnings: std::collections::HashSet<String>,
    seen_callees: std::collections::HashSet<CalleeKey>,
    /// The first record or line that makes the log untrustworthy (a record cut off, a resource
    /// line of no record, a figure that cannot be read): what [`finish`](Self::finish) returns.
    first_failure: Option<ParseError>,
    /// The last record is a device function and no `Compiling entry function` or module line
    /// has come since: a `Used` line now would show it was an entry whose first line is missing.
    device_record_unconfirmed: bool,
    /// Demangled names by mangled name: a kernel appears once per arch, demangling is the
    /// costliest step, and this is bounded by the number of distinct kernels.
    demangled_names: std::collections::HashMap<String, Option<String>, NameHasherBuilder>,
}

/// A fast non-cryptographic hash for the demangling cache (keys are the log's own names; no
/// adversary gains anything from collisions beyond slowing their own log down).
#[derive(Debug, Default, Clone, Copy)]
struct NameHasherBuilder;

#[derive(Debug, Default)]
struct NameHasher(u64);

impl std::hash::BuildHasher for NameHasherBuilder {
    type Hasher = NameHasher;
    fn build_hasher(&self) -> NameHasher {
        NameHasher(0)
    }
}

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
        }
        for &byte in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(SEED);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for LogParser {
    fn default() -> Self {
        Self::new()
    }
}

impl LogParser {
    /// A parser of `ptxas -v` / `nvcc -Xptxas -v` output.
    pub fn new() -> Self {
        Self::with_source(RecordSource::PtxasLog)
    }

    /// A parser whose records say they came from `source` (e.g. [`RecordSource::NvccResourceUsage`]).
    pub fn with_source(source: RecordSource) -> Self {
        LogParser {
            source,
            line_number: 0,
            partial_line: Vec::new(),
            output: ParseOutput {
                kernels: Vec::new(),
                callees: Vec::new(),
                diagnostics: Vec::new(),
                warnings: Vec::new(),
                errors: Vec::new(),
                context_lines: 0,
                invalid_utf8_lines: 0,
                diagnostics_not_kept: 0,
                long_lines_skipped: 0,
                first_long_line: None,
                build_failures: Vec::new(),
                build_failures_not_kept: 0,
                lines: 0,
            },
            section: Section::default(),
            open_entry: None,
            open_device: None,
            last_completed: None,
            awaiting_arch: Vec::new(),
            pending_notes: std::collections::HashMap::new(),
            note_sequence: 0,
            run_wide: RunWide::default(),
            kernels_taken: 0,
            modules_read: 0,
            long_line: None,
            max_line_bytes: MAX_LINE_BYTES,
            seen_warnings: std::collections::HashSet::new(),
            seen_callees: std::collections::HashSet::new(),
            first_failure: None,
            device_record_unconfirmed: false,
            demangled_names: std::collections::HashMap::with_hasher(NameHasherBuilder),
        }
    }

    /// Feeds a chunk of bytes; lines may be split across chunks.
    ///
    /// Invalid UTF-8 is replaced by U+FFFD, line by line, and counted
    /// ([`ParseOutput::invalid_utf8_lines`]). A line longer than [`MAX_LINE_BYTES`] (counting
    /// every byte before its `\n`, a `\r` included) is skipped as it streams by, never held whole
    /// ([`ParseOutput::long_lines_skipped`]); a line of exactly that many bytes is read.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        let max = self.max_line_bytes;
        while let Some(end) = chunk.iter().position(|&byte| byte == b'\n') {
            let (line, rest) = chunk.split_at(end);
            if self.long_line.is_some() || self.partial_line.len() + line.len() > max {
                self.skip_long_line_part(line);
                self.end_long_line();
            } else if self.partial_line.is_empty() {
                self.feed_bytes_line(line);
            } else {
                let mut whole = std::mem::take(&mut self.partial_line);
                whole.extend_from_slice(line);
                self.feed_bytes_line(&whole);
            }
            chunk = &rest[1..];
        }
        if self.long_line.is_some() || self.partial_line.len() + chunk.len() > max {
            self.skip_long_line_part(chunk);
        } else {
            self.partial_line.extend_from_slice(chunk);
        }
    }

    fn feed_bytes_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        if matches!(text, std::borrow::Cow::Owned(_)) {
            self.output.invalid_utf8_lines += 1;
        }
        self.feed_line(&text);
    }

    /// Takes `part` of an over-long line: keeps its first bytes for the diagnostic, counts the rest.
    fn skip_long_line_part(&mut self, part: &[u8]) {
        const SHOWN_BYTES: usize = 120;
        let long_line = self.long_line.get_or_insert_with(|| {
            let mut start = std::mem::take(&mut self.partial_line);
            let bytes = start.len();
            start.truncate(SHOWN_BYTES);
            LongLine { start, bytes }
        });
        long_line.bytes += part.len();
        let room = SHOWN_BYTES.saturating_sub(long_line.start.len());
        long_line
            .start
            .extend_from_slice(&part[..part.len().min(room)]);
    }

    /// An over-long line ended: it counts as a line, and is named when it may have mattered
    /// (it starts like ptxas's, or a record was open: a resource line cannot be that long).
    fn end_long_line(&mut self) {
        let Some(long_line) = self.long_line.take() else {
            return;
        };
        self.line_number += 1;
        self.output.long_lines_skipped += 1;
        self.output.first_long_line.get_or_insert(self.line_number);
        let start = String::from_utf8_lossy(&long_line.start);
        let trimmed = ascii_trim_start(strip_msbuild_prefix(ascii_trim_start(strip_ci_prefix(
            &start,
        ))));
        let looks_like_ptxas = trimmed.starts_with("ptxas") || is_stack_line(trimmed);
        if looks_like_ptxas || self.open_entry.is_some() || self.open_device.is_some() {
            let message = format!(
                "line of {} bytes, longer than any ptxas line ({} bytes): skipped unread",
                long_line.bytes, self.max_line_bytes
            );
            self.diagnostic(&format!("{start}..."), message);
        } else {
            self.output.context_lines += 1;
        }
    }

    /// Feeds one line (without its newline) and says what it was.
    ///
    /// A CI system's prefix (a GitHub Actions or GitLab timestamp, Jenkins' or Buildkite's time
    /// in brackets, docker buildkit's `#12 0.345`) is stripped first, then MSBuild's `N>`.
    pub fn feed_line(&mut self, line: &str) -> LineKind {
        self.line_number += 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = strip_ci_prefix(line);
        let trimmed = ascii_trim_start(strip_msbuild_prefix(ascii_trim_start(line)));
        if let Some(after) = trimmed.strip_prefix("ptxas") {
            if after.is_empty() || after.starts_with([' ', '\t']) {
                return self.ptxas_line(line, after);
            }
        }
        if is_stack_line(trimmed) {
            return self.stack_line(line, trimmed);
        }
        if is_other_tool_error(trimmed) {
            self.compiler_error(line, None);
            return LineKind::Ptxas;
        }
        if let Some(kind) = self.embedded_ptxas_line(line) {
            return kind;
        }
        if let Some(marker) = markers::build_failure(trimmed) {
            self.build_failure(marker, trimmed);
        }
        self.output.context_lines += 1;
        LineKind::Context
    }

    /// Keeps the first [`MAX_BUILD_FAILURES`] lines that say the build failed; counts the rest.
    fn build_failure(&mut self, marker: &'static str, trimmed: &str) {
        if self.output.build_failures.len() < MAX_BUILD_FAILURES {
            self.output.build_failures.push(BuildFailure {
                line_number: self.line_number,
                marker,
                line: ascii_trim(trimmed).to_string(),
            });
        } else {
            self.output.build_failures_not_kept += 1;
        }
    }

    /// A ptxas line behind text this reader does not strip (an unknown CI prefix, a line of
    /// another tool that ptxas's output was written into): a record line there is a resource
    /// line of no record, an error line is the compile's error, anything else a diagnostic.
    /// `None`: the line holds no such thing.
    fn embedded_ptxas_line(&mut self, line: &str) -> Option<LineKind> {
        let (at, severity, message) = embedded_ptxas(line)?;
        let prefix = &line[..at];
        match severity {
            Severity::Error | Severity::Fatal => {
                self.compiler_error(&line[at..], quoted_function_name(message));
                Some(LineKind::Ptxas)
            }
            Severity::Info if is_record_message(message) => {
                let what = format!(
                    "a ptxas record line behind other text (`{}`)",
                    prefix.trim()
                );
                self.orphan(line, what, EMBEDDED_HELP);
                Some(LineKind::Failure)
            }
            _ => Some(self.diagnostic(
                line,
                format!(
                    "ptxas line behind other text (`{}`), not read",
                    prefix.trim()
                ),
            )),
        }
    }

    /// Records the first failure of the log (what `finish` returns); later ones add nothing.
    fn fail(&mut self, error: ParseError) {
        if self.first_failure.is_none() {
            self.first_failure = Some(error);
        }
    }

    /// A resource line that belongs to no record: the log misses a kernel it compiled.
    fn orphan(&mut self, line: &str, what: String, help: &str) {
        self.fail(ParseError::Orphan {
            line_number: self.line_number,
            line: ascii_trim(line).to_string(),
            what,
            help: help.to_string(),
        });
    }

    /// A figure of `open`'s record that cannot be read: the record is dropped and the log fails.
    fn unreadable(&mut self, open: &OpenRecord, line: &str, problem: String) {
        self.fail(ParseError::Unreadable {
            name: open.record.name.clone(),
            arch: arch_or_unknown(&open.record.arch),
            line_number: self.line_number,
            line: ascii_trim(line).to_string(),
            problem,
        });
    }

    /// Ends the log: returns the records, or the first record that was cut off, or the
    /// absence of any record.
    pub fn finish(mut self) -> Result<ParseOutput, ParseError> {
        if self.long_line.is_some() {
            self.end_long_line();
        } else if !self.partial_line.is_empty() {
            let rest = std::mem::take(&mut self.partial_line);
            self.feed_bytes_line(&rest);
        }
        if let Some(open) = self.open_device.take() {
            self.truncated(&open, "its `N bytes stack frame, ...` line never came");
        }
        if let Some(open) = self.open_entry.take() {
            self.close_entry(open);
        }
        if let Some(error) = self.first_failure {
            return Err(error);
        }
        self.drop_records_without_arch();
        let mut unclaimed: Vec<PendingNote> = self
            .pending_notes
            .drain()
            .flat_map(|(_, notes)| notes)
            .collect();
        unclaimed.sort_by_key(|note| note.sequence);
        for note in unclaimed {
            if note.error_index.is_none() {
                self.push_warning(note.text);
            }
        }
        for text in self.run_wide.unclaimed() {
            self.push_warning(text);
        }
        self.output.lines = self.line_number;
        let records = std::mem::take(&mut self.output.kernels);
        let (kernels, callees): (Vec<_>, Vec<_>) =
            records.into_iter().partition(|record| record.entry);
        self.output.kernels = kernels;
        for callee in callees {
            self.push_callee(callee);
        }
        if self.output.kernels.is_empty()
            && self.output.callees.is_empty()
            && self.kernels_taken == 0
        {
            return Err(ParseError::NoKernels {
                lines: self.line_number,
                modules: self.modules_read,
                failed_build: self.output.build_failures.first().cloned(),
                errors: self
                    .output
                    .errors
                    .into_iter()
                    .map(|error| error.text)
                    .collect(),
            });
        }
        Ok(self.output)
    }

    /// Hands out the entry records that no later line can change, in log order, and keeps the
    /// device functions among them as [`ParseOutput::callees`]: a streaming reader calls this
    /// after each chunk so that memory holds only the records still open.
    pub fn take_finished_kernels(&mut self) -> Vec<KernelRecord> {
        let mut finished = self.output.kernels.len();
        if let Some(index) = self.last_completed {
            finished = finished.min(index);
        }
        if let Some(&index) = self.awaiting_arch.iter().min() {
            finished = finished.min(index);
        }
        if self.device_record_unconfirmed {
            finished = finished.min(self.output.kernels.len().saturating_sub(1));
        }
        if finished == 0 {
            return Vec::new();
        }
        let mut kernels = Vec::new();
        let records: Vec<KernelRecord> = self.output.kernels.drain(..finished).collect();
        for record in records {
            if record.entry {
                kernels.push(record);
            } else {
                self.push_callee(record);
            }
        }
        if let Some(index) = self.last_completed.as_mut() {
            *index -= finished;
        }
        for index in &mut self.awaiting_arch {
            *index -= finished;
        }
        self.kernels_taken += kernels.len();
        kernels
    }

    /// Keeps a warning once: a log that compiles the same code many times repeats its warnings,
    /// and a repeat says nothing new (memory stays bounded by the distinct warnings).
    fn push_warning(&mut self, text: String) {
        if self.seen_warnings.insert(text.clone()) {
            self.output.warnings.push(text);
        }
    }

    /// Keeps a callee record once per distinct (name, arch, frame, spills): repeats of the same
    /// compile add nothing and would make memory grow with the log.
    fn push_callee(&mut self, record: KernelRecord) {
        let key = (
            record.name.clone(),
            record.arch.clone(),
            [
                record.stack_frame_bytes,
                record.spill_store_bytes,
                record.spill_load_bytes,
                record.cumulative_stack.and_then(StackSize::bytes),
            ],
        );
        if self.seen_callees.insert(key) {
            self.output.callees.push(record);
        }
    }

    /// Keeps the first [`MAX_DIAGNOSTICS`] diagnostics and counts the rest.
    fn push_diagnostic(&mut self, diagnostic: Diagnostic) {
        if self.output.diagnostics.len() < MAX_DIAGNOSTICS {
            self.output.diagnostics.push(diagnostic);
        } else {
            self.output.diagnostics_not_kept += 1;
        }
    }

    fn diagnostic(&mut self, line: &str, message: impl Into<String>) -> LineKind {
        let diagnostic = Diagnostic {
            line_number: self.line_number,
            line: line.to_string(),
            message: message.into(),
        };
        self.push_diagnostic(diagnostic);
        LineKind::Diagnostic
    }

    fn truncated(&mut self, open: &OpenRecord, missing: &str) {
        self.fail(ParseError::Truncated {
            name: open.record.name.clone(),
            arch: arch_or_unknown(&open.record.arch),
            line_number: open.record.line_number,
            missing: missing.to_string(),
        });
    }

    fn ptxas_line(&mut self, line: &str, after_tool: &str) -> LineKind {
        let Some((severity, message)) = split_severity(after_tool) else {
            return self.diagnostic(
                line,
                "ptxas line without `info`, `warning`, `error` or `fatal` before its `:`",
            );
        };
        match severity {
            Severity::Info => self.info_line(line, message),
            Severity::Warning => {
                self.last_completed = None;
                let text = line.trim().to_string();
                match quoted_function_name(message).or_else(|| unquoted_entry_name(message)) {
                    Some(function) => self.note_for_function(function, text, None),
                    None => match run_wide::scope(message) {
                        Some(scope) => self.run_wide.hold(scope, text),
                        None => self.push_warning(text),
                    },
                }
                LineKind::Ptxas
            }
            Severity::Error | Severity::Fatal => {
                self.last_completed = None;
                self.compiler_error(line, quoted_function_name(message));
                LineKind::Ptxas
            }
        }
    }

    /// Records an error of the compiler; one that names a function joins its record.
    fn compiler_error(&mut self, line: &str, function: Option<&str>) {
        let text = line.trim().to_string();
        self.output.errors.push(CompilerError {
            line_number: self.line_number,
            text: text.clone(),
            function: function.map(str::to_string),
            arch: None,
        });
        if let Some(function) = function {
            let index = self.output.errors.len() - 1;
            self.note_for_function(function, text, Some(index));
        }
    }

    fn note_for_function(&mut self, function: &str, text: String, error_index: Option<usize>) {
        for open in [self.open_device.as_mut(), self.open_entry.as_mut()]
            .into_iter()
            .flatten()
        {
            if open.record.name == function {
                if let Some(index) = error_index {
                    open.record.errors.push(text);
                    let arch = &open.record.arch;
                    self.output.errors[index].arch = (!arch.is_empty()).then(|| arch.clone());
                } else {
                    open.record.warnings.push(text);
                }
                return;
            }
        }
        self.note_sequence += 1;
        self.pending_notes
            .entry(function.to_string())
            .or_default()
            .push(PendingNote {
                sequence: self.note_sequence,
                text,
                error_index,
            });
    }

    fn claim_notes(&mut self, record: &mut KernelRecord) {
        let Some(notes) = self.pending_notes.remove(&record.name) else {
            return;
        };
        for note in notes {
            match note.error_index {
                Some(index) => {
                    record.errors.push(note.text);
                    if !record.arch.is_empty() {
                        self.output.errors[index].arch = Some(record.arch.clone());
                    }
                }
                None => record.warnings.push(note.text),
            }
        }
    }

    fn new_record(&mut self, name: &str, arch: String, entry: bool) -> KernelRecord {
        let demangled = if !may_be_mangled(name) {
            None
        } else {
            match self.demangled_names.get(name) {
                Some(demangled) => demangled.clone(),
                None => {
                    let demangled = demangle(name);
                    if self.demangled_names.len() >= DEMANGLE_CACHE_ENTRIES {
                        self.demangled_names.clear();
                    }
                    self.demangled_names
                        .insert(name.to_string(), demangled.clone());
                    demangled
                }
            }
        };
        KernelRecord {
            module_cmem: self.section.module_cmem.clone(),
            global_memory_bytes: self.section.global_memory_bytes,
            line_number: self.line_number,
            ..KernelRecord::new(name, demangled, arch, entry, self.source)
        }
    }

    fn info_line(&mut self, line: &str, message: &str) -> LineKind {
        if let Some(rest) = message.strip_prefix("Compile time = ") {
            let Some(index) = self.last_completed.take() else {
                return self
                    .diagnostic(line, "`Compile time` line that follows no completed record");
            };
            return match rest
                .trim_end()
                .strip_suffix("ms")
                .map(str::trim)
                .and_then(|ms| ms.parse::<f64>().ok())
            {
                Some(ms) if ms.is_finite() => {
                    self.output.kernels[index].compile_time_ms = Some(ms);
                    LineKind::Ptxas
                }
                _ => self.diagnostic(line, "`Compile time` not in the form `X ms`"),
            };
        }
        self.last_completed = None;
        if let Some(rest) = message.strip_prefix("Compiling entry function ") {
            let Some((name, arch)) = parse_compiling(rest) else {
                return self.diagnostic(
                    line,
                    "expected `Compiling entry function 'NAME' for 'sm_XX'`",
                );
            };
            self.start_entry(name, arch);
            return LineKind::Ptxas;
        }
        if let Some(name) = message.strip_prefix("Function properties for ") {
            let name = name.trim();
            if name.is_empty() || name.bytes().any(|byte| byte.is_ascii_whitespace()) {
                return self.diagnostic(line, "expected `Function properties for NAME`");
            }
            self.function_properties(name);
            return LineKind::Ptxas;
        }
        if let Some(rest) = message.strip_prefix("Used ") {
            return self.used_line(line, rest);
        }
        if message.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            return self.module_line(line, message);
        }
        if let Some(rest) = message.strip_prefix("Overriding ") {
            // Register-limit notes: `Overriding maximum register limit 256 for 'NAME' with  32
            // of maxrregcount option` names its function; `Overriding global maxrregcount 32
            // with entry-specific value 64 computed using thread count` does not.
            let text = ascii_trim(line).to_string();
            let function = rest
                .split_once(" for '")
                .and_then(|(_, after)| after.split_once('\''))
                .map(|(name, _)| name)
                .filter(|name| {
                    !name.is_empty() && !name.bytes().any(|byte| byte.is_ascii_whitespace())
                });
            match function {
                Some(function) => self.note_for_function(function, text, None),
                None => self.push_warning(text),
            }
            return LineKind::Ptxas;
        }
        if is_advisory_code(message) {
            // `(C7511) Potential Performance Loss: ... in the function 'NAME'`: ptxas prints
            // its C7xxx advice as info; it is kept as a warning of the function it names.
            let text = ascii_trim(line).to_string();
            match quoted_function_name(message) {
                Some(function) => self.note_for_function(function, text, None),
                None => self.push_warning(text),
            }
            return LineKind::Ptxas;
        }
        self.diagnostic(line, "ptxas info line not understood")
    }

    fn start_entry(&mut self, name: &str, arch: &str) {
        self.device_record_unconfirmed = false;
        if let Some(open) = self.open_device.take() {
            self.truncated(&open, "its `N bytes stack frame, ...` line never came");
        }
        if let Some(open) = self.open_entry.take() {
            self.close_entry(open);
        }
        if self.section.arch.as_deref() != Some(arch) {
            if self.section.arch.is_some() {
                // A new architecture without a module line: a new ptxas run whose module
                // printed nothing module-wide.
                self.section = Section::default();
                self.run_wide.open_section();
            } else {
                self.run_wide.join_section();
            }
            self.section.arch = Some(arch.to_string());
            for index in std::mem::take(&mut self.awaiting_arch) {
                self.output.kernels[index].arch = arch.to_string();
            }
        }
        let mut record = self.new_record(name, arch.to_string(), true);
        self.claim_notes(&mut record);
        for text in self.run_wide.for_entry(arch) {
            if !record.warnings.iter().any(|held| held == text) {
                record.warnings.push(text.to_string());
            }
        }
        self.open_entry = Some(OpenRecord {
            record,
            has_properties: false,
            awaiting_stack_line: false,
            has_used_line: false,
        });
    }

    fn close_entry(&mut self, mut open: OpenRecord) {
        if open.has_properties && !open.awaiting_stack_line && open.has_used_line {
            settle_stack(&mut open.record);
            self.output.kernels.push(open.record);
        } else if !open.has_used_line {
            self.truncated(&open, "its `Used N registers` line never came");
        } else {
            self.truncated(&open, "its `Function properties` lines never came");
        }
    }

    fn function_properties(&mut self, name: &str) {
        if let Some(open) = self.open_device.take() {
            self.truncated(&open, "its `N bytes stack frame, ...` line never came");
        }
        if let Some(open) = self.open_entry.as_mut() {
            if open.record.name == name && !open.has_properties {
                open.has_properties = true;
                open.awaiting_stack_line = true;
                return;
            }
            if open.awaiting_stack_line {
                let open = self.open_entry.take().expect("checked above");
                self.truncated(&open, "its `N bytes stack frame, ...` line never came");
            } else if open.has_used_line && open.has_properties {
                let open = self.open_entry.take().expect("checked above");
                self.close_entry(open);
            }
        }
        // A device function with its own frame; it belongs to the current section's architecture.
        let arch = self.section.arch.clone().unwrap_or_default();
        let mut record = self.new_record(name, arch, false);
        self.claim_notes(&mut record);
        self.open_device = Some(OpenRecord {
            record,
            has_properties: true,
            awaiting_stack_line: true,
            has_used_line: false,
        });
    }

    fn stack_line(&mut self, line: &str, trimmed: &str) -> LineKind {
        self.last_completed = None;
        let awaited = self.open_device.is_some()
            || self
                .open_entry
                .as_ref()
                .is_some_and(|open| open.awaiting_stack_line);
        if !awaited {
            self.poison_open_records(&format!(
                "a stack frame line of another compilation (line {}) came inside its record",
                self.line_number
            ));
            self.orphan(
                line,
                "a stack frame line that follows no `Function properties for NAME` line".into(),
                ORPHAN_HELP,
            );
            return LineKind::Failure;
        }
        let (frame, stores, loads) = match parse_stack_line(trimmed) {
            Ok(figures) => figures,
            Err(problem) => {
                let open = self.open_device.take().or_else(|| self.open_entry.take());
                if let Some(open) = open {
                    self.unreadable(&open, line, problem);
                }
                return LineKind::Failure;
            }
        };
        let fill = |record: &mut KernelRecord| {
            record.stack_frame_bytes = Some(frame);
            record.spill_store_bytes = Some(stores);
            record.spill_load_bytes = Some(loads);
        };
        if let Some(mut open) = self.open_device.take() {
            fill(&mut open.record);
            let arch_known = !open.record.arch.is_empty();
            self.output.kernels.push(open.record);
            let index = self.output.kernels.len() - 1;
            if !arch_known {
                self.awaiting_arch.push(index);
            }
            self.device_record_unconfirmed = true;
            self.last_completed = Some(index);
        } else if let Some(open) = self.open_entry.as_mut() {
            fill(&mut open.record);
            open.awaiting_stack_line = false;
            if open.has_used_line {
                self.complete_entry();
            }
        }
        LineKind::Ptxas
    }

    /// Lines out of place inside an open record mean two compilations' output is interleaved:
    /// the record cannot be trusted, so it becomes an error rather than a guess.
    fn poison_open_records(&mut self, why: &str) {
        for open in [self.open_device.take(), self.open_entry.take()]
            .into_iter()
            .flatten()
        {
            self.truncated(&open, why);
        }
    }

    /// Device functions whose section ended before it named an architecture are dropped with a
    /// diagnostic rather than given a guessed one.
    fn drop_records_without_arch(&mut self) {
        for index in std::mem::take(&mut self.awaiting_arch).into_iter().rev() {
            let record = self.output.kernels.remove(index);
            if self
                .last_completed
                .is_some_and(|completed| completed >= index)
            {
                self.last_completed = None;
            }
            self.push_diagnostic(Diagnostic {
                line_number: record.line_number,
                line: format!("ptxas info    : Function properties for {}", record.name),
                message: "device function whose architecture is never named (no `Compiling entry function ... for 'sm_XX'` line in its section); record dropped".to_string(),
            });
        }
    }

    fn complete_entry(&mut self) {
        let mut open = self.open_entry.take().expect("an open entry record");
        settle_stack(&mut open.record);
        self.output.kernels.push(open.record);
        self.last_completed = Some(self.output.kernels.len() - 1);
    }

    /// A `Used` line with no open entry after a device function's record: `Function properties`,
    /// a stack line and `Used` are an entry whose `Compiling entry function` line is missing (a
    /// cut log), not a device function. The record is taken back and reported as cut off.
    fn entry_without_its_compiling_line(&mut self) {
        if !std::mem::take(&mut self.device_record_unconfirmed) {
            return;
        }
        let index = self.output.kernels.len() - 1;
        let record = self
            .output
            .kernels
            .pop()
            .expect("a device record was just read");
        self.awaiting_arch.retain(|&waiting| waiting != index);
        self.last_completed = None;
        let open = OpenRecord {
            record,
            has_properties: true,
            awaiting_stack_line: false,
            has_used_line: true,
        };
        self.truncated(&open, "its `Compiling entry function` line is missing");
    }

    fn used_line(&mut self, line: &str, rest: &str) -> LineKind {
        if self.open_entry.is_none() {
            self.entry_without_its_compiling_line();
            if self.first_failure.is_none() {
                self.orphan(
                    line,
                    "a `Used N registers` line that belongs to no `Compiling entry function` record"
                        .into(),
                    ORPHAN_HELP,
                );
            }
            return LineKind::Failure;
        }
        if self
            .open_entry
            .as_ref()
            .is_some_and(|open| open.has_used_line || open.awaiting_stack_line)
        {
            // Its record has one already, or awaits its stack line: the open record is cut off.
            self.poison_open_records(&format!(
                "a `Used` line of another compilation (line {}) came inside its record",
                self.line_number
            ));
            return LineKind::Failure;
        }
        let Some(mut open) = self.open_entry.take() else {
            return LineKind::Failure;
        };
        let not_understood = match read_used_items(&mut open.record, rest) {
            Ok(not_understood) => not_understood,
            Err(problem) => {
                self.unreadable(&open, line, problem);
                return LineKind::Failure;
            }
        };
        open.has_used_line = true;
        let complete = open.has_properties && !open.awaiting_stack_line;
        self.open_entry = Some(open);
        if complete {
            self.complete_entry();
        }
        if not_understood.is_empty() {
            LineKind::Ptxas
        } else {
            let message = format!(
                "items not understood (the rest of the line was read): {}",
                not_understood.join(", ")
            );
            self.diagnostic(line, message)
        }
    }

    fn module_line(&mut self, line: &str, message: &str) -> LineKind {
        let mut section = Section::default();
        for item in message.split(',').map(ascii_trim) {
            let problem = match (item_count(item, "bytes gmem", u64::MAX), cmem_item(item)) {
                (Some(Ok(bytes)), _) => {
                    section.global_memory_bytes = Some(bytes);
                    continue;
                }
                (_, Some(Ok(bank))) => {
                    section.module_cmem.push(bank);
                    continue;
                }
                (Some(Err(problem)), _) | (_, Some(Err(problem))) => problem,
                (None, None) => format!("module line item `{item}` not understood (expected `N bytes gmem` or `N bytes cmem[B]`)"),
            };
            return self.diagnostic(line, problem);
        }
        if let Some(open) = self.open_device.take() {
            self.truncated(&open, "its `N bytes stack frame, ...` line never came");
        }
        if let Some(open) = self.open_entry.take() {
            self.close_entry(open);
        }
        self.drop_records_without_arch();
        self.device_record_unconfirmed = false;
        self.section = section;
        self.run_wide.open_section();
        self.modules_read += 1;
        LineKind::Ptxas
    }
}

/// An error of the compile printed by a tool other than ptxas: `nvcc error   : ...`,
/// `nvcc fatal   : ...`, the CUDA front end's `FILE(LINE): error: ...` (also `catastrophic
/// error`) and a host compiler's `FILE:LINE:COL: error: ...` / `fatal error: ...`.
fn is_other_tool_error(trimmed: &str) -> bool {
    if let Some(after) = trimmed.strip_prefix("nvcc") {
        let after = ascii_trim_start(after);
        return ["error", "fatal"].iter().any(|severity| {
            after
                .strip_prefix(severity)
                .is_some_and(|rest| ascii_trim_start(rest).starts_with(':'))
        });
    }
    [": error: ", ": fatal error: ", ": catastrophic error: "]
        .iter()
        .any(|marker| trimmed.contains(marker))
}

/// `(C7511) ...`: a ptxas advisory code (a `C` and digits in parentheses) opens the message.
fn is_advisory_code(message: &str) -> bool {
    let Some(rest) = message.strip_prefix("(C") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(')')
}

/// The items of a `Used` line after `Used ` into `record`: the register count first, then the
/// others (`used 1 barriers`, `8 bytes smem`, `380 bytes cmem[0]`, ...). A known item whose
/// figure cannot be read is an error naming what was not understood; the items this version does
/// not know are returned (the rest of the line is kept).
fn read_used_items<'a>(record: &mut KernelRecord, rest: &'a str) -> Result<Vec<&'a str>, String> {
    let mut items = comma_items(rest);
    let first = items.next().unwrap_or_default();
    let registers = match item_count(first, "registers", u64::from(u32::MAX)) {
        Some(read) => read?,
        None => {
            return Err(format!(
                "`{first}` where the register count (`N registers`) comes first"
            ))
        }
    };
    let mut not_understood = Vec::new();
    for item in items {
        match used_item(record, item) {
            Some(read) => read?,
            None => not_understood.push(item),
        }
    }
    record.registers = u32::try_from(registers).ok();
    Ok(not_understood)
}

/// The items after the register count of a `Used` line, by unit: where each goes.
#[derive(Debug, Clone, Copy)]
enum UsedSlot {
    CumulativeStack,
    Smem,
    Lmem,
    Textures,
    Samplers,
    Surfaces,
}

const USED_ITEMS: [(&str, u64, UsedSlot); 6] = [
    (
        "bytes cumulative stack size",
        u64::MAX,
        UsedSlot::CumulativeStack,
    ),
    ("bytes smem", u64::MAX, UsedSlot::Smem),
    ("bytes lmem", u64::MAX, UsedSlot::Lmem),
    ("textures", u32::MAX as u64, UsedSlot::Textures),
    ("samplers", u32::MAX as u64, UsedSlot::Samplers),
    ("surfaces", u32::MAX as u64, UsedSlot::Surfaces),
];

/// One item after the register count of a `Used` line into `record`: `None` when this version
/// does not know the item, `Some(Err)` when it knows it but cannot read its figure. An item as
/// ptxas prints it ends with its unit (one comparison per unit); only an item that ends with
/// none is searched for a unit inside it, to say what in it was not understood.
fn used_item(record: &mut KernelRecord, item: &str) -> Option<Result<(), String>> {
    let small = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
    if let Some(barriers) = item.strip_prefix("used ") {
        let count = item_count(barriers, "barriers", u64::from(u32::MAX))?;
        return Some(count.map(|count| record.barriers = Some(small(count))));
    }
    let ends = USED_ITEMS.iter().find(|(unit, _, _)| item.ends_with(unit));
    if ends.is_none() || item.ends_with(']') {
        if let Some(bank) = cmem_item(item) {
            return Some(bank.map(|bank| record.cmem.push(bank)));
        }
    }
    let (unit, max, slot) = ends.or_else(|| {
        USED_ITEMS
            .iter()
            .find(|(unit, _, _)| item_count(item, unit, 0).is_some())
    })?;
    let value = match item_count(item, unit, *max)? {
        Ok(value) => value,
        Err(problem) => return Some(Err(problem)),
    };
    match slot {
        UsedSlot::CumulativeStack => record.cumulative_stack = Some(StackSize::Bytes(value)),
        UsedSlot::Smem => record.static_smem_bytes = value,
        UsedSlot::Lmem => record.local_memory_bytes = Some(value),
        UsedSlot::Textures => record.textures = small(value),
        UsedSlot::Samplers => record.samplers = small(value),
        UsedSlot::Surfaces => record.surfaces = small(value),
    }
    Some(Ok(()))
}

/// The trimmed comma-separated items of a short line (a byte scan: memchr's set-up costs more
/// than it saves on items this short).
fn comma_items(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.bytes().position(|byte| byte == b',') {
            Some(comma) => {
                rest = Some(&current[comma + 1..]);
                Some(ascii_trim(&current[..comma]))
            }
            None => {
                rest = None;
                Some(ascii_trim(current))
            }
        }
    })
}

/// Trims spaces, tabs and line ends: ptxas output is ASCII, and this runs on every line.
fn ascii_trim(text: &str) -> &str {
    ascii_trim_start(text).trim_end_matches([' ', '\t', '\r', '\n'])
}

fn ascii_trim_start(text: &str) -> &str {
    let skip = text
        .bytes()
        .take_while(|byte| matches!(byte, b' ' | b'\t'))
        .count();
    &text[skip..]
}

/// Visual Studio (MSBuild) prefixes each line of a project's build output with `N>`.
fn strip_msbuild_prefix(line: &str) -> &str {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    match line[digits..].strip_prefix('>') {
        Some(rest) if digits > 0 => rest,
        _ => line,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    Info,
    Warning,
    Error,
    Fatal,
}

/// Splits `"    info    : message"` or `" /tmp/x.ptx, line 6; error   : message"` (what follows
/// `ptxas`) into its severity and message.
fn split_severity(after_tool: &str) -> Option<(Severity, &str)> {
    // Fast path: ptxas pads its severities to one width (`ptxas info    : `).
    for (prefix, severity) in [
        (" info    : ", Severity::Info),
        (" warning : ", Severity::Warning),
        (" error   : ", Severity::Error),
        (" fatal   : ", Severity::Fatal),
    ] {
        if let Some(message) = after_tool.strip_prefix(prefix) {
            return Some((severity, ascii_trim(message)));
        }
    }
    let mut search_from = 0;
    while let Some(offset) = after_tool[search_from..].find(':') {
        let colon = search_from + offset;
        let head = after_tool[..colon].trim_end();
        let severity = [
            ("info", Severity::Info),
            ("warning", Severity::Warning),
            ("error", Severity::Error),
            ("fatal", Severity::Fatal),
        ]
        .into_iter()
        .find(|(word, _)| {
            head.strip_suffix(word)
                .is_some_and(|before| before.is_empty() || before.ends_with([' ', '\t', ';']))
        });
        if let Some((_, severity)) = severity {
            return Some((severity, after_tool[colon + 1..].trim()));
        }
        search_from = colon + 1;
    }
    None
}

/// `'NAME' for 'sm_90'` → (`NAME`, `sm_90`).
fn parse_compiling(rest: &str) -> Option<(&str, &str)> {
    let (head, arch) = rest.trim_end().strip_suffix('\'')?.rsplit_once('\'')?;
    let name = head
        .strip_suffix(" for ")?
        .strip_prefix('\'')?
        .strip_suffix('\'')?;
    let valid = |text: &str| {
        !text.is_empty()
            && !text
                .bytes()
                .any(|byte| byte.is_ascii_whitespace() || byte == b'\'')
    };
    (valid(name) && valid(arch)).then_some((name, arch))
}

/// The function a warning or error is about: `function 'NAME'`, `function "NAME"` or
/// `Entry function 'NAME'`.
fn quoted_function_name(message: &str) -> Option<&str> {
    let at = message
        .find("function '")
        .map(|at| (at + "function '".len(), '\''))
        .or_else(|| {
            message
                .find("function \"")
                .map(|at| (at + "function \"".len(), '"'))
        })?;
    let (start, quote) = at;
    let rest = &message[start..];
    let end = rest.find(quote)?;
    let name = &rest[..end];
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(name)
}

/// `N bytes stack frame, N bytes spill stores, N bytes spill loads`; the error names the item
/// that was not understood and what is wrong with it.
fn parse_stack_line(trimmed: &str) -> Result<(u64, u64, u64), String> {
    let mut items = comma_items(trimmed);
    let mut figure = |unit: &str| -> Result<u64, String> {
        let item = items.next().unwrap_or_default();
        item_count(item, unit, u64::MAX)
            .unwrap_or_else(|| Err(format!("`{item}` where `N {unit}` was expected")))
    };
    let frame = figure("bytes stack frame")?;
    let stores = figure("bytes spill stores")?;
    let loads = figure("bytes spill loads")?;
    match items.next() {
        None => Ok((frame, stores, loads)),
        Some(extra) => Err(format!(
            "`{extra}` after the spill loads is not a form ptxas prints"
        )),
    }
}

/// `368 bytes cmem[0]` → (0, 368): `None` when the item is no `bytes cmem[...]` item; the
/// error names what in it was not understood.
fn cmem_item(item: &str) -> Option<Result<(u32, u64), String>> {
    let at = text::find(item, "bytes cmem[")?;
    let after_bracket = &item[at + "bytes cmem[".len()..];
    let read = || -> Result<(u32, u64), String> {
        let (bank, after) = after_bracket
            .split_once(']')
            .ok_or_else(|| format!("`{item}` has no `]` after its bank"))?;
        if !after.trim().is_empty() {
            return Err(format!(
                "`{}` after `{}` is not a form ptxas prints",
                after.trim(),
                &item[..item.len() - after.len()]
            ));
        }
        let bytes =
            count(&item[..at], u64::MAX).map_err(|problem| format!("in `{item}`, {problem}"))?;
        let bank = count(bank, u64::from(u32::MAX))
            .map_err(|problem| format!("in `{item}`, the bank: {problem}"))?;
        Ok((u32::try_from(bank).unwrap_or(u32::MAX), bytes))
    };
    Some(read())
}

/// `    128 bytes stack frame, ...`: one word (the number, however malformed), then ` bytes
/// stack frame`. A malformed number still makes a stack line, whose error then names it.
fn is_stack_line(trimmed: &str) -> bool {
    let word = trimmed
        .bytes()
        .take_while(|byte| !matches!(byte, b' ' | b'\t'))
        .count();
    word > 0
        && trimmed[word..].starts_with(" bytes stack frame")
        && trimmed[..word]
            .bytes()
            .all(|byte| byte.is_ascii_digit() || byte == b'-' || byte == b'+')
}

/// Messages of a ptxas record that open or fill a record: one of them is a resource line.
fn is_record_message(message: &str) -> bool {
    [
        "Compiling entry function ",
        "Function properties for ",
        "Used ",
    ]
    .iter()
    .any(|start| message.starts_with(start))
}

/// A ptxas line later in `line` than its start (`[build] ptxas info    : Used ...`): where
/// `ptxas` starts, the severity and the message. Only the padded form (`ptxas info    :`,
/// `ptxas error   :`) is taken, not a command line naming ptxas.
fn embedded_ptxas(line: &str) -> Option<(usize, Severity, &str)> {
    let mut from = 0;
    loop {
        let at = from + text::find(&line[from..], "ptxas")?;
        let after = &line[at + "ptxas".len()..];
        if at > 0 && after.starts_with([' ', '\t']) {
            let rest = ascii_trim_start(after);
            for (word, severity) in [
                ("info", Severity::Info),
                ("warning", Severity::Warning),
                ("error", Severity::Error),
                ("fatal", Severity::Fatal),
            ] {
                if let Some(message) = rest
                    .strip_prefix(word)
                    .map(ascii_trim_start)
                    .and_then(|rest| rest.strip_prefix(':'))
                {
                    return Some((at, severity, ascii_trim(message)));
                }
            }
        }
        from = at + "ptxas".len();
    }
}

fn arch_or_unknown(arch: &str) -> String {
    if arch.is_empty() {
        "unknown architecture".to_string()
    } else {
        arch.to_string()
    }
}

/// What to do about a resource line of no record.
const ORPHAN_HELP: &str = "the lines that open its record (`ptxas info : Compiling entry function 'K' for 'sm_XX'`, `Function properties for K`) are missing or were merged into another line, so a kernel of this log was never read; check the complete output of the build, unedited (a log cut inside a record, or parallel compiles' output mixed line by line, cannot be checked)";

/// What to do about a ptxas line behind a prefix this reader does not strip.
const EMBEDDED_HELP: &str = "its kernel's record cannot be read there, so a kernel of this log was never read; this reader strips CI timestamps (GitHub Actions, GitLab, Jenkins, Buildkite, docker buildkit) and MSBuild's `N>`, not this prefix: strip it from every line (e.g. `sed 's/^PREFIX//'`) and check the result";

/// An entry ptxas warned `Stack size for entry function 'K' cannot be statically determined`
/// about has an unknown stack, whatever cumulative size it printed (the frames it could see):
/// unknown is never a number (issue #42, class 9).
fn settle_stack(record: &mut KernelRecord) {
    if record
        .warnings
        .iter()
        .any(|warning| StackSize::unknown_in_warning(warning))
    {
        record.cumulative_stack = Some(StackSize::Unknown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_ARCHS: &str = "\
ptxas info    : 400 bytes gmem, 1024 bytes cmem[3], 8 bytes cmem[4]
ptxas info    : Compiling entry function '_ZN2ns5spillILi3EEEvPfPKf' for 'sm_75'
ptxas info    : Function properties for _ZN2ns5spillILi3EEEvPfPKf
    1480 bytes stack frame, 1768 bytes spill stores, 2580 bytes spill loads
ptxas info    : Used 64 registers, used 0 barriers, 1480 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 166.876 ms
ptxas info    : Function properties for _Z3devPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : 400 bytes gmem
ptxas info    : Compiling entry function 'smem' for 'sm_90'
ptxas info    : Function properties for smem
    128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 4 barriers, 128 bytes cumulative stack size, 4096 bytes smem
ptxas info    : Compile time = 10.567 ms
";

    #[test]
    fn reads_entries_device_functions_and_sections() {
        let output = parse_log(TWO_ARCHS).unwrap();
        assert_eq!(output.kernels.len(), 2);
        assert_eq!(output.callees.len(), 1);
        let spill = &output.kernels[0];
        assert_eq!(
            (
                spill.arch.as_str(),
                spill.entry,
                spill.registers,
                spill.barriers
            ),
            ("sm_75", true, Some(64), Some(0))
        );
        assert_eq!(
            (
                spill.stack_frame_bytes,
                spill.spill_store_bytes,
                spill.spill_load_bytes
            ),
            (Some(1480), Some(1768), Some(2580))
        );
        assert_eq!(spill.cmem, vec![(0, 368)]);
        assert_eq!(spill.module_cmem, vec![(3, 1024), (4, 8)]);
        assert_eq!(spill.global_memory_bytes, Some(400));
        assert_eq!(spill.compile_time_ms, Some(166.876));
        assert_eq!(
            spill.demangled.as_deref(),
            Some("void ns::spill<3>(float*, float const*)")
        );
        let device = &output.callees[0];
        assert_eq!(
            (
                device.name.as_str(),
                device.arch.as_str(),
                device.entry,
                device.registers
            ),
            ("_Z3devPfi", "sm_75", false, None)
        );
        let smem = &output.kernels[1];
        assert_eq!(
            (
                smem.arch.as_str(),
                smem.static_smem_bytes,
                smem.barriers,
                smem.module_cmem.len()
            ),
            ("sm_90", 4096, Some(4), 0)
        );
        assert!(output.diagnostics.is_empty(), "{:?}", output.diagnostics);
        assert_eq!(output.lines, TWO_ARCHS.lines().count());
    }

    #[test]
    fn device_functions_printed_before_their_entries_take_the_section_arch() {
        let log = "ptxas info    : 0 bytes gmem\nptxas info    : Function properties for _Z3devPfi\n    128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 24 registers, used 4 barriers\n";
        let output = parse_log(log).unwrap();
        assert_eq!(output.callees[0].arch, "sm_80");
        assert!(!output.callees[0].entry);
        assert_eq!(output.kernels.len(), 1);
    }

    /// Issue #42, class 9: ptxas's real text for a recursive kernel compiled with `-G` (nvcc
    /// 13.0, sm_90): the warning comes before the entry, whose cumulative size is what ptxas saw.
    #[test]
    fn an_entry_whose_stack_ptxas_cannot_determine_has_an_unknown_stack() {
        let log = "ptxas warning : Stack size for entry function 'recursive_rec' cannot be statically determined\nptxas info    : 0 bytes gmem\nptxas info    : Function properties for _Z3recfi\n    64 bytes stack frame, 28 bytes spill stores, 28 bytes spill loads\nptxas info    : Compile time = 3.990 ms\nptxas info    : Compiling entry function 'recursive_rec' for 'sm_90'\nptxas info    : Function properties for recursive_rec\n    64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 24 registers, used 0 barriers, 64 bytes cumulative stack size\nptxas info    : Compile time = 3.222 ms\n";
        let output = parse_log(log).unwrap();
        let kernel = &output.kernels[0];
        assert_eq!(kernel.name, "recursive_rec");
        assert_eq!(kernel.cumulative_stack, Some(StackSize::Unknown));
        assert_eq!(kernel.stack_frame_bytes, Some(64));
        let known = parse_log(&log.replace("ptxas warning : Stack size for entry function 'recursive_rec' cannot be statically determined\n", "")).unwrap();
        assert_eq!(
            known.kernels[0].cumulative_stack,
            Some(StackSize::Bytes(64))
        );
    }

    #[test]
    fn warnings_attach_to_the_kernel_they_name() {
        let log = "ptxas warning : Registers are spilled to local memory in function 'k', 8 bytes spill stores, 8 bytes spill loads\nptxas warning : Unrelated advice\nptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\nptxas info    : Used 255 registers, used 0 barriers, 8 bytes cumulative stack size\n";
        let output = parse_log(log).unwrap();
        assert_eq!(output.kernels[0].warnings.len(), 1);
        assert_eq!(
            output.warnings,
            vec!["ptxas warning : Unrelated advice".to_string()]
        );
    }

    /// nvcc 13.0's lines for `__launch_bounds__(1024, 4)` (more threads than an SM holds) and
    /// `__launch_bounds__(64, 24)` on sm_86 (more blocks than its 16 slots), as one nvcc command
    /// for sm_80 and sm_86 printed them: each section's warnings come before its module line, and
    /// the last record of the sm_80 section has the name the sm_86 warning gives.
    #[test]
    fn a_dropped_minimum_blocks_per_sm_warning_joins_its_kernel_on_its_arch() {
        let threads = "ptxas warning : Value of threads per SM for entry ignored_minimum is out of range. .minnctapersm will be ignored";
        let slots = "ptxas warning : Value of minnctapersm for entry slot_bound is out of range. minnctapersm will be ignored";
        let log = format!(
            "{threads}\nptxas info    : 0 bytes gmem\n{}{}{slots}\n{threads}\nptxas info    : 0 bytes gmem\n{}{}",
            record("slot_bound", "sm_80"),
            record("ignored_minimum", "sm_80"),
            record("slot_bound", "sm_86"),
            record("ignored_minimum", "sm_86"),
        );
        let output = parse_log(&log).unwrap();
        assert!(output.diagnostics.is_empty(), "{:?}", output.diagnostics);
        assert!(output.warnings.is_empty(), "{:?}", output.warnings);
        let warnings = |name: &str, arch: &str| warnings_of(&output, name, arch);
        assert_eq!(warnings("ignored_minimum", "sm_80"), [threads]);
        assert_eq!(warnings("ignored_minimum", "sm_86"), [threads]);
        assert!(warnings("slot_bound", "sm_80").is_empty());
        assert_eq!(warnings("slot_bound", "sm_86"), [slots]);
    }

    /// A minimal `-v` record of entry `name` on `arch`: 24 registers, no spills.
    fn record(name: &str, arch: &str) -> String {
        format!("ptxas info    : Compiling entry function '{name}' for '{arch}'\nptxas info    : Function properties for {name}\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 24 registers, used 0 barriers, 368 bytes cmem[0]\nptxas info    : Compile time = 1.0 ms\n")
    }

    /// The warnings the record of `name` on `arch` carries.
    fn warnings_of(output: &ParseOutput, name: &str, arch: &str) -> Vec<String> {
        output
            .kernels
            .iter()
            .find(|kernel| kernel.name == name && kernel.arch == arch)
            .map(|kernel| kernel.warnings.clone())
            .unwrap()
    }

    /// ptxas 13.0's register-cap warnings (docs/ptxas-formats.md): one naming its entry without
    /// quotes joins that entry; one of the command line (`-maxrregcount=8`, `-maxntid` beside
    /// `-maxrregcount`) joins every entry of its run, of the arch it names, and no other run's.
    #[test]
    fn register_cap_warnings_join_their_entries() {
        let raised = |arch: &str| {
            format!("ptxas warning : For profile {arch} adjusting per thread register count of 8 to lower bound of 24")
        };
        let conflict = "ptxas warning : Conflicting options -maxrregcount and -maxntid specified, ignoring -maxntid option";
        let entry = "ptxas warning : Too many maxnreg specified for entry big, will be ignored";
        let log = format!(
            "{}\n{conflict}\n{entry}\nptxas info    : 0 bytes gmem\n{}{}{}\n{conflict}\nptxas info    : 0 bytes gmem\n{}{}ptxas info    : 0 bytes gmem\n{}",
            raised("sm_80"),
            record("big", "sm_80"),
            record("k", "sm_80"),
            raised("sm_90"),
            record("big", "sm_90"),
            record("k", "sm_90"),
            record("k", "sm_100"),
        );
        let output = parse_log(&log).unwrap();
        assert!(output.diagnostics.is_empty(), "{:?}", output.diagnostics);
        assert!(output.warnings.is_empty(), "{:?}", output.warnings);
        let warnings = |name: &str, arch: &str| warnings_of(&output, name, arch);
        assert_eq!(
            warnings("big", "sm_80"),
            [entry, &raised("sm_80"), conflict]
        );
        assert_eq!(warnings("k", "sm_80"), [raised("sm_80").as_str(), conflict]);
        assert_eq!(warnings("k", "sm_90"), [raised("sm_90").as_str(), conflict]);
        assert_eq!(
            warnings("big", "sm_90"),
            [raised("sm_90").as_str(), conflict]
        );
        assert!(warnings("k", "sm_100").is_empty(), "a run after theirs");
        // With no run after it, the warning stays the log's.
        let output = parse_log(&format!("{}{conflict}\n", record("k", "sm_80"))).unwrap();
        assert_eq!(output.warnings, [conflict]);
    }

    /// The advisory line's form is quoted from NVIDIA/cutlass issue 1840
    /// (https://github.com/NVIDIA/cutlass/issues/1840, ptxas 12.x on sm_90a); the kernel name is
    /// shortened and the record lines around it are this project's own.
    #[test]
    fn c7xxx_advice_printed_as_info_becomes_a_warning_of_its_function() {
        let advice = "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function '_Z4gemmv'";
        let log = format!("{advice}\nptxas info    : Compiling entry function '_Z4gemmv' for 'sm_90a'\nptxas info    : Function properties for _Z4gemmv\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 168 registers, used 1 barriers, 99328 bytes smem\n{advice}\n");
        let output = parse_log(&log).unwrap();
        assert!(output.diagnostics.is_empty(), "{:?}", output.diagnostics);
        // Before the record: held until the record opens; after it: no open record, so it waits
        // for a later record of that name and ends up among the log's warnings.
        assert_eq!(output.kernels[0].warnings, vec![advice.to_string()]);
        assert_eq!(output.warnings, vec![advice.to_string()]);
        let general = "ptxas info    : (C7000) advice about nothing in particular\n";
        let output = parse_log(&format!("{general}{log}")).unwrap();
        assert_eq!(output.warnings.len(), 2);
    }

    #[test]
    fn cut_off_record_is_an_error_naming_it() {
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        let error = parse_log(log).unwrap_err();
        assert!(
            matches!(&error, ParseError::Truncated { name, .. } if name == "k"),
            "{error}"
        );
        assert!(error.to_string().contains("`k` for sm_90"), "{error}");
    }

    #[test]
    fn log_without_kernels_is_an_error() {
        let error = parse_log("gcc: note: nothing\n").unwrap_err();
        assert!(
            matches!(error, ParseError::NoKernels { lines: 1, .. }),
            "{error}"
        );
    }

    #[test]
    fn modules_without_an_entry_are_a_compile_without_kernels() {
        let host_only = "ptxas info    : 0 bytes gmem\nffi.cu:3:1: warning: unused parameter\n";
        let error = parse_log(host_only).unwrap_err();
        assert!(error.is_compile_without_kernels(), "{error}");
        assert!(
            error
                .to_string()
                .contains("1 module(s) and no entry function"),
            "{error}"
        );
        // ptxas's errors, or a line that says the build failed, are not that.
        let failed =
            "ptxas info    : 0 bytes gmem\nptxas fatal   : Ptx assembly aborted due to errors\n";
        assert!(!parse_log(failed).unwrap_err().is_compile_without_kernels());
        let stopped = "ptxas info    : 0 bytes gmem\nmake: *** [Makefile:3: k.o] Error 1\n";
        assert!(!parse_log(stopped).unwrap_err().is_compile_without_kernels());
    }

    #[test]
    fn unknown_ptxas_lines_become_diagnostics_and_context_passes() {
        let log = format!(
            "{TWO_ARCHS}ptxas info    : Something new in CUDA 14\nnvcc warning : deprecated\n"
        );
        let output = parse_log(&log).unwrap();
        assert_eq!(output.diagnostics.len(), 1, "{:?}", output.diagnostics);
        assert_eq!(output.diagnostics[0].line_number, 15);
        assert_eq!(output.context_lines, 1);
    }

    /// Issue 23 (round 2): a resource line that belongs to no record means a kernel of the log
    /// was never read: the log fails naming the line (it was a diagnostic, a warning).
    #[test]
    fn a_resource_line_of_no_record_fails_naming_its_line() {
        let orphan_used =
            format!("{TWO_ARCHS}nvcc warning : deprecated\nptxas info    : Used 3 registers\n");
        // The `Function properties` line merged into another tool's line: its stack line is alone.
        let merged_header = format!("{TWO_ARCHS}[ 50%] Building CUDA object k.cu.o ptxas info    : Function properties for k\n    0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n");
        let orphan_stack = format!("{TWO_ARCHS}cc -c x.c\n    0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n");
        for (log, line_number, what) in [
            (
                orphan_used,
                16,
                "belongs to no `Compiling entry function` record",
            ),
            (
                merged_header,
                15,
                "a ptxas record line behind other text (`[ 50%] Building CUDA object k.cu.o`)",
            ),
            (
                orphan_stack,
                16,
                "a stack frame line that follows no `Function properties for NAME` line",
            ),
        ] {
            let error = parse_log(&log).unwrap_err();
            match &error {
                ParseError::Orphan {
                    line_number: at,
                    what: said,
                    ..
                } => {
                    assert_eq!(*at, line_number, "{error}");
                    assert!(said.contains(what), "{error}");
                }
                other => panic!("{other}"),
            }
            assert!(error.to_string().contains("never read"), "{error}");
        }
    }

    /// Issue 23 (round 2): each wrong figure says what is wrong with it, and the record is not
    /// read as if it could be.
    #[test]
    fn figures_that_cannot_be_read_say_which_part() {
        let record = |used: &str, stack: &str| {
            format!("ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    {stack}\nptxas info    : Used {used}\n")
        };
        let fine = "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
        for (used, stack, problem) in [
            (
                "32 registers (8 uniform)",
                fine,
                "`(8 uniform)` after `32 registers` is not a form ptxas prints",
            ),
            (
                "99999999999 registers",
                fine,
                "`99999999999` does not fit in 32 bits (the largest is 4294967295)",
            ),
            ("-5 registers", fine, "`-5` is negative"),
            (
                "used 1 barriers",
                fine,
                "`used 1 barriers` where the register count (`N registers`) comes first",
            ),
            (
                "32 registers, used 99999999999 barriers",
                fine,
                "`99999999999` does not fit in 32 bits",
            ),
            ("32 registers, -8 bytes smem", fine, "`-8` is negative"),
            (
                "32 registers, 8 bytes cmem[0] extra",
                fine,
                "`extra` after `8 bytes cmem[0]` is not a form ptxas prints",
            ),
            (
                "32 registers",
                "-8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
                "`-8` is negative",
            ),
            (
                "32 registers",
                "0 bytes stack frame, 99999999999999999999 bytes spill stores, 0 bytes spill loads",
                "does not fit in 64 bits",
            ),
            (
                "32 registers",
                "0 bytes stack frame, 0 bytes spill stores",
                "`` where `N bytes spill loads` was expected",
            ),
        ] {
            let error = parse_log(&record(used, stack)).unwrap_err();
            let ParseError::Unreadable {
                name,
                arch,
                problem: said,
                ..
            } = &error
            else {
                panic!("{used} / {stack}: {error}");
            };
            assert_eq!((name.as_str(), arch.as_str()), ("k", "sm_90"));
            assert!(said.contains(problem), "{used} / {stack}: {error}");
            assert!(!error.to_string().contains("truncated"), "{error}");
        }
        // An item this version does not know is still a diagnostic, the rest read.
        let output = parse_log(&record("32 registers, 4 widgets", fine)).unwrap();
        assert_eq!(output.kernels[0].registers, Some(32));
        assert_eq!(output.diagnostics.len(), 1);
    }

    /// Issue 23 (round 2): a CI system's prefix on every line gives the records of the plain log.
    #[test]
    fn ci_prefixes_are_stripped_before_lines_are_read() {
        let plain = parse_log(TWO_ARCHS).unwrap();
        for prefix in ["2024-05-01T12:00:00.1234567Z ", "[12:00:00] ", "#12 0.345 "] {
            let prefixed: String = TWO_ARCHS
                .lines()
                .map(|line| format!("{prefix}{line}\n"))
                .collect();
            assert_eq!(
                parse_log(&prefixed).unwrap().kernels,
                plain.kernels,
                "{prefix:?}"
            );
        }
    }

    /// Issue 23 (round 2): the lines that say a build failed are kept with their line and marker,
    /// and a log without records names the failure instead of asking for `-Xptxas -v`.
    #[test]
    fn build_failures_are_kept_and_named() {
        let log = format!("{TWO_ARCHS}FAILED: CMakeFiles/k.dir/other.cu.o\nninja: build stopped: subcommand failed.\n");
        let output = parse_log(&log).unwrap();
        let failures: Vec<(usize, &str)> = output
            .build_failures
            .iter()
            .map(|failure| (failure.line_number, failure.marker))
            .collect();
        assert_eq!(
            failures,
            [
                (15, "ninja's `FAILED:` (a build step failed)"),
                (16, "ninja's `build stopped`")
            ]
        );
        let error =
            parse_log("[1/2] Building CUDA object k.cu.o\nSegmentation fault (core dumped)\n")
                .unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("shows a failed build (line 2: a `Segmentation fault`"),
            "{text}"
        );
        assert!(!text.contains("-Xptxas"), "{text}");
    }

    #[test]
    fn chunks_split_anywhere_give_the_same_records() {
        let whole = parse_log(TWO_ARCHS).unwrap();
        for chunk_size in [1, 7, 64] {
            let mut parser = LogParser::new();
            for chunk in TWO_ARCHS.as_bytes().chunks(chunk_size) {
                parser.feed(chunk);
            }
            assert_eq!(parser.finish().unwrap(), whole);
        }
    }

    #[test]
    fn severity_split_handles_paths_and_windows_drives() {
        assert_eq!(
            split_severity(" C:/tmp/x.ptx, line 6; error   : bad"),
            Some((Severity::Error, "bad"))
        );
        assert_eq!(
            split_severity(" info    : Used"),
            Some((Severity::Info, "Used"))
        );
        assert_eq!(split_severity(" nothing here"), None);
    }

    /// Issue 10.4: ptxas's `Function properties` for a callee is no kernel: no record among
    /// the kernels on any arch, kept once per arch among the callees with its frame.
    #[test]
    fn device_functions_are_callees_not_kernels() {
        let section = |arch: &str| {
            format!("ptxas info    : 0 bytes gmem\nptxas info    : Function properties for __internal_trig_reduction_slowpathd\n    40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Compiling entry function 'k' for '{arch}'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 24 registers, used 0 barriers\n")
        };
        let output = parse_log(&(section("sm_80") + &section("sm_90"))).unwrap();
        let kernels: Vec<(&str, &str)> = output
            .kernels
            .iter()
            .map(|record| (record.name.as_str(), record.arch.as_str()))
            .collect();
        assert_eq!(kernels, [("k", "sm_80"), ("k", "sm_90")]);
        assert!(output.kernels.iter().all(|record| record.entry));
        let callees: Vec<(&str, Option<u64>)> = output
            .callees
            .iter()
            .map(|record| (record.arch.as_str(), record.stack_frame_bytes))
            .collect();
        assert_eq!(callees, [("sm_80", Some(40)), ("sm_90", Some(40))]);
    }

    /// Issue 11.4: errors come back with the kernel and arch they name.
    #[test]
    fn errors_name_their_kernel_and_arch() {
        let log = "ptxas error   : Entry function 'too_big' uses too much shared data (0x27100 bytes, 0xc000 max)\nptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'too_big' for 'sm_80'\nptxas info    : Function properties for too_big\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 12 registers, used 1 barriers, 160000 bytes smem\nptxas fatal   : Ptx assembly aborted due to errors\n";
        let output = parse_log(log).unwrap();
        assert_eq!(output.errors.len(), 2);
        let first = &output.errors[0];
        assert_eq!(
            (
                first.line_number,
                first.function.as_deref(),
                first.arch.as_deref()
            ),
            (1, Some("too_big"), Some("sm_80"))
        );
        assert_eq!(output.errors[1].function, None);
        assert_eq!(output.kernels[0].errors.len(), 1);
        assert!(
            first.to_string().contains("kernel `too_big` on sm_80"),
            "{first}"
        );
    }

    #[test]
    fn nvcc_and_front_end_errors_are_errors_and_make_lines_are_not() {
        let log = format!("{TWO_ARCHS}nvcc fatal   : Unsupported gpu architecture 'compute_999'\nk.cu(3): error: identifier \"x\" is undefined\nhost.cpp:1:2: fatal error: y.h: No such file\nnvcc error   : 'ptxas' died due to signal 11\nmake: *** [Makefile:3: all] Error 1\nno errors: here\n");
        let output = parse_log(&log).unwrap();
        let lines: Vec<usize> = output
            .errors
            .iter()
            .map(|error| error.line_number)
            .collect();
        assert_eq!(lines, [15, 16, 17, 18]);
        assert_eq!(output.context_lines, 2);
    }

    /// Issue 11.7: a line over the limit is skipped as it streams by, and named when it looks
    /// like ptxas's; the records around it are read.
    #[test]
    fn over_long_lines_are_skipped_in_chunks() {
        let mut parser = LogParser::new();
        parser.feed(b"ptxas info    : 0 bytes gmem\n");
        parser.feed(b"ptxas info    : Used ");
        let filler = vec![b'7'; 64 << 10];
        for _ in 0..(2 * MAX_LINE_BYTES / filler.len()) {
            parser.feed(&filler);
            assert!(parser.partial_line.len() <= MAX_LINE_BYTES);
            assert!(parser.long_line.as_ref().map_or(0, |long| long.start.len()) <= 120);
        }
        parser.feed(b"\n");
        parser.feed(&vec![b'x'; MAX_LINE_BYTES + 1]);
        parser.feed(b"\n");
        parser.feed(TWO_ARCHS.as_bytes());
        let output = parser.finish().unwrap();
        assert_eq!(output.long_lines_skipped, 2);
        assert_eq!(output.diagnostics.len(), 1, "{:?}", output.diagnostics);
        assert_eq!(output.diagnostics[0].line_number, 2);
        assert!(output.diagnostics[0].message.contains("skipped unread"));
        assert_eq!(output.kernels.len(), 2);
        assert_eq!(output.lines, 3 + TWO_ARCHS.lines().count());
    }

    /// Issue 11.10: one policy for invalid UTF-8: each line read lossily, and counted.
    #[test]
    fn invalid_utf8_is_read_lossily_and_counted() {
        let mut bytes = TWO_ARCHS.as_bytes().to_vec();
        bytes.extend_from_slice(b"gcc: \xff\xfe note\n");
        let mut parser = LogParser::new();
        parser.feed(&bytes);
        let output = parser.finish().unwrap();
        assert_eq!(output.invalid_utf8_lines, 1);
        assert_eq!(output.kernels.len(), 2);
    }

    /// Taking finished records as the log streams gives the same records as parsing it whole,
    /// and never hands out a record a later line still changes (a `Compile time` line).
    #[test]
    fn taking_finished_records_while_streaming_changes_nothing() {
        let whole = parse_log(TWO_ARCHS).unwrap();
        for chunk_size in [1, 13, 100] {
            let mut parser = LogParser::new();
            let mut taken = Vec::new();
            for chunk in TWO_ARCHS.as_bytes().chunks(chunk_size) {
                parser.feed(chunk);
                taken.extend(parser.take_finished_kernels());
            }
            let rest = parser.finish().unwrap();
            taken.extend(rest.kernels.clone());
            assert_eq!(taken, whole.kernels);
            assert_eq!(rest.callees, whole.callees);
        }
    }

    /// A parser holding lines of at most `max` bytes (the cap made small for the properties).
    fn parser_with_cap(max: usize) -> LogParser {
        let mut parser = LogParser::new();
        parser.max_line_bytes = max;
        parser
    }

    /// The 64 Ki-entry demangling cache starts over instead of growing with distinct names.
    #[test]
    fn the_demangling_cache_is_bounded() {
        let mut parser = LogParser::new();
        for index in 0..(DEMANGLE_CACHE_ENTRIES + 10) {
            let name = format!("_Z13kernel{index:07}Pf");
            let record = parser.new_record(&name, "sm_90".into(), true);
            assert_eq!(
                record.demangled.as_deref(),
                Some(format!("kernel{index:07}(float*)").as_str())
            );
            assert!(parser.demangled_names.len() <= DEMANGLE_CACHE_ENTRIES);
        }
    }

    /// A line of exactly the cap is read, one byte more is skipped; the `\r` of a CRLF line
    /// counts toward the cap (then is dropped); a last line without `\n` is read at the end, or
    /// skipped there when it is too long, and the note names its line.
    #[test]
    fn the_cap_is_inclusive_and_counts_the_carriage_return() {
        let max = 200;
        let record_lines = TWO_ARCHS.lines().count();
        let filler = |bytes: usize| "m".repeat(bytes);
        for (first, skipped) in [
            (filler(max), 0),
            (filler(max - 1) + "\r", 0),
            (filler(max) + "\r", 1),
            (filler(max + 1), 1),
        ] {
            let text = format!("{first}\n{TWO_ARCHS}");
            for chunk_size in [1, 7, 4096] {
                let mut parser = parser_with_cap(max);
                for chunk in text.as_bytes().chunks(chunk_size) {
                    parser.feed(chunk);
                }
                let output = parser.finish().unwrap();
                assert_eq!(output.long_lines_skipped, skipped, "{first:?}");
                assert_eq!(output.first_long_line, (skipped == 1).then_some(1));
                assert_eq!(output.kernels.len(), 2);
                assert_eq!(output.lines, 1 + record_lines);
            }
        }
        for (last, skipped) in [(filler(max), 0), (filler(max + 1), 1)] {
            let mut parser = parser_with_cap(max);
            parser.feed(TWO_ARCHS.as_bytes());
            parser.feed(last.as_bytes());
            let output = parser.finish().unwrap();
            assert_eq!(output.long_lines_skipped, skipped);
            assert_eq!(output.lines, record_lines + 1);
            assert_eq!(
                output.first_long_line,
                (skipped == 1).then_some(record_lines + 1)
            );
        }
    }

    /// A log of `lines` (see the property) joined by `\n`, each line a record line of
    /// [`TWO_ARCHS`] or filler of a length around `max`, some with a `\r`.
    fn log_of(lines: &[(usize, bool, usize)], max: usize, trailing_newline: bool) -> Vec<u8> {
        let records: Vec<&str> = TWO_ARCHS.lines().collect();
        let mut text = Vec::new();
        for (index, (kind, crlf, length)) in lines.iter().enumerate() {
            if index > 0 {
                text.push(b'\n');
            }
            let filler = |bytes: usize| std::iter::repeat_n(b'm', bytes);
            match kind {
                // Record lines in order (some longer than the cap: then skipped).
                0..=3 => text.extend_from_slice(records[index % records.len()].as_bytes()),
                4 => text.extend(filler(max)),
                5 => text.extend(filler(max + 1)),
                6 => text.extend(filler(max - 1)),
                7 => text.extend(filler(max * 3 + length)),
                _ => text.extend(filler(*length)),
            }
            if *crlf {
                text.push(b'\r');
            }
        }
        if trailing_newline && !lines.is_empty() {
            text.push(b'\n');
        }
        text
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Whatever the chunking, line endings and lengths around the cap: the parser reads
        /// every line within the cap exactly as feeding that line alone reads it, skips (and
        /// counts) every longer one as if it were an empty line, and never holds more than the
        /// cap.
        #[test]
        fn chunked_feeding_reads_lines_within_the_cap_and_skips_the_rest(
            lines in proptest::collection::vec(
                (0usize..9, proptest::bool::weighted(0.2), 0usize..40),
                0..40,
            ),
            trailing_newline in proptest::bool::ANY,
            chunk_size in 1usize..70,
            max in 40usize..100,
        ) {
            let text = log_of(&lines, max, trailing_newline);
            // The reference: the lines split by hand, fed one by one, a long one as "".
            let mut reference = LogParser::new();
            let mut long = 0;
            if !text.is_empty() {
                for line in text.strip_suffix(b"\n").unwrap_or(&text).split(|&b| b == b'\n') {
                    if line.len() > max {
                        long += 1;
                        reference.feed_line("");
                    } else {
                        reference.feed_line(std::str::from_utf8(line).unwrap());
                    }
                }
            }
            let mut parser = parser_with_cap(max);
            for chunk in text.chunks(chunk_size) {
                parser.feed(chunk);
                proptest::prop_assert!(parser.partial_line.len() <= max);
                proptest::prop_assert!(
                    parser.long_line.as_ref().map_or(0, |line| line.start.len()) <= 120
                );
            }
            match (parser.finish(), reference.finish()) {
                (Ok(streamed), Ok(whole)) => {
                    proptest::prop_assert_eq!(streamed.long_lines_skipped, long);
                    proptest::prop_assert_eq!(streamed.first_long_line.is_some(), long > 0);
                    proptest::prop_assert_eq!(streamed.lines, whole.lines);
                    proptest::prop_assert_eq!(&streamed.kernels, &whole.kernels);
                    proptest::prop_assert_eq!(&streamed.callees, &whole.callees);
                    proptest::prop_assert_eq!(&streamed.errors, &whole.errors);
                }
                (streamed, whole) => proptest::prop_assert_eq!(streamed.err(), whole.err()),
            }
        }
    }
}
