use proptest::prelude::*;

use super::*;
use crate::arch::{self, lookup};
use crate::calc;
use crate::sass::LoopProfile;

fn input(knob: Knob, block_threads: u32, registers: u32) -> LadderInput {
    LadderInput {
        knob,
        block_threads,
        dynamic_smem_bytes: 0,
        static_smem_bytes: 0,
        barriers: 1,
        registers,
    }
}

#[test]
fn the_ladder_of_a_256_thread_block_on_sm_90_steps_at_each_register_cap() {
    let sm_90 = lookup("sm_90").unwrap();
    let rungs = ladder(sm_90, &input(Knob::MinBlocksPerSm, 256, 128));
    let steps: Vec<(Bound, u32, u32)> = rungs
        .iter()
        .map(|rung| (rung.bound, rung.register_cap, rung.blocks_per_sm))
        .collect();
    // 128 registers keep 2 blocks; 7 blocks need 32 registers, which keep 8: one rung. Below:
    // one block lets ptxas use 255 registers.
    assert_eq!(
        steps,
        [
            (Bound::MinBlocksPerSm(1), 255, 1),
            (Bound::MinBlocksPerSm(3), 80, 3),
            (Bound::MinBlocksPerSm(4), 64, 4),
            (Bound::MinBlocksPerSm(5), 48, 5),
            (Bound::MinBlocksPerSm(6), 40, 6),
            (Bound::MinBlocksPerSm(8), 32, 8),
        ]
    );
    let caps: Vec<Bound> = ladder(sm_90, &input(Knob::MaxRegisters, 256, 128))
        .iter()
        .map(|rung| rung.bound)
        .collect();
    assert_eq!(
        caps,
        [80, 64, 48, 40, 32].map(Bound::MaxRegisters),
        "the same steps as register caps"
    );
}

#[test]
fn shared_memory_ends_the_ladder_and_a_full_sm_has_none() {
    let sm_90 = lookup("sm_90").unwrap();
    let mut heavy = input(Knob::MinBlocksPerSm, 256, 128);
    // 60 KB per block: 3 blocks fit 228 KB; registers cannot buy a fourth.
    heavy.static_smem_bytes = 48 * 1024;
    heavy.dynamic_smem_bytes = 12 * 1024;
    let rungs = ladder(sm_90, &heavy);
    assert_eq!(
        rungs
            .iter()
            .map(|rung| rung.blocks_per_sm)
            .collect::<Vec<_>>(),
        [1, 3]
    );
    assert!(ladder(sm_90, &input(Knob::MaxRegisters, 256, 32)).is_empty());
    // A full SM has no rung above; below, one block (255 registers). Seven blocks are no rung:
    // 40 registers (the next allocation step) keep only 6, so 7 allow no more than 32.
    let full: Vec<(Bound, u32)> = ladder(sm_90, &input(Knob::MinBlocksPerSm, 256, 32))
        .iter()
        .map(|rung| (rung.bound, rung.register_cap))
        .collect();
    assert_eq!(full, [(Bound::MinBlocksPerSm(1), 255)]);
    // 64 registers keep 4 blocks: one block (255) and three (80).
    let half: Vec<(Bound, u32)> = ladder(sm_90, &input(Knob::MinBlocksPerSm, 256, 64))
        .iter()
        .take(2)
        .map(|rung| (rung.bound, rung.register_cap))
        .collect();
    assert_eq!(
        half,
        [
            (Bound::MinBlocksPerSm(1), 255),
            (Bound::MinBlocksPerSm(3), 80)
        ]
    );
}

