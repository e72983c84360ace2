//! The SASS lints' checks: from one kernel's [`SassFacts`] on one architecture (and what
//! ptxas and the PTX said about `setmaxnreg`) to findings of `spill_in_loop`, `local_array`,
//! `call`, `fp64`, `setmaxnreg_ignored` and `setmaxnreg_budget`. Each lint is declared in
//! [`crate::lint`], naming its check here ([`Check::Sass`](super::Check::Sass));
//! [`evaluate_sass`](super::evaluate::evaluate_sass) runs them and levels are resolved by the
//! caller like every other finding.

use super::finding::Finding;
use super::id::LintId;
use super::smem_spill::SmemSpillRoom;
use crate::sass::callee::{is_compiler_subroutine, is_device_library, INDIRECT_CALL};
use crate::sass::{CallFacts, LineFacts, LoopFacts, SassFacts};

/// Threads in a warpgroup: `setmaxnreg` budgets apply per warpgroup.
pub const WARPGROUP_THREADS: u32 = 128;

/// What the SASS lints need besides the facts.
#[derive(Debug, Clone, Copy)]
pub struct SassLintInputs<'a> {
    pub facts: &'a SassFacts,
    /// Display name of the kernel.
    pub kernel: &'a str,
    pub arch: &'a str,
    /// Threads per block of the launch checked.
    pub block_threads: u32,
    /// Registers per thread ptxas allocated.
    pub registers: u32,
    /// The kernel's PTX has `setmaxnreg`.
    pub ptx_has_setmaxnreg: bool,
    /// ptxas's lines of this compile that say it ignored a `setmaxnreg` (C7504 across
    /// compilation units, C7505 for debugging, C7508 with no register count at entry, ...),
    /// verbatim: they name no kernel.
    pub setmaxnreg_warnings: &'a [String],
    /// What letting ptxas spill to shared memory would take, where the toolkit, the compile
    /// and the kernel allow it (`enable_smem_spilling`): `spill_in_loop` suggests the pragma
    /// when the spills fit.
    pub smem_spill_room: Option<SmemSpillRoom>,
}

/// `src/k.cu:12`; for code read without a line table, a line it cannot name, said so.
pub fn line_text(group: &LineFacts) -> String {
    group.place()
}

fn loop_text(found: &LoopFacts) -> String {
    match (&found.file, found.line) {
        (Some(file), Some(line)) => format!("the loop at {file}:{line} (depth {})", found.depth),
        _ => format!(
            "the loop at SASS offset {:#x} (depth {})",
            found.header_offset, found.depth
        ),
    }
}

/// The note every spill finding gets when SASS was read: where the hottest spill is.
pub fn hottest_spill_note(facts: &SassFacts) -> Option<String> {
    let hottest = facts.hottest_spill()?;
    let place = if hottest.loop_depth > 0 {
        format!("inside a loop (depth {})", hottest.loop_depth)
    } else {
        "outside loops".to_owned()
    };
    Some(format!(
        "the hottest spill is at {}: {} spill loads + {} spill stores {place}; in all {} of {} spill loads and {} of {} spill stores sit in loops",
        line_text(hottest),
        hottest.loads,
        hottest.stores,
        facts.spill_loads_in_loops,
        facts.spill_loads,
        facts.spill_stores_in_loops,
        facts.spill_stores,
    ))
}

fn finding(inputs: &SassLintInputs<'_>, lint: LintId, message: String) -> Finding {
    Finding {
        arch: Some(inputs.arch.to_owned()),
        message,
        notes: Vec::new(),
        help: None,
        ..Finding::new(lint)
    }
}

