//! Property tests of the lock reader (issue #23.6): every baseline a bless can write is read
//! back equal; any text, and a written lock with a few bytes changed, removed or repeated, is
//! refused or read, never a panic; and every lock the reader accepts round-trips (parse ->
//! `to_text` -> parse gives the same baseline). Bounded for CI: proptest's default case count,
//! locks of a few entries.

use proptest::prelude::*;

use super::*;

fn arch() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "sm_75", "sm_80", "sm_86", "sm_90", "sm_90a", "sm_100", "sm_120",
    ])
    .prop_map(str::to_string)
}

fn kernel() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,10}",
        "_Z[0-9]{1,2}[a-z]{1,6}P[fi]",
        "\\PC{1,6}",
    ]
}

fn source() -> impl Strategy<Value = String> {
    prop_oneof![
        "kernels/[a-z]{1,6}\\.cu",
        "[a-z]{1,4}/[a-z]{1,4}\\.ptx",
        "\\PC{1,8}",
    ]
}

fn numbers() -> impl Strategy<Value = BaselineNumbers> {
    (
        0u32..=255,
        prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        any::<u64>(),
        0u64..4096,
        0u64..(1 << 20),
        prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
        prop::option::of(prop_oneof![
            Just(occupancy_core::tune::Bound::None),
            Just(occupancy_core::tune::Bound::NoLaunchBounds),
            (1u32..=32).prop_map(occupancy_core::tune::Bound::MinBlocksPerSm),
            (1u32..=255).prop_map(occupancy_core::tune::Bound::MaxRegisters),
        ]),
    )
        .prop_map(
            |(registers, spill_store_bytes, spill_load_bytes, stack, smem, occupancy, chosen)| {
                BaselineNumbers {
                    registers,
                    spill_store_bytes,
                    spill_load_bytes,
                    stack_frame_bytes: stack,
                    static_smem_bytes: smem,
                    occupancy,
                    chosen_bounds: chosen,
                }
            },
        )
}

fn entries() -> impl Strategy<Value = ArchEntries> {
    (
        prop::collection::vec("-[A-Za-z0-9=_]{1,6}", 0..3),
        prop::collection::btree_map(kernel(), numbers(), 0..4),
    )
        .prop_map(|(flags, kernels)| ArchEntries { flags, kernels })
}

fn versions() -> impl Strategy<Value = Versions> {
    (
        "1[0-3]\\.[0-9]\\.[0-9]{1,3}",
        "1[0-3]\\.[0-9]\\.[0-9]{1,3}|unknown",
    )
        .prop_map(|(nvcc, ptxas)| Versions { nvcc, ptxas })
}

/// Any baseline a bless can write.
fn any_baseline() -> impl Strategy<Value = Baseline> {
    (
        prop::collection::btree_map(arch(), versions(), 0..3),
        prop::collection::btree_map(
            source(),
            prop::collection::btree_map(arch(), entries(), 1..3),
            0..3,
        ),
        prop::collection::btree_map(arch(), entries(), 0..2),
    )
        .prop_map(|(toolchains, sources, unattributed)| Baseline {
            schema_version: SCHEMA_VERSION,
            toolchains,
            sources,
            unattributed: unattributed
                .into_iter()
                .filter(|(_, entries)| !entries.kernels.is_empty())
                .collect(),
        })
}