proptest! {
    /// Every rung reaches its blocks with the largest cap that does, gains on the rung below,
    /// and the rungs cover every block count the SM could hold with registers left out.
    #[test]
    fn every_rung_is_the_largest_cap_for_its_blocks(
        arch_index in 0usize..arch::all().len(),
        warps in 1u32..=32,
        registers in 16u32..=255,
        smem_kb in 0u32..=64,
        max_registers in any::<bool>(),
    ) {
        let arch = &arch::all()[arch_index];
        let knob = if max_registers { Knob::MaxRegisters } else { Knob::MinBlocksPerSm };
        let mut given = input(knob, warps * 32, registers.min(arch.max_regs_per_thread));
        given.static_smem_bytes = smem_kb * 1024;
        let launch = given.launch();
        let blocks_at = |cap| calc::blocks_per_sm(arch, &given.kernel_at(cap), &launch);
        let now = blocks_at(given.registers);
        let rungs = ladder(arch, &given);
        // Below the kernel's own blocks (a minimum only): at most two rungs, more registers,
        // fewer blocks, ascending.
        let fewer: Vec<&Rung> = rungs.iter().take_while(|rung| rung.blocks_per_sm < now).collect();
        prop_assert!(fewer.len() <= 2);
        prop_assert!(knob == Knob::MinBlocksPerSm || fewer.is_empty());
        for (index, rung) in fewer.iter().enumerate() {
            prop_assert!(rung.register_cap > given.registers);
            prop_assert_eq!(blocks_at(rung.register_cap), rung.blocks_per_sm);
            prop_assert_eq!(rung.bound, Bound::MinBlocksPerSm(rung.blocks_per_sm));
            if index == 1 {
                prop_assert!(rung.blocks_per_sm > fewer[0].blocks_per_sm);
                prop_assert!(rung.register_cap < fewer[0].register_cap);
            }
        }
        let mut below = now;
        for rung in &rungs[fewer.len()..] {
            prop_assert!(rung.blocks_per_sm > below);
            prop_assert!(rung.register_cap < given.registers);
            prop_assert_eq!(blocks_at(rung.register_cap), rung.blocks_per_sm);
            prop_assert!(blocks_at(rung.register_cap + 1) < rung.blocks_per_sm);
            match rung.bound {
                Bound::MinBlocksPerSm(blocks) => prop_assert_eq!(blocks, rung.blocks_per_sm),
                Bound::MaxRegisters(cap) => prop_assert_eq!(cap, rung.register_cap),
                Bound::None | Bound::NoLaunchBounds => {
                    prop_assert!(false, "no rung of the calculator's ladder is the kernel without bounds")
                }
            }
            below = rung.blocks_per_sm;
        }
        if now > 0 {
            let most = blocks_at(1).max(now);
            prop_assert_eq!(below, most, "the top rung holds as many blocks as registers allow");
        }
    }
}

/// A compile's measurements: `spill_in_loops` spill instructions in its loops (4 bytes
/// each, stored and loaded), `warps` resident (8 a block).
pub(crate) fn measured(
    registers: u32,
    warps: u32,
    spill_in_loops: u32,
    loop_instructions: u32,
) -> Measured {
    Measured {
        registers,
        spill_store_bytes: u64::from(spill_in_loops) * 4,
        spill_load_bytes: u64::from(spill_in_loops) * 4,
        stack_frame_bytes: 0,
        static_smem_bytes: 0,
        barriers: 1,
        spill_instructions: spill_in_loops,
        spill_instructions_in_loops: spill_in_loops,
        loops: LoopProfile {
            loops: 1,
            loop_instructions,
            loop_memory_instructions: 4,
            instructions: loop_instructions + 20,
            ..LoopProfile::default()
        },
        blocks_per_sm: warps / 8,
        warps_per_sm: warps,
        occupancy: f64::from(warps) / 64.0,
    }
}

fn candidate(bound: Bound, measured: Option<Measured>) -> Candidate {
    Candidate {
        bound,
        failure: measured.is_none().then(|| "ptxas failed".to_string()),
        measured,
        refused_spill_bytes: None,
    }
}

