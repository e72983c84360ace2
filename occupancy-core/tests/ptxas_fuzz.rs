//! The log parser's fuzz corpus, run as bounded property tests in the normal test suite (issue
//! #23, "fail closed, round 2"): every fixture log, mutated byte by byte and line by line, with
//! CI prefixes, build failure lines and cuts, streamed in random chunks. Whatever the input:
//!
//! * the parser never panics, and streaming gives what the whole text gives;
//! * every record it accepts is consistent (an entry has its register count and stack figures,
//!   a callee has no register count, names and archs are single words, lines are in the log);
//! * a CI prefix on any line changes nothing;
//! * a line that says the build failed is always reported, with its line number;
//! * a log cut inside a record never passes.

use occupancy_core::ptxas::{parse_log, KernelRecord, LogParser, ParseError, ParseOutput};
use proptest::prelude::*;

/// Every fixture log: each CUDA version's format, MSBuild's prefix, `-G`, `-rdc`, a failed
/// compile, `--resource-usage`.
const FIXTURES: [&str; 11] = [
    include_str!("fixtures/ptxas/cuda10_kmcuda_sm61.log"),
    include_str!("fixtures/ptxas/cuda10_smfft_sm70.log"),
    include_str!("fixtures/ptxas/cuda11_cudaminer_textures.log"),
    include_str!("fixtures/ptxas/cuda9_msbuild_sm50.log"),
    include_str!("fixtures/ptxas/nvcc13_debug.log"),
    include_str!("fixtures/ptxas/nvcc13_fails_to_compile.log"),
    include_str!("fixtures/ptxas/nvcc13_multiarch.log"),
    include_str!("fixtures/ptxas/nvcc13_rdc.log"),
    include_str!("fixtures/ptxas/nvcc13_resource_usage.log"),
    include_str!("fixtures/ptxas/ptxas118.log"),
    include_str!("fixtures/ptxas/ptxas129_legacy.log"),
];

fn fixture() -> impl Strategy<Value = &'static str> {
    (0..FIXTURES.len()).prop_map(|index| FIXTURES[index])
}

/// Lines a mutation may insert: ptxas's own, other tools', failure markers, prefixed lines.
const INSERTED: [&str; 14] = [
    "ptxas info    : Used 32 registers, used 1 barriers",
    "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads",
    "ptxas info    : Function properties for lost",
    "ptxas info    : Compiling entry function 'lost' for 'sm_90'",
    "ptxas info    : Compile time = 1.0 ms",
    "ptxas info    : 0 bytes gmem",
    "ptxas warning : Registers are spilled to local memory in function 'lost', 8 bytes spill stores, 8 bytes spill loads",
    "[ 50%] Building CUDA object k.cu.o",
    "FAILED: k.cu.o",
    "make: *** [Makefile:3: all] Error 1",
    "Segmentation fault (core dumped)",
    "2024-05-01T12:00:00.1234567Z ptxas info    : Used 3 registers",
    "[build] ptxas info    : Used 3 registers",
    "ptxas info    : Used 99999999999 registers",
];

/// Parses `bytes` streamed in `chunk`-byte pieces, taking records as they finish.
fn streamed(bytes: &[u8], chunk: usize) -> (Vec<KernelRecord>, Result<ParseOutput, ParseError>) {
    let mut parser = LogParser::new();
    let mut taken = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        parser.feed(piece);
        taken.extend(parser.take_finished_kernels());
    }
    (taken, parser.finish())
}

/// What every accepted record must be, whatever the input.
fn consistent(record: &KernelRecord, lines: usize) -> Result<(), String> {
    let word = |text: &str| !text.is_empty() && !text.chars().any(char::is_whitespace);
    let checks = [
        (word(&record.name), "a name of one word"),
        (word(&record.arch), "an arch of one word"),
        (
            record.entry == record.registers.is_some(),
            "registers exactly for entries",
        ),
        (record.stack_frame_bytes.is_some(), "a stack frame"),
        (record.spill_store_bytes.is_some(), "spill stores"),
        (record.spill_load_bytes.is_some(), "spill loads"),
        (
            (1..=lines).contains(&record.line_number),
            "a line in the log",
        ),
        (
            record.compile_time_ms.is_none_or(f64::is_finite),
            "a finite compile time",
        ),
    ];
    match checks.iter().find(|(holds, _)| !holds) {
        Some((_, what)) => Err(format!("record without {what}: {record:?}")),
        None => Ok(()),
    }
}

