//! Tests of the launch lints' checks and of their evaluation and levels.

use super::*;
use crate::arch::lookup;
use crate::calc::{occupancy, KernelFacts, Launch, Occupancy};
use crate::lint::minimum::register_budget;
use crate::ptxas::{parse_log, KernelRecord, PtxEntry};
use crate::spec::{BlockDim, KernelSpec, Tunable};

fn record(log: &str) -> KernelRecord {
    parse_log(log)
        .unwrap()
        .kernels
        .into_iter()
        .find(|kernel| kernel.entry)
        .unwrap()
}

const SPILLING: &str = "ptxas info    : Compiling entry function 'hot' for 'sm_90'\nptxas info    : Function properties for hot\n    0 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads\nptxas info    : Used 32 registers, used 1 barriers\n";

fn facts(record: &KernelRecord) -> KernelFacts {
    KernelFacts {
        registers_per_thread: record.registers.unwrap_or(0),
        static_smem_bytes: record.static_smem_bytes as u32,
        barriers: record.barriers.unwrap_or(1),
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
    }
}

#[test]
fn spills_above_the_declared_maximum_are_found_with_notes() {
    let record = record(SPILLING);
    let arch = lookup("sm_90").unwrap();
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    spec.min_blocks_per_sm = Some(Tunable::Fixed(8));
    let result = occupancy(arch, &facts(&record), &Launch::new(256));
    let on = [CompiledOnArch {
        arch,
        record: &record,
        ptx: None,
        occupancy: &result,
        chosen: None,
    }];
    let findings = evaluate_declared(&spec, &on);
    let spills: Vec<_> = findings
        .iter()
        .filter(|finding| finding.lint == LintId::Spills)
        .collect();
    assert_eq!(spills.len(), 1, "{findings:#?}");
    assert!(
        spills[0].message.contains("spills 80 bytes"),
        "{}",
        spills[0].message
    );
    assert!(
        spills[0].notes[0].contains("at most 32 registers per thread"),
        "{:?}",
        spills[0].notes
    );
    spec.max_spill_bytes = Some(80);
    assert!(evaluate_declared(&spec, &on)
        .iter()
        .all(|finding| finding.lint != LintId::Spills));
}

#[test]
fn a_command_line_launch_gets_the_same_lints_worded_with_flags() {
    let record = record(SPILLING);
    let arch = lookup("sm_90").unwrap();
    // 250 threads: a partial warp too, whose message names the block.
    let spec = KernelSpec::with_block(BlockDim::linear(250));
    let result = occupancy(arch, &facts(&record), &Launch::new(250));
    let on = [CompiledOnArch {
        arch,
        record: &record,
        ptx: None,
        occupancy: &result,
        chosen: None,
    }];
    let declared = evaluate_declared(&spec, &on);
    let command_line = evaluate_launch(&spec, &on, LaunchOrigin::CommandLine);
    let lints = |findings: &[Finding]| findings.iter().map(|f| f.lint).collect::<Vec<_>>();
    assert_eq!(lints(&declared), lints(&command_line));
    assert!(lints(&command_line).contains(&LintId::Spills));
    assert!(lints(&command_line).contains(&LintId::PartialWarp));
    for finding in &command_line {
        let text = format!(
            "{} {}",
            finding.message,
            finding.help.as_deref().unwrap_or("")
        );
        for attribute_word in ["declared", "min_blocks_per_sm", "max_spill_bytes", "allow("] {
            assert!(!text.contains(attribute_word), "{attribute_word}: {text}");
        }
    }
    let spills = command_line
        .iter()
        .find(|finding| finding.lint == LintId::Spills)
        .unwrap();
    assert!(
        spills.message.contains("at most 0 allowed"),
        "{}",
        spills.message
    );
    assert!(
        spills.help.as_deref().unwrap().contains("`--allow spills`"),
        "{:?}",
        spills.help
    );
    let partial = command_line
        .iter()
        .find(|finding| finding.lint == LintId::PartialWarp)
        .unwrap();
    assert!(
        partial.message.contains("`--block 250`"),
        "{}",
        partial.message
    );
}

#[test]
fn register_budget_matches_the_launch_bounds_arithmetic() {
    let arch = lookup("sm_90").unwrap();
    assert_eq!(register_budget(arch, 256, 8), 32);
    assert_eq!(register_budget(arch, 256, 4), 64);
    assert_eq!(register_budget(arch, 256, 1), 255);
    assert_eq!(register_budget(arch, 96, 5), 136);
}

#[test]
fn low_occupancy_and_partial_warp() {
    let record = record(
        &SPILLING
            .replace("Used 32", "Used 128")
            .replace("40 bytes", "0 bytes"),
    );
    let arch = lookup("sm_90").unwrap();
    let mut spec = KernelSpec::with_block(BlockDim::linear(250));
    spec.min_occupancy = Some(0.5);
    let result = occupancy(arch, &facts(&record), &Launch::new(250));
    let on = [CompiledOnArch {
        arch,
        record: &record,
        ptx: None,
        occupancy: &result,
        chosen: None,
    }];
    let lints: Vec<LintId> = evaluate_declared(&spec, &on)
        .iter()
        .map(|finding| finding.lint)
        .collect();
    assert!(lints.contains(&LintId::LowOccupancy), "{lints:?}");
    assert!(lints.contains(&LintId::PartialWarp), "{lints:?}");
}

