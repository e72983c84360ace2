//! The objective: which bound a kernel gets, and why.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Bound, Candidate, Knob, Measured};

pub(super) mod reason;

/// How much the instructions inside loops (and, of them, the memory accesses) may grow over the
/// kernel without bounds, in percent, for a bound to be taken.
pub const LOOP_GROWTH_PERCENT: u32 = 5;

/// How much faster the latency model must predict another takeable bound (fewer warps
/// included) than the bound of the most warps, in percent, for it to be chosen instead: the
/// model is coarse, and only a clear difference overrides the warps.
pub const PREDICTED_GAIN_PERCENT: u32 = 20;

/// Which rule decided a choice (issue #34: `tune`, the report and `explain` say it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// No bound gains resident warps within the rules, and the latency model predicts none
    /// [`PREDICTED_GAIN_PERCENT`] cheaper: the kernel keeps no bounds.
    #[default]
    NoBound,
    /// The most resident warps within the rules (spills, loop growth), which the latency model
    /// does not predict slower per pass than the kernel without bounds.
    MostWarps,
    /// The latency model predicted this bound at least [`PREDICTED_GAIN_PERCENT`] cheaper per
    /// loop pass than what the warps chose.
    LatencyModel,
    /// The same resident warps as what the rules above chose on every arch, and loops at least
    /// [`LOOP_GROWTH_PERCENT`] shorter (no more memory accesses in them): the calculator scores
    /// the two equal, and the shorter loop is less work per pass (issue #34: nvcc's front end
    /// compiled `depthwise` without `__launch_bounds__` to a loop 19% shorter, 1.20x faster).
    ShorterLoop,
}

impl fmt::Display for Rule {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Rule::NoBound => "no bound passed (the kernel without bounds)",
            Rule::MostWarps => "the most resident warps",
            Rule::LatencyModel => "the latency model",
            Rule::ShorterLoop => "the same warps with a shorter loop",
        })
    }
}

/// What a bound must keep to be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Objective {
    /// [`LOOP_GROWTH_PERCENT`], unless a caller asks for another bound.
    pub loop_growth_percent: u32,
    /// The spill bytes the declaration accepts (`max_spill_bytes`, 0 when absent).
    pub accepted_spill_bytes: u64,
}

impl Objective {
    /// The objective of a declaration that accepts `accepted_spill_bytes`.
    pub fn new(accepted_spill_bytes: u64) -> Objective {
        Objective {
            loop_growth_percent: LOOP_GROWTH_PERCENT,
            accepted_spill_bytes,
        }
    }
}

/// What the objective makes of one bound on one arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The kernel without bounds, which every bound is compared with.
    Baseline,
    /// Within the objective, with more resident warps than without bounds.
    Admissible,
    /// Within the objective, but no more resident warps than without bounds (ptxas used no
    /// fewer registers, or something else than registers binds).
    NoGain,
    /// More resident warps within the rules, but the latency model predicts a loop pass no
    /// cheaper than without bounds (per mille of its cost): the warps would hide nothing the
    /// kernel waits on, and the cap costs schedule quality. Not taken for its warps.
    PredictedSlower { permille: u32 },
    /// Within the objective, with fewer resident warps than without bounds (a minimum below
    /// the kernel's own blocks, which lets ptxas use more registers): taken only when the
    /// latency model predicts it clearly faster.
    FewerWarps,
    /// The compile failed or could not be read.
    Failed,
    /// More spill instructions inside loops than without bounds.
    SpillsInLoops {
        instructions: u32,
        without_bounds: u32,
    },
    /// More spill bytes than the declaration accepts and than without bounds.
    SpillBytes { bytes: u64, accepted: u64 },
    /// More instructions in loops than the objective's growth allows.
    LoopGrowth {
        instructions: u32,
        without_bounds: u32,
    },
    /// More memory accesses in loops than the objective's growth allows.
    MemoryGrowth {
        instructions: u32,
        without_bounds: u32,
    },
    /// The measurements pass, but the kernel compiled from its source with this bound did not:
    /// nvcc's front end sees the bound too and made other code, which spilled this many bytes.
    CompiledDifferently { spill_bytes: u64 },
}