#[test]
fn the_most_warps_without_loop_spills_or_growth_wins() {
    let ladder = ArchLadder {
        arch: "sm_90".into(),
        candidates: vec![
            candidate(Bound::None, Some(measured(128, 16, 0, 200))),
            candidate(Bound::MinBlocksPerSm(3), Some(measured(80, 24, 0, 200))),
            candidate(Bound::MinBlocksPerSm(4), Some(measured(64, 32, 0, 209))),
            candidate(Bound::MinBlocksPerSm(5), Some(measured(48, 40, 0, 230))),
            candidate(Bound::MinBlocksPerSm(6), Some(measured(40, 48, 12, 260))),
            candidate(Bound::MinBlocksPerSm(8), None),
        ],
    };
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder]);
    assert_eq!(choice.chosen, Bound::MinBlocksPerSm(4));
    assert_eq!(
        choice.verdicts[0],
        [
            Verdict::Baseline,
            Verdict::Admissible,
            Verdict::Admissible,
            Verdict::LoopGrowth {
                instructions: 230,
                without_bounds: 200
            },
            Verdict::SpillsInLoops {
                instructions: 12,
                without_bounds: 0
            },
            Verdict::Failed,
        ]
    );
    assert!(
        choice
            .reason
            .starts_with("`min_blocks_per_sm = 4` gives the most resident warps"),
        "{}",
        choice.reason
    );
    assert!(
        choice.reason.contains("`min_blocks_per_sm = 5` was refused on sm_90: loops grow to 230 instructions (+15.0% over 200)"),
        "{}",
        choice.reason
    );
}

#[test]
fn nothing_beats_the_kernel_without_bounds_when_every_rung_spills_in_loops() {
    let ladder = ArchLadder {
        arch: "sm_80".into(),
        candidates: vec![
            candidate(Bound::None, Some(measured(128, 16, 0, 200))),
            candidate(Bound::MinBlocksPerSm(3), Some(measured(80, 24, 2, 200))),
        ],
    };
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder]);
    assert_eq!(choice.chosen, Bound::None);
    assert!(
        choice.reason.contains("the kernel keeps no bounds"),
        "{}",
        choice.reason
    );
    let alone = ArchLadder {
        arch: "sm_80".into(),
        candidates: vec![candidate(Bound::None, Some(measured(32, 64, 0, 10)))],
    };
    let choice = choose(&Objective::new(0), Knob::MaxRegisters, &[alone]);
    assert_eq!(choice.chosen, Bound::None);
    assert!(choice
        .reason
        .starts_with("no `max_registers` changes the resident blocks"));
}

#[test]
fn archs_sharing_one_ptx_take_a_bound_only_where_it_holds_on_each() {
    let on = |arch: &str, spills: u32| ArchLadder {
        arch: arch.into(),
        candidates: vec![
            candidate(Bound::None, Some(measured(128, 16, 0, 200))),
            candidate(Bound::MinBlocksPerSm(3), Some(measured(80, 24, 0, 200))),
            candidate(
                Bound::MinBlocksPerSm(4),
                Some(measured(64, 32, spills, 200)),
            ),
        ],
    };
    let choice = choose(
        &Objective::new(0),
        Knob::MinBlocksPerSm,
        &[on("sm_80", 0), on("sm_90", 4)],
    );
    assert_eq!(choice.chosen, Bound::MinBlocksPerSm(3));
}

fn arbitrary_measured() -> impl Strategy<Value = Option<Measured>> {
    prop::option::weighted(
        0.9,
        (1u32..=8, 0u32..=3, 180u32..=240, 2u32..=6).prop_map(
            |(blocks, spills, loop_instructions, memory)| {
                let mut found = measured(255 / blocks, blocks * 8, spills, loop_instructions);
                found.loops.loop_memory_instructions = memory;
                found
            },
        ),
    )
}