#[test]
fn stack_frames_and_cliffs() {
    // 64 registers at 256 threads on sm_90: 4 blocks, and one more register (allocated as 72)
    // leaves 3: a cliff. 16 bytes of stack with nothing declared: stack_frame.
    let log = SPILLING.replace("Used 32", "Used 64").replace(
        "0 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads",
        "16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
    );
    let record = record(&log);
    let arch = lookup("sm_90").unwrap();
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let result = occupancy(arch, &facts(&record), &Launch::new(256));
    assert_eq!(result.blocks_per_sm, 4);
    let on = [CompiledOnArch {
        arch,
        record: &record,
        ptx: None,
        occupancy: &result,
        chosen: None,
    }];
    let findings = evaluate_declared(&spec, &on);
    let lints: Vec<LintId> = findings.iter().map(|finding| finding.lint).collect();
    assert!(lints.contains(&LintId::StackFrame), "{findings:#?}");
    assert!(lints.contains(&LintId::OccupancyCliff), "{findings:#?}");
    assert!(!lints.contains(&LintId::Spills), "{findings:#?}");
    let mut allowed = spec.clone();
    allowed.max_stack_bytes = Some(16);
    assert!(evaluate_declared(&allowed, &on)
        .iter()
        .all(|finding| finding.lint != LintId::StackFrame));
}

/// Issue #42, class 9: a stack ptxas could not size (its warning before the entry) is its own
/// finding, `stack_unknown`; a sized stack makes none.
#[test]
fn a_stack_the_compiler_could_not_size_is_its_own_finding() {
    let warned = format!(
        "ptxas warning : Stack size for entry function 'hot' cannot be statically determined\n{}",
        SPILLING.replace("40 bytes", "0 bytes")
    );
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    for (log, fires) in [
        (warned.clone(), true),
        (SPILLING.replace("40 bytes", "0 bytes"), false),
    ] {
        let record = record(&log);
        let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
        let findings = evaluate_declared(&spec, &on_sm_90(&record, &result));
        let unknown: Vec<_> = findings
            .iter()
            .filter(|finding| finding.lint == LintId::StackUnknown)
            .collect();
        assert_eq!(unknown.len(), usize::from(fires), "{findings:#?}");
        if fires {
            assert!(
                unknown[0]
                    .message
                    .contains("stack of unknown size on sm_90")
                    && unknown[0].message.contains("cudaLimitStackSize"),
                "{}",
                unknown[0].message
            );
        }
    }
}

#[test]
fn regression_compares_every_number() {
    let base = BaselineNumbers {
        registers: 40,
        spill_store_bytes: 0,
        spill_load_bytes: 0,
        stack_frame_bytes: 0,
        static_smem_bytes: 0,
        occupancy: 0.5,
        chosen_bounds: None,
    };
    assert!(regression("k", "sm_90", &base, &base).is_none());
    let worse = BaselineNumbers {
        registers: 48,
        occupancy: 0.375,
        ..base
    };
    let finding = regression("k", "sm_90", &base, &worse).unwrap();
    assert_eq!(
        finding.notes,
        vec!["registers: 40 -> 48", "occupancy: 50% -> 37.5%"]
    );
    let better = BaselineNumbers {
        registers: 32,
        occupancy: 0.75,
        ..base
    };
    assert!(regression("k", "sm_90", &base, &better).is_none());
}

#[test]
fn levels_resolve_most_specific_first() {
    let attribute = BTreeMap::from([(LintId::LowOccupancy, Level::Allow)]);
    let environment = BTreeMap::from([
        (LintId::LowOccupancy, Level::Deny),
        (LintId::Spills, Level::Warn),
    ]);
    let crate_config = BTreeMap::from([
        (LintId::Spills, Level::Allow),
        (LintId::StackFrame, Level::Deny),
    ]);
    let sources = LevelSources {
        attribute: Some(&attribute),
        kernel_config: None,
        environment: Some(&environment),
        crate_config: Some(&crate_config),
    };
    assert_eq!(resolve_level(LintId::LowOccupancy, &sources), Level::Allow);
    assert_eq!(resolve_level(LintId::Spills, &sources), Level::Warn);
    assert_eq!(resolve_level(LintId::StackFrame, &sources), Level::Deny);
    assert_eq!(resolve_level(LintId::Regression, &sources), Level::Deny);
    assert_eq!(
        resolve_level(LintId::UndeclaredKernel, &sources),
        Level::Allow
    );
}

#[test]
fn missing_kernels_suggest_a_close_name() {
    let finding = missing_kernel("saxpi", &["saxpy", "gemm"]);
    assert_eq!(
        finding.help.as_deref(),
        Some("did you mean `name = \"saxpy\"`?")
    );
}

fn on_sm_90<'a>(record: &'a KernelRecord, result: &'a Occupancy) -> [CompiledOnArch<'a>; 1] {
    [CompiledOnArch {
        arch: lookup("sm_90").unwrap(),
        record,
        ptx: None,
        occupancy: result,
        chosen: None,
    }]
}

#[test]
fn undeclared_kernels_get_only_the_hard_failures_at_the_default_launch() {
    // Spills 80 bytes, 16 bytes of stack, and a partial warp: only spills and stack_frame.
    let log = SPILLING.replace("0 bytes stack frame", "16 bytes stack frame");
    let record = record(&log);
    let spec = KernelSpec::with_block(BlockDim::linear(250));
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(250));
    let on = on_sm_90(&record, &result);
    let found = check_kernel(
        super::Launch::Undeclared(&spec),
        &on,
        &LevelSources::default(),
    );
    let lints: Vec<(LintId, Level)> = found
        .iter()
        .map(|leveled| (leveled.lint, leveled.level))
        .collect();
    assert_eq!(
        lints,
        [
            (LintId::Spills, Level::Deny),
            (LintId::StackFrame, Level::Warn)
        ]
    );
    let spills = &found[0];
    assert!(
        spills
            .message
            .contains("at most 0 allowed for an undeclared kernel"),
        "{}",
        spills.message
    );
    assert!(
        spills
            .help
            .as_deref()
            .unwrap()
            .contains("declare the kernel"),
        "{:?}",
        spills.help
    );
    // A crate-wide level applies to them as to any finding.
    let crate_config = BTreeMap::from([(LintId::Spills, Level::Allow)]);
    let sources = LevelSources {
        crate_config: Some(&crate_config),
        ..LevelSources::default()
    };
    assert!(
        check_kernel(super::Launch::Undeclared(&spec), &on, &sources)
            .iter()
            .all(|leveled| leveled.lint != LintId::Spills)
    );
}

