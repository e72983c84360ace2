//! Rendering a row's SASS facts ([`crate::sass::SassFacts`]): the text report's machine-code
//! lines, the HTML loop nest, SARIF locations at the source lines, and `explain`'s cost per loop
//! iteration. Every renderer reads the same facts from the report model.

use std::fmt::Write as _;

use super::markup::escape;
use super::model::{KernelRow, Location, LocationKind};
use crate::sass::{LocalKind, SassFacts};

/// One line per row with SASS facts: local loads/stores, how many in loops, the hottest spill,
/// calls and FP64. Empty when no row has facts.
pub(crate) fn render_sass_text(rows: &[KernelRow]) -> String {
    let mut out = String::new();
    for row in rows {
        let Some(facts) = &row.sass else { continue };
        if out.is_empty() {
            out.push_str("\nmachine code (SASS):\n");
        }
        let _ = writeln!(
            out,
            "  {} on {}: {}",
            row.display_name(),
            row.arch,
            summary(facts)
        );
    }
    out
}

fn summary(facts: &SassFacts) -> String {
    let loads: u32 = facts.local_loads_by_width.values().sum();
    let stores: u32 = facts.local_stores_by_width.values().sum();
    let mut parts = vec![format!(
        "{} instructions, {} loops (depth {}), {loads} LDL + {stores} STL",
        facts.instructions,
        facts.loops.len(),
        facts
            .loops
            .iter()
            .map(|found| found.depth)
            .max()
            .unwrap_or(0)
    )];
    if facts.spill_loads + facts.spill_stores > 0 {
        parts.push(format!(
            "spills {} loads + {} stores, {} + {} in loops",
            facts.spill_loads,
            facts.spill_stores,
            facts.spill_loads_in_loops,
            facts.spill_stores_in_loops
        ));
    }
    if let Some(hottest) = facts.hottest_spill() {
        parts.push(format!("hottest spill {}", hottest.place()));
    }
    if let Some(array) = facts.hottest_local_array() {
        parts.push(format!("local array at {}", array.place()));
    }
    for call in &facts.calls {
        parts.push(match call.indirect {
            true => "indirect calls".to_owned(),
            false => format!("calls {}", call.callee),
        });
    }
    if facts.fp64_instructions > 0 {
        parts.push(format!("{} FP64 instructions", facts.fp64_instructions));
    }
    parts.join("; ")
}

/// The source lines a SARIF result of this row points at: spill and local-array lines, hottest
/// first (at most `limit`).
pub(crate) fn source_line_locations(row: &KernelRow, limit: usize) -> Vec<(Location, String)> {
    let Some(facts) = &row.sass else {
        return Vec::new();
    };
    facts
        .lines
        .iter()
        .filter(|group| group.kind != LocalKind::StackData && !group.is_unknown())
        .take(limit)
        .map(|group| {
            let what = match group.kind {
                LocalKind::Spill => "spill",
                _ => "local array",
            };
            let place = if group.loop_depth > 0 {
                format!("inside a loop (depth {})", group.loop_depth)
            } else {
                "outside loops".to_owned()
            };
            (
                Location {
                    kind: LocationKind::CudaKernel,
                    path: group.file.clone(),
                    line: group.line,
                    column: 0,
                },
                format!(
                    "{what}: {} loads + {} stores {place}",
                    group.loads, group.stores
                ),
            )
        })
        .collect()
}

/// The loop nest of one row as an HTML table (empty when the row has no SASS facts).
pub(crate) fn render_loop_nest_html(row: &KernelRow) -> String {
    let Some(facts) = &row.sass else {
        return String::new();
    };
    let mut out = format!(
        "<section class=\"sass\"><h4>Machine code (SASS)</h4>\n<p class=\"facts\">{}</p>\n",
        escape(&summary(facts))
    );
    if facts.loops.is_empty() {
        out.push_str("<p>No loops in the kernel's own code.</p></section>\n");
        return out;
    }
    out.push_str("<table class=\"loops\"><thead><tr><th>loop</th><th>line</th><th>instructions</th><th>spill loads</th><th>spill stores</th><th>local array</th><th>calls</th></tr></thead><tbody>\n");
    for found in &facts.loops {
        let line = match (&found.file, found.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => format!("{:#x}", found.header_offset),
        };
        let spilled = if found.spill_loads + found.spill_stores > 0 {
            " class=\"deny\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr{spilled}><td>{indent}depth {depth}</td><td>{line}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            found.instructions,
            found.spill_loads,
            found.spill_stores,
            found.local_array_accesses,
            found.calls,
            indent = "&nbsp;&nbsp;".repeat(found.depth as usize - 1),
            depth = found.depth,
            line = escape(&line),
        );
    }
    out.push_str("</tbody></table></section>\n");
    out
}

