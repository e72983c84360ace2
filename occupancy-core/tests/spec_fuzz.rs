//! Fuzzing the declaration grammar (issue 11): token streams built from the grammar's own words,
//! wrong words, and hostile literals (huge, negative, NaN, empty strings, unbalanced lists) go
//! through both readers, the proc macro's (`spec::parse_args`) and the build's
//! (`scan_source`). Neither may panic, and every error must point inside the text it was given
//! (or, for the macro path, at the attribute as a whole), so rustc and the build can show it.

use occupancy_core::spec::scan_source;
use proc_macro2::TokenStream;
use proptest::prelude::*;

/// Words of the attribute grammar, near misses, and hostile literals.
const VOCABULARY: &[&str] = &[
    "block",
    "min_blocks_per_sm",
    "min_occupancy",
    "max_spill_bytes",
    "max_stack_bytes",
    "max_registers",
    "max_registers_per_thread",
    "dynamic_smem",
    "name",
    "archs",
    "allow",
    "warn",
    "deny",
    "spills",
    "low_occupancy",
    "blok",
    "min_ocupancy",
    "=",
    "=",
    "=",
    ",",
    ",",
    "(",
    ")",
    "[",
    "]",
    "-",
    "%",
    ".",
    "0",
    "1",
    "32",
    "256",
    "1024",
    "2048",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "-1",
    "0.5",
    "1.5",
    "1e999",
    "-0.0",
    "NaN",
    "inf",
    "\"75%\"",
    "\"sm_90\"",
    "\"sm_999\"",
    "\"\"",
    "\"\\u{0}\"",
    "'c'",
    "b\"x\"",
    "1u8",
    "true",
    "None",
    "\n",
    "\n  ",
    "/* c */",
    "// line\n",
];

/// Keys and values of the grammar, for `key = value` entries that are mostly well formed.
const KEYS: &[&str] = &[
    "block",
    "min_blocks_per_sm",
    "min_occupancy",
    "max_spill_bytes",
    "max_stack_bytes",
    "max_registers",
    "max_registers_per_thread",
    "dynamic_smem",
    "name",
    "archs",
    "blok",
];
const VALUES: &[&str] = &[
    "256",
    "(32, 8)",
    "(1024, 1024, 64)",
    "0",
    "-1",
    "4294967296",
    "0.5",
    "1e999",
    "NaN",
    "\"50%\"",
    "\"\"",
    "[\"sm_90\"]",
    "[\"sm_999\"]",
    "[]",
    "\"k\"",
    "true",
];

fn argument_text() -> impl Strategy<Value = String> {
    let words = prop::collection::vec(prop::sample::select(VOCABULARY), 0..24)
        .prop_map(|words| words.join(" "));
    let entry = (prop::sample::select(KEYS), prop::sample::select(VALUES))
        .prop_map(|(key, value)| format!("{key} = {value}"));
    let entries = prop::collection::vec(entry, 0..6).prop_map(|entries| entries.join(", "));
    prop_oneof![words, entries]
}

/// Whether a 1-based `line` and `column` lie in `text` (the column may be one past the end).
fn inside(text: &str, line: usize, column: usize) -> bool {
    text.split('\n')
        .nth(line.wrapping_sub(1))
        .is_some_and(|content| column >= 1 && column <= content.chars().count() + 1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_build_scanner_never_panics_and_points_inside_the_file(args in argument_text()) {
        let source = format!("use occupancy::kernel;\n\n#[kernel({args})]\nfn stub(x: *const f32);\n");
        if let Err(error) = scan_source(&source) {
            prop_assert!(!error.diagnostics.is_empty());
            for diagnostic in &error.diagnostics {
                let span = diagnostic.span;
                prop_assert!(inside(&source, span.start.line, span.start.column),
                    "{}:{} outside\n{}\n{}", span.start.line, span.start.column, source, diagnostic.message);
                prop_assert!(inside(&source, span.end.line, span.end.column), "end outside: {:?}", span);
                prop_assert!(span.start <= span.end, "{:?}", span);
                prop_assert!(!diagnostic.message.trim().is_empty());
                prop_assert!(!diagnostic.message.contains("``"), "{}", diagnostic.message);
            }
        }
    }

    #[test]
    fn the_macro_path_never_panics_and_points_inside_its_tokens(args in argument_text()) {
        let Ok(tokens) = args.parse::<TokenStream>() else { return Ok(()) };
        if let Err(errors) = occupancy_core::spec::parse_args(tokens) {
            let call_site = proc_macro2::Span::call_site().start();
            for error in errors {
                let start = error.span().start();
                let at_attribute = start == call_site;
                prop_assert!(at_attribute || inside(&args, start.line, start.column + 1),
                    "{}:{} outside `{}`: {}", start.line, start.column, args, error);
                prop_assert!(!error.to_string().contains("``"), "{}", error);
            }
        }
    }
}

#[test]
fn nan_infinite_and_vanishing_occupancies_are_refused() {
    for value in [
        "\"NaN%\"",
        "\"nan%\"",
        "\"inf%\"",
        "\"-0%\"",
        "1e-400",
        "\"1e999%\"",
        "1e999",
        "NaN",
        "f64::NAN",
    ] {
        let source =
            format!("#[occupancy::kernel(block = 256, min_occupancy = {value})]\nfn k();\n");
        let message = scan_source(&source).expect_err(value).to_string();
        assert!(message.starts_with("1:50: "), "{value}: {message}");
        assert!(message.contains("min_occupancy"), "{value}: {message}");
    }
}
