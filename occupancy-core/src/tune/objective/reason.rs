//! The words of a choice: why the objective chose what it did. A child of the objective, whose
//! decision it explains (the ladder as a table is `tune/render.rs`, which reads these).

use std::fmt::Write;

use super::{ArchLadder, Objective, Verdict};
use crate::tune::{Knob, Measured};

pub(in crate::tune) fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// `32 of 64 warps per SM on sm_90 (50.0%)`-style words for one measurement.
fn warps(measured: &Measured, arch: &str) -> String {
    format!(
        "{} blocks/SM, {} warps on {arch} ({})",
        measured.blocks_per_sm,
        measured.warps_per_sm,
        percent(measured.occupancy)
    )
}

/// Why the choice is what it is: the chosen rung (`best`, an index into the ladders) against
/// the kernel without bounds, and the first rung above it that the objective refused.
pub(in crate::tune) fn reason(
    objective: &Objective,
    knob: Knob,
    ladders: &[ArchLadder],
    verdicts: &[Vec<Verdict>],
    best: Option<usize>,
) -> String {
    let rungs = ladders
        .iter()
        .map(|ladder| ladder.candidates.len())
        .min()
        .unwrap_or(0);
    if rungs <= 1 {
        return format!(
            "no `{knob}` changes the resident blocks: registers do not limit them (warps, block slots, shared memory or barriers do), so the kernel keeps no bounds"
        );
    }
    let refused = (best.map_or(1, |rung| rung + 1)..rungs).find_map(|rung| {
        let (arch, verdict) = ladders
            .iter()
            .zip(verdicts)
            .map(|(ladder, of_arch)| (ladder.arch.as_str(), of_arch[rung]))
            .find(|(_, verdict)| {
                !matches!(
                    verdict,
                    Verdict::Admissible | Verdict::NoGain | Verdict::FewerWarps
                )
            })?;
        Some(format!(
            "`{}` was refused on {arch}: {verdict}",
            ladders[0].candidates[rung].bound
        ))
    });
    let limits = format!(
        "no more spills in loops than without bounds and loops at most {}% longer",
        objective.loop_growth_percent
    );
    let Some(best) = best else {
        let first = refused.unwrap_or_else(|| "no bound gains resident warps".to_string());
        return format!("no bound gains resident warps within the objective ({limits}): {first}; the kernel keeps no bounds");
    };
    let gains: Vec<String> = ladders
        .iter()
        .filter_map(|ladder| {
            let chosen = ladder.candidates[best].measured.as_ref()?;
            let without = ladder.candidates[0].measured.as_ref()?;
            Some(format!(
                "{}, against {} without bounds, loops {} instructions against {}",
                warps(chosen, &ladder.arch),
                without.warps_per_sm,
                chosen.weighed_instructions(),
                without.weighed_instructions()
            ))
        })
        .collect();
    let mut reason = format!(
        "`{}` gives the most resident warps within the objective ({limits}): {}",
        ladders[0].candidates[best].bound,
        gains.join("; ")
    );
    if let Some(refused) = refused {
        let _ = write!(reason, "; {refused}");
    }
    reason
}

/// `words(arch, taken, other)` for each arch where both rungs were measured, joined by `; `:
/// what a rule that replaced rung `other` by rung `taken` saw on each arch.
fn per_arch(
    ladders: &[ArchLadder],
    (taken, other): (usize, usize),
    words: impl Fn(&str, &Measured, &Measured) -> String,
) -> String {
    let found: Vec<String> = ladders
        .iter()
        .filter_map(|ladder| {
            let taken = ladder.candidates[taken].measured.as_ref()?;
            let other = ladder.candidates[other].measured.as_ref()?;
            Some(words(&ladder.arch, taken, other))
        })
        .collect();
    found.join("; ")
}

/// Why the latency model took rung `faster` over `replaced` (the choice of [`reason`], which
/// follows): per arch, the waits on memory and the warps of both, and the predicted ratio.
pub(in crate::tune) fn latency_reason(
    ladders: &[ArchLadder],
    (faster, replaced): (usize, usize),
    ratio: f64,
    replaced_reason: &str,
) -> String {
    let waits = per_arch(ladders, (faster, replaced), |arch, taken, other| {
        format!(
            "on {arch} its loops wait on memory {} times a pass against {}, with {} warps against {}",
            taken.loops.memory_waits,
            other.loops.memory_waits,
            taken.warps_per_sm,
            other.warps_per_sm
        )
    });
    format!(
        "`{}` is predicted {:.0}% faster per loop pass than `{}` by the latency model (more loads in flight per warp outweigh fewer warps): {waits}; without the model: {replaced_reason}",
        ladders[0].candidates[faster].bound,
        (1.0 - ratio) * 100.0,
        ladders[0].candidates[replaced].bound,
    )
}

/// Why rung `shorter` was taken over `replaced` (the choice of the rules before, whose reason
/// follows): per arch, the loop instructions and memory accesses of both at the same warps.
pub(in crate::tune) fn shorter_reason(
    ladders: &[ArchLadder],
    (shorter, replaced): (usize, usize),
    replaced_reason: &str,
) -> String {
    let loops = per_arch(ladders, (shorter, replaced), |arch, taken, other| {
        format!(
            "on {arch} {} instructions in its loops against {} ({} memory accesses against {}), {} warps either way",
            taken.weighed_instructions(),
            other.weighed_instructions(),
            taken.loops.loop_memory_instructions,
            other.loops.loop_memory_instructions,
            taken.warps_per_sm
        )
    });
    format!(
        "`{}` has the resident warps of `{}` and a loop shorter by more than the objective's growth bound (nvcc compiled the two differently): {loops}; before this rule: {replaced_reason}",
        ladders[0].candidates[shorter].bound,
        ladders[0].candidates[replaced].bound,
    )
}