#[test]
fn an_undeclared_kernel_too_big_for_the_crate_block_is_unlaunchable() {
    // 72 registers x 1024 threads = 73728 registers, over the 65536 of a block.
    let record = record(
        &SPILLING
            .replace("Used 32", "Used 72")
            .replace("40 bytes", "0 bytes"),
    );
    let spec = KernelSpec::with_block(BlockDim::linear(1024));
    let result = occupancy(
        lookup("sm_90").unwrap(),
        &facts(&record),
        &Launch::new(1024),
    );
    let found = check_kernel(
        super::Launch::Undeclared(&spec),
        &on_sm_90(&record, &result),
        &LevelSources::default(),
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].lint, LintId::Unlaunchable);
    assert!(
        found[0]
            .message
            .contains("the crate's default launch of 1024 threads"),
        "{}",
        found[0].message
    );
}

fn summarized<'a>((leveled, name): &'a (Finding, &'a str)) -> Summarized<'a> {
    Summarized {
        lint: leveled.lint,
        level: leveled.level,
        arch: leveled.arch.as_deref(),
        kernel: name,
        weight: 0,
        declared: false,
    }
}

#[test]
fn summaries_name_the_worst_kernels_first_and_say_which_are_declared() {
    let item = |kernel, weight, declared| Summarized {
        lint: LintId::StackFrame,
        level: Level::Warn,
        arch: Some("sm_90"),
        kernel,
        weight,
        declared,
    };
    let summaries = summarize([
        item("a", 8, true),
        item("b", 512, false),
        item("c", 64, false),
        item("a", 1024, true),
    ]);
    assert_eq!(summaries[0].kernels, ["a", "b", "c"]);
    assert_eq!(
        summaries[0].message("r.json"),
        "3 kernels (2 undeclared) have a stack frame on sm_90: a, b, c (details in r.json)"
    );
    let declared = summarize([item("a", 8, true), item("d", 8, true)]);
    assert_eq!(
        declared[0].message("r.json"),
        "2 kernels have a stack frame on sm_90: a, d (details in r.json)"
    );
}

#[test]
fn summaries_name_a_few_kernels_and_count_the_rest() {
    let finding = |arch: &str| Finding {
        arch: Some(arch.to_string()),
        level: Level::Deny,
        ..Finding::new(LintId::Spills)
    };
    let names: Vec<String> = (0..8).map(|index| format!("k{index}")).collect();
    let findings: Vec<(Finding, &str)> = names
        .iter()
        .flat_map(|name| {
            [
                (finding("sm_80"), name.as_str()),
                (finding("sm_90"), name.as_str()),
            ]
        })
        .collect();
    let summaries = summarize(findings.iter().map(summarized));
    assert_eq!(summaries.len(), 1);
    assert_eq!(
        summaries[0].message("target/occupancy/k.json"),
        "8 undeclared kernels spill registers to local memory on sm_80, sm_90: k0, k1, k2, k3, k4 (+3 more, see target/occupancy/k.json)"
    );
    let one = summarize(findings[..1].iter().map(summarized));
    assert_eq!(
        one[0].message("r.json"),
        "1 undeclared kernel spills registers to local memory on sm_80: k0 (details in r.json)"
    );
}

#[test]
fn no_cliff_and_no_raise_at_the_hardware_register_maximum() {
    // 255 registers at 256 threads on sm_90: 1 block; the next count (256) is one no
    // compiler assigns, so capping at 255 would change nothing.
    let log = SPILLING.replace("Used 32", "Used 255");
    let record = record(&log);
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    spec.max_registers = Some(Tunable::Fixed(255));
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
    assert_eq!(result.blocks_per_sm, 1);
    let findings = evaluate_declared(&spec, &on_sm_90(&record, &result));
    assert!(
        findings
            .iter()
            .all(|finding| finding.lint != LintId::OccupancyCliff),
        "{findings:#?}"
    );
    let spills = findings
        .iter()
        .find(|finding| finding.lint == LintId::Spills)
        .unwrap();
    let help = spills.help.as_deref().unwrap();
    assert!(!help.contains("raise `max_registers`"), "{help}");
    assert!(!help.contains("min_blocks_per_sm"), "{help}");
    assert!(
        help.contains("the most registers a thread can have on sm_90 (255)"),
        "{help}"
    );
}

#[test]
fn spill_help_names_only_keys_that_were_declared() {
    let record = record(SPILLING);
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
    let on = on_sm_90(&record, &result);
    let help_for = |spec: &KernelSpec| {
        evaluate_declared(spec, &on)
            .into_iter()
            .find(|finding| finding.lint == LintId::Spills)
            .and_then(|finding| finding.help)
            .unwrap()
    };
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    spec.min_blocks_per_sm = Some(Tunable::Fixed(8));
    assert!(
        help_for(&spec).starts_with("lower `min_blocks_per_sm` so ptxas"),
        "{}",
        help_for(&spec)
    );
    spec.min_blocks_per_sm = None;
    spec.max_registers = Some(Tunable::Fixed(32));
    assert!(
        help_for(&spec).starts_with("raise `max_registers` (at most 255)"),
        "{}",
        help_for(&spec)
    );
}

#[test]
fn max_registers_per_thread_has_its_own_lint() {
    let record = record(
        &SPILLING
            .replace("Used 32", "Used 72")
            .replace("40 bytes", "0 bytes"),
    );
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    spec.max_registers_per_thread = Some(64);
    spec.lint_levels.insert(LintId::LowOccupancy, Level::Allow);
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
    let on = on_sm_90(&record, &result);
    let sources = LevelSources {
        attribute: Some(&spec.lint_levels),
        ..LevelSources::default()
    };
    // `allow(low_occupancy)` does not silence it.
    let found = check_kernel(super::Launch::Declared(&spec), &on, &sources);
    assert!(
        found
            .iter()
            .any(|leveled| leveled.lint == LintId::TooManyRegisters
                && leveled.level == Level::Deny),
        "{found:#?}"
    );
}

/// The same, from the attribute as written: `min_occupancy` fails too and is allowed, and the
/// allowed `low_occupancy` leaves `too_many_registers` at its default level.
#[cfg(feature = "spec")]
#[test]
fn allow_low_occupancy_in_the_attribute_leaves_too_many_registers_denied() {
    let spec = crate::spec::parse_args(
        "block = 256, min_occupancy = 0.5, max_registers_per_thread = 64, allow(low_occupancy, reason = \"register tiling\")"
            .parse()
            .unwrap(),
    )
    .unwrap();
    let record = record(
        &SPILLING
            .replace("Used 32", "Used 72")
            .replace("40 bytes", "0 bytes"),
    );
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
    let on = on_sm_90(&record, &result);
    let evaluated: Vec<LintId> = evaluate_declared(&spec, &on)
        .iter()
        .map(|finding| finding.lint)
        .collect();
    assert!(evaluated.contains(&LintId::LowOccupancy), "{evaluated:?}");
    let sources = LevelSources {
        attribute: Some(&spec.lint_levels),
        ..LevelSources::default()
    };
    let leveled: Vec<(LintId, Level)> = check_kernel(super::Launch::Declared(&spec), &on, &sources)
        .iter()
        .map(|leveled| (leveled.lint, leveled.level))
        .collect();
    assert_eq!(leveled, [(LintId::TooManyRegisters, Level::Deny)]);
}

#[test]
fn missing_kernels_list_a_few_close_names_not_all() {
    // `where_u32_f16` comes first and is two edits away; the transposition is one.
    let names: Vec<String> = ["where_u32_f16", "where_u8_f32", "where_u32_f32"]
        .into_iter()
        .map(String::from)
        .chain((0..597).map(|index| format!("affine_{index}")))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let finding = missing_kernel("where_u32_f23", &refs);
    assert_eq!(
        finding.help.as_deref(),
        Some("did you mean `name = \"where_u32_f32\"`?")
    );
    let notes = finding.notes.join("\n");
    assert!(notes.len() < 300, "{notes}");
    assert!(notes.contains("600 kernels compiled"), "{notes}");
}

/// One launch checked on sm_90: a record from `log` (with `local_memory_bytes`), the PTX's
/// bounds, and `spec`.
struct Scenario {
    log: String,
    local_memory_bytes: Option<u64>,
    ptx: Option<PtxEntry>,
    spec: KernelSpec,
}

/// Runs every launch check the registry declares on `scenario`; asserts each finding carries
/// the id of the lint whose check made it (a check reporting another lint's id, as
/// `max_registers_per_thread` once did as `low_occupancy`, is silenced by that lint's `allow`),
/// and returns the lints that fired.
fn fired_under_their_own_ids(scenario: &Scenario) -> std::collections::BTreeSet<LintId> {
    let mut record = record(&scenario.log);
    record.local_memory_bytes = scenario.local_memory_bytes;
    let threads = scenario.spec.block.threads();
    let result = occupancy(
        lookup("sm_90").unwrap(),
        &facts(&record),
        &Launch::new(threads),
    );
    let on = CompiledOnArch {
        ptx: scenario.ptx.as_ref(),
        ..on_sm_90(&record, &result)[0]
    };
    let mut fired = std::collections::BTreeSet::new();
    for lint in &LINTS {
        let mut findings = Vec::new();
        match lint.check {
            Check::Launch { run, .. } => {
                run(&scenario.spec, LaunchOrigin::Declaration, &mut findings)
            }
            Check::OnArch { run, .. } => {
                run(
                    &scenario.spec,
                    &on,
                    LaunchOrigin::Declaration,
                    &mut findings,
                );
            }
            _ => continue,
        }
        for finding in findings {
            assert_eq!(finding.lint, lint.id, "{finding:#?}");
            fired.insert(lint.id);
        }
    }
    fired
}

#[test]
fn every_launch_check_reports_its_own_lint() {
    let with = |block: u32, change: fn(&mut KernelSpec)| {
        let mut spec = KernelSpec::with_block(BlockDim::linear(block));
        change(&mut spec);
        spec
    };
    let no_spills = SPILLING.replace("40 bytes", "0 bytes");
    let scenarios = [
        // Spills under min_blocks_per_sm = 8 that the PTX does not carry, a partial warp, a
        // block above the compiled maximum, more registers than declared.
        Scenario {
            log: SPILLING.to_string(),
            local_memory_bytes: None,
            ptx: Some(PtxEntry {
                maxntid: Some(vec![128]),
                ..PtxEntry::default()
            }),
            spec: with(250, |spec| {
                spec.min_blocks_per_sm = Some(Tunable::Fixed(8));
                spec.max_registers_per_thread = Some(16);
            }),
        },
        // 128 registers: 25% occupancy, below the declared half.
        Scenario {
            log: no_spills.replace("Used 32", "Used 128"),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |spec| spec.min_occupancy = Some(0.5)),
        },
        // 64 registers at 256 threads, one register from losing a block; a stack frame; local
        // memory that is not a spill.
        Scenario {
            log: no_spills
                .replace("Used 32", "Used 64")
                .replace("0 bytes stack frame", "16 bytes stack frame"),
            local_memory_bytes: Some(16),
            ptx: None,
            spec: with(256, |_| {}),
        },
        // 1392 bytes of constant memory, none declared.
        Scenario {
            log: CONSTANTS_SM80.to_string(),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |spec| spec.max_const_bytes = Some(0)),
        },
        // 4 blocks of 1024 threads: more than an SM holds.
        Scenario {
            log: no_spills.clone(),
            local_memory_bytes: None,
            ptx: Some(bounds_ptx(1024, 4)),
            spec: with(256, |_| {}),
        },
        // ptxas's 19456 bytes of static shared memory under `enable_smem_spilling`, none of
        // them declared by the kernel: a spill area.
        Scenario {
            log: no_spills.replace("used 1 barriers", "used 1 barriers, 19456 bytes smem"),
            local_memory_bytes: None,
            ptx: Some(PtxEntry {
                smem_spilling: Some(crate::ptxas::SmemSpilling::declaring(Some(0))),
                ..PtxEntry::default()
            }),
            spec: with(256, |_| {}),
        },
        // `__maxnreg__(8)`, which ptxas raised to its lower bound of 24 (its warning).
        Scenario {
            log: format!(
                "ptxas warning : For entry hot adjusting per thread register count of 8 to lower bound of 24\n{}",
                no_spills.replace("Used 32", "Used 24")
            ),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |_| {}),
        },
        // A stack ptxas could not size (recursion): its warning before the entry.
        Scenario {
            log: format!(
                "ptxas warning : Stack size for entry function 'hot' cannot be statically determined\n{no_spills}"
            ),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |_| {}),
        },
        // A cluster of 16 without the opt-in; a cluster of 2 with more active clusters asked
        // for than an H100 holds.
        Scenario {
            log: no_spills.clone(),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |spec| {
                spec.cluster = Some(occupancy_model::ClusterDim::new(16, 1, 1));
            }),
        },
        Scenario {
            log: no_spills.clone(),
            local_memory_bytes: None,
            ptx: None,
            spec: with(256, |spec| {
                spec.cluster = Some(occupancy_model::ClusterDim::new(2, 1, 1));
                spec.min_active_clusters = Some(100_000);
            }),
        },
    ];
    let fired: std::collections::BTreeSet<LintId> = scenarios
        .iter()
        .flat_map(fired_under_their_own_ids)
        .collect();
    let launch_lints: std::collections::BTreeSet<LintId> = LINTS
        .iter()
        .filter(|lint| matches!(lint.check, Check::Launch { .. } | Check::OnArch { .. }))
        .map(|lint| lint.id)
        .collect();
    assert_eq!(fired, launch_lints);
}

