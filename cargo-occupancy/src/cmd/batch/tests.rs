use super::*;
use occupancy_core::calc::occupancy;
use proptest::prelude::*;
use std::io::{BufReader, Read};

/// Architecture names read as a run reads them: nvcc looked for in the process's environment.
fn archs() -> ArchNames {
    ArchNames::new(
        occupancy_build::TrackedEnv::new(),
        occupancy_build::cli::ToolTimeouts::default(),
    )
}

fn error_of(line: &str) -> String {
    BatchLine::parse(line, &archs()).unwrap_err()
}

#[test]
fn a_full_line_parses() {
    let line = BatchLine::parse(
        r#"{"arch":"sm_80","block":128,"registers":32,"static_smem":1000,"dynamic_smem":60000,"barriers":2,"max_threads":128,"carveout":50,"max_dynamic_smem":70000}"#,
        &archs(),
    )
    .unwrap();
    assert_eq!(line.arch.unwrap().name, "sm_80");
    assert_eq!(line.block, Some(128));
    assert_eq!(line.carveout, Some(Carveout::Percent(50)));
    assert_eq!(line.max_dynamic_smem, Some(70000));
    assert_eq!(
        BatchLine::parse(" { } ", &archs()).unwrap(),
        BatchLine::default()
    );
    assert_eq!(
        BatchLine::parse(r#"{"block": null}"#, &archs()).unwrap(),
        BatchLine::default()
    );
}

#[test]
fn bad_values_are_named_exactly() {
    for (line, message) in [
        (
            r#"{"regs": 3}"#,
            "unknown key `regs`; known keys: arch, block",
        ),
        (r#"{"block": 1, "block": 2}"#, "`block` is given twice"),
        // Issue #35, class 9: a key spelt with an escape is the same key.
        (r#"{"bl\u006fck": 1, "block": 2}"#, "`block` is given twice"),
        (r#"{"block": 1, "\u0062lock": 2}"#, "`block` is given twice"),
        (
            r#"{"block": -1}"#,
            "`block` must be a non-negative integer, got -1",
        ),
        (
            r#"{"block": 1.5}"#,
            "`block` must be a non-negative integer, got 1.5",
        ),
        (
            r#"{"block": "64"}"#,
            "`block` must be a non-negative integer, got \"64\"",
        ),
        (
            r#"{"block": true}"#,
            "`block` must be a non-negative integer, got true",
        ),
        (
            r#"{"static_smem": 4294967296}"#,
            "`static_smem` is 4294967296, larger than 4294967295",
        ),
        (r#"{"arch": "sm90"}"#, "did you mean `sm_90`"),
        (r#"{"arch": "sm_999"}"#, "unknown architecture `sm_999`"),
        (
            r#"{"arch": [90]}"#,
            "`arch` must be a string like \"sm_90\", got [90]",
        ),
        (r#"{"carveout": 101}"#, "carveout"),
        (r#"{"carveout": "most"}"#, "invalid carveout `most`"),
        (r#"{"block": 64} trailing"#, "not JSON"),
        (r#"{"block": 064}"#, "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ("", "not JSON"),
    ] {
        let error = error_of(line);
        assert!(
            error.contains(message),
            "{line}: {error:?} lacks {message:?}"
        );
    }
}

#[test]
fn fields_parse_and_refuse_unknown_and_repeated_names() {
    assert_eq!(
        parse_fields("blocks_per_sm,limiters").unwrap(),
        [Field::BlocksPerSm, Field::Limiters]
    );
    let error = parse_fields("blocks,limiters").unwrap_err();
    assert!(
        error.contains("unknown field `blocks`; known: arch, block_threads"),
        "{error}"
    );
    assert!(parse_fields("reason,reason").unwrap_err().contains("twice"));
}

/// A reader that fails on every call, like a directory given as stdin.
struct Failing;

impl Read for Failing {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::Error::from_raw_os_error(21))
    }
}

#[test]
fn a_read_error_ends_the_batch_with_one_message() {
    let mut out = Vec::new();
    let outcome = answer_all(
        &mut BufReader::new(Failing),
        "(stdin)",
        &mut out,
        &archs(),
        (None, None),
        None,
    )
    .unwrap();
    let BatchEnd::ReadError(message) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        message.contains("(stdin) at line 1") && message.contains("stops here"),
        "{message}"
    );
    assert!(
        out.is_empty(),
        "nothing is answered for an unreadable input"
    );
}

#[test]
fn a_line_that_is_not_utf8_is_a_bad_line_and_the_batch_goes_on() {
    let input: &[u8] =
        b"{\"arch\":\"sm_90\",\"block\":64}\n\xff\xfe\n{\"arch\":\"sm_90\",\"block\":64}\n";
    let mut out = Vec::new();
    let outcome = answer_all(
        &mut BufReader::new(input),
        "x",
        &mut out,
        &archs(),
        (None, None),
        None,
    )
    .unwrap();
    assert_eq!(outcome, BatchEnd::Finished { bad_lines: 1 });
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].contains("line 2: not UTF-8"), "{}", lines[1]);
}

fn arb_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..5_000_000).prop_map(|number| number.to_string()),
        Just("4294967296".to_string()),
        Just("18446744073709551616".to_string()),
        (0u64..300).prop_map(|number| format!("-{number}")),
        Just("1.5".to_string()),
        Just("1e3".to_string()),
        Just("01".to_string()),
        Just("null".to_string()),
        Just("true".to_string()),
        Just("[1]".to_string()),
        Just("{}".to_string()),
        prop::sample::select(vec![
            "\"sm_90\"",
            "\"9.0\"",
            "\"sm_100f\"",
            "\"sm90\"",
            "\"default\"",
            "\"50\"",
            "\"sm_\\u0039\"",
            "\"\"",
        ])
        .prop_map(str::to_string),
    ]
}

fn arb_line() -> impl Strategy<Value = String> {
    let keys: Vec<&str> = KEYS.iter().copied().chain(["regs", "Block"]).collect();
    (
        prop::sample::subsequence(keys, 0..6).prop_shuffle(),
        prop::collection::vec(arb_value(), 6),
        prop::sample::select(vec!["", " ", "\t"]),
        prop::sample::select(vec!["", "}", ",", " x"]),
    )
        .prop_map(|(keys, values, space, tail)| {
            let pairs: Vec<String> = keys
                .iter()
                .zip(values)
                .map(|(key, value)| format!("\"{key}\"{space}:{space}{value}"))
                .collect();
            format!("{space}{{{}}}{tail}", pairs.join(&format!(",{space}")))
        })
}

proptest! {
    /// The fast scanner and serde_json agree on every line the scanner takes.
    #[test]
    fn the_fast_path_agrees_with_serde(line in arb_line()) {
        if let Some(fast) = parse_fast(&line, &archs()) {
            let slow = parse_with_serde(&line, &archs());
            prop_assert_eq!(fast.is_ok(), slow.is_ok(), "{}: fast {:?}, serde {:?}", line, fast, slow);
            if let (Ok(fast), Ok(slow)) = (fast, slow) {
                prop_assert_eq!(fast, slow);
            }
        }
    }

    #[test]
    fn parsing_never_panics(line in "\\PC{0,80}") {
        let _ = BatchLine::parse(&line, &archs());
    }

    /// `--fields` answers are exactly those fields of the full answer.
    #[test]
    fn selected_fields_equal_the_full_answer(
        arch in prop::sample::select(occupancy_core::arch::all().iter().collect::<Vec<_>>()),
        block in 0u32..1100,
        registers in 0u32..300,
        static_smem in 0u32..120_000,
        dynamic_smem in 0u32..120_000,
        barriers in 0u32..17,
        count in 1usize..6,
        max_threads in proptest::option::of(0u32..1100),
        max_dynamic_smem in proptest::option::of(0u32..120_000),
        carveout in prop_oneof![Just(Carveout::Default), (0u8..=101).prop_map(Carveout::Percent)],
    ) {
        let kernel = KernelFacts { registers_per_thread: registers, static_smem_bytes: static_smem, barriers, max_threads_per_block: max_threads, max_dynamic_smem_bytes: max_dynamic_smem };
        let launch = Launch { block_threads: block, dynamic_smem_bytes: dynamic_smem, carveout };
        let mut full = Vec::new();
        AnswerWriter::new(None).write(&mut full, arch, &kernel, &launch);
        // Byte for byte what serde_json writes for the calculator's answer.
        let serde_text = serde_json::to_string(&occupancy(arch, &kernel, &launch)).unwrap() + "\n";
        prop_assert_eq!(std::str::from_utf8(&full).unwrap(), serde_text.as_str());
        let full: Value = serde_json::from_slice(&full).unwrap();
        let fields: Vec<Field> = Field::ALL.iter().copied().cycle().skip(block as usize % 14).take(count).collect();
        let mut selected = Vec::new();
        AnswerWriter::new(Some(&fields)).write(&mut selected, arch, &kernel, &launch);
        let selected: Value = serde_json::from_slice(&selected).unwrap();
        let selected = selected.as_object().unwrap();
        prop_assert_eq!(selected.len(), fields.len());
        for field in fields {
            prop_assert_eq!(&selected[field.name()], &full[field.name()], "{}", field.name());
        }
    }
}

/// Answers `input` through a reader whose buffer holds `capacity` bytes.
fn answers_through(input: &[u8], capacity: usize) -> (BatchEnd, String) {
    let mut out = Vec::new();
    let outcome = answer_all(
        &mut BufReader::with_capacity(capacity, input),
        "x",
        &mut out,
        &archs(),
        (None, None),
        None,
    )
    .unwrap();
    (outcome, String::from_utf8(out).unwrap())
}

#[test]
fn lines_across_the_read_buffer_get_the_same_answers() {
    let input = b"{\"arch\":\"sm_90\",\"block\":64,\"registers\":40}\r\n\n{\"arch\":\"sm_100a\",\"block\":1024,\"static_smem\":99999}\n{\"arch\":\"sm_75\",\"block\":96}";
    let (outcome, whole) = answers_through(input, 1 << 16);
    assert_eq!(outcome, BatchEnd::Finished { bad_lines: 1 });
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 4, "{whole}");
    assert!(lines[0].starts_with("{\"arch\":\"sm_90\""), "{}", lines[0]);
    assert!(lines[1].contains("line 2: not JSON"), "{}", lines[1]);
    assert!(lines[3].starts_with("{\"arch\":\"sm_75\""), "{}", lines[3]);
    for capacity in [1, 2, 7, 16, 50, 51, 52, 53] {
        assert_eq!(
            answers_through(input, capacity),
            (outcome.clone(), whole.clone()),
            "capacity {capacity}"
        );
    }
}

/// Lines, then a reader that fails.
struct FailingAfter<'a>(&'a [u8]);