proptest! {
    /// The chosen bound is takeable on every arch and no takeable bound scores higher; with
    /// nothing takeable the kernel keeps no bounds.
    #[test]
    fn the_choice_is_the_best_takeable_bound(
        baseline in (1u32..=2, 190u32..=210).prop_map(|(blocks, loops)| measured(128, blocks * 8, 0, loops)),
        rungs in prop::collection::vec(arbitrary_measured(), 0..6),
    ) {
        let mut candidates = vec![candidate(Bound::None, Some(baseline.clone()))];
        candidates.extend(rungs.into_iter().enumerate().map(|(index, found)| {
            candidate(Bound::MinBlocksPerSm(index as u32 + 3), found)
        }));
        let ladder = ArchLadder { arch: "sm_90".into(), candidates };
        let objective = Objective::new(0);
        let choice = choose(&objective, Knob::MinBlocksPerSm, std::slice::from_ref(&ladder));
        let takeable: Vec<&Candidate> = ladder.candidates[1..]
            .iter()
            .filter(|tried| verdict(&objective, &baseline, tried) == Verdict::Admissible)
            .collect();
        let best = takeable
            .iter()
            .filter_map(|tried| tried.measured.as_ref())
            .map(|found| found.warps_per_sm)
            .max();
        // What the warps chose: the earliest admissible rung of the most warps, else none.
        let by_warps = takeable
            .iter()
            .find(|tried| tried.measured.as_ref().map(|found| found.warps_per_sm) == best)
            .and_then(|tried| tried.measured.as_ref())
            .unwrap_or(&baseline);
        if choice.decided_by == Rule::ShorterLoop {
            // The same warps as that choice, within every rule, and a loop at least 5% shorter
            // with no more memory accesses.
            let tried = ladder.candidates.iter().find(|tried| tried.bound == choice.chosen).unwrap();
            let taken = verdict(&objective, &baseline, tried);
            prop_assert!(matches!(taken, Verdict::Admissible | Verdict::NoGain), "{:?}", taken);
            let found = tried.measured.as_ref().unwrap();
            prop_assert_eq!(found.warps_per_sm, by_warps.warps_per_sm);
            prop_assert!(found.spill_instructions_in_loops == 0);
            prop_assert!(found.weighed_instructions() * 100 <= by_warps.weighed_instructions() * 95);
            prop_assert!(found.loops.loop_memory_instructions <= by_warps.loops.loop_memory_instructions);
            return Ok(());
        }
        match choice.chosen {
            Bound::None => prop_assert!(best.is_none()),
            chosen => {
                let tried = ladder.candidates.iter().find(|tried| tried.bound == chosen).unwrap();
                prop_assert_eq!(verdict(&objective, &baseline, tried), Verdict::Admissible);
                let found = tried.measured.as_ref().unwrap();
                prop_assert_eq!(Some(found.warps_per_sm), best);
                prop_assert!(found.spill_instructions_in_loops == 0);
                prop_assert!(found.weighed_instructions() * 100 <= baseline.weighed_instructions() * 105);
            }
        }
    }
}

const PTX: &str = "//\n.version 9.0\n.target sm_80\n.address_size 64\n\n\t// .globl\theavy\n\n.visible .entry heavy(\n\t.param .u64 .ptr .align 1 heavy_param_0,\n\t.param .u32 heavy_param_1\n)\n.maxntid 512, 1, 1\n.minnctapersm 2\n{\n\t.reg .b32 \t%r<3>;\n\tret;\n}\n\n.visible .entry other()\n.maxntid 64, 1, 1\n.minnctapersm 9\n{\n\tret;\n}\n";

#[test]
fn a_bound_replaces_the_entrys_own_and_nothing_else() {
    let patched = with_bound(
        PTX,
        "heavy",
        Knob::MinBlocksPerSm,
        Bound::MinBlocksPerSm(4),
        256,
    )
    .unwrap();
    assert!(
        patched.contains(")\n.maxntid 256, 1, 1\n.minnctapersm 4\n{\n\t.reg .b32"),
        "{patched}"
    );
    assert!(
        patched.ends_with(
            ".visible .entry other()\n.maxntid 64, 1, 1\n.minnctapersm 9\n{\n\tret;\n}\n"
        ),
        "another kernel keeps its bounds: {patched}"
    );
    let none = with_bound(PTX, "heavy", Knob::MinBlocksPerSm, Bound::None, 256).unwrap();
    assert!(none.contains(")\n.maxntid 256, 1, 1\n{"), "{none}");
    let capped = with_bound(
        PTX,
        "heavy",
        Knob::MaxRegisters,
        Bound::MaxRegisters(64),
        256,
    )
    .unwrap();
    assert!(
        capped.contains(")\n.maxntid 512, 1, 1\n.maxnreg 64\n{"),
        "{capped}"
    );
    let bare = with_bound(PTX, "other", Knob::MaxRegisters, Bound::None, 64).unwrap();
    assert!(bare.contains("other()\n.maxntid 64, 1, 1\n{"), "{bare}");
    assert_eq!(
        with_bound(PTX, "absent", Knob::MaxRegisters, Bound::None, 64),
        Err(BoundPatchError::NoEntry("absent".into()))
    );
}