#[test]
fn only_the_lints_declared_for_undeclared_kernels_check_them() {
    let undeclared: Vec<LintId> = LINTS
        .iter()
        .filter(|lint| lint.check.checks_undeclared())
        .map(|lint| lint.id)
        .collect();
    // The hard failures: spills (and a spill in a loop, or to shared memory), an unlaunchable
    // launch, a stack frame, a stack of unknown size, a dropped `setmaxnreg`, a minimum blocks per SM that cannot take
    // effect, a register cap ptxas did not apply.
    assert_eq!(
        undeclared,
        [
            LintId::Spills,
            LintId::Unlaunchable,
            LintId::StackFrame,
            LintId::StackUnknown,
            LintId::SpillInLoop,
            LintId::SetmaxnregIgnored,
            LintId::UnreachableBound,
            LintId::RegisterCapIgnored,
            LintId::SmemSpill
        ]
    );
}

#[test]
fn machine_code_detail_lints_need_a_declaration_or_an_explicit_level() {
    let none = BTreeMap::new();
    let crate_warns_call = BTreeMap::from([(LintId::Call, Level::Warn)]);
    let sources = |crate_config| LevelSources {
        attribute: None,
        kernel_config: None,
        environment: Some(&none),
        crate_config: Some(crate_config),
    };
    for lint in [
        LintId::Call,
        LintId::LocalArray,
        LintId::Fp64,
        LintId::SetmaxnregBudget,
    ] {
        assert_eq!(
            resolve_undeclared_level(lint, &sources(&none)),
            Level::Allow,
            "{lint:?}"
        );
    }
    assert_eq!(resolve_level(LintId::Call, &sources(&none)), Level::Warn);
    assert_eq!(
        resolve_undeclared_level(LintId::Call, &sources(&crate_warns_call)),
        Level::Warn,
        "an explicit crate level reaches undeclared kernels"
    );
    for lint in [
        LintId::Spills,
        LintId::SpillInLoop,
        LintId::Regression,
        LintId::UndeclaredKernel,
    ] {
        assert_eq!(
            resolve_undeclared_level(lint, &sources(&none)),
            lint.default_level(),
            "{lint:?}"
        );
    }
}