impl Read for FailingAfter<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.0.is_empty() {
            return Err(std::io::Error::from_raw_os_error(5));
        }
        let count = self.0.read(buffer)?;
        Ok(count)
    }
}

#[test]
fn answers_before_a_read_error_are_written_and_the_error_names_the_next_line() {
    let mut out = Vec::new();
    let outcome = answer_all(
        &mut BufReader::new(FailingAfter(b"{\"arch\":\"sm_90\",\"block\":64}\n{}\n")),
        "x",
        &mut out,
        &archs(),
        (None, None),
        None,
    )
    .unwrap();
    let BatchEnd::ReadError(message) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(message.contains("x at line 3"), "{message}");
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
}

/// A line past the cap ends the batch with one message naming its number and the cap; the
/// answers before it are written, nothing after it is read.
#[test]
fn a_line_past_the_cap_ends_the_batch_naming_it() {
    let line = b"{\"arch\":\"sm_90\",\"block\":64}";
    let mut input = Vec::new();
    for _ in 0..3 {
        input.extend_from_slice(line);
        input.push(b'\n');
    }
    input.extend(std::iter::repeat_n(b' ', 200));
    input.extend_from_slice(b"\n{\"arch\":\"sm_90\",\"block\":64}\n");
    for capacity in [4, 29, 1 << 16] {
        let mut out = Vec::new();
        let outcome = answer_all_capped(
            &mut BufReader::with_capacity(capacity, input.as_slice()),
            "`x.jsonl`",
            &mut out,
            &archs(),
            (None, None),
            None,
            line.len(),
        )
        .unwrap();
        assert_eq!(
            outcome,
            BatchEnd::ReadError(format!(
                "the batch input `x.jsonl`: line 4 is longer than {} bytes ({} bytes, the longest line read), with no newline within them; the batch stops here (a batch line holds one JSON object)",
                line.len(),
                line.len()
            )),
            "capacity {capacity}"
        );
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3);
    }
}

