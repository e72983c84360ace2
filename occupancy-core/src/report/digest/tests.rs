use super::*;
use crate::arch::lookup;
use crate::report::{example_report, render_markdown, render_text};

/// A digest of `report` taken in whole, that drops the whole report past `rows` rows.
fn digest_of(report: &Report, rows: usize, findings: usize) -> ReportDigest {
    let mut digest = ReportDigest::with_full_limits(rows, findings);
    digest.add_report(report);
    digest
}

/// Within the full limits the digest renders exactly what the whole report renders.
#[test]
fn a_small_report_renders_as_the_whole_report() {
    let report = example_report();
    let digest = digest_of(&report, FULL_REPORT_ROWS, FULL_REPORT_FINDINGS);
    assert!(digest.is_full());
    assert_eq!(digest.render_text(), render_text(&report));
    assert_eq!(digest.render_markdown(), render_markdown(&report));
    assert_eq!(digest.has_deny(), report.has_deny());
}

/// Past the limits, with every row kept (fewer than the worst shown), the text is the whole
/// report's text with its rows in the digest's worst-first order: the same cells, findings,
/// summary lines and counts, from bounded state.
#[test]
fn past_the_limits_the_text_keeps_the_shape_of_the_whole_report() {
    let report = example_report();
    assert!(report.kernels.len() <= WORST_ROWS_SHOWN);
    let digest = digest_of(&report, 0, 0);
    assert!(!digest.is_full());
    let mut ordered = report.clone();
    ordered.kernels = render::worst_first_rows(&digest);
    assert_eq!(ordered.kernels.len(), report.kernels.len());
    assert_eq!(digest.render_text(), render_text(&ordered));
    // A deny row comes first, device functions (no occupancy) after the entry rows.
    let first = &ordered.kernels[0];
    assert!(
        report
            .findings
            .iter()
            .any(|finding| finding.level == Level::Deny && finding.concerns(first)),
        "{first:?}"
    );
    assert!(!ordered.kernels.last().is_some_and(|row| row.entry));
}

/// Findings of many lints and levels, some groups past the shown few: the digest's findings
/// section and counts equal the whole report's, finding for finding.
#[test]
fn findings_past_the_limits_render_as_the_whole_report_renders_them() {
    let mut report = example_report();
    report.kernels.clear();
    let templates = report.findings.clone();
    for index in 0..40 {
        let mut finding = templates[index % templates.len()].clone();
        finding.kernel = Some(format!("kernel_{}", index % 13));
        finding.message = format!("message {index}");
        if index % 7 == 0 {
            finding.level = Level::Warn;
        }
        report.findings.push(finding);
    }
    let digest = digest_of(&report, 0, 0);
    assert!(!digest.is_full());
    assert_eq!(digest.render_text(), render_text(&report));
}

/// A row of `name` on sm_90 with `registers` registers at 256 threads.
fn row(name: &str, registers: u32) -> KernelRow {
    let mut row = KernelRow {
        registers,
        ..KernelRow::new(name, "sm_90", 256)
    };
    row.compute(lookup("sm_90").unwrap());
    row
}

/// 200,000 rows of distinct kernels, every tenth with a deny finding: the digest holds the 25
/// worst rows and one example per lint; the text is a few dozen lines whatever the rows.
#[test]
fn two_hundred_thousand_rows_give_a_short_text_from_bounded_state() {
    let mut digest = ReportDigest::new();
    let template = example_report()
        .findings
        .into_iter()
        .find(|finding| finding.level == Level::Deny)
        .unwrap();
    for index in 0..200_000u32 {
        let name = format!("kernel_{index}");
        let row = row(&name, 16 + index % 200);
        if index % 10 == 0 {
            let finding = Finding {
                kernel: Some(name),
                arch: Some("sm_90".into()),
                ..template.clone()
            };
            digest.add_row(&row, &[(finding.level, finding.lint)]);
            digest.add_finding(&finding);
        } else {
            digest.add_row(&row, &[]);
        }
        assert!(digest.worst.len() <= WORST_ROWS_SHOWN);
    }
    assert!(!digest.is_full());
    assert!(digest
        .groups
        .iter()
        .all(|group| group.first.len() <= FINDINGS_SHOWN_PER_LINT));
    let text = digest.render_text();
    assert!(text.lines().count() < 60, "{text}");
    assert!(
        text.contains("… 199975 more rows: the table shows the 25 worst of 200000"),
        "{text}"
    );
    assert!(
        text.contains("19999 more like this; 20000 kernels in all on sm_90"),
        "{text}"
    );
    assert!(
        text.ends_with("200000 kernels on 1 arch: 20000 deny, 0 warn\n"),
        "{text}"
    );
    // The worst rows are deny rows, the lowest occupancy among them first.
    let worst = render::worst_first_rows(&digest);
    assert!(worst.iter().all(|row| row
        .name
        .trim_start_matches("kernel_")
        .parse::<u32>()
        .unwrap()
        % 10
        == 0));
    assert!(worst
        .windows(2)
        .all(|pair| pair[0].occupancy <= pair[1].occupancy));
    let markdown = digest.render_markdown();
    assert!(markdown.lines().count() < 60, "{markdown}");
    assert!(
        markdown.starts_with("## GPU occupancy\n\n❌ **occupancy check failed**: 200000 kernels")
    );
}

#[test]
fn distinct_counts_are_exact_up_to_the_limit_then_say_more_than() {
    let mut counter = DistinctCounter::new(3);
    assert_eq!(counter.describe("kernel"), "0 kernels");
    assert!(counter.insert("a"));
    assert!(!counter.insert("a"));
    assert_eq!(counter.describe("kernel"), "1 kernel");
    assert!(counter.insert("b") && counter.insert("c"));
    assert_eq!(counter.exact(), Some(3));
    assert!(counter.insert("d"));
    assert_eq!(counter.exact(), None);
    assert!(!counter.insert("a") && !counter.insert("e"));
    assert_eq!(counter.describe("kernel"), "more than 3 kernels");
    assert!(counter.hashes.is_empty());
}
