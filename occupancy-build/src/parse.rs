//! The parse stage: each compile's ptxas report and PTX read into compiled kernels (records per
//! arch, the PTX entry each arch's SASS came from, where the kernel is defined), failing closed
//! when the report and the PTX disagree. Parsing itself is `occupancy_core::ptxas`.
//!
//! A kernel x arch the report does not cover (a compiler cache that replays no ptxas output, a
//! wrapper that drops nvcc's stderr) is read from the compile's own binary (`crate::own_binary`:
//! its cubins, by the cubin reader): the cubin holds the same facts. Only what neither says fails.
//!
//! No I/O and no process here: the read stage (`crate::compile_reads`) reads the files, before
//! [`reports`] and between [`wants`] and [`parse_compiled`]; `pipeline::parse_stage` orders them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::ptxas::{self, EntrySourceLine, KernelRecord, PtxEntry};

use crate::compile::{CompiledSource, Program};
use crate::context::Context;
use crate::ptx_summary::PtxSummary;
use crate::Error;

mod unnamed;

/// A compiled entry function on every arch it was compiled for.
#[derive(Debug)]
pub(crate) struct CompiledKernel<'a> {
    pub(crate) name: String,
    pub(crate) demangled: Option<String>,
    pub(crate) source: &'a CompiledSource,
    /// The entry in the first program that defines it (launch-bound defaults).
    pub(crate) ptx: Option<PtxEntry>,
    /// Where the kernel is defined, from the `-lineinfo` PTX's `.file`/`.loc` (read into the
    /// cache entry when the shipped PTX is stripped of them).
    pub(crate) defined_at: Option<EntrySourceLine>,
    /// For a `.ptx_file` source: the line of its `.entry` in that file.
    pub(crate) entry_line: Option<u32>,
    pub(crate) records: BTreeMap<String, KernelRecord>,
    /// Per arch: the program its SASS came from and the entry in that program's PTX.
    pub(crate) programs: BTreeMap<String, (&'a Program, PtxEntry)>,
}

impl CompiledKernel<'_> {
    /// The PTX entry this arch's SASS was assembled from.
    pub(crate) fn ptx_on(&self, arch: &str) -> Option<&PtxEntry> {
        self.programs
            .get(arch)
            .map(|(_, entry)| entry)
            .or(self.ptx.as_ref())
    }

    /// The compiled maximum threads per block (`.reqntid`, else `.maxntid`, of the first
    /// program's entry): what [`checked_launch`](occupancy_core::lint::evaluate::checked_launch)
    /// lowers a default block to.
    pub(crate) fn compiled_max_threads(&self) -> Option<u32> {
        self.ptx.as_ref().and_then(PtxEntry::max_threads_per_block)
    }
}

/// What the parse stage found in the compiled sources.
#[derive(Debug, Default)]
pub(crate) struct Parsed<'a> {
    pub(crate) kernels: Vec<CompiledKernel<'a>>,
    /// Sources that define no kernel (device functions only: nothing to check there, which is
    /// no reason to stop checking the others).
    pub(crate) without_kernels: Vec<&'a Path>,
    /// How facts were read where the report was silent, one line per source, for warnings.
    pub(crate) notes: Vec<String>,
}

/// A compile's files as the first half of the parse stage takes them (read by
/// `crate::compile_reads::read_files`).
#[derive(Debug, Default)]
pub(crate) struct SourceFiles {
    /// Per program of `CompiledSource::programs`, in its order: what its PTX says.
    pub(crate) summaries: Vec<PtxSummary>,
    /// A stripping compile's kernel lines (`CompiledSource::kernel_lines`), read from its
    /// `-lineinfo` PTX into the cache entry; `None` when the shipped PTX keeps its lines.
    pub(crate) kernel_lines: Option<BTreeMap<String, EntrySourceLine>>,
}

/// What the reports left open ([`Wants`]), read for the second half of the parse stage
/// (`crate::compile_reads::read_wanted`).
#[derive(Debug, Default)]
pub(crate) struct WantedReads {
    /// The records of the compile's own binary for the kernels x archs asked (empty when there
    /// is no binary, or nothing was asked).
    pub(crate) binary_records: Vec<KernelRecord>,
    /// The `.cu` source's text, when a kernel has no `-lineinfo` line (empty when unreadable).
    pub(crate) source_text: Option<String>,
}

/// The archs a build checks, by name.
pub(crate) fn target_archs(context: &Context) -> BTreeSet<String> {
    context.archs.iter().map(ToString::to_string).collect()
}