/// `spill_in_loop`: spill loads or stores inside a loop, at the innermost spilling loop.
pub(crate) fn spill_in_loop(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let facts = inputs.facts;
    let in_loops = facts.spill_loads_in_loops + facts.spill_stores_in_loops;
    if in_loops == 0 {
        return;
    }
    let Some(hottest) = facts.hottest_spill() else {
        return;
    };
    let mut spilling: Vec<&LoopFacts> = facts
        .loops
        .iter()
        .filter(|found| found.spill_loads + found.spill_stores > 0)
        .collect();
    spilling.sort_by_key(|found| {
        std::cmp::Reverse((found.depth, found.spill_loads + found.spill_stores))
    });
    let innermost = spilling[0];
    let mut finding = finding(
        inputs,
        LintId::SpillInLoop,
        format!(
            "kernel `{}` spills inside a loop on {}: {} spill loads + {} spill stores in {}, the hottest at {}",
            inputs.kernel,
            inputs.arch,
            innermost.spill_loads,
            innermost.spill_stores,
            loop_text(innermost),
            line_text(hottest)
        ),
    );
    for found in spilling.iter().take(3) {
        finding.notes.push(format!(
            "{}: {} instructions, {} spill loads + {} spill stores per iteration (each a local-memory round trip)",
            loop_text(found),
            found.instructions,
            found.spill_loads,
            found.spill_stores
        ));
    }
    let mut help = format!(
        "give the loop registers: lower `min_blocks_per_sm` or raise `max_registers`, or keep fewer values live across the loop at {}",
        line_text(hottest)
    );
    let suggestion = inputs
        .smem_spill_room
        .and_then(|room| room.suggestion(inputs.kernel, inputs.arch));
    if let Some((note, pragma)) = suggestion {
        finding.notes.push(note);
        help.push_str("; ");
        help.push_str(&pragma);
    }
    finding.help = Some(help);
    findings.push(finding);
}

/// `local_array`: local memory at a computed address (an array indexed at run time).
pub(crate) fn local_array(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let Some(hottest) = inputs.facts.hottest_local_array() else {
        return;
    };
    let place = if hottest.loop_depth > 0 {
        format!(", inside a loop (depth {})", hottest.loop_depth)
    } else {
        String::new()
    };
    let mut finding = finding(
        inputs,
        LintId::LocalArray,
        format!(
            "kernel `{}` indexes a local array at run time on {}: {} local loads + {} local stores at {}{place}",
            inputs.kernel,
            inputs.arch,
            hottest.loads,
            hottest.stores,
            line_text(hottest)
        ),
    );
    finding.notes.push(format!(
        "{} local-memory accesses of the kernel use a computed address",
        inputs.facts.local_array_accesses
    ));
    finding.help = Some(format!(
        "index the array at {} with compile-time constants (unroll), or move it to shared memory",
        line_text(hottest)
    ));
    findings.push(finding);
}

/// `call`: one finding per non-inlined callee that is not one of ptxas's own subroutines, and
/// one for the kernel's indirect calls.
pub(crate) fn calls(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let found = inputs
        .facts
        .calls
        .iter()
        .filter(|call| !is_compiler_subroutine(&call.callee))
        .map(|call| {
            let mut found = finding(inputs, LintId::Call, call_message(inputs, call));
            // The device library's code and an indirect call's targets are not the kernel's.
            if !call.indirect && !is_device_library(&call.callee) {
                found.notes.push(format!(
                    "the callee's code has {} local loads and stores (its frame)",
                    call.callee_local_accesses
                ));
            }
            found.help = Some(call.fix.clone().unwrap_or_else(|| match call.indirect {
                true => INDIRECT_CALL.fix.to_owned(),
                false => format!("mark `{}` `__forceinline__`, or `allow(call)`", call.callee),
            }));
            found
        });
    findings.extend(found);
}

/// `kernel `k` calls `__assertfail` (device-side `assert()`, ...) on sm_90: ...`, or for
/// indirect calls `kernel `k` makes indirect calls through a function pointer (to `f` or `g`)`.
fn call_message(inputs: &SassLintInputs<'_>, call: &CallFacts) -> String {
    let subject = match call.indirect {
        true => {
            let candidates: Vec<String> = (call.candidates.iter())
                .map(|name| format!("`{name}`"))
                .collect();
            let to = match candidates.is_empty() {
                true => String::new(),
                false => format!(" (to {})", candidates.join(" or ")),
            };
            format!("makes an indirect call through a function pointer{to}")
        }
        false => {
            let what = call
                .what
                .as_deref()
                .map_or_else(String::new, |what| format!(" ({what})"));
            format!("calls `{}`{what}", call.callee)
        }
    };
    format!(
        "kernel `{}` {subject} on {}: {} call site(s), {} inside loops",
        inputs.kernel, inputs.arch, call.call_sites, call.call_sites_in_loops
    )
}