/// `calc --batch /dev/zero`: endless input with no newline is refused after 1 MiB, not read
/// until memory runs out.
#[test]
fn endless_input_without_a_newline_is_refused_after_one_mebibyte() {
    let mut zeros = BufReader::with_capacity(1 << 16, std::io::repeat(0).take(u64::MAX));
    let mut out = Vec::new();
    let outcome = answer_all(
        &mut zeros,
        "`/dev/zero`",
        &mut out,
        &archs(),
        (None, None),
        None,
    )
    .unwrap();
    let BatchEnd::ReadError(message) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        message.contains("`/dev/zero`: line 1 is longer than 1048576 bytes (1 MiB"),
        "{message}"
    );
    assert!(out.is_empty());
}

/// The batch reader's fuzz corpus (issue #23, round 2): `input` answered through a reader of
/// `capacity` bytes with lines capped at `max`, as (outcome, answers).
fn fuzzed(input: &[u8], capacity: usize, max: usize) -> (BatchEnd, Vec<Value>) {
    let mut out = Vec::new();
    let outcome = answer_all_capped(
        &mut BufReader::with_capacity(capacity, input),
        "`fuzz`",
        &mut out,
        &archs(),
        (None, None),
        None,
        max,
    )
    .unwrap();
    let text = String::from_utf8(out).expect("answers are UTF-8");
    let answers = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("every answer is one JSON object"))
        .collect();
    (outcome, answers)
}