fn check_output(taken: &[KernelRecord], output: &ParseOutput) -> Result<(), String> {
    for record in taken.iter().chain(&output.kernels) {
        if !record.entry {
            return Err(format!("a callee among the kernels: {record:?}"));
        }
        consistent(record, output.lines)?;
    }
    for record in &output.callees {
        if record.entry {
            return Err(format!("an entry among the callees: {record:?}"));
        }
        consistent(record, output.lines)?;
    }
    Ok(())
}

/// `log` with `edits` applied: (position, kind, value) flips, inserts and removes bytes, or
/// inserts, removes and duplicates lines.
fn mutate(log: &str, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = log.lines().map(|line| line.as_bytes().to_vec()).collect();
    for &(at, kind, value) in edits {
        if lines.is_empty() {
            lines.push(Vec::new());
        }
        let line = at % lines.len();
        let column = at / lines.len() % (lines[line].len() + 1);
        match kind % 6 {
            0 if column < lines[line].len() => lines[line][column] = value,
            1 => lines[line].insert(column, value),
            2 if column < lines[line].len() => {
                lines[line].remove(column);
            }
            3 => lines.insert(line, INSERTED[usize::from(value) % INSERTED.len()].into()),
            4 => {
                lines.remove(line);
            }
            _ => {
                let copy = lines[line].clone();
                lines.insert(line, copy);
            }
        }
    }
    lines.join(&b'\n')
}

/// A CI prefix of each shape the parser strips, with varying digits.
fn ci_prefix() -> impl Strategy<Value = String> {
    let two = || 0u32..60;
    prop_oneof![
        (
            2000u32..2100,
            1u32..13,
            1u32..29,
            two(),
            two(),
            two(),
            0u32..10_000_000
        )
            .prop_map(|(y, mo, d, h, mi, s, f)| format!(
                "{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:07}Z "
            )),
        (two(), two(), two(), 0u32..1000)
            .prop_map(|(h, m, s, f)| format!("[{h:02}:{m:02}:{s:02}.{f:03}] ")),
        (two(), two(), two()).prop_map(|(h, m, s)| format!("[{h:02}:{m:02}:{s:02}] ")),
        (2000u32..2100, two(), two(), two())
            .prop_map(|(y, h, m, s)| format!("[{y}-05-01T{h:02}:{m:02}:{s:02}Z] ")),
        (2000u32..2100, two(), 0u32..100)
            .prop_map(|(y, s, stream)| format!("{y}-05-01T12:00:{s:02}.123456Z {stream:02}O ")),
        (1u32..100, 0u32..1000, 0u32..1000)
            .prop_map(|(step, s, ms)| format!("#{step} {s}.{ms:03} ")),
    ]
}