#[test]
fn bounds_mismatch_needs_a_declaration() {
    // The PTX says 1024 threads at most, the launch 256 and min blocks 2: a mismatch against a
    // declaration only; a command-line launch has no declared bounds.
    let record = record(SPILLING);
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
    let ptx = PtxEntry {
        maxntid: Some(vec![1024]),
        ..PtxEntry::default()
    };
    let on = [CompiledOnArch {
        ptx: Some(&ptx),
        ..on_sm_90(&record, &result)[0]
    }];
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let lints = |origin| -> Vec<LintId> {
        evaluate_launch(&spec, &on, origin)
            .iter()
            .map(|finding| finding.lint)
            .collect()
    };
    assert!(lints(LaunchOrigin::Declaration).contains(&LintId::BoundsMismatch));
    assert!(!lints(LaunchOrigin::CommandLine).contains(&LintId::BoundsMismatch));
    assert!(!lints(LaunchOrigin::CrateDefault).contains(&LintId::BoundsMismatch));
}

/// ptxas on sm_80: the module's `__constant__` table (`cmem[3]`) and a compiler bank
/// (`cmem[4]`) on the module line, the parameter bank (`cmem[0]`) and compiler constants
/// (`cmem[2]`) on the kernel's.
const CONSTANTS_SM80: &str = "ptxas info    : 272 bytes gmem, 1024 bytes cmem[3], 16 bytes cmem[4]\nptxas info    : Compiling entry function 'scale' for 'sm_80'\nptxas info    : Function properties for scale\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 10 registers, used 0 barriers, 368 bytes cmem[0], 32 bytes cmem[2]\n";

