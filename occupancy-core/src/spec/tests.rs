use proc_macro2::TokenStream;
use proptest::prelude::*;

use super::*;
use occupancy_model::ExampleArguments;

fn parse(text: &str) -> syn::Result<KernelSpec> {
    crate::spec::parse_args(text.parse::<TokenStream>().expect("test input tokenizes"))
}

fn error(text: &str) -> String {
    match parse(text) {
        Ok(spec) => panic!("`{text}` parsed as {spec:?}"),
        Err(error) => error
            .into_iter()
            .map(|error| error.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

#[test]
fn parses_every_key() {
    let spec = parse(
        r#"block = (32, 8), min_blocks_per_sm = 4, max_registers = 64, dynamic_smem = 16384,
           min_occupancy = "50%", max_spill_bytes = 0, max_stack_bytes = 128, max_registers_per_thread = 96,
           name = "_Z5saxpyifPKfPf", archs = ["sm_80", "sm_90a", "compute_120"],
           allow(low_occupancy, partial_warp), warn(spills), deny(stack_frame),"#,
    )
    .unwrap();
    let mut expected = KernelSpec::with_block(BlockDim { x: 32, y: 8, z: 1 });
    expected.min_blocks_per_sm = Some(Tunable::Fixed(4));
    expected.max_registers = Some(Tunable::Fixed(64));
    expected.dynamic_smem_bytes = 16384;
    expected.min_occupancy = Some(0.5);
    expected.max_spill_bytes = Some(0);
    expected.max_stack_bytes = Some(128);
    expected.max_registers_per_thread = Some(96);
    expected.name = Some("_Z5saxpyifPKfPf".to_owned());
    expected.archs = Some(vec!["sm_80".into(), "sm_90a".into(), "compute_120".into()]);
    expected.lint_levels = [
        (LintId::LowOccupancy, Level::Allow),
        (LintId::PartialWarp, Level::Allow),
        (LintId::Spills, Level::Warn),
        (LintId::StackFrame, Level::Deny),
    ]
    .into_iter()
    .collect();
    assert_eq!(spec, expected);
    assert_eq!(
        spec.to_string(),
        "block = (32, 8), min_blocks_per_sm = 4, max_registers = 64, dynamic_smem = 16384, min_occupancy = 0.5, \
         max_spill_bytes = 0, max_stack_bytes = 128, max_registers_per_thread = 96, name = \"_Z5saxpyifPKfPf\", \
         archs = [\"sm_80\", \"sm_90a\", \"compute_120\"], allow(low_occupancy, partial_warp), warn(spills), deny(stack_frame)"
    );
}

#[test]
fn expectations_and_reasons() {
    let spec = parse(
        r#"block = 256, expect(spills, reason = "tracked in #12"), allow(low_occupancy, reason = "register tiling"), warn(stack_frame)"#,
    )
    .unwrap();
    assert_eq!(spec.expected_lints, [LintId::Spills].into_iter().collect());
    assert_eq!(
        spec.lint_levels.get(&LintId::LowOccupancy),
        Some(&Level::Allow)
    );
    assert_eq!(spec.lint_reasons[&LintId::Spills], "tracked in #12");
    assert_eq!(spec.lint_reasons[&LintId::LowOccupancy], "register tiling");
    assert!(!spec.lint_reasons.contains_key(&LintId::StackFrame));
    assert_eq!(
        spec.to_string(),
        r#"block = 256, allow(low_occupancy, reason = "register tiling"), warn(stack_frame), expect(spills, reason = "tracked in #12")"#
    );
    assert!(error(r#"block = 256, expect(spills, reason = 12)"#)
        .starts_with("`reason` must be a string, not an integer"));
    assert!(error(r#"block = 256, expect(spills, reason = "  ")"#).starts_with("`reason` is empty"));
    assert!(
        error(r#"block = 256, expect(spills, reason = "a", reason = "b")"#)
            .starts_with("`expect(...)` has two reasons")
    );
    assert!(error(r#"block = 256, expect(reason = "a")"#).starts_with("`expect()` names no lint"));
    assert!(error(r#"block = 256, expect(spills(x))"#)
        .starts_with("`expect(...)` holds lint names and one `reason"));
    assert!(error(r#"block = 256, allow(spills), expect(spills)"#)
        .starts_with("lint `spills` already has a level in this attribute (`allow(spills)`)"));
}

#[test]
fn block_forms() {
    assert_eq!(parse("block = 256").unwrap().block, BlockDim::linear(256));
    assert_eq!(
        parse("block = (16, 16)").unwrap().block,
        BlockDim { x: 16, y: 16, z: 1 }
    );
    assert_eq!(
        parse("block = (8, 8, 4)").unwrap().block,
        BlockDim { x: 8, y: 8, z: 4 }
    );
    assert_eq!(parse("block = 1024").unwrap().block.threads(), 1024);
    // Not a multiple of 32: allowed here, the `partial_warp` lint reports it later.
    assert_eq!(parse("block = 100").unwrap().block, BlockDim::linear(100));
    assert_eq!(
        parse("min_occupancy = 1, block = 64")
            .unwrap()
            .min_occupancy,
        Some(1.0)
    );
}

#[test]
fn errors_say_what_to_edit() {
    let cases = [
        ("", "missing `block`"),
        (
            "block = 1025",
            "1025 threads along x is more than any GPU allows",
        ),
        ("block = 0", "at least 1 thread along x"),
        ("block = -32", "must be positive"),
        ("block = (64, 32)", "2048 threads, more than the 1024"),
        ("block = (1, 1, 65)", "65 threads along z"),
        ("block = (1, 2, 3, 4)", "1 to 3 dimensions"),
        ("block = 256u32", "remove the `u32` suffix"),
        ("block = BLOCK", "values must be literals"),
        ("block = \"256\"", "expects an integer, found a string"),
        (
            "block = 256, block = 128",
            "duplicate key `block`: it is already set to `256`",
        ),
        ("blok = 256", "unknown key `blok`: did you mean `block`?"),
        ("threads = 256", "did you mean `block`?"),
        ("block = 256, spills = 0", "`spills` is a lint, not a key"),
        (
            "block = 256, min_blocks_per_sm = 33",
            "no GPU keeps more than 32 blocks",
        ),
        (
            "block = 256, min_blocks_per_sm = 0",
            "smallest allowed value is 1",
        ),
        ("block = 256, min_occupancy = 0", "out of range"),
        ("block = 256, min_occupancy = 1.5", "out of range"),
        ("block = 256, min_occupancy = \"150%\"", "out of range"),
        ("block = 256, min_occupancy = \"half\"", "write a fraction"),
        ("block = 256, max_registers = 256", "at most 255 registers"),
        ("block = 256, name = \"\"", "`name` is empty"),
        ("block = 256, name = saxpy", "expects a string"),
        ("block = 256, archs = [\"sm90\"]", "did you mean \"sm_90\"?"),
        ("block = 256, archs = [\"volta\"]", "known: sm_50"),
        (
            "block = 256, archs = [\"sm_999\"]",
            "unknown arch \"sm_999\": known: sm_50",
        ),
        (
            "block = 256, archs = [\"sm_89a\"]",
            "did you mean \"sm_89\"?",
        ),
        (
            "block = 256, archs = [\"90\", \"compute_90\"]",
            "\"compute_90\" is listed twice in `archs` (as \"90\" too)",
        ),
        (
            "block = 256, archs = \"sm_80\"",
            "write a list: `archs = [\"sm_80\"]`",
        ),
        ("block = 256, archs = []", "would check nothing"),
        (
            "block = 256, archs = [\"sm_80\", \"sm_80\"]",
            "listed twice",
        ),
        (
            "block = 256, allow(spill)",
            "unknown lint `spill`: did you mean `spills`?",
        ),
        (
            "block = 256, allow(spills), deny(spills)",
            "lint `spills` already has a level in this attribute (`allow(spills)`)",
        ),
        ("block = 256, allow()", "names no lint"),
        (
            "block = 256, forbid(spills)",
            "`forbid` is not a lint level",
        ),
        ("block = 256, warn = spills", "takes a list of lints"),
        ("block", "`block` needs a value"),
        (
            "block = 256, min_blocks_per_sm = \"Auto\"",
            "write `min_blocks_per_sm = \"auto\"` (lower case, no spaces)",
        ),
        (
            "block = 256, min_blocks_per_sm = \"4\"",
            "write the number without quotes, `min_blocks_per_sm = 4`",
        ),
        (
            "block = 256, max_registers = \"fast\"",
            "`max_registers = \"fast\"` is neither a number nor `\"auto\"`",
        ),
        (
            "block = 256, max_registers = AUTO",
            "`max_registers` expects an integer (1 to 255) or `\"auto\"`, found a name",
        ),
        (
            "block = 256, min_blocks_per_sm = \"auto\", max_registers = 64",
            "`min_blocks_per_sm = \"auto\"` cannot be combined with `max_registers = 64`",
        ),
        (
            "block = 256, max_registers = \"auto\", min_blocks_per_sm = 2",
            "`max_registers = \"auto\"` cannot be combined with `min_blocks_per_sm = 2`",
        ),
        (
            "block = 256, family = \"k_*\", min_blocks_per_sm = \"auto\"",
            "`min_blocks_per_sm = \"auto\"` cannot be used with `family`",
        ),
        (
            "block = 256, min_blocks_per_sm = 40",
            "no GPU keeps more than 32 blocks",
        ),
    ];
    for (input, expected) in cases {
        let message = error(input);
        assert!(
            message.contains(expected),
            "`{input}`: expected `{expected}` in:\n{message}"
        );
        assert!(
            message.contains("docs/declaring-kernels.md#"),
            "`{input}` names no docs section:\n{message}"
        );
    }
}

#[test]
fn auto_bounds_parse_and_print_back() {
    let spec = parse("block = 256, min_blocks_per_sm = \"auto\"").unwrap();
    assert_eq!(spec.min_blocks_per_sm, Some(Tunable::Auto));
    assert_eq!(
        spec.to_string(),
        "block = 256, min_blocks_per_sm = \"auto\""
    );
    let spec = parse("block = 128, max_registers = \"auto\", max_spill_bytes = 16").unwrap();
    assert_eq!(spec.max_registers, Some(Tunable::Auto));
    assert_eq!(spec.min_blocks_per_sm, None);
    let spec = parse("block = 128, min_blocks_per_sm = 3").unwrap();
    assert_eq!(spec.min_blocks_per_sm, Some(Tunable::Fixed(3)));
}

#[test]
fn value_errors_are_all_reported_at_once() {
    let message = error("block = 2048, min_occupancy = 2.0, allow(spill)");
    assert_eq!(message.lines().count(), 3, "{message}");
}

#[test]
fn arch_names() {
    for valid in [
        "sm_50",
        "sm_80",
        "sm_90a",
        "sm_100f",
        "sm_120a",
        "compute_90",
        "compute_100a",
    ] {
        assert_eq!(check_arch_name(valid), Ok(()), "{valid}");
    }
    // The one grammar of `occupancy_core::arch::Arch`: the CUDA_COMPUTE_CAP-style numbers are
    // accepted here as everywhere else.
    assert_eq!(check_arch_name("90"), Ok(()));
    assert_eq!(check_arch_name("9.0"), Ok(()));
    assert_eq!(check_arch_name("sm90"), Err(Some("sm_90".to_owned())));
    assert_eq!(check_arch_name("SM_80"), Err(Some("sm_80".to_owned())));
    assert_eq!(
        check_arch_name("compute90a"),
        Err(Some("compute_90a".to_owned()))
    );
    assert_eq!(check_arch_name("sm_9"), Err(None));
    assert_eq!(check_arch_name("sm_080"), Err(Some("sm_80".to_owned())));
    assert_eq!(check_arch_name("sm_90b"), Err(Some("sm_90".to_owned())));
    // Well-formed, but nvcc has no such architecture or variant: nvcc would have got them.
    assert_eq!(check_arch_name("sm_999"), Err(None));
    assert_eq!(check_arch_name("sm_89a"), Err(Some("sm_89".to_owned())));
    assert_eq!(check_arch_name("sm_90f"), Err(Some("sm_90".to_owned())));
}

/// GitHub's anchor for a Markdown heading.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|character| character.is_alphanumeric() || matches!(character, '-' | '_' | ' '))
        .map(|character| if character == ' ' { '-' } else { character })
        .collect()
}

#[test]
fn every_docs_link_in_messages_has_a_section() {
    let docs = include_str!("../../../docs/declaring-kernels.md");
    let anchors: Vec<String> = docs
        .lines()
        .filter(|line| line.starts_with('#'))
        .map(|line| heading_anchor(line.trim_start_matches('#')))
        .collect();
    let mut linked: Vec<&str> = Key::ALL.iter().map(|key| key.as_str()).collect();
    linked.extend([
        "lint-levels",
        "keys",
        "stub-styles",
        "extern-c-declarations",
    ]);
    for anchor in linked {
        assert!(
            anchors.iter().any(|known| known == anchor),
            "docs/declaring-kernels.md has no section #{anchor}; it has {anchors:?}"
        );
    }
    // And every anchor the code links is one of those.
    for source in [
        include_str!("grammar.rs"),
        include_str!("stub.rs"),
        include_str!("scan.rs"),
    ] {
        for linked in source
            .split("docs_link(\"")
            .skip(1)
            .chain(source.split("DOCS_PATH}#").skip(1))
        {
            let anchor: String = linked
                .chars()
                .take_while(|character| {
                    character.is_alphanumeric() || matches!(character, '-' | '_')
                })
                .collect();
            if anchor.is_empty() {
                continue; // the helpers' own `{anchor}` placeholders
            }
            assert!(
                anchors.contains(&anchor),
                "code links #{anchor}, which docs/declaring-kernels.md lacks"
            );
        }
    }
}

fn arb_block() -> impl Strategy<Value = BlockDim> {
    (1u32..=1024)
        .prop_flat_map(|x| (Just(x), 1u32..=1024 / x))
        .prop_flat_map(|(x, y)| (Just(x), Just(y), 1u32..=(1024 / (x * y)).min(64)))
        .prop_map(|(x, y, z)| BlockDim { x, y, z })
}

/// Architectures nvcc has, each once, with a spelling index for [`arb_spelling`].
fn arb_archs() -> impl Strategy<Value = std::collections::BTreeMap<crate::arch::Arch, usize>> {
    let archs: Vec<crate::arch::Arch> = crate::arch::Arch::every().collect();
    proptest::collection::btree_map(proptest::sample::select(archs), 0usize..4, 1..4)
}

/// One of the spellings the one grammar accepts for `arch`.
fn arb_spelling(arch: crate::arch::Arch, spelling: usize) -> String {
    {
        let portable = arch.variant() == crate::arch::Variant::Portable;
        match spelling {
            1 => arch.virtual_name(),
            2 if portable => arch.number().to_string(),
            3 if portable => format!("{}.{}", arch.number() / 10, arch.number() % 10),
            _ => arch.to_string(),
        }
    }
}

/// An arbitrary value of one key, by its kind.
#[derive(Debug, Clone)]
enum ArbitraryValue {
    Block(BlockDim),
    Integer(Option<u32>),
    Tunable(Option<Tunable>),
    Fraction(Option<f64>),
    Text(Option<String>),
    Archs(Option<Vec<String>>),
    Gpus(Option<Vec<String>>),
    Cluster(Option<occupancy_model::ClusterDim>),
    Flag(bool),
}

/// Values of a key of `kind`: every key of [`KEYS`] gets some, so a new key is covered
/// without a change here.
fn arb_value(kind: Kind) -> BoxedStrategy<ArbitraryValue> {
    match kind {
        Kind::Block => arb_block().prop_map(ArbitraryValue::Block).boxed(),
        Kind::Integer { min, max, .. } => proptest::option::of(min..=max)
            .prop_map(ArbitraryValue::Integer)
            .boxed(),
        Kind::IntegerOrAuto { min, max, .. } => proptest::option::of(prop_oneof![
            (min..=max).prop_map(Tunable::Fixed),
            Just(Tunable::Auto),
        ])
        .prop_map(ArbitraryValue::Tunable)
        .boxed(),
        Kind::Fraction => proptest::option::of(
            (1u64..=1_000_000).prop_map(|millionths| millionths as f64 / 1_000_000.0),
        )
        .prop_map(ArbitraryValue::Fraction)
        .boxed(),
        Kind::Symbol => proptest::option::of("[A-Za-z_][A-Za-z0-9_$<>:, ]{0,30}[A-Za-z0-9_>]")
            .prop_map(ArbitraryValue::Text)
            .boxed(),
        // A pattern excludes `name`, and has tests of its own.
        Kind::Pattern => Just(ArbitraryValue::Text(None)).boxed(),
        Kind::Archs => proptest::option::of(arb_archs())
            .prop_map(|archs| {
                ArbitraryValue::Archs(archs.map(|archs| {
                    archs
                        .into_iter()
                        .map(|(arch, spelling)| arb_spelling(arch, spelling))
                        .collect()
                }))
            })
            .boxed(),
        Kind::Choice { choices } => {
            proptest::option::of(proptest::sample::select(choices.to_vec()))
                .prop_map(|choice| ArbitraryValue::Text(choice.map(str::to_string)))
                .boxed()
        }
        Kind::Gpus => {
            let names: Vec<&'static str> =
                crate::arch::presets().iter().map(|gpu| gpu.name).collect();
            proptest::option::of(proptest::sample::subsequence(names, 1..4))
                .prop_map(|gpus| {
                    ArbitraryValue::Gpus(
                        gpus.map(|gpus| gpus.into_iter().map(str::to_string).collect()),
                    )
                })
                .boxed()
        }
        Kind::Cluster => proptest::option::of((1u32..=4, 1u32..=2, 1u32..=2))
            .prop_map(|dims| {
                ArbitraryValue::Cluster(
                    dims.map(|(x, y, z)| occupancy_model::ClusterDim::new(x, y, z)),
                )
            })
            .boxed(),
        Kind::Flag => any::<bool>().prop_map(ArbitraryValue::Flag).boxed(),
    }
}

/// Sets a key's field to an arbitrary value of its kind.
fn set(field: ValueMut<'_, Owned>, value: ArbitraryValue) {
    match (field, value) {
        (ValueMut::Block(field), ArbitraryValue::Block(block)) => *field = block,
        (ValueMut::Integer(field), ArbitraryValue::Integer(value)) => {
            *field = value.unwrap_or(*field)
        }
        (ValueMut::OptionalInteger(field), ArbitraryValue::Integer(value)) => *field = value,
        (ValueMut::Tunable(field), ArbitraryValue::Tunable(value)) => *field = value,
        (ValueMut::Fraction(field), ArbitraryValue::Fraction(value)) => *field = value,
        (ValueMut::Text(field), ArbitraryValue::Text(text)) => *field = text,
        (ValueMut::Archs(field), ArbitraryValue::Archs(archs)) => *field = archs,
        (ValueMut::Gpus(field), ArbitraryValue::Gpus(gpus)) => *field = gpus,
        (ValueMut::Cluster(field), ArbitraryValue::Cluster(cluster)) => *field = cluster,
        (ValueMut::Flag(field), ArbitraryValue::Flag(flag)) => *field = flag,
        (field, value) => unreachable!("{field:?} holds no {value:?}"),
    }
}

/// Leaves a key without a default unset (one with a default at it): as if it were not written.
fn clear(field: ValueMut<'_, Owned>) {
    match field {
        ValueMut::OptionalInteger(field) => *field = None,
        ValueMut::Tunable(field) => *field = None,
        ValueMut::Fraction(field) => *field = None,
        ValueMut::Text(field) => *field = None,
        ValueMut::Archs(field) | ValueMut::Gpus(field) => *field = None,
        ValueMut::Cluster(field) => *field = None,
        ValueMut::Flag(field) => *field = false,
        ValueMut::Block(_) | ValueMut::Integer(_) => {}
    }
}

fn arb_spec() -> impl Strategy<Value = KernelSpec> {
    let values: Vec<BoxedStrategy<ArbitraryValue>> =
        KEYS.iter().map(|info| arb_value(info.kind)).collect();
    let lints = proptest::collection::btree_map(
        0usize..LintId::ALL.len(),
        // A level (0..3) or `expect` (3), with or without a reason (quotes and escapes too).
        (
            0usize..4,
            proptest::option::of("[a-z #0-9\"'\\\\]{0,12}[a-z]"),
        ),
        0..LintId::ALL.len(),
    );
    (values, lints).prop_map(|(values, lints)| {
        let mut spec = KernelSpec::with_block(BlockDim::linear(1));
        for (key, value) in Key::ALL.into_iter().zip(values) {
            set(spec.value_mut(key), value);
        }
        // A key without a key it needs is refused (an assumed grid needs `launch`): drop it.
        for key in Key::ALL {
            if key
                .info()
                .needs
                .iter()
                .any(|need| !spec.value(*need).is_set())
            {
                clear(spec.value_mut(key));
            }
        }
        // `"auto"` for one launch bound is refused beside the other bound: drop the other.
        for (auto, other) in [
            (Key::MinBlocksPerSm, Key::MaxRegisters),
            (Key::MaxRegisters, Key::MinBlocksPerSm),
        ] {
            if spec.value(auto) == Value::Tunable(Some(Tunable::Auto)) {
                clear(spec.value_mut(other));
            }
        }
        spec.lint_levels = lints
            .iter()
            .filter(|(_, (level, _))| *level < 3)
            .map(|(lint, (level, _))| (LintId::ALL[*lint], Level::ALL[*level]))
            .collect();
        spec.expected_lints = lints
            .iter()
            .filter(|(_, (level, _))| *level == 3)
            .map(|(lint, _)| LintId::ALL[*lint])
            .collect();
        spec.lint_reasons = lints
            .iter()
            .filter_map(|(lint, (_, reason))| Some((LintId::ALL[*lint], reason.clone()?)))
            .collect();
        spec
    })
}

proptest! {
    #[test]
    fn display_reparses_equal(spec in arb_spec()) {
        let printed = spec.to_string();
        let reparsed = parse(&printed).map_err(|error| TestCaseError::fail(format!("{printed}: {error}")))?;
        prop_assert_eq!(reparsed, spec);
    }

    #[test]
    fn scanner_reads_what_the_macro_path_reads(spec in arb_spec()) {
        let printed = spec.to_string();
        let source = format!("#[occupancy::kernel({printed})]\nfn kernel_stub(x: *const f32);\n");
        let declared = scan_source(&source).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(declared.len(), 1);
        prop_assert_eq!(&declared[0].spec, &spec);
    }

    #[test]
    fn arbitrary_arguments_never_panic(text in "[a-z_ =(),\"0-9.%\\[\\]]{0,60}") {
        if let Ok(tokens) = text.parse::<TokenStream>() {
            let _ = crate::spec::parse_args(tokens);
        }
    }
}

#[test]
fn scan_finds_every_stub_style_with_spans() {
    let source = r#"use occupancy::kernel;

#[occupancy::kernel(block = 256, min_blocks_per_sm = 4)]
fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32);

#[kernel(block = (16, 16), name = "_Z9transposePfPKf")]
pub fn transpose(out: *mut f32, input: *const f32) {}

#[occupancy::kernel(block = 128, warn(spills))]
unsafe extern "C" {
    pub fn launch_reduce(n: usize);
}

mod nested {
    #[occupancy::kernel]
    extern "C" {
        #[occupancy::kernel(block = 64)]
        fn first();
        fn not_a_kernel();
        #[kernel(block = 32, max_stack_bytes = 0)]
        #[link_name = "second_impl"]
        fn second();
    }
    // `kernel` is not imported in this module: this is someone else's attribute.
    #[kernel]
    pub unsafe fn rust_cuda_kernel() {}
}
"#;
    let declared = scan_source(source).unwrap();
    let summary: Vec<(&str, &str, StubKind, String, usize)> = declared
        .iter()
        .map(|kernel| {
            (
                kernel.rust_name.as_str(),
                kernel.kernel_name.as_str(),
                kernel.stub,
                kernel.module_path.join("::"),
                kernel.attribute.start.line,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "saxpy",
                "saxpy",
                StubKind::BodylessFunction,
                String::new(),
                3
            ),
            (
                "transpose",
                "_Z9transposePfPKf",
                StubKind::Function,
                String::new(),
                6
            ),
            (
                "launch_reduce",
                "launch_reduce",
                StubKind::ExternBlock,
                String::new(),
                9
            ),
            (
                "first",
                "first",
                StubKind::ForeignFunction,
                "nested".to_owned(),
                17
            ),
            (
                "second",
                "second_impl",
                StubKind::ForeignFunction,
                "nested".to_owned(),
                20
            ),
        ]
    );
    assert_eq!(declared[0].const_name, "SAXPY_OCCUPANCY");
    assert_eq!(
        declared[0].attribute,
        SourceSpan {
            start: LineColumn { line: 3, column: 1 },
            end: LineColumn {
                line: 3,
                column: 57
            }
        }
    );
    assert_eq!(
        declared[0].key_span(Key::MinBlocksPerSm),
        Some(SourceSpan {
            start: LineColumn {
                line: 3,
                column: 34
            },
            end: LineColumn {
                line: 3,
                column: 55
            }
        })
    );
    assert_eq!(
        declared[1].span_for(Key::Block).start,
        LineColumn {
            line: 6,
            column: 10
        }
    );
    assert_eq!(
        declared[1].span_for(Key::MinOccupancy),
        declared[1].attribute
    );
    assert_eq!(
        declared[2]
            .key_span(SpecKey::Lint(LintId::Spills))
            .unwrap()
            .start,
        LineColumn {
            line: 9,
            column: 39
        }
    );
    assert_eq!(
        declared[4].attribute.start,
        LineColumn {
            line: 20,
            column: 9
        }
    );
}

#[test]
fn scan_reports_the_macros_errors_with_locations() {
    let source = "#[occupancy::kernel(block = 256, min_ocupancy = 0.5)]\nfn a();\n\n#[occupancy::kernel(block = 2048)]\nfn b() {}\n";
    let error = scan_source(source).unwrap_err();
    assert_eq!(error.diagnostics.len(), 2, "{error}");
    assert_eq!(
        error.diagnostics[0].span.start,
        LineColumn {
            line: 1,
            column: 34
        }
    );
    assert!(error.diagnostics[0]
        .message
        .contains("did you mean `min_occupancy`?"));
    assert_eq!(
        error.diagnostics[1].span.start,
        LineColumn {
            line: 4,
            column: 29
        }
    );
    let macro_message = error_message_of_macro_path("block = 2048");
    assert_eq!(error.diagnostics[1].message, macro_message);
}

fn error_message_of_macro_path(args: &str) -> String {
    error(args)
}

#[test]
fn scan_rejects_misplaced_attributes() {
    let in_unmarked_block =
        "unsafe extern \"C\" {\n    #[occupancy::kernel(block = 256)]\n    fn a();\n}\n";
    let error = scan_source(in_unmarked_block).unwrap_err();
    assert!(
        error.diagnostics[0]
            .message
            .contains("needs a bare #[occupancy::kernel] on the block"),
        "{error}"
    );
    assert_eq!(
        error.diagnostics[0].span.start,
        LineColumn { line: 2, column: 5 }
    );

    let two_fns = "#[occupancy::kernel(block = 256)]\nextern \"C\" { fn a(); fn b(); }\n";
    let message = scan_source(two_fns).unwrap_err().to_string();
    assert!(message.starts_with("2:25: #[occupancy::kernel(...)] on an extern block declares its one fn, but this block has 2"), "{message}");

    let on_struct = "#[occupancy::kernel(block = 256)]\nstruct Launch;\n";
    assert!(scan_source(on_struct)
        .unwrap_err()
        .to_string()
        .contains("goes on the Rust stub of a kernel"));

    let extern_bodyless = "#[occupancy::kernel(block = 256)]\nextern \"C\" fn a();\n";
    assert!(scan_source(extern_bodyless)
        .unwrap_err()
        .to_string()
        .contains("body-less `extern` fn"));

    let on_method =
        "struct S;\nimpl S {\n    #[occupancy::kernel(block = 256)]\n    fn launch(&self) {}\n}\n";
    let message = scan_source(on_method).unwrap_err().to_string();
    assert!(
        message.starts_with(
            "3:5: #[occupancy::kernel] on a method is out of the build helper's reach"
        ),
        "{message}"
    );

    let in_body = "fn outer() {\n    #[occupancy::kernel(block = 256)]\n    fn inner();\n}\n";
    let message = scan_source(in_body).unwrap_err().to_string();
    assert!(
        message.starts_with("2:5: #[occupancy::kernel] inside a fn body"),
        "{message}"
    );

    let not_rust = "fn (";
    assert!(scan_source(not_rust).is_err());
}

#[test]
fn scan_follows_imports_per_module() {
    let source = "use occupancy::kernel as declare;\n#[declare(block = 32)]\nfn a();\nmod inner {\n    use occupancy::*;\n    #[kernel(block = 64)]\n    fn b();\n}\n#[kernel(block = 1)]\nfn not_ours() {}\n";
    let names: Vec<String> = scan_source(source)
        .unwrap()
        .into_iter()
        .map(|kernel| kernel.rust_name)
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn declarations_round_trip_through_json() {
    let source = "#[occupancy::kernel(block = (32, 8), min_occupancy = \"50%\", archs = [\"sm_90\"], warn(spills))]\nfn k();\n";
    let declared = scan_source(source).unwrap();
    let json = serde_json::to_string(&declared).unwrap();
    assert!(
        json.contains("\"lint_levels\":{\"spills\":\"warn\"}"),
        "{json}"
    );
    assert!(json.contains("\"stub\":\"bodyless_function\""), "{json}");
    let back: Vec<DeclaredKernel> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, declared);
}

proptest! {
    /// For any argument text, the scanner reports exactly the macro path's messages.
    #[test]
    fn scanner_and_macro_path_agree_on_errors(
        entries in proptest::collection::vec(
            prop_oneof![
                Just("block = 256".to_owned()),
                Just("block = (32, 64)".to_owned()),
                Just("blok = 1".to_owned()),
                Just("min_occupancy = 0".to_owned()),
                Just("min_occupancy = \"75%\"".to_owned()),
                Just("min_blocks_per_sm = 40".to_owned()),
                Just("archs = [\"sm_86\", \"sm86\"]".to_owned()),
                Just("name = \"\"".to_owned()),
                Just("allow(spills, partial_warp)".to_owned()),
                Just("deny(spils)".to_owned()),
                Just("max_registers = 0".to_owned()),
                Just("dynamic_smem = -1".to_owned()),
            ],
            0..6,
        )
    ) {
        let args = entries.join(", ");
        let macro_path: Result<KernelSpec, Vec<String>> =
            parse(&args).map_err(|error| error.into_iter().map(|error| error.to_string()).collect());
        let source = format!("#[occupancy::kernel({args})]\nfn k();\n");
        let scanned: Result<KernelSpec, Vec<String>> = scan_source(&source)
            .map(|mut declared| declared.remove(0).spec)
            .map_err(|error| error.diagnostics.into_iter().map(|diagnostic| diagnostic.message).collect());
        prop_assert_eq!(scanned, macro_path);
    }
}

#[test]
fn scanner_diagnostics_snapshot() {
    let source = r#"use occupancy::kernel;

#[kernel(block = 2048, min_ocupancy = 0.5)]
fn a();

mod inner {
    #[occupancy::kernel(block = 256, allow(spill), archs = ["sm90"])]
    pub fn b() {}

    unsafe extern "C" {
        #[occupancy::kernel(block = 128)]
        fn c();
    }
}
"#;
    insta::assert_snapshot!(scan_source(source).unwrap_err().to_string());
}

#[test]
fn spec_keys_keep_their_json_form() {
    assert_eq!(
        serde_json::to_string(&SpecKey::Key(Key::MaxSpillBytes)).unwrap(),
        "\"max_spill_bytes\""
    );
    assert_eq!(
        serde_json::to_string(&SpecKey::Lint(LintId::Spills)).unwrap(),
        "{\"lint\":\"spills\"}"
    );
    for key in [SpecKey::Key(Key::Family), SpecKey::Lint(LintId::Call)] {
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(serde_json::from_str::<SpecKey>(&json).unwrap(), key);
    }
}

/// The recipe of CONTRIBUTING.md ("Adding an attribute key"): a key declared in
/// occupancy-model/src/keys.rs is read by the grammar with no other change. Its example parses,
/// sets the key, and prints back as written; each alias is suggested as the key.
#[test]
fn every_declared_key_is_read_by_the_grammar() {
    for info in &KEYS {
        let text = ExampleArguments(info.key).to_string();
        let spec = parse(&text).unwrap_or_else(|error| panic!("`{text}`: {error}"));
        let value = spec.value(info.key);
        assert_eq!(value.to_string(), info.example, "{}", info.name);
        assert!(value.is_set(), "{}: the example sets the key", info.name);
        assert_eq!(parse(&spec.to_string()).unwrap(), spec, "{}", info.name);
        for alias in info.aliases {
            let message = error(&format!("block = 32, {alias} = {}", info.example));
            assert!(
                message.contains(&format!("did you mean `{}`?", info.name)),
                "{alias}: {message}"
            );
        }
    }
}

/// The launch keys of a persistent or cooperative kernel: the grid it assumes needs `launch`,
/// a fixed grid needs the `gpus` it is checked on, GPUs are the table's, and the kind of launch is
/// one of two words.
#[test]
fn launch_keys_name_what_to_add() {
    let spec = parse(
        r#"block = 256, launch = "persistent", grid_blocks_per_sm = 2, grid_blocks = 264, gpus = ["H100", "h20", "rtx_pro_6000"]"#,
    )
    .unwrap();
    assert_eq!(spec.launch.as_deref(), Some("persistent"));
    assert_eq!(
        (spec.grid_blocks_per_sm, spec.grid_blocks),
        (Some(2), Some(264))
    );
    assert_eq!(
        spec.gpus.as_deref(),
        Some(&["h100".to_string(), "h20".into(), "rtx-pro-6000".into()][..]),
        "stored under the table's names"
    );
    assert_eq!(
        spec.to_string(),
        r#"block = 256, launch = "persistent", grid_blocks_per_sm = 2, grid_blocks = 264, gpus = ["h100", "h20", "rtx-pro-6000"]"#
    );
    let cases = [
        (
            "block = 256, grid_blocks_per_sm = 2",
            "`grid_blocks_per_sm = 2` needs `launch`: write e.g. `launch = \"cooperative\"` (Every block of the grid is resident at once",
        ),
        (
            "block = 256, launch = \"cooperative\", grid_blocks = 132",
            "`grid_blocks = 132` needs `gpus`: write e.g. `gpus = [\"h100\", \"h20\"]`",
        ),
        (
            "block = 256, launch = \"cooperatve\"",
            "`launch = \"cooperatve\"` is not a kind of launch this key knows: did you mean `launch = \"cooperative\"`?",
        ),
        (
            "block = 256, launch = persistent",
            "write `launch = \"persistent\"`",
        ),
        (
            "block = 256, cooperative",
            "unknown key `cooperative`: did you mean `launch`? `cooperative` is one of its values: write `launch = \"cooperative\"`",
        ),
        ("block = 256, gpus = [\"h900\"]", "unknown GPU \"h900\": did you mean \"h100\"?"),
        (
            "block = 256, gpus = [\"h100\", \"H100\"]",
            "\"H100\" names the `h100` already listed in `gpus`: remove one",
        ),
        ("block = 256, gpus = []", "`gpus = []` names no GPU"),
        ("block = 256, gpus = \"h100\"", "write a list: `gpus = [\"h100\"]`"),
    ];
    for (text, expected) in cases {
        let message = error(text);
        assert!(
            message.contains(expected),
            "`{text}`:\n{message}\nexpected: {expected}"
        );
    }
}