/// The figures a CI prefix must not change (record lines are the same lines).
fn same_reading(plain: &ParseOutput, prefixed: &ParseOutput) -> Result<(), String> {
    let pairs = [
        (plain.kernels == prefixed.kernels, "kernels"),
        (plain.callees == prefixed.callees, "callees"),
        (plain.errors == prefixed.errors, "errors"),
        (plain.warnings == prefixed.warnings, "warnings"),
        (plain.diagnostics == prefixed.diagnostics, "diagnostics"),
        (
            plain.build_failures == prefixed.build_failures,
            "build failures",
        ),
    ];
    match pairs.iter().find(|(same, _)| !same) {
        Some((_, what)) => Err(format!("a CI prefix changed the {what}")),
        None => Ok(()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary bytes, streamed in any chunks: no panic, the whole text's answer, and every
    /// record accepted is consistent.
    #[test]
    fn arbitrary_bytes_give_consistent_records_or_an_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        chunk in 1usize..600,
    ) {
        let (taken, rest) = streamed(&bytes, chunk);
        let whole = parse_log(&String::from_utf8_lossy(&bytes));
        match (rest, whole) {
            (Ok(rest), Ok(whole)) => {
                prop_assert_eq!(&rest.callees, &whole.callees);
                prop_assert_eq!(taken.iter().chain(&rest.kernels).collect::<Vec<_>>(), whole.kernels.iter().collect::<Vec<_>>());
                check_output(&taken, &rest).map_err(TestCaseError::fail)?;
            }
            (Err(rest), Err(whole)) => prop_assert_eq!(rest, whole),
            (rest, whole) => prop_assert!(false, "streamed {rest:?}, whole {whole:?}"),
        }
    }

    /// Every fixture, mutated by bytes and by lines (inserted ptxas lines, markers, prefixes,
    /// removed and doubled lines), streamed: no panic, consistent records, the whole text's
    /// answer.
    #[test]
    fn mutated_fixtures_give_consistent_records_or_an_error(
        log in fixture(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..16),
        chunk in 1usize..3000,
    ) {
        let bytes = mutate(log, &edits);
        let (taken, rest) = streamed(&bytes, chunk);
        let whole = parse_log(&String::from_utf8_lossy(&bytes));
        match (rest, whole) {
            (Ok(rest), Ok(whole)) => {
                prop_assert_eq!(taken.iter().chain(&rest.kernels).collect::<Vec<_>>(), whole.kernels.iter().collect::<Vec<_>>());
                check_output(&taken, &rest).map_err(TestCaseError::fail)?;
            }
            (Err(rest), Err(whole)) => prop_assert_eq!(rest, whole),
            (rest, whole) => prop_assert!(false, "streamed {rest:?}, whole {whole:?}"),
        }
    }

    /// Any CI prefix on any line of any fixture gives the plain log's reading.
    #[test]
    fn ci_prefixes_on_any_lines_change_nothing(
        log in fixture(),
        prefixes in proptest::collection::vec(proptest::option::of(ci_prefix()), 0..400),
    ) {
        let plain = parse_log(log).unwrap();
        let prefixed: String = log
            .lines()
            .zip(prefixes.iter().cycle().chain(std::iter::repeat(&None)))
            .map(|(line, prefix)| format!("{}{line}\n", prefix.as_deref().unwrap_or("")))
            .collect();
        let read = parse_log(&prefixed).map_err(|error| TestCaseError::fail(error.to_string()))?;
        same_reading(&plain, &read).map_err(TestCaseError::fail)?;
    }

    /// A failure marker inserted anywhere in a fixture is reported with its line number.
    #[test]
    fn a_failure_line_anywhere_is_reported(log in fixture(), at in any::<usize>(), marker in 8usize..11) {
        let mut lines: Vec<&str> = log.lines().collect();
        let at = at % (lines.len() + 1);
        lines.insert(at, INSERTED[marker]);
        let output = parse_log(&lines.join("\n")).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert!(output.build_failures.iter().any(|failure| failure.line_number == at + 1), "{:?}", output.build_failures);
    }
}

/// A log whose start was cut inside a record (it begins with a record's stack or `Used`
/// line, or with an entry's `Function properties` line) never passes: its first kernel was
/// never read whole.
#[test]
fn a_log_cut_inside_a_record_never_passes() {
    for log in FIXTURES {
        let lines: Vec<&str> = log.lines().collect();
        let entries: Vec<&str> = lines
            .iter()
            .filter_map(|line| line.split("Compiling entry function '").nth(1))
            .filter_map(|rest| rest.split('\'').next())
            .collect();
        for cut in 0..lines.len() {
            let first = lines[cut]
                .trim_start()
                .trim_start_matches("1>")
                .trim_start();
            let inside = first.contains("bytes stack frame")
                || first.starts_with("ptxas info    : Used ")
                || first
                    .strip_prefix("ptxas info    : Function properties for ")
                    .is_some_and(|name| entries.contains(&name.trim()));
            if inside {
                let result = parse_log(&lines[cut..].join("\n"));
                assert!(
                    result.is_err(),
                    "cut at line {} passed: {:?}",
                    cut + 1,
                    lines[cut]
                );
            }
        }
    }
}
