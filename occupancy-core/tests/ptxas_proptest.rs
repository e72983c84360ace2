//! Property tests: whatever the bytes, the parser never panics, and reordered, cut, duplicated or
//! interleaved real logs never produce a kernel that the real log does not have.

use occupancy_core::ptxas::{
    parse_cuobjdump_resource_usage, parse_log, parse_ptx_directives, KernelRecord, LogParser,
};
use proptest::prelude::*;
use std::collections::HashSet;

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
    for record in parse_log(text).unwrap().kernels {
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
    parse_log(text)
        .unwrap()
        .kernels
        .into_iter()
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
            for record in output.kernels {
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
            for record in output.kernels {
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
            for record in output.kernels {
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
}
