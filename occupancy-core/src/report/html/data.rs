//! The page's data: what a row's details draw when it is opened, as one JSON document in a
//! `<script type="application/json">` element.
//!
//! The three curves of a row (occupancy against threads per block, registers per thread and
//! shared memory per block, [`crate::report::curves`]) are computed here with the calculator and
//! stored once per distinct curve: rows with the same resources on the same architecture share
//! them, and each row names its three by number with its current x (`data-curves` on its
//! `<tr>`). A curve is its runs of equal blocks per SM ([`Curve::steps`]); the page's script
//! draws axes, curve, cliffs and the current point from them. The axes' ticks are computed here
//! too, once per distinct axis. The page holds numbers, and draws only what is opened.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::context::Context;
use crate::arch;
use crate::calc::Limiter;
use crate::report::curves::{all_curves, Axis, Curve, CurveInput};
use crate::report::model::KernelRow;
use crate::report::table::{format_occupancy, program_note};

/// One x axis: what varies, up to where, and its tick marks with their labels.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct Frame {
    pub axis: &'static str,
    pub title: &'static str,
    pub max: u64,
    pub ticks: Vec<(u64, String)>,
}

/// One run of a curve: `[x_first, x_last, blocks_per_sm, occupancy_percent, limiter_bits]`,
/// the percentage as the tables print it (`62.5`), the limiters as bits of the page's list.
type StepData = (u64, u64, u32, f64, u32);

/// A run as a key: the percentage in tenths.
type StepKey = (u64, u64, u32, u32, u32);

#[derive(Debug, Serialize)]
struct CurveData {
    /// The frame (x axis) it is drawn on.
    f: usize,
    /// The runs, ascending in x.
    s: Vec<StepData>,
}

/// The facts of a row its details show beyond the table's columns.
#[derive(Debug, Serialize)]
struct RowFacts<'a> {
    /// The architecture.
    a: &'a str,
    /// The symbol, when the demangled name differs from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    sym: Option<&'a str>,
    /// Device function: no launch, no occupancy.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dev: bool,
    /// Where: source, declaration (`path:line:col`) and the Rust item.
    #[serde(skip_serializing_if = "Option::is_none")]
    src: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decl: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rust: Option<&'a str>,
    /// The program note, by number in the page's `notes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<usize>,
    /// Blocks and warps per SM.
    bk: u32,
    w: u32,
    /// Static and dynamic shared memory per block, the opted-in maximum, the carveout.
    ss: u64,
    #[serde(skip_serializing_if = "is_zero")]
    ds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    md: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    co: Option<u32>,
    /// The compiled bounds: max threads per block, min blocks per SM, max registers.
    #[serde(skip_serializing_if = "Option::is_none")]
    mt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mb: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mr: Option<u32>,
    /// Headroom: spare registers, registers to gain a block, spare and to-gain shared memory.
    h: (Option<u32>, Option<u32>, Option<u64>, Option<u64>),
    /// The row's shown findings (page ids), at most [`FINDINGS_PER_ROW`], and how many more.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    f: Vec<usize>,
    #[serde(skip_serializing_if = "is_zero_usize")]
    fm: usize,
    /// Whether a `<template id="sass-kN">` holds the row's loop nest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    sass: bool,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_zero_usize(value: &usize) -> bool {
    *value == 0
}

/// Findings listed in one row's details; the rest are in the findings section.
pub(super) const FINDINGS_PER_ROW: usize = 12;

#[derive(Debug, Serialize)]
struct PageData<'a> {
    limiters: Vec<String>,
    notes: Vec<String>,
    frames: Vec<Frame>,
    curves: Vec<CurveData>,
    rows: Vec<RowFacts<'a>>,
}

/// The data and each row's `data-curves` attribute value (`"4:256 9:40 12:4096"`: curve and
/// current x per axis; empty for device functions and unknown architectures).
pub(super) struct Data {
    pub json: String,
    pub row_curves: Vec<String>,
}

/// Interns values, giving each distinct one a number in first-seen order.
struct Interner<K> {
    ids: HashMap<K, usize>,
}

