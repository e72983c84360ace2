//! The occupancy of every entry kernel, one small inline SVG histogram per architecture: ten
//! bars of 10% each, the count over each bar, the median in the caption.

use std::fmt::Write as _;

use super::context::Context;
use crate::arch;
use crate::report::markup::escape;
use crate::report::table::format_occupancy;

const BUCKETS: usize = 10;
const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 112.0;
const LEFT: f64 = 8.0;
const TOP: f64 = 16.0;
const BASE: f64 = 92.0;
const BAR: f64 = 28.0;
const GAP: f64 = 2.0;

/// The architectures of the report's entry kernels, oldest first, each with the occupancy of
/// its kernels (one per distinct crate, kernel and arch).
fn by_arch<'a>(context: &Context<'a>) -> Vec<(&'a str, Vec<f64>)> {
    let mut archs: Vec<(&'a str, Vec<f64>)> = Vec::new();
    for key in 0..context.keys.len() {
        let row = context.key_row(key);
        if !row.entry {
            continue;
        }
        match archs.iter_mut().find(|(name, _)| *name == row.arch) {
            Some((_, values)) => values.push(row.occupancy),
            None => archs.push((&row.arch, vec![row.occupancy])),
        }
    }
    archs.sort_by_key(|(name, _)| {
        arch::lookup(name).map_or(u32::MAX, |facts| facts.major * 10 + facts.minor)
    });
    archs
}

/// The card (nothing when no entry kernel).
pub(super) fn render_histograms(out: &mut String, context: &Context<'_>) {
    let archs = by_arch(context);
    if archs.is_empty() {
        return;
    }
    out.push_str("<div class=\"card\" id=\"histograms\"><h2>Occupancy by arch <span class=\"note\">kernels per 10% of theoretical occupancy</span></h2>\n<div class=\"hists\">\n");
    for (name, mut values) in archs {
        values.sort_by(f64::total_cmp);
        let median = values[values.len() / 2];
        let _ = write!(
            out,
            "<figure class=\"hist\" data-arch=\"{arch}\"><figcaption><b>{arch}</b> · {count} kernel{s} · median {median}</figcaption>",
            arch = escape(name),
            count = values.len(),
            s = if values.len() == 1 { "" } else { "s" },
            median = format_occupancy(median),
        );
        render_bars(out, name, &values);
        out.push_str("</figure>\n");
    }
    out.push_str("</div></div>\n");
}

/// The bucket of an occupancy: 0 for 0-10% ... 9 for 90-100%.
fn bucket(occupancy: f64) -> usize {
    // In thousandths first: 0.7 is 700, not 699.99.
    let thousandths = (occupancy.clamp(0.0, 1.0) * 1000.0).round() as usize;
    (thousandths / 100).min(BUCKETS - 1)
}

fn render_bars(out: &mut String, arch: &str, values: &[f64]) {
    let mut counts = [0usize; BUCKETS];
    for &value in values {
        counts[bucket(value)] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let _ = write!(
        out,
        "<svg class=\"hist\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"occupancy histogram on {}\">",
        escape(arch)
    );
    for (index, &count) in counts.iter().enumerate().filter(|(_, &count)| count > 0) {
        let x = LEFT + index as f64 * (BAR + GAP);
        let height = ((BASE - TOP) * count as f64 / most).max(1.5);
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{BAR}\" height=\"{height:.1}\"><title>{count} kernel{s} at {low}-{high}% on {arch}</title></rect><text x=\"{cx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\">{count}</text>",
            y = BASE - height,
            s = if count == 1 { "" } else { "s" },
            low = index * 10,
            high = index * 10 + 10,
            arch = escape(arch),
            cx = x + BAR / 2.0,
            ty = BASE - height - 3.0,
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{right:.1}\" y1=\"{BASE}\" y2=\"{BASE}\"/>",
        right = LEFT + BUCKETS as f64 * (BAR + GAP) - GAP
    );
    for tick in (0..=BUCKETS).step_by(2) {
        let x = LEFT + tick as f64 * (BAR + GAP) - if tick == BUCKETS { GAP } else { 0.0 };
        let _ = write!(
            out,
            "<text x=\"{x:.1}\" y=\"{y}\" text-anchor=\"middle\">{}%</text>",
            tick * 10,
            y = BASE + 14.0
        );
    }
    out.push_str("</svg>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_lower_bound() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(0.099), 0);
        assert_eq!(bucket(0.1), 1);
        assert_eq!(bucket(0.7), 7);
        assert_eq!(bucket(0.625), 6);
        assert_eq!(bucket(1.0), 9);
    }
}