/// `explain`'s lines: what the spills cost per loop iteration and which knob removes them.
pub(crate) fn explain_lines(row: &KernelRow) -> Vec<String> {
    let Some(facts) = &row.sass else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for found in facts
        .loops
        .iter()
        .filter(|found| found.spill_loads + found.spill_stores > 0)
    {
        let line = match (&found.file, found.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => format!("SASS offset {:#x}", found.header_offset),
        };
        lines.push(format!(
            "the loop at {line} (depth {}) runs {} spill loads + {} spill stores per iteration among its {} instructions: each is a local-memory round trip through L1",
            found.depth, found.spill_loads, found.spill_stores, found.instructions
        ));
    }
    if facts.spill_loads + facts.spill_stores > 0 {
        let cold = facts.spill_loads + facts.spill_stores
            - facts.spill_loads_in_loops
            - facts.spill_stores_in_loops;
        lines.push(format!(
            "{cold} spill instructions sit outside loops and run once per thread; registers that remove the loop spills: lower `min_blocks_per_sm` or raise `max_registers` (see the register knobs above)"
        ));
    }
    for call in &facts.calls {
        let what = call
            .what
            .as_deref()
            .unwrap_or("a function that was not inlined");
        let fix = call.fix.as_deref().unwrap_or("`__forceinline__`");
        lines.push(match call.indirect {
            true => format!("makes {what}; fix: {fix}"),
            false => format!("calls `{}` ({what}); fix: {fix}", call.callee),
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::{LineFacts, LoopFacts};

    fn row() -> KernelRow {
        let mut row = KernelRow::new("k", "sm_90", 256);
        row.sass = Some(SassFacts {
            kernel: "k".into(),
            arch: Some("sm_90".into()),
            instructions: 100,
            local_loads_by_width: [(32, 3)].into(),
            local_stores_by_width: [(32, 2)].into(),
            spill_loads: 3,
            spill_stores: 2,
            spill_loads_in_loops: 2,
            spill_stores_in_loops: 1,
            spill_store_bytes: 8,
            local_array_accesses: 0,
            stack_data_accesses: 0,
            loops: vec![LoopFacts {
                header_offset: 0x40,
                depth: 1,
                parent: None,
                file: Some("k.cu".into()),
                line: Some(8),
                instructions: 20,
                local_loads: 2,
                local_stores: 1,
                spill_loads: 2,
                spill_stores: 1,
                local_array_accesses: 0,
                calls: 0,
            }],
            lines: vec![LineFacts {
                file: "k.cu".into(),
                line: 12,
                kind: LocalKind::Spill,
                loads: 2,
                stores: 1,
                loop_depth: 1,
            }],
            calls: Vec::new(),
            fp64_instructions: 0,
            setmaxnreg: Vec::new(),
            indirect_branches: 0,
        });
        row
    }

    #[test]
    fn every_output_names_the_spill_line() {
        let row = row();
        let text = render_sass_text(std::slice::from_ref(&row));
        assert!(text.contains("hottest spill k.cu:12"), "{text}");
        let html = render_loop_nest_html(&row);
        assert!(
            html.contains("<td>k.cu:8</td><td>20</td><td>2</td><td>1</td>"),
            "{html}"
        );
        let locations = source_line_locations(&row, 5);
        assert_eq!(
            (locations[0].0.path.as_str(), locations[0].0.line),
            ("k.cu", 12)
        );
        let explained = explain_lines(&row);
        assert!(explained[0].contains("2 spill loads + 1 spill stores per iteration"));
        assert!(render_sass_text(&[KernelRow::new("k", "sm_90", 256)]).is_empty());
    }

    #[test]
    fn calls_are_named_and_indirect_calls_said_so() {
        let mut row = row();
        let facts = row.sass.as_mut().unwrap();
        for (callee, indirect) in [
            ("__assertfail", false),
            (crate::sass::INDIRECT_CALLEE, true),
        ] {
            let known = match indirect {
                true => Some(crate::sass::callee::INDIRECT_CALL),
                false => crate::sass::callee::describe_callee(callee),
            };
            let call: crate::sass::CallFacts = serde_json::from_value(serde_json::json!({
                "callee": callee,
                "indirect": indirect,
                "call_sites": 1,
                "call_sites_in_loops": 0,
                "callee_local_accesses": 0,
                "what": known.map(|known| known.what),
                "fix": known.map(|known| known.fix),
            }))
            .unwrap();
            facts.calls.push(call);
        }
        let text = render_sass_text(std::slice::from_ref(&row));
        assert!(
            text.contains("; calls __assertfail; indirect calls"),
            "{text}"
        );
        let explained = explain_lines(&row).join("\n");
        assert!(
            explained.contains("calls `__assertfail` (device-side `assert()`"),
            "{explained}"
        );
        assert!(
            explained.contains("makes an indirect call through a function pointer"),
            "{explained}"
        );
        assert!(!explained.contains("(indirect)"), "{explained}");
    }
}
