//! The parse stage: each compile's ptxas report and PTX read into compiled kernels (records per
//! arch, the PTX entry each arch's SASS came from, where the kernel is defined), failing closed
//! when the report and the PTX disagree. Parsing itself is `occupancy_core::ptxas`.
//!
//! A kernel x arch the report does not cover (a compiler cache that replays no ptxas output, a
//! wrapper that drops nvcc's stderr) is read from the compile's own binary (`own_binary.rs`: its
//! cubins, by the cubin reader): the cubin holds the same facts. Only what neither says fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::ptxas::{self, EntrySourceLine, KernelRecord, PtxEntry};

use crate::compile::{CompiledSource, Program};
use crate::context::Context;
use crate::Error;

mod own_binary;
mod unnamed;

pub(crate) use own_binary::BinaryTools;
pub use own_binary::CUOBJDUMP_NOT_FOUND;

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

/// What the parse stage may read from a compile's binary.
#[derive(Debug, Clone, Default)]
pub(crate) struct BinaryReads {
    pub(crate) tools: BinaryTools,
    /// A declaration sets a constant-memory budget (`max_const_bytes`): the constant banks
    /// ptxas does not print (sm_90 and later) are read from the cubins.
    pub(crate) constant_banks: bool,
}

/// The kernels of the compiled sources; `binary` says what to read from a compile's binary
/// where its report is silent.
pub(crate) fn parse_compiled<'a>(
    compiled: &'a [CompiledSource],
    context: &Context,
    binary: &BinaryReads,
) -> Result<Parsed<'a>, Error> {
    let mut parsed = Parsed::default();
    let archs: BTreeSet<String> = context.archs.iter().map(ToString::to_string).collect();
    let reader = BinaryFallback {
        tools: &binary.tools,
        scratch: &context.out_dir,
        constant_banks: binary.constant_banks,
    };
    for source in compiled {
        match parse_source(source, &archs, &reader, &mut parsed.notes)? {
            Some(found) => parsed.kernels.extend(found),
            None => parsed.without_kernels.push(source.source.as_path()),
        }
    }
    Ok(parsed)
}

/// Reads a compile's binary for the kernels x archs its report lacks.
struct BinaryFallback<'t> {
    tools: &'t BinaryTools,
    /// Where the binary reader makes its private directory (the build's `OUT_DIR`).
    scratch: &'t Path,
    /// Fill in the constant banks ptxas did not print.
    constant_banks: bool,
}

impl BinaryFallback<'_> {
    /// Gives each entry record without constant banks (ptxas prints none for sm_90 and later)
    /// the banks of its cubin, when a budget asks for them.
    fn fill_constant_banks(
        &self,
        source: &CompiledSource,
        records: &mut [KernelRecord],
    ) -> Result<(), Error> {
        let lacking =
            |record: &KernelRecord| record.entry && !record.cmem.iter().any(|(bank, _)| *bank == 0);
        if !self.constant_banks || !records.iter().any(lacking) {
            return Ok(());
        }
        let wanted: BTreeSet<(String, String)> = records
            .iter()
            .filter(|record| lacking(record))
            .map(|record| (record.name.clone(), record.arch.clone()))
            .collect();
        let (from_binary, _) = self.records(source, &wanted)?;
        for record in records.iter_mut().filter(|record| lacking(record)) {
            let same =
                |found: &&KernelRecord| found.name == record.name && found.arch == record.arch;
            if let Some(found) = from_binary.iter().find(same) {
                record.cmem.clone_from(&found.cmem);
                record.module_cmem.clone_from(&found.module_cmem);
            }
        }
        Ok(())
    }

    /// The records of `missing` (kernel, arch) read from `source`'s binary, and a note saying
    /// so; nothing when there is no binary or it lacks them (the caller then fails closed).
    fn records(
        &self,
        source: &CompiledSource,
        missing: &BTreeSet<(String, String)>,
    ) -> Result<(Vec<KernelRecord>, Option<String>), Error> {
        let Some(binary) = &source.binary else {
            return Ok((Vec::new(), None));
        };
        let mut records = own_binary::records(binary, &source.source, self.tools, self.scratch)?;
        records.retain(|record| missing.contains(&(record.name.clone(), record.arch.clone())));
        let note = (!records.is_empty()).then(|| {
            format!(
                "{}: the compiler's output held no ptxas report for {} kernel x arch pair(s) (a compiler cache or wrapper that does not replay ptxas's output?); their facts were read from the compiled binary instead",
                crate::fsutil::shown_path(&source.source),
                records.len()
            )
        });
        Ok((records, note))
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
struct ProgramsRead<'a> {
    programs: Vec<(&'a Program, Vec<PtxEntry>)>,
    /// From `-lineinfo` (the cache entry's kernel lines, or each program's `.loc`).
    source_lines: BTreeMap<String, EntrySourceLine>,
    /// A `.ptx_file`'s `.entry` lines.
    entry_lines: BTreeMap<String, u32>,
}

/// Every program's summary (`crate::ptx_summary`, the PTX scanned once per compile).
fn read_programs(source: &CompiledSource) -> Result<ProgramsRead<'_>, Error> {
    let mut read = ProgramsRead {
        programs: Vec::new(),
        // A stripped PTX's kernel lines were read from its `-lineinfo` PTX into the cache entry.
        source_lines: match &source.kernel_lines {
            Some(path) => crate::compile::two_step::read_kernel_lines(&source.source, path)?,
            None => BTreeMap::new(),
        },
        entry_lines: BTreeMap::new(),
    };
    for program in &source.programs {
        let summary = crate::ptx_summary::summary(source, program)?;
        if source.kernel_lines.is_none() {
            for (name, line) in summary.source_lines {
                read.source_lines.entry(name).or_insert(line);
            }
        }
        if source.kind == crate::context::SourceKind::Ptx {
            read.entry_lines = summary.entry_lines;
        }
        read.programs.push((program, summary.entries));
    }
    Ok(read)
}

