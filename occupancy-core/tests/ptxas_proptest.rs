//! Property tests: whatever the bytes, the parser never panics, and reordered, cut, duplicated or
//! interleaved real logs never produce a kernel that the real log does not have; mutated real
//! logs read as a stream (records taken as they finish) give what the whole text gives, and a
//! stream hands its records out as it goes instead of holding them to the end.

use occupancy_core::ptxas::{
    parse_cuobjdump_resource_usage, parse_log, parse_ptx_directives, KernelRecord, LogParser,
};
use proptest::prelude::*;
use std::collections::HashSet;

/// Parses `bytes` as a stream cut into `chunk`-byte pieces, taking records as they finish.
fn streamed(
    bytes: &[u8],
    chunk: usize,
) -> (
    Vec<KernelRecord>,
    Result<occupancy_core::ptxas::ParseOutput, occupancy_core::ptxas::ParseError>,
) {
    let mut parser = LogParser::new();
    let mut taken = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        parser.feed(piece);
        taken.extend(parser.take_finished_kernels());
    }
    (taken, parser.finish())
}

const MULTIARCH: &str = include_str!("fixtures/ptxas/nvcc13_multiarch.log");
const RDC: &str = include_str!("fixtures/ptxas/nvcc13_rdc.log");
const DEBUG: &str = include_str!("fixtures/ptxas/nvcc13_debug.log");
const LEGACY: &str = include_str!("fixtures/ptxas/ptxas118.log");
const CUOBJDUMP: &str = include_str!("fixtures/ptxas/cuobjdump_shared_memory.txt");

/// What a reordered log may not invent: an entry record carries its own arch on its
/// `Compiling entry function` line, so (name, arch, entry) must be real; a device function's
/// arch is inferred from its section (ptxas prints none), which a reordering can make point at
/// another compilation, so for device functions only the name must be real.
fn identities(text: &str) -> HashSet<(String, String)> {
    let mut known = HashSet::new();
    let output = parse_log(text).unwrap();
    for record in output.kernels.into_iter().chain(output.callees) {
        if record.entry {
            known.insert((record.name.clone(), record.arch.clone()));
        }
        known.insert((record.name, "device".to_string()));
    }
    known
}

fn identity(record: &KernelRecord) -> (String, String) {
    (
        record.name.clone(),
        if record.entry {
            record.arch.clone()
        } else {
            "device".to_string()
        },
    )
}

/// Whole records of the real log (compile time aside, which a reordering may move).
fn records(text: &str) -> Vec<KernelRecord> {
    let output = parse_log(text).unwrap();
    output
        .kernels
        .into_iter()
        .chain(output.callees)
        .map(without_time)
        .collect()
}

fn without_time(mut record: KernelRecord) -> KernelRecord {
    record.compile_time_ms = None;
    record.line_number = 0;
    record
}