/// The first half of the parse stage for one source: its PTX programs and ptxas's report, before
/// anything is read from its binary.
#[derive(Debug)]
pub(crate) struct Reported<'a> {
    source: &'a CompiledSource,
    read: ProgramsRead<'a>,
    /// ptxas's records (none when the report is silent).
    records: Vec<KernelRecord>,
    /// ptxas's warnings that name no kernel (`unnamed.rs`).
    unnamed_warnings: Vec<String>,
    /// The report holds no kernel although the PTX defines some: the binary must hold them all,
    /// or this is the error.
    silent: Option<ptxas::ParseError>,
    /// Neither the report nor the PTX holds a kernel.
    defines_none: bool,
}

/// What a source's report leaves for the read stage (`crate::compile_reads::read_wanted`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Wants {
    /// Kernels x archs to read from the compile's binary: those the report lacks, and, when a
    /// declaration sets a constant-memory budget, those whose constant banks ptxas did not print
    /// (sm_90 and later).
    pub(crate) binary: BTreeSet<(String, String)>,
    /// The `.cu` source's text, for a kernel without a `-lineinfo` line.
    pub(crate) source_text: bool,
}

/// Each compiled source's programs (from `files`, the read stage's) and ptxas's report; an
/// error fails closed on a report that is not understood.
pub(crate) fn reports<'a>(
    compiled: &'a [CompiledSource],
    files: Vec<Result<SourceFiles, Error>>,
) -> Vec<Result<Reported<'a>, Error>> {
    compiled
        .iter()
        .zip(files)
        .map(|(source, files)| report_of(source, files?))
        .collect()
}

fn report_of(source: &CompiledSource, files: SourceFiles) -> Result<Reported<'_>, Error> {
    let read = read_programs(source, files);
    let no_entries = read.programs.iter().all(|(_, entries)| entries.is_empty());
    let mut reported = Reported {
        source,
        read,
        records: Vec::new(),
        unnamed_warnings: Vec::new(),
        silent: None,
        defines_none: false,
    };
    match ptxas::parse_log(&source.compiler_log) {
        Ok(parsed) => {
            if let Some(diagnostic) = parsed.diagnostics.first() {
                return Err(unreadable(
                    source,
                    format!(
                        "ptxas's report has a line that is not understood (line {}: `{}`): {}",
                        diagnostic.line_number, diagnostic.line, diagnostic.message
                    ),
                ));
            }
            reported.unnamed_warnings = parsed.warnings;
            reported.records = parsed.kernels;
        }
        Err(ptxas::ParseError::NoKernels { .. }) if no_entries => reported.defines_none = true,
        // No report at all: the binary may say; if not, this is the error.
        Err(error @ ptxas::ParseError::NoKernels { .. }) => reported.silent = Some(error),
        Err(error) => return Err(unreadable(source, format!("ptxas's report: {error}"))),
    }
    Ok(reported)
}

fn unreadable(source: &CompiledSource, message: String) -> Error {
    Error::UnreadableOutput {
        file: source.source.clone(),
        message,
    }
}

/// What each report leaves to read; `constant_banks`: a declaration sets a constant-memory
/// budget (`max_const_bytes`).
pub(crate) fn wants(
    reported: &[Result<Reported<'_>, Error>],
    archs: &BTreeSet<String>,
    constant_banks: bool,
) -> Vec<Wants> {
    let wants_of = |reported: &Reported<'_>| {
        let mut binary = missing_reports(&reported.read.programs, archs, &reported.records);
        if constant_banks {
            binary.extend(lacking_banks(&reported.records));
        }
        let named = (reported.records.iter())
            .filter(|record| record.entry)
            .map(|record| &record.name)
            .chain(binary.iter().map(|(name, _)| name));
        let source_text = reported.source.kind == crate::context::SourceKind::Cuda
            && !reported.defines_none
            && named
                .into_iter()
                .any(|name| !reported.read.source_lines.contains_key(name));
        Wants {
            binary,
            source_text,
        }
    };
    (reported.iter())
        .map(|reported| reported.as_ref().map(wants_of).unwrap_or_default())
        .collect()
}

/// The entry records without constant banks (ptxas prints none for sm_90 and later).
fn lacking_banks(records: &[KernelRecord]) -> BTreeSet<(String, String)> {
    (records.iter())
        .filter(|record| lacks_banks(record))
        .map(|record| (record.name.clone(), record.arch.clone()))
        .collect()
}

fn lacks_banks(record: &KernelRecord) -> bool {
    record.entry && !record.cmem.iter().any(|(bank, _)| *bank == 0)
}

/// The second half of the parse stage: the kernels of the compiled sources, from their
/// reports (`reports`) and what the read stage read for them (`reads`, per source, in the
/// order of `wants`).
pub(crate) fn parse_compiled<'a>(
    reported: Vec<Result<Reported<'a>, Error>>,
    reads: Vec<Result<WantedReads, Error>>,
    archs: &BTreeSet<String>,
) -> Result<Parsed<'a>, Error> {
    let mut parsed = Parsed::default();
    for (reported, reads) in reported.into_iter().zip(reads) {
        let reported = reported?;
        if reported.defines_none {
            parsed
                .without_kernels
                .push(reported.source.source.as_path());
            continue;
        }
        let found = parse_source(reported, reads?, archs, &mut parsed.notes)?;
        parsed.kernels.extend(found);
    }
    Ok(parsed)
}

