//! The ladder as a table (the words of a choice's reason are the objective's own:
//! `objective/reason.rs`).

use std::fmt::Write;

use super::objective::reason::percent;
use super::Tuning;

/// The ladder of one kernel on one arch as a table: each bound, its registers, spills (bytes,
/// and instructions in loops), loop instructions and memory accesses, blocks and occupancy, and
/// the verdict; then the choice and its reason.
pub fn render_ladder(kernel: &str, arch: &str, block: u32, tuning: &Tuning) -> String {
    let mut text = format!(
        "`{kernel}` on {arch}, block {block}: {} = \"auto\" tried {} bound{}\n",
        tuning.knob,
        tuning.candidates.len(),
        if tuning.candidates.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    let _ = writeln!(
        text,
        "  {:<24} {:>4} {:>14} {:>10} {:>9} {:>9} {:>9} {:>9} {:>6}  verdict",
        "bound",
        "regs",
        "spill B (loop)",
        "loop inst",
        "loop mem",
        "mem waits",
        "blocks/SM",
        "occupancy",
        "model"
    );
    let baseline = (tuning.candidates.first())
        .and_then(|tried| tried.candidate.measured.as_ref()?.predicted_cycles());
    for tried in &tuning.candidates {
        let marker = if tried.candidate.bound == tuning.chosen {
            "*"
        } else {
            " "
        };
        let bound = tried.candidate.bound.to_string();
        let columns = match &tried.candidate.measured {
            Some(measured) => format!(
                "{:>4} {:>14} {:>10} {:>9} {:>9} {:>9} {:>9} {:>6}",
                measured.registers,
                format!(
                    "{} ({})",
                    measured.spill_bytes(),
                    measured.spill_instructions_in_loops
                ),
                measured.weighed_instructions(),
                measured.loops.loop_memory_instructions,
                match measured.loops.control_known {
                    true => measured.loops.memory_waits.to_string(),
                    false => "-".to_string(),
                },
                measured.blocks_per_sm,
                percent(measured.occupancy),
                match (measured.predicted_cycles(), baseline) {
                    (Some(cycles), Some(baseline)) => format!("{:.2}", cycles / baseline),
                    _ => "-".to_string(),
                },
            ),
            None => format!(
                "{:>4} {:>14} {:>10} {:>9} {:>9} {:>9} {:>9} {:>6}",
                "-", "-", "-", "-", "-", "-", "-", "-"
            ),
        };
        let mut verdict = tried.verdict.to_string();
        if let Some(failure) = &tried.candidate.failure {
            let _ = write!(verdict, ": {failure}");
        }
        let _ = writeln!(text, "{marker} {bound:<24} {columns}  {verdict}");
    }
    if !tuning.shared_with.is_empty() {
        let _ = writeln!(
            text,
            "  one PTX carries {arch}'s code and {}'s: the choice holds for all of them",
            tuning.shared_with.join(", ")
        );
    }
    let _ = writeln!(text, "  chosen: {} ({})", tuning.chosen, tuning.reason);
    let _ = writeln!(text, "  decided by: {}", tuning.decided_by);
    text
}