#[test]
fn a_bound_is_written_as_a_declaration_and_as_qualifiers() {
    assert_eq!(
        Bound::MinBlocksPerSm(4).to_string(),
        "min_blocks_per_sm = 4"
    );
    assert_eq!(Bound::MaxRegisters(64).to_string(), "max_registers = 64");
    assert_eq!(Bound::None.to_string(), "no bounds");
    assert_eq!(
        Bound::MinBlocksPerSm(4).qualifiers(Knob::MinBlocksPerSm, 256),
        "__launch_bounds__(256, 4)"
    );
    assert_eq!(
        Bound::None.qualifiers(Knob::MinBlocksPerSm, 256),
        "__launch_bounds__(256)"
    );
    assert_eq!(
        Bound::MaxRegisters(40).qualifiers(Knob::MaxRegisters, 256),
        "__maxnreg__(40)"
    );
    assert_eq!(Bound::None.qualifiers(Knob::MaxRegisters, 256), "");
    let json = serde_json::to_string(&[Bound::None, Bound::MinBlocksPerSm(4)]).unwrap();
    assert_eq!(json, r#"["none",{"min_blocks_per_sm":4}]"#);
}

/// `measured` with the control bits read: `stalls` scheduled cycles and `memory_waits` waits on
/// memory loads per pass of its loops.
fn with_waits(mut measured: Measured, stalls: u32, memory_waits: u32) -> Measured {
    measured.loops.control_known = true;
    measured.loops.stall_cycles = stalls;
    measured.loops.memory_waits = memory_waits;
    measured
}

/// An attention-like loop (the shape of the GPU corpus's `attention` on sm_90): without bounds
/// 168 registers keep 12 warps and the loop waits on memory 19 times a pass; a minimum of 2
/// blocks lets ptxas use 254 registers, batch its loads and wait 8 times, with 8 warps. The
/// model predicts that 33% faster; the minimum is taken although it has fewer warps.
#[test]
fn the_latency_model_takes_fewer_warps_that_wait_on_memory_far_less() {
    let ladder = |memory_waits_below: u32| ArchLadder {
        arch: "sm_90".into(),
        candidates: vec![
            candidate(
                Bound::None,
                Some(with_waits(measured(168, 12, 0, 264), 419, 19)),
            ),
            candidate(
                Bound::MinBlocksPerSm(2),
                Some(with_waits(
                    measured(254, 8, 0, 264),
                    427,
                    memory_waits_below,
                )),
            ),
            candidate(
                Bound::MinBlocksPerSm(4),
                Some(with_waits(measured(128, 16, 0, 374), 764, 39)),
            ),
        ],
    };
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder(8)]);
    assert_eq!(choice.chosen, Bound::MinBlocksPerSm(2), "{}", choice.reason);
    assert_eq!(choice.verdicts[0][1], Verdict::FewerWarps);
    assert!(
        choice.reason.starts_with(
            "`min_blocks_per_sm = 2` is predicted 33% faster per loop pass than `no bounds`"
        ),
        "{}",
        choice.reason
    );
    assert!(
        choice.reason.contains(
            "on sm_90 its loops wait on memory 8 times a pass against 19, with 8 warps against 12"
        ),
        "{}",
        choice.reason
    );
    assert_eq!(choice.decided_by, Rule::LatencyModel);
    // 12 waits: predicted 3% faster, below the 20% the model needs to override the warps.
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder(12)]);
    assert_eq!(choice.chosen, Bound::None, "{}", choice.reason);
    assert_eq!(choice.decided_by, Rule::NoBound);
}