impl Verdict {
    /// Whether the objective could take the bound on this arch for its warps.
    fn takeable(self) -> bool {
        matches!(self, Verdict::Admissible | Verdict::NoGain)
    }

    /// Whether the bound passes every rule on spills and loop growth (whatever its warps).
    pub(super) fn passes_rules(self) -> bool {
        matches!(
            self,
            Verdict::Admissible
                | Verdict::NoGain
                | Verdict::FewerWarps
                | Verdict::PredictedSlower { .. }
        )
    }

    /// Whether the latency model may take the bound on this arch: it keeps every rule.
    pub(super) fn within_rules(self) -> bool {
        self == Verdict::Baseline || self.passes_rules()
    }
}

/// `+4.8%` of `after` over `before`.
fn growth(after: u32, before: u32) -> String {
    if before == 0 {
        return format!("+{after}");
    }
    let percent = (f64::from(after) - f64::from(before)) * 100.0 / f64::from(before);
    format!("{percent:+.1}%")
}

impl fmt::Display for Verdict {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Verdict::Baseline => formatter.write_str("without bounds"),
            Verdict::Admissible => formatter.write_str("admissible"),
            Verdict::NoGain => formatter.write_str("no more warps"),
            Verdict::PredictedSlower { permille } => write!(
                formatter,
                "more warps, predicted {:.1}% slower per pass than without bounds",
                f64::from(permille) / 10.0 - 100.0
            ),
            Verdict::FewerWarps => formatter.write_str("fewer warps"),
            Verdict::Failed => formatter.write_str("compile failed"),
            Verdict::SpillsInLoops {
                instructions,
                without_bounds,
            } => write!(
                formatter,
                "{instructions} spill instructions in loops ({without_bounds} without bounds)"
            ),
            Verdict::SpillBytes { bytes, accepted } => {
                write!(formatter, "spills {bytes} bytes (accepted: {accepted})")
            }
            Verdict::LoopGrowth {
                instructions,
                without_bounds,
            } => write!(
                formatter,
                "loops grow to {instructions} instructions ({} over {without_bounds})",
                growth(instructions, without_bounds)
            ),
            Verdict::MemoryGrowth {
                instructions,
                without_bounds,
            } => write!(
                formatter,
                "loops grow to {instructions} memory accesses ({} over {without_bounds})",
                growth(instructions, without_bounds)
            ),
            Verdict::CompiledDifferently { spill_bytes } => write!(
                formatter,
                "compiled from the source with this bound, it spilled {spill_bytes} bytes"
            ),
        }
    }
}

/// Whether `after` grew over `before` by more than `percent`.
fn grew(after: u32, before: u32, percent: u32) -> bool {
    u64::from(after) * 100 > u64::from(before) * u64::from(100 + percent)
}

/// The verdict on `candidate` against `baseline` (the kernel without bounds on the same arch):
/// the first rule it breaks, in the order of [`Verdict`]'s variants, else whether it gains
/// resident warps.
pub(crate) fn verdict(
    objective: &Objective,
    baseline: &Measured,
    candidate: &Candidate,
) -> Verdict {
    if candidate.bound == Bound::None {
        return Verdict::Baseline;
    }
    let Some(measured) = &candidate.measured else {
        return Verdict::Failed;
    };
    if let Some(spill_bytes) = candidate.refused_spill_bytes {
        return Verdict::CompiledDifferently { spill_bytes };
    }
    if measured.spill_instructions_in_loops > baseline.spill_instructions_in_loops {
        return Verdict::SpillsInLoops {
            instructions: measured.spill_instructions_in_loops,
            without_bounds: baseline.spill_instructions_in_loops,
        };
    }
    let accepted = objective.accepted_spill_bytes.max(baseline.spill_bytes());
    if measured.spill_bytes() > accepted {
        return Verdict::SpillBytes {
            bytes: measured.spill_bytes(),
            accepted,
        };
    }
    let (after, before) = (
        measured.weighed_instructions(),
        baseline.weighed_instructions(),
    );
    if grew(after, before, objective.loop_growth_percent) {
        return Verdict::LoopGrowth {
            instructions: after,
            without_bounds: before,
        };
    }
    let (after, before) = (
        measured.loops.loop_memory_instructions,
        baseline.loops.loop_memory_instructions,
    );
    if baseline.loops.loops > 0 && grew(after, before, objective.loop_growth_percent) {
        return Verdict::MemoryGrowth {
            instructions: after,
            without_bounds: before,
        };
    }
    match measured.warps_per_sm.cmp(&baseline.warps_per_sm) {
        std::cmp::Ordering::Greater => {
            match (measured.predicted_cycles(), baseline.predicted_cycles()) {
                (Some(cycles), Some(without)) if without > 0.0 && cycles > without => {
                    Verdict::PredictedSlower {
                        permille: (cycles / without * 1000.0).round() as u32,
                    }
                }
                _ => Verdict::Admissible,
            }
        }
        std::cmp::Ordering::Equal => Verdict::NoGain,
        std::cmp::Ordering::Less => Verdict::FewerWarps,
    }
}

