//! The report's words on bounds chosen by the build (`"auto"`): one line per kernel and arch.

use std::fmt::Write;

use super::model::KernelRow;

/// `Bounds chosen by the build` and, per row with a choice, what was chosen, what it compiled
/// to, how many bounds were tried and why; nothing when no row has one.
pub fn render_tuning_text(rows: &[KernelRow]) -> String {
    let tuned: Vec<&KernelRow> = rows.iter().filter(|row| row.tuning.is_some()).collect();
    if tuned.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nBounds chosen by the build (`\"auto\"`; `cargo occupancy explain KERNEL` shows every bound tried):\n");
    for row in tuned {
        let Some(tuning) = &row.tuning else { continue };
        let _ = writeln!(
            out,
            "  {} on {}: {} ({} registers, {} blocks/SM, {:.1}% occupancy; {} bounds tried): {}",
            row.readable_name(),
            row.arch,
            tuning.chosen,
            row.registers,
            row.blocks_per_sm,
            row.occupancy * 100.0,
            tuning.candidates.len(),
            tuning.reason
        );
    }
    out
}