#[test]
fn constant_memory_above_max_const_bytes_is_const_memory() {
    let scale = record(CONSTANTS_SM80);
    let arch = lookup("sm_80").unwrap();
    let result = occupancy(arch, &facts(&scale), &Launch::new(256));
    let on = [CompiledOnArch {
        arch,
        record: &scale,
        ptx: None,
        occupancy: &result,
        chosen: None,
    }];
    let const_memory = |spec: &KernelSpec, on: &[CompiledOnArch<'_>]| -> Vec<Finding> {
        evaluate_declared(spec, on)
            .into_iter()
            .filter(|finding| finding.lint == LintId::ConstMemory)
            .collect()
    };
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    // Without the key nothing is checked.
    assert!(const_memory(&spec, &on).is_empty());
    // cmem[0] + cmem[3] = 368 + 1024; the compiler's banks 2 and 4 do not count.
    spec.max_const_bytes = Some(1024);
    let found = const_memory(&spec, &on);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "kernel `scale` uses 1392 bytes of constant memory on sm_80 (at most 1024 declared)"
    );
    assert!(
        found[0].notes[0].starts_with("368 bytes of parameters"),
        "{:?}",
        found[0].notes
    );
    assert_eq!(found[0].arch.as_deref(), Some("sm_80"));
    assert_eq!(LintId::ConstMemory.default_level(), Level::Deny);
    spec.max_const_bytes = Some(1392);
    assert!(const_memory(&spec, &on).is_empty());
    // ptxas prints no constant banks for sm_90 and later: the budget cannot be checked there,
    // and says so instead of passing.
    spec.max_const_bytes = Some(65536);
    let hot = record(SPILLING);
    let unchecked = const_memory(&spec, &on_sm_90(&hot, &result));
    assert_eq!(unchecked.len(), 1, "{unchecked:#?}");
    assert!(
        unchecked[0].message.contains("cannot be checked on sm_90"),
        "{}",
        unchecked[0].message
    );
    assert_eq!(unchecked[0].arch.as_deref(), Some("sm_90"));
}

/// The PTX entry of `__launch_bounds__(threads, blocks)`.
fn bounds_ptx(threads: u32, blocks: u32) -> PtxEntry {
    PtxEntry {
        name: "k".into(),
        maxntid: Some(vec![threads, 1, 1]),
        minnctapersm: Some(blocks),
        ..PtxEntry::default()
    }
}

/// A record of `k` on `arch` with `registers`, `static_smem` bytes and ptxas's `warnings`
/// before it, as nvcc prints them.
fn bounded_record(arch: &str, registers: u32, static_smem: u64, warnings: &[&str]) -> KernelRecord {
    let mut log: String = warnings
        .iter()
        .map(|warning| format!("{warning}\n"))
        .collect();
    log.push_str(&format!("ptxas info    : Compiling entry function 'k' for '{arch}'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used {registers} registers, used 1 barriers, {static_smem} bytes smem\n"));
    record(&log)
}

/// `unreachable_bound` findings of `ptx`'s bounds for the record on its arch, at a launch of
/// `block` threads from `origin`.
fn unreachable(
    record: &KernelRecord,
    ptx: Option<&PtxEntry>,
    spec: &KernelSpec,
    origin: LaunchOrigin,
) -> Vec<Finding> {
    let arch = lookup(&record.arch).unwrap();
    let threads = spec.block.threads();
    let result = occupancy(arch, &facts(record), &Launch::new(threads));
    let on = [CompiledOnArch {
        arch,
        record,
        ptx,
        occupancy: &result,
        chosen: None,
    }];
    evaluate_launch(spec, &on, origin)
        .into_iter()
        .filter(|finding| finding.lint == LintId::UnreachableBound)
        .collect()
}

const THREADS_WARNING: &str = "ptxas warning : Value of threads per SM for entry k is out of range. .minnctapersm will be ignored";