/// The bounds tried on one arch, the kernel without bounds first; every arch of one choice
/// tries the same bounds in the same order.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchLadder {
    /// The arch, `sm_90`.
    pub arch: String,
    /// The candidates, [`Bound::None`] first.
    pub candidates: Vec<Candidate>,
}

/// The bound chosen for the archs of one [`choose`], the verdicts behind it and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The bound the kernel gets on every arch of the choice.
    pub chosen: Bound,
    /// Per arch (in the ladders' order), the verdict on each candidate.
    pub verdicts: Vec<Vec<Verdict>>,
    /// One sentence: what the choice gains, and what stopped the next rung.
    pub reason: String,
    /// The rule that decided.
    pub decided_by: Rule,
}

/// The choice for archs whose code comes from one PTX (one arch, usually): the bound that is
/// takeable on every arch (admissible or no worse), gains warps on one at least, and has the
/// highest lowest occupancy across the archs (then the most warps in all; then the fewest
/// blocks asked for, the earlier rung). [`Bound::None`] when no bound is takeable, or the
/// kernel without bounds could not be measured. `knob` words the reason.
pub fn choose(objective: &Objective, knob: Knob, ladders: &[ArchLadder]) -> Choice {
    let baselines: Option<Vec<&Measured>> = ladders
        .iter()
        .map(|ladder| ladder.candidates.first()?.measured.as_ref())
        .collect();
    let Some(baselines) = baselines.filter(|found| !found.is_empty()) else {
        return Choice {
            chosen: Bound::None,
            verdicts: ladders
                .iter()
                .map(|ladder| vec![Verdict::Failed; ladder.candidates.len()])
                .collect(),
            reason: "the kernel without bounds could not be measured, so no bound was chosen"
                .to_string(),
            decided_by: Rule::NoBound,
        };
    };
    let verdicts: Vec<Vec<Verdict>> = ladders
        .iter()
        .zip(&baselines)
        .map(|(ladder, baseline)| {
            (ladder.candidates.iter())
                .map(|candidate| verdict(objective, baseline, candidate))
                .collect()
        })
        .collect();
    let rungs = ladders.iter().map(|ladder| ladder.candidates.len()).min();
    let best = (1..rungs.unwrap_or(0))
        .filter(|&rung| verdicts.iter().all(|of_arch| of_arch[rung].takeable()))
        .filter(|&rung| {
            verdicts
                .iter()
                .any(|of_arch| of_arch[rung] == Verdict::Admissible)
        })
        .map(|rung| (rung, score(ladders, rung)))
        // max_by keeps the last of equal scores: compare reversed rungs so the earliest wins.
        .max_by(|(left, left_score), (right, right_score)| {
            left_score
                .partial_cmp(right_score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(right.cmp(left))
        })
        .map(|(rung, _)| rung);
    let mut reason = reason::reason(objective, knob, ladders, &verdicts, best);
    let mut chosen = best.unwrap_or(0);
    let mut decided_by = match best {
        Some(_) => Rule::MostWarps,
        None => Rule::NoBound,
    };
    if let Some((faster, ratio)) = predicted_faster(ladders, &verdicts, chosen) {
        reason = reason::latency_reason(ladders, (faster, chosen), ratio, &reason);
        chosen = faster;
        decided_by = Rule::LatencyModel;
    }
    if let Some(shorter) = shorter_loop(objective, ladders, &verdicts, chosen) {
        reason = reason::shorter_reason(ladders, (shorter, chosen), &reason);
        chosen = shorter;
        decided_by = Rule::ShorterLoop;
    }
    Choice {
        chosen: ladders
            .first()
            .map_or(Bound::None, |ladder| ladder.candidates[chosen].bound),
        verdicts,
        reason,
        decided_by,
    }
}

/// The rung within every rule whose predicted cycles per pass ([`Measured::predicted_cycles`])
/// are lowest, with its ratio to `chosen`'s (the highest across the archs), when that is at
/// least [`PREDICTED_GAIN_PERCENT`] below; `None` when any arch lacks the prediction.
fn predicted_faster(
    ladders: &[ArchLadder],
    verdicts: &[Vec<Verdict>],
    chosen: usize,
) -> Option<(usize, f64)> {
    let rungs = ladders.iter().map(|ladder| ladder.candidates.len()).min()?;
    let predicted = |rung: usize| -> Option<Vec<f64>> {
        ladders
            .iter()
            .map(|ladder| {
                ladder.candidates[rung]
                    .measured
                    .as_ref()?
                    .predicted_cycles()
            })
            .collect()
    };
    let against = predicted(chosen)?;
    let (rung, ratio) = (0..rungs)
        .filter(|&rung| rung != chosen)
        .filter(|&rung| verdicts.iter().all(|of_arch| of_arch[rung].within_rules()))
        .filter_map(|rung| {
            let ratio = (predicted(rung)?.iter().zip(&against))
                .map(|(cycles, chosen)| cycles / chosen)
                .fold(0.0_f64, f64::max);
            Some((rung, ratio))
        })
        .min_by(|left, right| left.1.total_cmp(&right.1))?;
    (ratio <= 1.0 - f64::from(PREDICTED_GAIN_PERCENT) / 100.0).then_some((rung, ratio))
}

/// The rung within every rule that has `chosen`'s resident warps on every arch and loops at
/// least the objective's growth bound shorter than `chosen`'s on every arch, with no more memory
/// accesses in them; of several, the fewest instructions in all. The rule the loop-growth bound
/// applies to a bound that costs warps, read the other way: a loop within that bound is the
/// same loop, one shorter by more is less work per pass at the same warps.
fn shorter_loop(
    objective: &Objective,
    ladders: &[ArchLadder],
    verdicts: &[Vec<Verdict>],
    chosen: usize,
) -> Option<usize> {
    let rungs = ladders.iter().map(|ladder| ladder.candidates.len()).min()?;
    let shorter = |rung: usize| -> Option<u64> {
        let mut instructions = 0;
        for ladder in ladders {
            let this = ladder.candidates[rung].measured.as_ref()?;
            let that = ladder.candidates[chosen].measured.as_ref()?;
            let short_enough = this.weighed_instructions() < that.weighed_instructions()
                && u64::from(this.weighed_instructions()) * 100
                    <= u64::from(that.weighed_instructions())
                        * u64::from(100 - objective.loop_growth_percent.min(100));
            let same = this.warps_per_sm == that.warps_per_sm
                && this.loops.loop_memory_instructions <= that.loops.loop_memory_instructions;
            if !(short_enough && same) {
                return None;
            }
            instructions += u64::from(this.weighed_instructions());
        }
        Some(instructions)
    };
    (0..rungs)
        .filter(|&rung| rung != chosen)
        .filter(|&rung| verdicts.iter().all(|of_arch| of_arch[rung].within_rules()))
        .filter_map(|rung| Some((rung, shorter(rung)?)))
        .min_by_key(|&(rung, instructions)| (instructions, rung))
        .map(|(rung, _)| rung)
}

/// The lowest occupancy across the archs, then the warps of every arch together.
fn score(ladders: &[ArchLadder], rung: usize) -> (f64, u32) {
    let measured = ladders
        .iter()
        .filter_map(|ladder| ladder.candidates[rung].measured.as_ref());
    let lowest = measured
        .clone()
        .map(|measured| measured.occupancy)
        .fold(f64::INFINITY, f64::min);
    (lowest, measured.map(|measured| measured.warps_per_sm).sum())
}