fn real_log() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(MULTIARCH), Just(RDC), Just(DEBUG), Just(LEGACY)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), split in 0usize..2048) {
        let mut parser = LogParser::new();
        let split = split.min(bytes.len());
        parser.feed(&bytes[..split]);
        parser.feed(&bytes[split..]);
        let _ = parser.finish();
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_log(&text);
        let _ = parse_cuobjdump_resource_usage(&text);
        let _ = parse_ptx_directives(&text);
    }

    #[test]
    fn ptxas_shaped_noise_never_panics(lines in proptest::collection::vec(
        prop_oneof![
            "ptxas (info|warning|error|fatal) *: [ -~]{0,60}",
            "ptxas info    : (Used|Compiling entry function|Function properties for|Compile time =) [ -~]{0,40}",
            " *[0-9]{1,25} bytes (stack frame|spill stores|spill loads|smem|cmem\\[[0-9]{0,12}\\])[, ]{0,2}[ -~]{0,30}",
            "[ -~]{0,40}",
        ], 0..40)) {
        let _ = parse_log(&lines.join("\n"));
    }

    #[test]
    fn shuffled_lines_never_invent_a_kernel(log in real_log(), seed in any::<u64>()) {
        let known = identities(log);
        let mut lines: Vec<&str> = log.lines().collect();
        let mut state = seed | 1;
        for index in (1..lines.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            lines.swap(index, (state % (index as u64 + 1)) as usize);
        }
        if let Ok(output) = parse_log(&lines.join("\n")) {
            for record in output.kernels.into_iter().chain(output.callees) {
                prop_assert!(known.contains(&identity(&record)), "invented {} {} (entry: {})", record.name, record.arch, record.entry);
            }
        }
    }

    #[test]
    fn cut_and_duplicated_lines_only_give_real_records(log in real_log(), start in 0usize..400, length in 0usize..400, duplicate in 0usize..400, copies in 1usize..3) {
        let real = records(log);
        let lines: Vec<&str> = log.lines().collect();
        let start = start.min(lines.len());
        let end = (start + length).min(lines.len());
        let mut kept: Vec<&str> = lines[start..end].to_vec();
        if !kept.is_empty() {
            let at = duplicate % kept.len();
            for _ in 0..copies { kept.insert(at, kept[at]); }
        }
        if let Ok(output) = parse_log(&kept.join("\n")) {
            for record in output.kernels.into_iter().chain(output.callees) {
                let record = without_time(record);
                // A duplicated module line may give a record the module figures of a nearby one;
                // everything the calculator reads must be real.
                prop_assert!(real.iter().any(|known| known.name == record.name && known.arch == record.arch
                    && known.registers == record.registers && known.barriers == record.barriers
                    && known.static_smem_bytes == record.static_smem_bytes && known.stack_frame_bytes == record.stack_frame_bytes
                    && known.spill_store_bytes == record.spill_store_bytes && known.spill_load_bytes == record.spill_load_bytes
                    && known.entry == record.entry), "invented {record:?}");
            }
        }
    }

    #[test]
    fn interleaved_logs_never_invent_a_kernel(first in real_log(), second in real_log(), pattern in proptest::collection::vec(any::<bool>(), 0..600)) {
        let mut known = identities(first);
        known.extend(identities(second));
        let (mut a, mut b) = (first.lines().peekable(), second.lines().peekable());
        let mut merged = Vec::new();
        let mut choices = pattern.into_iter();
        while a.peek().is_some() || b.peek().is_some() {
            let take_first = choices.next().unwrap_or(true);
            let line = if take_first { a.next().or_else(|| b.next()) } else { b.next().or_else(|| a.next()) };
            merged.extend(line);
        }
        if let Ok(output) = parse_log(&merged.join("\n")) {
            for record in output.kernels.into_iter().chain(output.callees) {
                prop_assert!(known.contains(&identity(&record)), "invented {} {} (entry: {})", record.name, record.arch, record.entry);
            }
        }
    }

    #[test]
    fn cuobjdump_cut_anywhere_never_panics(cut in 0usize..4000) {
        let cut = cut.min(CUOBJDUMP.len());
        if CUOBJDUMP.is_char_boundary(cut) {
            let _ = parse_cuobjdump_resource_usage(&CUOBJDUMP[..cut]);
        }
    }

    /// Real logs with bytes flipped, inserted and removed, streamed in random chunks: the same
    /// kernels, callees, errors and warnings as the whole (lossily decoded) text.
    #[test]
    fn mutated_real_logs_stream_like_the_whole_text(
        log in real_log(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..12),
        chunk in 1usize..5000,
    ) {
        let mut bytes = log.as_bytes().to_vec();
        for (at, byte, kind) in edits {
            let at = at % (bytes.len() + 1);
            match kind {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => {}
            }
        }
        let whole = parse_log(&String::from_utf8_lossy(&bytes));
        let (taken, rest) = streamed(&bytes, chunk);
        match (whole, rest) {
            (Ok(whole), Ok(rest)) => {
                let kernels: Vec<KernelRecord> = taken.into_iter().chain(rest.kernels).collect();
                prop_assert_eq!(kernels, whole.kernels);
                prop_assert_eq!(rest.callees, whole.callees);
                prop_assert_eq!(rest.errors, whole.errors);
                prop_assert_eq!(rest.warnings, whole.warnings);
                prop_assert_eq!(rest.diagnostics, whole.diagnostics);
            }
            (Err(whole), Err(rest)) => prop_assert_eq!(whole, rest),
            (whole, rest) => prop_assert!(false, "whole {whole:?} but streamed {rest:?}"),
        }
    }

    /// Streaming a log of many compiles hands records out as they finish: all but the last
    /// copy's are out before the end, so memory does not hold the log's records.
    #[test]
    fn a_stream_hands_out_records_before_the_end(log in real_log(), copies in 2usize..6, chunk in 64usize..4096) {
        let per_copy = parse_log(log).unwrap().kernels.len();
        let text = log.repeat(copies);
        let (taken, rest) = streamed(text.as_bytes(), chunk);
        let rest = rest.unwrap();
        prop_assert_eq!(taken.len() + rest.kernels.len(), per_copy * copies);
        prop_assert!(rest.kernels.len() <= per_copy, "{} records held to the end", rest.kernels.len());
    }

    #[test]
    fn cuobjdump_with_lines_dropped_or_doubled_only_names_real_functions(
        edits in proptest::collection::vec((any::<usize>(), any::<bool>()), 0..8),
    ) {
        let known: HashSet<String> = parse_cuobjdump_resource_usage(CUOBJDUMP).unwrap().into_iter().map(|function| function.name).collect();
        let mut lines: Vec<&str> = CUOBJDUMP.lines().collect();
        for (at, double) in edits {
            if lines.is_empty() { break; }
            let at = at % lines.len();
            if double { lines.insert(at, lines[at]); } else { lines.remove(at); }
        }
        if let Ok(functions) = parse_cuobjdump_resource_usage(&lines.join("\n")) {
            for function in functions {
                prop_assert!(known.contains(&function.name), "invented {}", function.name);
            }
        }
    }
}