/// The shape of the held-out `tile_gemm` on sm_90 (issue #34, measured on an H200): a minimum
/// of 5 blocks keeps 40 warps against 32 without a spill and its loop grows 2%, but the
/// compile waits on memory 15 times a pass against 12 and on other results 41 times against
/// 25; the model predicts its pass 2% dearer, and it ran 15% slower. More warps are taken only
/// when the model does not predict them slower; with its waits unchanged the bound is taken.
#[test]
fn more_warps_the_model_predicts_slower_are_not_taken() {
    let with_short = |measured: Measured, short_waits: u32| {
        let mut measured = measured;
        measured.loops.short_waits = short_waits;
        measured
    };
    let ladder = |memory_waits: u32, short_waits: u32| ArchLadder {
        arch: "sm_90".into(),
        candidates: vec![
            candidate(
                Bound::None,
                Some(with_short(
                    with_waits(measured(64, 32, 0, 398), 761, 12),
                    25,
                )),
            ),
            candidate(
                Bound::MinBlocksPerSm(5),
                Some(with_short(
                    with_waits(measured(48, 40, 0, 407), 831, memory_waits),
                    short_waits,
                )),
            ),
        ],
    };
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder(15, 41)]);
    assert_eq!(choice.chosen, Bound::None, "{}", choice.reason);
    assert_eq!(choice.decided_by, Rule::NoBound);
    assert_eq!(
        choice.verdicts[0][1],
        Verdict::PredictedSlower { permille: 1018 }
    );
    assert!(
        choice.reason.contains("`min_blocks_per_sm = 5` was refused on sm_90: more warps, predicted 1.8% slower per pass than without bounds"),
        "{}",
        choice.reason
    );
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder(12, 25)]);
    assert_eq!(choice.chosen, Bound::MinBlocksPerSm(5), "{}", choice.reason);
    assert_eq!(choice.decided_by, Rule::MostWarps);
    assert_eq!(choice.verdicts[0][1], Verdict::Admissible);
}

/// Without the control bits on every arch of the choice, the model says nothing; and it never
/// takes a bound that breaks a rule, however fast it predicts it.
#[test]
fn the_latency_model_needs_every_arch_and_keeps_the_rules() {
    let base = || with_waits(measured(168, 12, 0, 264), 419, 19);
    let fast = |spills: u32| with_waits(measured(254, 8, spills, 264), 427, 4);
    let ladder = |arch: &str, fewer: Measured| ArchLadder {
        arch: arch.into(),
        candidates: vec![
            candidate(Bound::None, Some(base())),
            candidate(Bound::MinBlocksPerSm(2), Some(fewer)),
        ],
    };
    let mut unknown = fast(0);
    unknown.loops.control_known = false;
    let choice = choose(
        &Objective::new(0),
        Knob::MinBlocksPerSm,
        &[ladder("sm_80", fast(0)), ladder("sm_90", unknown)],
    );
    assert_eq!(choice.chosen, Bound::None, "{}", choice.reason);
    let choice = choose(
        &Objective::new(0),
        Knob::MinBlocksPerSm,
        &[ladder("sm_90", fast(3))],
    );
    assert_eq!(choice.chosen, Bound::None, "{}", choice.reason);
    assert!(matches!(
        choice.verdicts[0][1],
        Verdict::SpillsInLoops { .. }
    ));
    let choice = choose(
        &Objective::new(0),
        Knob::MinBlocksPerSm,
        &[ladder("sm_80", fast(0)), ladder("sm_90", fast(0))],
    );
    assert_eq!(choice.chosen, Bound::MinBlocksPerSm(2), "{}", choice.reason);
}

proptest! {
    /// The model's cycles never fall below the issue bound, and fall as warps rise and as
    /// waits on memory fall.
    #[test]
    fn predicted_cycles_are_monotone(
        warps in 1u32..=64,
        stalls in 0u32..=4000,
        waits in 0u32..=100,
        instructions in 1u32..=4000,
    ) {
        let at = |warps: u32, waits: u32| {
            with_waits(measured(64, warps, 0, instructions), stalls, waits)
                .predicted_cycles()
                .unwrap()
        };
        prop_assert!(at(warps, waits) >= f64::from(instructions) / 4.0);
        prop_assert!(at(warps + 1, waits) <= at(warps, waits));
        prop_assert!(at(warps, waits + 1) >= at(warps, waits));
    }
}