#[test]
fn a_minimum_ptxas_ignores_names_why_what_it_did_and_the_largest_it_honours() {
    let record = bounded_record("sm_80", 58, 0, &[THREADS_WARNING]);
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let ptx = bounds_ptx(1024, 4);
    let found = unreachable(&record, Some(&ptx), &spec, LaunchOrigin::CommandLine);
    assert_eq!(found.len(), 1, "{found:#?}");
    let finding = &found[0];
    assert_eq!(finding.arch.as_deref(), Some("sm_80"));
    assert_eq!(
        finding.message,
        "kernel `k` asks for at least 4 blocks of 1024 threads per SM, more than sm_80 holds: ptxas ignored the minimum; the largest it honours there is 2"
    );
    assert_eq!(
        finding.notes[..4],
        [
            "the PTX of `k` says `.maxntid 1024, 1, 1` and `.minnctapersm 4` (`__launch_bounds__(1024, 4)`)",
            "4 blocks of 1024 threads need 4096 threads per SM, more than sm_80's 2048",
            &format!("ptxas: {THREADS_WARNING}"),
            "ptxas compiled `k` as if no minimum were given: only the block of 1024 threads caps its registers (at most 64 per thread, not the 16 that 4 blocks would leave); it used 58",
        ]
    );
    assert!(
        finding.help.as_deref().unwrap().starts_with(
            "write `__launch_bounds__(1024, 2)` or less so that ptxas keeps it on sm_80"
        ),
        "{:?}",
        finding.help
    );
    // The same from a declaration is worded with its key; without the warning (a record read
    // from the binary) it is found all the same.
    let quiet = bounded_record("sm_80", 58, 0, &[]);
    let declared = unreachable(&quiet, Some(&ptx), &spec, LaunchOrigin::Declaration);
    assert_eq!(declared[0].message, finding.message);
    assert!(
        declared[0]
            .help
            .as_deref()
            .unwrap()
            .starts_with("declare `min_blocks_per_sm = 2` or less"),
        "{:?}",
        declared[0].help
    );
    assert!(!declared[0]
        .notes
        .iter()
        .any(|note| note.starts_with("ptxas: ")));
}

#[test]
fn a_minimum_shared_memory_keeps_out_of_reach_is_found_with_the_limit() {
    // __launch_bounds__(256, 5) with 48 KiB of static shared memory on sm_80: ptxas caps
    // registers at 48 for 5 blocks; shared memory holds 3.
    let record = bounded_record("sm_80", 48, 49152, &[]);
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let ptx = bounds_ptx(256, 5);
    let found = unreachable(&record, Some(&ptx), &spec, LaunchOrigin::Declaration);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "kernel `k` asks for at least 5 blocks per SM, but shared memory let only 3 reside on sm_80: its registers are capped for blocks that cannot run; the largest minimum that can take effect is 3"
    );
    assert!(
        found[0].notes[1].starts_with("shared memory: 50176 bytes per block"),
        "{:?}",
        found[0].notes
    );
    assert_eq!(
        found[0].notes[2],
        "ptxas capped `k` at 48 registers per thread so that 5 blocks of 256 threads fit the register file (it used 48); 3 blocks leave 80"
    );
    assert!(found[0]
        .help
        .as_deref()
        .unwrap()
        .starts_with("declare `min_blocks_per_sm = 3`"));
    // The launch's dynamic shared memory counts too.
    let mut dynamic = spec.clone();
    dynamic.dynamic_smem_bytes = 16384;
    let found = unreachable(&record, Some(&ptx), &dynamic, LaunchOrigin::Declaration);
    assert!(
        found[0]
            .message
            .ends_with("the largest minimum that can take effect is 2"),
        "{}",
        found[0].message
    );
}

#[test]
fn a_reachable_minimum_or_none_is_no_finding() {
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let record = bounded_record("sm_80", 32, 0, &[]);
    for ptx in [
        Some(bounds_ptx(256, 2)),
        Some(bounds_ptx(1024, 2)),
        Some(PtxEntry {
            maxntid: Some(vec![1024]),
            ..PtxEntry::default()
        }),
        None,
    ] {
        assert!(
            unreachable(&record, ptx.as_ref(), &spec, LaunchOrigin::Declaration).is_empty(),
            "{ptx:?}"
        );
    }
    // 2 blocks of 1024 threads fit sm_80's 2048, not sm_86's 1536.
    let sm_86 = bounded_record("sm_86", 32, 0, &[]);
    let found = unreachable(
        &sm_86,
        Some(&bounds_ptx(1024, 2)),
        &spec,
        LaunchOrigin::Declaration,
    );
    assert!(
        found[0]
            .message
            .ends_with("the largest it honours there is 1"),
        "{found:#?}"
    );
}

#[test]
fn ptxas_s_warning_alone_is_a_finding() {
    // No PTX (a log): the warning says the minimum was dropped.
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let record = bounded_record("sm_90", 60, 0, &[THREADS_WARNING]);
    let found = unreachable(&record, None, &spec, LaunchOrigin::CommandLine);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "ptxas ignored the minimum blocks per SM of kernel `k` on sm_90"
    );
    assert_eq!(found[0].notes[0], format!("ptxas: {THREADS_WARNING}"));
    assert_eq!(
        found[0].notes[2],
        "for blocks of 256 threads (the launch checked), a minimum of up to 8 blocks per SM takes effect on sm_90: `__launch_bounds__(256, 8)`"
    );
    // A PTX whose minimum the facts here would honour: ptxas's word wins.
    let found = unreachable(
        &record,
        Some(&bounds_ptx(256, 2)),
        &spec,
        LaunchOrigin::CommandLine,
    );
    assert_eq!(
        found[0].message,
        "kernel `k` asks for at least 2 blocks of 256 threads per SM, more than sm_90 holds: ptxas ignored the minimum"
    );
}

#[test]
fn an_undeclared_kernel_gets_the_finding_at_its_level() {
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let record = bounded_record("sm_80", 58, 0, &[THREADS_WARNING]);
    let ptx = bounds_ptx(1024, 4);
    let result = occupancy(lookup("sm_80").unwrap(), &facts(&record), &Launch::new(256));
    let on = [CompiledOnArch {
        arch: lookup("sm_80").unwrap(),
        record: &record,
        ptx: Some(&ptx),
        occupancy: &result,
        chosen: None,
    }];
    let found = check_kernel(
        super::Launch::Undeclared(&spec),
        &on,
        &LevelSources::default(),
    );
    assert_eq!(
        found
            .iter()
            .map(|leveled| (leveled.lint, leveled.level))
            .collect::<Vec<_>>(),
        [(LintId::UnreachableBound, Level::Warn)]
    );
}