impl<K: std::hash::Hash + Eq> Interner<K> {
    fn new() -> Self {
        Interner {
            ids: HashMap::new(),
        }
    }

    /// The value's number, and whether it is new.
    fn intern(&mut self, value: K) -> (usize, bool) {
        let next = self.ids.len();
        let id = *self.ids.entry(value).or_insert(next);
        (id, id == next)
    }
}

/// Builds the page data: one pass over the rows; each row's three curves are computed once
/// per distinct (arch, kernel facts, launch).
pub(super) fn page_data(context: &Context<'_>) -> Data {
    let mut curves = CurveTable::new();
    let mut notes = Vec::new();
    let mut note_ids = Interner::new();
    let mut rows = Vec::with_capacity(context.report.kernels.len());
    let mut row_curves = Vec::with_capacity(context.report.kernels.len());
    for (index, row) in context.report.kernels.iter().enumerate() {
        row_curves.push(curves.row(row));
        let note = row.ptx_target.as_deref().map(|ptx| {
            let (id, new) = note_ids.intern((row.arch.as_str(), ptx));
            if new {
                let note = program_note(&row.arch, ptx);
                notes.push(note.trim_start_matches("program checked: ").to_string());
            }
            id
        });
        rows.push(row_facts(context, index, row, note));
    }
    let data = PageData {
        limiters: curves.limiters,
        notes,
        frames: curves.frames,
        curves: curves.curves,
        rows,
    };
    Data {
        json: serde_json::to_string(&data).unwrap_or_else(|_| "{}".to_string()),
        row_curves,
    }
}

fn row_facts<'a>(
    context: &Context<'a>,
    index: usize,
    row: &'a KernelRow,
    note: Option<usize>,
) -> RowFacts<'a> {
    let findings = context.row_findings(index);
    let shown = findings.len().min(FINDINGS_PER_ROW);
    RowFacts {
        a: &row.arch,
        sym: (row.display_name() != row.name).then_some(row.name.as_str()),
        dev: !row.entry,
        src: row.source.as_ref().map(ToString::to_string),
        decl: row.declaration.as_ref().map(ToString::to_string),
        rust: row.rust_name.as_deref(),
        p: note,
        bk: row.blocks_per_sm,
        w: row.warps_per_sm,
        ss: row.static_smem_bytes,
        ds: row.dynamic_smem_bytes,
        md: row.max_dynamic_smem_bytes,
        co: row.carveout_percent,
        mt: row.max_threads_per_block,
        mb: row.min_blocks_per_sm,
        mr: row.max_registers,
        h: (
            row.headroom.spare_registers_per_thread,
            row.headroom.registers_per_thread_to_gain_block,
            row.headroom.spare_smem_bytes,
            row.headroom.smem_bytes_to_gain_block,
        ),
        f: findings[..shown].to_vec(),
        fm: findings.len() - shown,
        sass: row.sass.is_some(),
    }
}

/// The limiters in the calculator's order: bits in this order name them in that order.
const LIMITERS: [Limiter; 6] = Limiter::ALL;