/// What a careless edit or a bad merge does to a file: bytes removed, a token put in, a line
/// repeated.
#[derive(Debug, Clone)]
enum Mutation {
    Remove(prop::sample::Index, usize),
    Insert(prop::sample::Index, &'static str),
    Replace(prop::sample::Index, usize, &'static str),
    RepeatLine(prop::sample::Index),
}

/// Tokens that make JSON wrong, or right JSON with a wrong value.
const TOKENS: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\n",
    "-1",
    "-0",
    "1e999",
    "256",
    "4294967296",
    "18446744073709551616",
    "0.5",
    "1.0000001",
    "NaN",
    "null",
    "true",
    "\"sm_90\"",
    "\"90\"",
    "\"sm_1\"",
    "\"\"",
    "\"schema_version\": 1,",
    "\"schema_version\": 3,",
    "\"flags\": [],",
    "\"kernels\": {},",
    "\"x\": 0,",
    "\\u0000",
    "\u{feff}",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop::sample::select(TOKENS);
    prop_oneof![
        (any::<prop::sample::Index>(), 1usize..12).prop_map(|(at, len)| Mutation::Remove(at, len)),
        (any::<prop::sample::Index>(), token.clone())
            .prop_map(|(at, token)| Mutation::Insert(at, token)),
        (any::<prop::sample::Index>(), 1usize..6, token)
            .prop_map(|(at, len, token)| Mutation::Replace(at, len, token)),
        any::<prop::sample::Index>().prop_map(Mutation::RepeatLine),
    ]
}

/// `text` with `mutation` applied, at a character boundary.
fn mutate(text: &str, mutation: &Mutation) -> String {
    let boundary = |index: &prop::sample::Index| {
        let mut at = index.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let end = |start: usize, len: usize| {
        let mut end = (start + len).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        end
    };
    match mutation {
        Mutation::Remove(at, len) => {
            let start = boundary(at);
            format!("{}{}", &text[..start], &text[end(start, *len)..])
        }
        Mutation::Insert(at, token) => {
            let at = boundary(at);
            format!("{}{token}{}", &text[..at], &text[at..])
        }
        Mutation::Replace(at, len, token) => {
            let start = boundary(at);
            format!("{}{token}{}", &text[..start], &text[end(start, *len)..])
        }
        Mutation::RepeatLine(at) => {
            let lines: Vec<&str> = text.lines().collect();
            let repeat = at
                .index(lines.len().max(1))
                .min(lines.len().saturating_sub(1));
            let mut out: Vec<&str> = Vec::with_capacity(lines.len() + 1);
            for (index, line) in lines.iter().enumerate() {
                out.push(line);
                if index == repeat {
                    out.push(line);
                }
            }
            out.join("\n")
        }
    }
}

/// Reads `text`; when accepted, its baseline is written and read back equal.
fn accepted_locks_round_trip(text: &[u8]) -> Result<(), TestCaseError> {
    let Ok(parsed) = parse(text) else {
        return Ok(());
    };
    let written = parsed.baseline.to_text();
    match parse(written.as_bytes()) {
        Ok(again) => {
            prop_assert_eq!(again.schema_version, SCHEMA_VERSION);
            prop_assert_eq!(again.baseline, parsed.baseline);
        }
        Err(error) => prop_assert!(
            false,
            "{}\nwas accepted, and its rewrite\n{written}\nis refused: {error:?}",
            String::from_utf8_lossy(text)
        ),
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_baseline_a_bless_writes_is_read_back_equal(baseline in any_baseline()) {
        let parsed = parse(baseline.to_text().as_bytes());
        prop_assert!(parsed.is_ok(), "{}\n{parsed:?}", baseline.to_text());
        prop_assert_eq!(parsed.map(|parsed| parsed.baseline).ok(), Some(baseline));
    }

    #[test]
    fn any_text_is_refused_or_round_trips(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        accepted_locks_round_trip(&bytes)?;
    }

    #[test]
    fn a_mutated_lock_is_refused_or_round_trips(
        baseline in any_baseline(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let mut text = baseline.to_text();
        for mutation in &mutations {
            text = mutate(&text, mutation);
        }
        accepted_locks_round_trip(text.as_bytes())?;
    }

    #[test]
    fn a_mutated_schema_1_lock_is_refused_or_round_trips(
        mutations in prop::collection::vec(mutation(), 0..3),
    ) {
        let mut text = super::tests::SCHEMA_1.to_string();
        for mutation in &mutations {
            text = mutate(&text, mutation);
        }
        accepted_locks_round_trip(text.as_bytes())?;
    }
}