/// `source`'s records read from its binary for `missing`, and a note saying so.
fn from_binary(
    source: &CompiledSource,
    reads: &WantedReads,
    missing: &BTreeSet<(String, String)>,
) -> (Vec<KernelRecord>, Option<String>) {
    let records: Vec<KernelRecord> = (reads.binary_records.iter())
        .filter(|record| missing.contains(&(record.name.clone(), record.arch.clone())))
        .cloned()
        .collect();
    let note = (!records.is_empty()).then(|| {
        format!(
            "{}: the compiler's output held no ptxas report for {} kernel x arch pair(s) (a compiler cache or wrapper that does not replay ptxas's output?); their facts were read from the compiled binary instead",
            crate::fsutil::shown_path(&source.source),
            records.len()
        )
    });
    (records, note)
}

/// Gives each entry record without constant banks the banks its cubin has (`reads`: the read
/// stage read them when a budget asked).
fn fill_constant_banks(reads: &WantedReads, records: &mut [KernelRecord]) {
    for record in records.iter_mut().filter(|record| lacks_banks(record)) {
        let same = |found: &&KernelRecord| found.name == record.name && found.arch == record.arch;
        if let Some(found) = reads.binary_records.iter().find(same) {
            record.cmem.clone_from(&found.cmem);
            record.module_cmem.clone_from(&found.module_cmem);
        }
    }
}

/// The (kernel, arch) pairs the PTX programs assemble that `records` do not cover.
fn missing_reports(
    programs: &[(&Program, Vec<PtxEntry>)],
    archs: &BTreeSet<String>,
    records: &[KernelRecord],
) -> BTreeSet<(String, String)> {
    let reported: BTreeSet<(&str, &str)> = records
        .iter()
        .filter(|record| record.entry)
        .map(|record| (record.name.as_str(), record.arch.as_str()))
        .collect();
    let mut missing = BTreeSet::new();
    for (program, entries) in programs {
        for arch in program.archs.iter().filter(|arch| archs.contains(*arch)) {
            for entry in entries {
                if !reported.contains(&(entry.name.as_str(), arch.as_str())) {
                    missing.insert((entry.name.clone(), arch.clone()));
                }
            }
        }
    }
    missing
}

/// What a source's PTX programs say: each program's entries, and where each kernel is defined.
#[derive(Debug)]
struct ProgramsRead<'a> {
    programs: Vec<(&'a Program, Vec<PtxEntry>)>,
    /// From `-lineinfo` (the cache entry's kernel lines, or each program's `.loc`).
    source_lines: BTreeMap<String, EntrySourceLine>,
    /// A `.ptx_file`'s `.entry` lines.
    entry_lines: BTreeMap<String, u32>,
}

/// Every program's summary (`crate::ptx_summary`, the PTX scanned once per compile, read by
/// the read stage into `files`).
fn read_programs(source: &CompiledSource, files: SourceFiles) -> ProgramsRead<'_> {
    let stripped = files.kernel_lines.is_some();
    let mut read = ProgramsRead {
        programs: Vec::new(),
        // A stripped PTX's kernel lines were read from its `-lineinfo` PTX into the cache entry.
        source_lines: files.kernel_lines.unwrap_or_default(),
        entry_lines: BTreeMap::new(),
    };
    for (program, summary) in source.programs.iter().zip(files.summaries) {
        if !stripped {
            for (name, line) in summary.source_lines {
                read.source_lines.entry(name).or_insert(line);
            }
        }
        if source.kind == crate::context::SourceKind::Ptx {
            read.entry_lines = summary.entry_lines;
        }
        read.programs.push((program, summary.entries));
    }
    read
}

/// One source's kernels, each with its records per arch. Fails closed when ptxas's report and
/// the PTX disagree.
fn parse_source<'a>(
    mut reported: Reported<'a>,
    reads: WantedReads,
    archs: &BTreeSet<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<CompiledKernel<'a>>, Error> {
    let source = reported.source;
    let mut records = std::mem::take(&mut reported.records);
    if let Some(error) = reported.silent.take() {
        let missing = missing_reports(&reported.read.programs, archs, &[]);
        let (found, note) = from_binary(source, &reads, &missing);
        if found.len() < missing.len() {
            return Err(unreadable(source, format!("ptxas's report: {error}")));
        }
        notes.extend(note);
        records = found;
    }
    let missing = missing_reports(&reported.read.programs, archs, &records);
    if !missing.is_empty() {
        let (found, note) = from_binary(source, &reads, &missing);
        notes.extend(note);
        records.extend(found);
    }
    fill_constant_banks(&reads, &mut records);
    let read = &mut reported.read;
    let mut by_name = kernels_of_records(source, records, read);
    attach_programs(&read.programs, archs, &mut by_name).map_err(|m| unreadable(source, m))?;
    unnamed::attach(&reported.unnamed_warnings, &mut by_name, &read.entry_lines);
    if let Some(text) = &reads.source_text {
        // No `-lineinfo` for some kernel (a `-G` build, a flag that drops it): the line that
        // names it after `__global__` in the source, indexed in one pass.
        let lines = cuda_definition_lines(text);
        for kernel in by_name.values_mut().filter(|k| k.defined_at.is_none()) {
            kernel.entry_line = lines.get(short_name(kernel)).copied();
        }
    }
    Ok(by_name.into_values().collect())
}