/// What the batch must do with `input`: one answer per line (a bad line an `{"error"}` answer
/// naming its number), or, at the first line longer than `max`, the answers before it and one
/// message naming that line.
fn check_batch(input: &[u8], capacity: usize, max: usize) -> Result<(), TestCaseError> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    let lines: Vec<&[u8]> = if input.is_empty() {
        Vec::new()
    } else {
        body.split(|&byte| byte == b'\n').collect()
    };
    let first_long = lines.iter().position(|line| line.len() > max);
    let (outcome, answers) = fuzzed(input, capacity, max);
    let answered = first_long.unwrap_or(lines.len());
    prop_assert_eq!(answers.len(), answered);
    for (index, answer) in answers.iter().enumerate() {
        if let Some(error) = answer.get("error") {
            let start = format!("line {}: ", index + 1);
            prop_assert!(
                error.as_str().is_some_and(|text| text.starts_with(&start)),
                "{}",
                error
            );
        } else {
            prop_assert!(answer.get("blocks_per_sm").is_some(), "{}", answer);
        }
    }
    let bad = answers
        .iter()
        .filter(|answer| answer.get("error").is_some())
        .count() as u64;
    match (first_long, outcome) {
        (None, BatchEnd::Finished { bad_lines }) => prop_assert_eq!(bad_lines, bad),
        (Some(index), BatchEnd::ReadError(message)) => {
            let named = format!("line {} is longer than {max} bytes", index + 1);
            prop_assert!(message.contains(&named), "{}", message);
        }
        (first_long, outcome) => {
            prop_assert!(false, "long line {first_long:?}, outcome {outcome:?}")
        }
    }
    Ok(())
}

proptest! {
    /// Arbitrary bytes (invalid UTF-8, CRs, no final newline), any read buffer, any cap: never a
    /// panic, one JSON answer per line up to the first over-long line, which ends the batch
    /// naming it.
    #[test]
    fn arbitrary_batch_input_gets_one_answer_per_line(
        input in prop::collection::vec(
            prop_oneof![4 => any::<u8>(), 1 => Just(b'\n'), 1 => Just(b'{'), 1 => Just(b'"')],
            0..3000,
        ),
        capacity in 1usize..300,
        max in 8usize..400,
    ) {
        check_batch(&input, capacity, max)?;
    }

    /// Valid and nearly valid lines, with bytes flipped, inserted or removed: the same contract.
    #[test]
    fn mutated_batch_lines_get_one_answer_per_line(
        lines in prop::collection::vec(arb_line(), 0..30),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..10),
        capacity in 1usize..300,
        max in 16usize..400,
    ) {
        let mut input = lines.join("\n").into_bytes();
        for (at, byte, kind) in edits {
            let at = at % (input.len() + 1);
            match kind {
                0 if at < input.len() => input[at] = byte,
                1 => input.insert(at, byte),
                _ if at < input.len() => { input.remove(at); }
                _ => {}
            }
        }
        check_batch(&input, capacity, max)?;
    }
}