/// `fp64`: double-precision instructions, counted.
pub(crate) fn fp64(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let count = inputs.facts.fp64_instructions;
    if count == 0 {
        return;
    }
    let mut found = finding(
        inputs,
        LintId::Fp64,
        format!(
            "kernel `{}` has {count} double-precision instructions on {}",
            inputs.kernel, inputs.arch
        ),
    );
    found.help = Some("use `float` literals and functions (`1.0f`, `sinf`), or keep `fp64` allowed when double precision is intended".to_owned());
    findings.push(found);
}

/// `setmaxnreg_ignored`: the PTX has `setmaxnreg`, the SASS no `USETMAXREG`.
pub(crate) fn setmaxnreg_ignored(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let dropped = inputs.ptx_has_setmaxnreg && inputs.facts.setmaxnreg.is_empty();
    if !dropped {
        return;
    }
    let mut found = finding(
        inputs,
        LintId::SetmaxnregIgnored,
        format!(
            "ptxas dropped the `setmaxnreg` of kernel `{}` on {}: the PTX has it, the SASS has no `USETMAXREG`",
            inputs.kernel, inputs.arch
        ),
    );
    found.notes.extend(
        inputs
            .setmaxnreg_warnings
            .iter()
            .map(|warning| format!("ptxas: {warning}")),
    );
    let mut helps: Vec<&str> = inputs
        .setmaxnreg_warnings
        .iter()
        .filter_map(|warning| setmaxnreg_help(warning))
        .collect();
    helps.dedup();
    if helps.is_empty() {
        helps.push(SETMAXNREG_BOUNDS_HELP);
    }
    found.help = Some(helps.join("; "));
    findings.push(found);
}

const SETMAXNREG_BOUNDS_HELP: &str = "give the kernel a maximum block size in its launch bounds (`__launch_bounds__(OCCUPANCY_BOUNDS_<kernel>)` or `__launch_bounds__(384, 1)`)";

/// What to change for the reason one of ptxas's `'setmaxnreg' ignored` lines gives (ptxas 13.0's
/// texts, docs/ptxas-formats.md).
fn setmaxnreg_help(warning: &str) -> Option<&'static str> {
    let reasons: [(&str, &str); 5] = [
        ("unable to determine register count at entry", SETMAXNREG_BOUNDS_HELP),
        ("compatibility across compilation units", "compile the kernel's file as a whole program (without `-rdc=true`): ptxas drops `setmaxnreg` in separately compiled code"),
        ("to allow debugging", "build without `-G` (device debug information drops `setmaxnreg`); `-lineinfo` keeps it"),
        ("into 'extern' call", "do not call an `extern` device function from the kernel: inline it, or define it in the kernel's file"),
        ("minimum register requirements", "raise the `setmaxnreg` count: the code needs more registers than it leaves the warps"),
    ];
    reasons
        .iter()
        .find(|(reason, _)| warning.contains(reason))
        .map(|(_, help)| *help)
}

/// Registers the roles need: one warpgroup (the producer) at the lowest budget, the others at
/// the highest; a budget only raised leaves the producer at the entry count.
pub fn setmaxnreg_demand(facts: &SassFacts, block_threads: u32, registers: u32) -> Option<u64> {
    let highest = facts
        .setmaxnreg
        .iter()
        .filter(|found| found.increase)
        .map(|found| found.registers)
        .max()?;
    let lowest = facts
        .setmaxnreg
        .iter()
        .filter(|found| !found.increase)
        .map(|found| found.registers)
        .min()
        .unwrap_or(registers);
    let warpgroups = u64::from(block_threads.div_ceil(WARPGROUP_THREADS));
    let per_warpgroup = u64::from(WARPGROUP_THREADS);
    Some(per_warpgroup * (u64::from(lowest) + warpgroups.saturating_sub(1) * u64::from(highest)))
}