/// The entry kernels of ptxas's records, by name, each with its records per arch.
fn kernels_of_records<'a>(
    source: &'a CompiledSource,
    records: Vec<KernelRecord>,
    read: &mut ProgramsRead<'_>,
) -> BTreeMap<String, CompiledKernel<'a>> {
    // The first program's entry of each name (the launch-bound defaults), found by name.
    let mut first_entries: BTreeMap<&str, &PtxEntry> = BTreeMap::new();
    for entry in read.programs.iter().flat_map(|(_, entries)| entries) {
        first_entries.entry(entry.name.as_str()).or_insert(entry);
    }
    let mut by_name: BTreeMap<String, CompiledKernel<'a>> = BTreeMap::new();
    for record in records.into_iter().filter(|record| record.entry) {
        let kernel = by_name
            .entry(record.name.clone())
            .or_insert_with(|| CompiledKernel {
                name: record.name.clone(),
                demangled: record.demangled.clone(),
                source,
                ptx: first_entries
                    .get(record.name.as_str())
                    .map(|entry| (*entry).clone()),
                defined_at: read.source_lines.remove(&record.name),
                entry_line: read.entry_lines.get(&record.name).copied(),
                records: BTreeMap::new(),
                programs: BTreeMap::new(),
            });
        kernel.records.insert(record.arch.clone(), record);
    }
    by_name
}

/// Each kernel's program per arch. Fails closed: every entry of a program must have a report
/// on every arch assembled from that program (and only there: a kernel behind
/// `__CUDA_ARCH__ >= 900` exists in the compute_90 program alone).
fn attach_programs<'a>(
    programs: &[(&'a Program, Vec<PtxEntry>)],
    archs: &BTreeSet<String>,
    by_name: &mut BTreeMap<String, CompiledKernel<'a>>,
) -> Result<(), String> {
    for (program, entries) in programs {
        let program_archs = program.archs.iter().filter(|arch| archs.contains(*arch));
        for entry in entries {
            let Some(kernel) = by_name.get_mut(&entry.name) else {
                return Err(format!(
                    "the PTX defines kernel `{}` but ptxas reported nothing for it",
                    entry.name
                ));
            };
            for arch in program_archs.clone() {
                if !kernel.records.contains_key(arch) {
                    return Err(format!(
                        "ptxas reported nothing for kernel `{}` on {arch}",
                        entry.name
                    ));
                }
                kernel
                    .programs
                    .insert(arch.clone(), (*program, entry.clone()));
            }
        }
    }
    Ok(())
}

/// The kernel's name as written in C++: the demangled name's last component without template
/// arguments or parameters (`tiled` for `void ns::tiled<4>(float*)`), else the symbol.
pub(crate) fn short_name<'k>(kernel: &'k CompiledKernel<'_>) -> &'k str {
    kernel
        .demangled
        .as_deref()
        .and_then(|demangled| demangled.split('(').next())
        .map(|head| {
            let head = head.rsplit(' ').next().unwrap_or(head);
            let head = head.split('<').next().unwrap_or(head);
            head.rsplit("::").next().unwrap_or(head)
        })
        .unwrap_or(&kernel.name)
}

/// For each identifier followed by `(` or `<` on a line at most three lines after a
/// `__global__`, the 1-based line where it first appears so (one pass over the text).
pub(crate) fn cuda_definition_lines(text: &str) -> BTreeMap<&str, u32> {
    let mut lines = BTreeMap::new();
    let mut last_global: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        if line.contains("__global__") {
            last_global = Some(index);
        }
        if last_global.is_none_or(|global| index - global > 3) {
            continue;
        }
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let bytes = line.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let is_ident = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
            if !is_ident(bytes[at]) {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len() && is_ident(bytes[at]) {
                at += 1;
            }
            let rest = line[at..].trim_start();
            if rest.starts_with('(') || rest.starts_with('<') {
                lines.entry(&line[start..at]).or_insert(number);
            }
        }
    }
    lines
}