/// The spill note of a declared minimum never describes a register cap ptxas did not apply.
#[test]
fn the_bound_note_says_when_ptxas_ignored_the_minimum() {
    let mut spec = KernelSpec::with_block(BlockDim::linear(256));
    spec.min_blocks_per_sm = Some(Tunable::Fixed(8));
    let note = |arch: &str| {
        let spilling = SPILLING.replace("sm_90", arch);
        let record = record(&spilling);
        let arch = lookup(arch).unwrap();
        let result = occupancy(arch, &facts(&record), &Launch::new(256));
        let on = [CompiledOnArch {
            arch,
            record: &record,
            ptx: None,
            occupancy: &result,
            chosen: None,
        }];
        evaluate_declared(&spec, &on)
            .into_iter()
            .find(|finding| finding.lint == LintId::Spills)
            .unwrap()
            .notes[0]
            .clone()
    };
    assert_eq!(
        note("sm_90"),
        "`min_blocks_per_sm = 8` with `block = 256` asks ptxas to fit 2048 threads per SM on sm_90: at most 32 registers per thread"
    );
    assert_eq!(
        note("sm_86"),
        "`min_blocks_per_sm = 8` with `block = 256` asks ptxas to fit 2048 threads per SM on sm_86; ptxas ignored the minimum (8 blocks of 256 threads need 2048 threads per SM, more than sm_86's 1536), so only the block caps registers (at most 255 per thread)"
    );
}

/// ptxas 13.0's warning for a `.minnctapersm` without `.maxntid` or `.reqntid` (it names the PTX
/// line of the entry's closing brace, not the kernel; the build gives it to the kernel).
const WITHOUT_BLOCK: &str = "ptxas register_caps.ptx, line 40; warning : .minnctapersm is ignored when neither .maxntid nor .reqntid is specified.";

#[test]
fn a_minimum_without_a_block_size_is_ignored_and_found() {
    let spec = KernelSpec::with_block(BlockDim::linear(256));
    let mut record = bounded_record("sm_80", 40, 0, &[]);
    record.warnings.push(WITHOUT_BLOCK.to_string());
    let ptx = PtxEntry {
        minnctapersm: Some(4),
        ..PtxEntry::default()
    };
    assert!(crate::ptxas::ignores_minimum_without_block(
        &ptx,
        WITHOUT_BLOCK
    ));
    assert!(!crate::ptxas::ignores_minimum_without_block(
        &bounds_ptx(256, 4),
        WITHOUT_BLOCK
    ));
    let found = unreachable(&record, Some(&ptx), &spec, LaunchOrigin::CommandLine);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "kernel `k` asks for at least 4 blocks per SM, but its PTX gives no block size (`.maxntid`, `.reqntid`): ptxas ignored the minimum on sm_80"
    );
    assert_eq!(
        found[0].notes[..4],
        [
            "the PTX of `k` says `.minnctapersm 4` but neither `.maxntid` nor `.reqntid`: a minimum blocks per SM needs a block size",
            &format!("ptxas: {WITHOUT_BLOCK}"),
            "ptxas compiled `k` as if no minimum were given (it used 40 registers per thread)",
            "for blocks of 256 threads (the launch checked), a minimum of up to 8 blocks per SM takes effect on sm_80: `__launch_bounds__(256, 8)`",
        ]
    );
    assert!(
        found[0].help.as_deref().unwrap().starts_with(
            "give the minimum its block: `.maxntid 256, 1, 1` beside `.minnctapersm 4`"
        ),
        "{:?}",
        found[0].help
    );
    // Without the warning (a record read from the binary) the PTX alone says it.
    let quiet = bounded_record("sm_80", 40, 0, &[]);
    assert_eq!(
        unreachable(&quiet, Some(&ptx), &spec, LaunchOrigin::CommandLine)[0].message,
        found[0].message
    );
}

/// What a PTX must hold for the declared bounds: a minimum (written, or chosen for `"auto"`)
/// with the block as `.maxntid`, a cap alone, or the block alone.
#[test]
fn entry_directives_spell_the_bounds_in_effect_on_the_arch() {
    let record = record(SPILLING);
    let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(128));
    let on = on_sm_90(&record, &result)[0];
    let mut spec = KernelSpec::with_block(BlockDim { x: 32, y: 4, z: 1 });
    assert_eq!(on.entry_directives(&spec), ".maxntid 128, 1, 1");
    spec.max_registers = Some(Tunable::Fixed(64));
    assert_eq!(on.entry_directives(&spec), ".maxnreg 64");
    spec.max_registers = None;
    spec.min_blocks_per_sm = Some(Tunable::Fixed(6));
    assert_eq!(
        on.entry_directives(&spec),
        ".maxntid 128, 1, 1 .minnctapersm 6"
    );
    spec.min_blocks_per_sm = Some(Tunable::Auto);
    let chosen = CompiledOnArch {
        chosen: Some(crate::tune::Bound::MinBlocksPerSm(5)),
        ..on
    };
    assert_eq!(
        chosen.entry_directives(&spec),
        ".maxntid 128, 1, 1 .minnctapersm 5"
    );
    // "auto" with no bound chosen: the block alone.
    assert_eq!(on.entry_directives(&spec), ".maxntid 128, 1, 1");
}