/// `setmaxnreg_budget`: the roles' budgets need more registers than the block has.
pub(crate) fn setmaxnreg_budget(inputs: &SassLintInputs<'_>, findings: &mut Vec<Finding>) {
    let Some(demand) = setmaxnreg_demand(inputs.facts, inputs.block_threads, inputs.registers)
    else {
        return;
    };
    let allocated = u64::from(inputs.block_threads) * u64::from(inputs.registers);
    if demand <= allocated {
        return;
    }
    let mut found = finding(
        inputs,
        LintId::SetmaxnregBudget,
        format!(
            "the `setmaxnreg` budgets of kernel `{}` need {demand} registers per block on {}, above the {allocated} the block of {} threads gets at {} registers per thread",
            inputs.kernel, inputs.arch, inputs.block_threads, inputs.registers
        ),
    );
    let budgets: Vec<String> = inputs
        .facts
        .setmaxnreg
        .iter()
        .map(|found| {
            format!(
                "{} {}",
                if found.increase { "inc" } else { "dec" },
                found.registers
            )
        })
        .collect();
    found.notes.push(format!(
        "budgets in the SASS: {}; counted as one producer warpgroup at the lowest and {} consumer warpgroup(s) at the highest",
        budgets.join(", "),
        inputs.block_threads.div_ceil(WARPGROUP_THREADS).saturating_sub(1)
    ));
    found.help = Some("lower the consumers' `setmaxnreg.inc` value or the producer's `.dec` value until 128 x (producer + consumers) fits".to_owned());
    findings.push(found);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::lint::evaluate::evaluate_sass;
    use crate::lint::{Check, LINTS};
    use crate::sass::facts::SetMaxRegFacts;
    use crate::sass::LocalKind;

    fn empty() -> SassFacts {
        SassFacts {
            kernel: "k".into(),
            arch: Some("sm_90a".into()),
            instructions: 10,
            local_loads_by_width: Default::default(),
            local_stores_by_width: Default::default(),
            spill_loads: 0,
            spill_stores: 0,
            spill_loads_in_loops: 0,
            spill_stores_in_loops: 0,
            spill_store_bytes: 0,
            local_array_accesses: 0,
            stack_data_accesses: 0,
            loops: Vec::new(),
            lines: Vec::new(),
            calls: Vec::new(),
            fp64_instructions: 0,
            setmaxnreg: Vec::new(),
            indirect_branches: 0,
        }
    }

    fn inputs(facts: &SassFacts) -> SassLintInputs<'_> {
        SassLintInputs {
            facts,
            kernel: "k",
            arch: "sm_90a",
            block_threads: 384,
            registers: 168,
            ptx_has_setmaxnreg: false,
            setmaxnreg_warnings: &[],
            smem_spill_room: None,
        }
    }

    /// An outermost loop at SASS offset 0x40 with no line table, whose only local accesses are
    /// 2 spill loads: the loop the tests put spills in, each setting what else it is about.
    fn spilling_loop() -> LoopFacts {
        LoopFacts {
            header_offset: 0x40,
            depth: 1,
            parent: None,
            file: None,
            line: None,
            instructions: 20,
            local_loads: 2,
            local_stores: 0,
            spill_loads: 2,
            spill_stores: 0,
            local_array_accesses: 0,
            calls: 0,
        }
    }

    /// k.cu:30, one spill load outside any loop.
    fn cold_spill_line() -> LineFacts {
        LineFacts {
            file: "k.cu".into(),
            line: 30,
            kind: LocalKind::Spill,
            loads: 1,
            stores: 0,
            loop_depth: 0,
        }
    }

    fn lints(findings: &[Finding]) -> Vec<LintId> {
        findings.iter().map(|found| found.lint).collect()
    }

    #[test]
    fn clean_facts_give_no_findings() {
        assert!(evaluate_sass(&inputs(&empty())).is_empty());
    }

    /// Code without a line table (a binary built without `-lineinfo`) still gives its findings,
    /// saying that the line is unknown rather than naming one.
    #[test]
    fn without_a_line_table_the_findings_say_the_line_is_unknown() {
        let mut facts = empty();
        facts.spill_loads = 2;
        facts.spill_loads_in_loops = 2;
        facts.local_array_accesses = 1;
        facts.loops.push(LoopFacts {
            local_loads: 3,
            local_array_accesses: 1,
            ..spilling_loop()
        });
        for (kind, loads) in [(LocalKind::Spill, 2), (LocalKind::LocalArray, 1)] {
            facts.lines.push(LineFacts {
                file: String::new(),
                line: 0,
                kind,
                loads,
                stores: 0,
                loop_depth: 1,
            });
        }
        let findings = evaluate_sass(&inputs(&facts));
        assert_eq!(lints(&findings), [LintId::SpillInLoop, LintId::LocalArray]);
        let unknown =
            "an unknown line (the code has no line table: compile with `-lineinfo` for lines)";
        for finding in &findings {
            assert!(finding.message.contains(unknown), "{}", finding.message);
            assert!(!finding.message.contains(":0"), "{}", finding.message);
        }
        assert!(findings[0].message.contains("the loop at SASS offset 0x40"));
        assert!(hottest_spill_note(&facts).unwrap().contains(unknown));
    }

    #[test]
    fn a_spill_in_a_loop_names_the_loop_and_the_hottest_line() {
        let mut facts = empty();
        facts.spill_loads = 3;
        facts.spill_loads_in_loops = 2;
        facts.loops.push(LoopFacts {
            file: Some("k.cu".into()),
            line: Some(8),
            ..spilling_loop()
        });
        facts.lines.push(LineFacts {
            file: "k.cu".into(),
            line: 12,
            kind: LocalKind::Spill,
            loads: 2,
            stores: 0,
            loop_depth: 1,
        });
        facts.lines.push(cold_spill_line());
        let findings = evaluate_sass(&inputs(&facts));
        assert_eq!(lints(&findings), [LintId::SpillInLoop]);
        assert!(
            findings[0].message.contains("the loop at k.cu:8"),
            "{}",
            findings[0].message
        );
        assert!(findings[0].message.ends_with("the hottest at k.cu:12"));
        assert!(hottest_spill_note(&facts).unwrap().contains("k.cu:12"));
        assert!(!findings[0]
            .help
            .as_deref()
            .unwrap()
            .contains("enable_smem_spilling"));
        // Where shared memory has room for the frame, the pragma is suggested too.
        let room = SmemSpillRoom {
            frame_bytes: 112,
            sized_threads: 256,
            bounded: true,
            block_threads: 256,
            spare_bytes: 37888,
            blocks_per_sm: 6,
        };
        let with_room = SassLintInputs {
            smem_spill_room: Some(room),
            ..inputs(&facts)
        };
        let findings = evaluate_sass(&with_room);
        assert!(
            findings[0].notes.last().unwrap().starts_with("shared memory has room for these spills on sm_90a: 112 bytes of stack frame x 256 threads = 28672 bytes"),
            "{:#?}",
            findings[0].notes
        );
        assert!(findings[0].help.as_deref().unwrap().contains("; or let ptxas spill to shared memory (CUDA 13): `asm volatile(\".pragma \\\"enable_smem_spilling\\\";\");` at the top of `k`"), "{:?}", findings[0].help);
    }

    #[test]
    fn a_cold_spill_is_no_spill_in_loop() {
        let mut facts = empty();
        facts.spill_loads = 1;
        facts.lines.push(cold_spill_line());
        assert!(evaluate_sass(&inputs(&facts)).is_empty());
        assert!(hottest_spill_note(&facts)
            .unwrap()
            .contains("outside loops"));
    }

    #[test]
    fn setmaxnreg_dropped_or_over_budget() {
        let facts = empty();
        let mut dropped = inputs(&facts);
        dropped.ptx_has_setmaxnreg = true;
        let c7508 = ["ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.".to_string()];
        dropped.setmaxnreg_warnings = &c7508;
        let findings = evaluate_sass(&dropped);
        assert_eq!(lints(&findings), [LintId::SetmaxnregIgnored]);
        assert_eq!(findings[0].notes[0], format!("ptxas: {}", c7508[0]));
        assert!(findings[0]
            .help
            .as_deref()
            .unwrap()
            .starts_with("give the kernel a maximum block size"));
        // ptxas 13.0 under `-rdc=true` and `-G`: each reason its own help.
        let others = [
            "ptxas info    : (C7504) Potential Performance Loss: 'setmaxnreg' ignored to maintain compatibility across compilation units.".to_string(),
            "ptxas info    : (C7505) Potential Performance Loss: 'setmaxnreg' ignored to allow debugging.".to_string(),
        ];
        dropped.setmaxnreg_warnings = &others;
        let findings = evaluate_sass(&dropped);
        assert_eq!(
            findings[0].notes,
            [
                format!("ptxas: {}", others[0]),
                format!("ptxas: {}", others[1])
            ]
        );
        let help = findings[0].help.as_deref().unwrap();
        assert!(
            help.contains("without `-rdc=true`") && help.contains("without `-G`"),
            "{help}"
        );

        let mut fits = empty();
        fits.setmaxnreg = vec![
            SetMaxRegFacts {
                registers: 40,
                increase: false,
            },
            SetMaxRegFacts {
                registers: 232,
                increase: true,
            },
        ];
        // 128 x (40 + 2 x 232) = 64512 = 384 x 168.
        assert_eq!(setmaxnreg_demand(&fits, 384, 168), Some(64512));
        assert!(evaluate_sass(&inputs(&fits)).is_empty());
        fits.setmaxnreg[1].registers = 240;
        let findings = evaluate_sass(&inputs(&fits));
        assert_eq!(lints(&findings), [LintId::SetmaxnregBudget]);
        assert!(
            findings[0].message.contains("66560"),
            "{}",
            findings[0].message
        );
    }

    /// Runs every SASS check the registry declares on `inputs`; asserts each finding carries
    /// the id of the lint whose check made it (a check reporting another lint's id would be
    /// silenced by that lint's `allow`), and returns the lints that fired.
    fn fired_under_their_own_ids(inputs: &SassLintInputs<'_>) -> BTreeSet<LintId> {
        let mut fired = BTreeSet::new();
        for lint in &LINTS {
            let Check::Sass { run, .. } = lint.check else {
                continue;
            };
            let mut findings = Vec::new();
            run(inputs, &mut findings);
            for found in findings {
                assert_eq!(found.lint, lint.id, "{found:#?}");
                fired.insert(lint.id);
            }
        }
        fired
    }

    #[test]
    fn every_sass_check_reports_its_own_lint() {
        let mut facts = empty();
        facts.spill_loads = 2;
        facts.spill_loads_in_loops = 2;
        facts.loops.push(LoopFacts {
            local_loads: 4,
            local_array_accesses: 2,
            ..spilling_loop()
        });
        for kind in [LocalKind::Spill, LocalKind::LocalArray] {
            facts.lines.push(LineFacts {
                file: "k.cu".into(),
                line: 12,
                kind,
                loads: 2,
                stores: 0,
                loop_depth: 1,
            });
        }
        facts.local_array_accesses = 2;
        facts.fp64_instructions = 1;
        facts.calls.push(crate::sass::CallFacts {
            callee: "helper".into(),
            indirect: false,
            candidates: Vec::new(),
            call_sites: 1,
            call_sites_in_loops: 0,
            callee_local_accesses: 0,
            what: None,
            fix: None,
        });
        let mut dropped = inputs(&facts);
        dropped.ptx_has_setmaxnreg = true;
        let mut fired = fired_under_their_own_ids(&dropped);
        let mut over_budget = empty();
        over_budget.setmaxnreg = vec![SetMaxRegFacts {
            registers: 240,
            increase: true,
        }];
        fired.extend(fired_under_their_own_ids(&inputs(&over_budget)));
        let sass_lints: BTreeSet<LintId> = LINTS
            .iter()
            .filter(|lint| matches!(lint.check, Check::Sass { .. }))
            .map(|lint| lint.id)
            .collect();
        assert_eq!(fired, sass_lints);
        assert_eq!(sass_lints.len(), 6);
    }

    #[test]
    fn fp64_and_calls_are_counted() {
        let mut facts = empty();
        facts.fp64_instructions = 17;
        facts.calls.push(crate::sass::CallFacts {
            callee: "__internal_trig_reduction_slowpathd".into(),
            indirect: false,
            candidates: Vec::new(),
            call_sites: 1,
            call_sites_in_loops: 0,
            callee_local_accesses: 5,
            what: Some("the double-precision sin/cos/tan slow path".into()),
            fix: Some("use `sinf`".into()),
        });
        let findings = evaluate_sass(&inputs(&facts));
        // In the registry's (the documentation's) order: `fp64` is declared before `call`.
        assert_eq!(lints(&findings), [LintId::Fp64, LintId::Call]);
        assert!(findings[1].message.contains("double-precision sin/cos"));
        assert_eq!(findings[1].help.as_deref(), Some("use `sinf`"));
        assert!(findings[0].message.contains("17 double-precision"));
    }

    fn call(callee: &str, indirect: bool) -> crate::sass::CallFacts {
        let known = match indirect {
            true => Some(crate::sass::callee::INDIRECT_CALL),
            false => crate::sass::callee::describe_callee(callee),
        };
        crate::sass::CallFacts {
            callee: callee.into(),
            indirect,
            candidates: Vec::new(),
            call_sites: 2,
            call_sites_in_loops: 1,
            callee_local_accesses: 0,
            what: known.map(|known| known.what.to_owned()),
            fix: known.map(|known| known.fix.to_owned()),
        }
    }

    #[test]
    fn device_library_and_indirect_calls_say_what_they_are() {
        let mut facts = empty();
        facts.calls.push(call("__assertfail", false));
        facts.calls.push(call("vprintf", false));
        let mut pointer = call(crate::sass::INDIRECT_CALLEE, true);
        pointer.candidates = vec!["_Z5twicef".into(), "_Z6thricef".into()];
        facts.calls.push(pointer);
        let findings = evaluate_sass(&inputs(&facts));
        let messages: Vec<&str> = findings
            .iter()
            .map(|found| found.message.as_str())
            .collect();
        assert_eq!(
            messages,
            [
                "kernel `k` calls `__assertfail` (device-side `assert()`, which calls `__assertfail` when the assertion fails) on sm_90a: 2 call site(s), 1 inside loops",
                "kernel `k` calls `vprintf` (device-side `printf`, which packs its arguments into a local-memory buffer for `vprintf`) on sm_90a: 2 call site(s), 1 inside loops",
                "kernel `k` makes an indirect call through a function pointer (to `_Z5twicef` or `_Z6thricef`) on sm_90a: 2 call site(s), 1 inside loops",
            ]
        );
        assert!(findings[0].help.as_deref().unwrap().contains("-DNDEBUG"));
        for found in &findings {
            let help = found.help.as_deref().unwrap();
            assert!(!help.contains("__forceinline__"), "{help}");
            assert!(found.notes.is_empty(), "no frame of code not in the cubin");
        }
        // A callee of its own with no description keeps the inlining help and its frame.
        let mut own = empty();
        own.calls.push(call("_Z5twicef", false));
        let findings = evaluate_sass(&inputs(&own));
        assert_eq!(
            findings[0].help.as_deref(),
            Some("mark `_Z5twicef` `__forceinline__`, or `allow(call)`")
        );
        assert_eq!(findings[0].notes.len(), 1);
    }

    #[test]
    fn ptxas_arithmetic_subroutines_are_no_call_finding() {
        let mut facts = empty();
        for callee in [
            "__internal_3_$__cuda_sm3x_div_rn_noftz_f32_slowpath",
            "__internal_0_$__cuda_sm20_div_u64",
        ] {
            facts.calls.push(crate::sass::CallFacts {
                callee: callee.into(),
                indirect: false,
                candidates: Vec::new(),
                call_sites: 1,
                call_sites_in_loops: 1,
                callee_local_accesses: 0,
                what: None,
                fix: None,
            });
        }
        assert!(evaluate_sass(&inputs(&facts)).is_empty());
    }
}