/// The model prices a loop's pass: a kernel without loops gets no prediction, so the model
/// neither overrides nor vetoes the warps there (the held-out `batched16`: 221 waits on memory
/// without bounds, 8 at one block per SM, predicted 60% faster, 1.30x slower on an H200).
#[test]
fn the_latency_model_says_nothing_without_a_loop() {
    let straight = |registers: u32, warps: u32, memory_waits: u32| {
        let mut found = with_waits(measured(registers, warps, 0, 584), 1250, memory_waits);
        found.loops.loops = 0;
        found.loops.loop_instructions = 0;
        found
    };
    assert_eq!(straight(32, 64, 221).predicted_cycles(), None);
    let ladder = ArchLadder {
        arch: "sm_90".into(),
        candidates: vec![
            candidate(Bound::None, Some(straight(32, 64, 221))),
            candidate(Bound::MinBlocksPerSm(1), Some(straight(254, 8, 8))),
        ],
    };
    let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder]);
    assert_eq!(choice.chosen, Bound::None, "{}", choice.reason);
    assert_eq!(choice.decided_by, Rule::NoBound);
}

/// The shape of the held-out `depthwise` on sm_90 (issue #34, measured on an H200): compiled
/// without `__launch_bounds__` at all its loop holds 212 instructions against 262 with
/// `__launch_bounds__(256)`, at 32 registers and 64 warps either way, and it ran 1.20x faster.
/// The calculator scores the two equal; a loop at least the growth bound (5%) shorter, with no
/// more memory accesses, is taken. 3% shorter is the same loop (the GPU corpus's `gemm8x4`:
/// 851 instructions against 877, 1.25x slower without the bound), and so is a shorter loop at
/// other warps or with more memory accesses.
#[test]
fn at_the_same_warps_a_loop_shorter_by_the_growth_bound_is_taken() {
    let ladder = |bare: Measured| ArchLadder {
        arch: "sm_90".into(),
        candidates: vec![
            candidate(Bound::None, Some(measured(32, 64, 0, 262))),
            candidate(Bound::NoLaunchBounds, Some(bare)),
            candidate(Bound::MinBlocksPerSm(1), Some(measured(38, 48, 0, 265))),
        ],
    };
    let choice = choose(
        &Objective::new(0),
        Knob::MinBlocksPerSm,
        &[ladder(measured(32, 64, 0, 212))],
    );
    assert_eq!(choice.chosen, Bound::NoLaunchBounds, "{}", choice.reason);
    assert_eq!(choice.decided_by, Rule::ShorterLoop);
    assert_eq!(choice.verdicts[0][1], Verdict::NoGain);
    assert!(
        choice.reason.starts_with(
            "`no `__launch_bounds__`` has the resident warps of `no bounds` and a loop shorter"
        ),
        "{}",
        choice.reason
    );
    assert!(
        choice.reason.contains("on sm_90 212 instructions in its loops against 262 (4 memory accesses against 4), 64 warps either way"),
        "{}",
        choice.reason
    );
    for (bare, why) in [
        (measured(32, 64, 0, 254), "3% shorter is the same loop"),
        (measured(40, 48, 0, 212), "fewer warps"),
        (
            {
                let mut more_memory = measured(32, 64, 0, 212);
                more_memory.loops.loop_memory_instructions = 5;
                more_memory
            },
            "more memory accesses",
        ),
        (measured(32, 64, 2, 212), "spills in its loop"),
    ] {
        let choice = choose(&Objective::new(0), Knob::MinBlocksPerSm, &[ladder(bare)]);
        assert_eq!(choice.chosen, Bound::None, "{why}: {}", choice.reason);
        assert_eq!(choice.decided_by, Rule::NoBound, "{why}");
    }
}