/// One source's kernels, each with its records per arch; `None` when it defines no kernel.
/// Fails closed when ptxas's report and the PTX disagree.
fn parse_source<'a>(
    source: &'a CompiledSource,
    archs: &BTreeSet<String>,
    fallback: &BinaryFallback<'_>,
    notes: &mut Vec<String>,
) -> Result<Option<Vec<CompiledKernel<'a>>>, Error> {
    let unreadable = |message: String| Error::UnreadableOutput {
        file: source.source.clone(),
        message,
    };
    let mut read = read_programs(source)?;
    let no_entries = read.programs.iter().all(|(_, entries)| entries.is_empty());
    let mut unnamed_warnings = Vec::new();
    let mut records = match ptxas::parse_log(&source.compiler_log) {
        Ok(parsed) => {
            if let Some(diagnostic) = parsed.diagnostics.first() {
                return Err(unreadable(format!(
                    "ptxas's report has a line that is not understood (line {}: `{}`): {}",
                    diagnostic.line_number, diagnostic.line, diagnostic.message
                )));
            }
            unnamed_warnings = parsed.warnings;
            parsed.kernels
        }
        Err(ptxas::ParseError::NoKernels { .. }) if no_entries => return Ok(None),
        // No report at all: the binary may say (below); if not, this is the error.
        Err(error @ ptxas::ParseError::NoKernels { .. }) => {
            let missing = missing_reports(&read.programs, archs, &[]);
            let (found, note) = fallback.records(source, &missing)?;
            if found.len() < missing.len() {
                return Err(unreadable(format!("ptxas's report: {error}")));
            }
            notes.extend(note);
            found
        }
        Err(error) => return Err(unreadable(format!("ptxas's report: {error}"))),
    };
    let missing = missing_reports(&read.programs, archs, &records);
    if !missing.is_empty() {
        let (found, note) = fallback.records(source, &missing)?;
        notes.extend(note);
        records.extend(found);
    }
    fallback.fill_constant_banks(source, &mut records)?;
    let mut by_name = kernels_of_records(source, records, &mut read);
    attach_programs(&read.programs, archs, &mut by_name).map_err(unreadable)?;
    unnamed::attach(&unnamed_warnings, &mut by_name, &read.entry_lines);
    if source.kind == crate::context::SourceKind::Cuda
        && by_name.values().any(|k| k.defined_at.is_none())
    {
        // No `-lineinfo` for some kernel (a `-G` build, a flag that drops it): the line that
        // names it after `__global__` in the source, indexed in one pass.
        let text = std::fs::read_to_string(&source.source).unwrap_or_default();
        let lines = cuda_definition_lines(&text);
        for kernel in by_name.values_mut().filter(|k| k.defined_at.is_none()) {
            kernel.entry_line = lines.get(short_name(kernel)).copied();
        }
    }
    Ok(Some(by_name.into_values().collect()))
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