/// The distinct frames and curves of a page, and the limiter names their bits stand for.
struct CurveTable {
    limiters: Vec<String>,
    frames: Vec<Frame>,
    frame_ids: HashMap<(&'static str, u64), usize>,
    curves: Vec<CurveData>,
    curve_ids: HashMap<(usize, Vec<StepKey>), usize>,
    /// Each distinct calculator input's three curve numbers.
    by_input: HashMap<(&'static str, CurveInput), [usize; 3]>,
}

impl CurveTable {
    fn new() -> Self {
        CurveTable {
            limiters: LIMITERS
                .iter()
                .map(|limiter| limiter.name().to_string())
                .collect(),
            frames: Vec::new(),
            frame_ids: HashMap::new(),
            curves: Vec::new(),
            curve_ids: HashMap::new(),
            by_input: HashMap::new(),
        }
    }

    /// The `data-curves` value of a row.
    fn row(&mut self, row: &KernelRow) -> String {
        if !row.entry {
            return String::new();
        }
        let Ok(facts) = arch::lookup(&row.arch) else {
            return String::new();
        };
        let input = row.curve_input();
        let key = (facts.name, input);
        let ids = match self.by_input.get(&key) {
            Some(ids) => *ids,
            None => {
                let computed = all_curves(facts, &input).map(|curve| self.curve(&curve));
                self.by_input.insert(key, computed);
                computed
            }
        };
        let current = [
            u64::from(row.block),
            u64::from(row.registers),
            row.static_smem_bytes.saturating_add(row.dynamic_smem_bytes),
        ];
        let mut text = String::new();
        for (id, x) in ids.iter().zip(current) {
            let _ = write!(text, "{}{id}:{x}", if text.is_empty() { "" } else { " " });
        }
        text
    }

    /// The number of a curve, adding it (and its frame) when new.
    fn curve(&mut self, curve: &Curve) -> usize {
        let frame = self.frame(curve.axis, curve.x_max);
        let steps: Vec<StepKey> = curve
            .steps()
            .into_iter()
            .map(|step| {
                // Tenths of a percent, as the tables print it: the chart agrees with them.
                let tenths = format_occupancy(step.occupancy)
                    .trim_end_matches('%')
                    .replace('.', "")
                    .parse::<u32>()
                    .unwrap_or(0);
                let bits = step
                    .limiters
                    .iter()
                    .map(|name| 1u32 << self.limiter_bit(name))
                    .fold(0, |all, bit| all | bit);
                (step.x_first, step.x_last, step.blocks_per_sm, tenths, bits)
            })
            .collect();
        let next = self.curves.len();
        let data = steps
            .iter()
            .map(|&(first, last, blocks, tenths, bits)| {
                (first, last, blocks, f64::from(tenths) / 10.0, bits)
            })
            .collect();
        let id = *self.curve_ids.entry((frame, steps)).or_insert(next);
        if id == next {
            self.curves.push(CurveData { f: frame, s: data });
        }
        id
    }

    fn limiter_bit(&mut self, name: &str) -> usize {
        match self.limiters.iter().position(|known| known == name) {
            Some(bit) => bit,
            None => {
                self.limiters.push(name.to_string());
                self.limiters.len() - 1
            }
        }
    }

    fn frame(&mut self, axis: Axis, max: u64) -> usize {
        let next = self.frames.len();
        let id = *self.frame_ids.entry((axis.slug(), max)).or_insert(next);
        if id == next {
            self.frames.push(frame(axis, max));
        }
        id
    }
}

/// The frame of an axis up to `max`: at most 9 ticks, whatever `max` is.
pub(crate) fn frame(axis: Axis, max: u64) -> Frame {
    let step = tick_step(axis, max);
    let ticks = (0..=max / step)
        .map(|tick| (tick * step, tick_label(axis, tick * step)))
        .collect();
    Frame {
        axis: axis.slug(),
        title: axis.title(),
        max,
        ticks,
    }
}

/// A tick step giving at most 8 steps over `max`, from 1-2-4-8 × powers of two for bytes and
/// threads.
fn tick_step(axis: Axis, max: u64) -> u64 {
    let candidates: &[u64] = match axis {
        Axis::BlockSize => &[32, 64, 128, 256, 512],
        Axis::Registers => &[8, 16, 32, 64],
        Axis::SharedMemory => &[1024, 2048, 4096, 8192, 16384, 32768, 65536],
    };
    // Beyond the largest candidate (a report's 4 GiB of shared memory), a power of two that
    // still gives at most 8 steps: the axis never draws more than 9 labels.
    candidates
        .iter()
        .copied()
        .find(|step| max / step <= 8)
        .unwrap_or_else(|| max.div_ceil(8).next_power_of_two())
        .max(1)
}

fn tick_label(axis: Axis, x: u64) -> String {
    match axis {
        Axis::SharedMemory if x > 0 => format!("{}K", x / 1024),
        _ => x.to_string(),
    }
}
