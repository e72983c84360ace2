//! The parse stage: each compile's ptxas report and PTX read into compiled kernels (records per
//! arch, the PTX entry each arch's SASS came from, where the kernel is defined), failing closed
//! when the report and the PTX disagree. Parsing itself is `occupancy_core::ptxas`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::ptxas::{self, EntrySourceLine, KernelRecord, PtxEntry};

use crate::compile::{CompiledSource, Program};
use crate::context::Context;
use crate::Error;

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

/// The kernels of the compiled sources, and the sources that define none (device functions
/// only: nothing to check there, which is no reason to stop checking the others).
pub(crate) fn parse_compiled<'a>(
    compiled: &'a [CompiledSource],
    context: &Context,
) -> Result<(Vec<CompiledKernel<'a>>, Vec<&'a Path>), Error> {
    let mut kernels = Vec::new();
    let mut without_kernels = Vec::new();
    let archs: BTreeSet<String> = context.archs.iter().map(ToString::to_string).collect();
    for source in compiled {
        let unreadable = |message: String| Error::UnreadableOutput {
            file: source.source.clone(),
            message,
        };
        let mut programs = Vec::new();
        // A stripped PTX's kernel lines were read from its `-lineinfo` PTX into the cache entry.
        let mut source_lines = match &source.kernel_lines {
            Some(path) => crate::compile::two_step::read_kernel_lines(&source.source, path)?,
            None => BTreeMap::new(),
        };
        let mut entry_lines = BTreeMap::new();
        for program in &source.programs {
            let summary = crate::ptx_summary::summary(source, program)?;
            if source.kernel_lines.is_none() {
                for (name, line) in summary.source_lines {
                    source_lines.entry(name).or_insert(line);
                }
            }
            if source.kind == crate::context::SourceKind::Ptx {
                entry_lines = summary.entry_lines;
            }
            programs.push((program, summary.entries));
        }
        let no_entries = programs.iter().all(|(_, entries)| entries.is_empty());
        let parsed = match ptxas::parse_log(&source.compiler_log) {
            Ok(parsed) => parsed,
            Err(ptxas::ParseError::NoKernels { .. }) if no_entries => {
                without_kernels.push(source.source.as_path());
                continue;
            }
            Err(error) => return Err(unreadable(format!("ptxas's report: {error}"))),
        };
        if let Some(diagnostic) = parsed.diagnostics.first() {
            return Err(unreadable(format!(
                "ptxas's report has a line that is not understood (line {}: `{}`): {}",
                diagnostic.line_number, diagnostic.line, diagnostic.message
            )));
        }
        // The first program's entry of each name (the launch-bound defaults), found by name.
        let mut first_entries: BTreeMap<&str, &PtxEntry> = BTreeMap::new();
        for entry in programs.iter().flat_map(|(_, entries)| entries) {
            first_entries.entry(entry.name.as_str()).or_insert(entry);
        }
        let mut by_name: BTreeMap<String, CompiledKernel<'a>> = BTreeMap::new();
        for record in parsed.kernels.into_iter().filter(|record| record.entry) {
            let kernel = by_name
                .entry(record.name.clone())
                .or_insert_with(|| CompiledKernel {
                    name: record.name.clone(),
                    demangled: record.demangled.clone(),
                    source,
                    ptx: first_entries
                        .get(record.name.as_str())
                        .map(|entry| (*entry).clone()),
                    defined_at: source_lines.remove(&record.name),
                    entry_line: entry_lines.get(&record.name).copied(),
                    records: BTreeMap::new(),
                    programs: BTreeMap::new(),
                });
            kernel.records.insert(record.arch.clone(), record);
        }
        // Fail closed: every entry of a program must have a report on every arch assembled
        // from that program (and only there: a kernel behind `__CUDA_ARCH__ >= 900` exists
        // in the compute_90 program alone).
        for (program, entries) in &programs {
            let program_archs = program.archs.iter().filter(|arch| archs.contains(*arch));
            for entry in entries {
                let Some(kernel) = by_name.get_mut(&entry.name) else {
                    return Err(unreadable(format!(
                        "the PTX defines kernel `{}` but ptxas reported nothing for it",
                        entry.name
                    )));
                };
                for arch in program_archs.clone() {
                    if !kernel.records.contains_key(arch) {
                        return Err(unreadable(format!(
                            "ptxas reported nothing for kernel `{}` on {arch}",
                            entry.name
                        )));
                    }
                    kernel
                        .programs
                        .insert(arch.clone(), (*program, entry.clone()));
                }
            }
        }
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
        kernels.extend(by_name.into_values());
    }
    Ok((kernels, without_kernels))
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
