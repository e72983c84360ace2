//! Every shown finding, grouped by lint, in rustc's shape (`deny[spills]: message`, location,
//! notes, help) with a link to its row. A group is open when it holds a deny finding or only a
//! few; the others are one line until opened. Each finding is `id="fN"`: a row's details show
//! copies of its findings.

use std::fmt::Write as _;

use super::context::Context;
use crate::lint::{Level, LintId};
use crate::report::markup::escape;
use crate::report::model::Finding;

/// Groups of at most this many findings are open.
const OPEN_GROUP: usize = 3;

/// The findings of one lint.
pub(super) struct LintGroup {
    pub lint: LintId,
    /// Finding ids, in the report's order.
    pub findings: Vec<usize>,
    /// Counts of deny, warn and accepted (allowed with a reason) findings.
    pub deny: usize,
    pub warn: usize,
    pub accepted: usize,
}

/// The lints with shown findings: those with deny findings first, then by count.
pub(super) fn lint_groups(context: &Context<'_>) -> Vec<LintGroup> {
    let mut groups: Vec<LintGroup> = Vec::new();
    for (id, finding) in context.findings.iter().enumerate() {
        let position = match groups.iter().position(|group| group.lint == finding.lint) {
            Some(position) => position,
            None => {
                groups.push(LintGroup {
                    lint: finding.lint,
                    findings: Vec::new(),
                    deny: 0,
                    warn: 0,
                    accepted: 0,
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[position];
        group.findings.push(id);
        match finding.level {
            Level::Deny => group.deny += 1,
            Level::Warn => group.warn += 1,
            Level::Allow => group.accepted += 1,
        }
    }
    groups.sort_by(|a, b| {
        (b.deny > 0)
            .cmp(&(a.deny > 0))
            .then(b.findings.len().cmp(&a.findings.len()))
            .then(a.lint.cmp(&b.lint))
    });
    groups
}

/// `2 deny, 14 warn, 1 accepted`.
pub(super) fn counts_text(group: &LintGroup) -> String {
    let mut parts = Vec::new();
    for (count, word) in [
        (group.deny, "deny"),
        (group.warn, "warn"),
        (group.accepted, "accepted"),
    ] {
        if count > 0 {
            parts.push(format!("{count} {word}"));
        }
    }
    parts.join(", ")
}

/// The section (nothing when there are no findings).
pub(super) fn render_findings(out: &mut String, context: &Context<'_>, groups: &[LintGroup]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"findings\"><h2>Findings <span class=\"note\">{} by lint; open a lint for its findings</span></h2>",
        context.findings.len()
    );
    for group in groups {
        let open = group.deny > 0 || group.findings.len() <= OPEN_GROUP;
        let level = if group.deny > 0 { "deny" } else { "warn" };
        let _ = write!(
            out,
            "<details class=\"group {level}\" id=\"lint-{lint}\"{open}><summary><span class=\"lint\">{lint}</span> <span class=\"count\">{counts}</span> <span class=\"note\">{summary}</span></summary>\n<ul class=\"findings\">\n",
            lint = group.lint,
            open = if open { " open" } else { "" },
            counts = counts_text(group),
            summary = escape(group.lint.lint().summary),
        );
        for &id in &group.findings {
            render_finding(out, context, id);
        }
        out.push_str("</ul></details>\n");
    }
    out.push_str("</section>\n");
}

/// One `<li>`: level and lint, message, a link to its row, location, notes, help.
fn render_finding(out: &mut String, context: &Context<'_>, id: usize) {
    let finding: &Finding = context.findings[id];
    let level = if finding.level == Level::Allow {
        "accepted"
    } else {
        finding.level.as_str()
    };
    let _ = write!(
        out,
        "<li class=\"{level}\" id=\"f{id}\"><span class=\"lint\">{level}[{lint}]</span> {message}",
        lint = finding.lint,
        message = escape(&finding.message)
    );
    // A link to each row it concerns (one per architecture): the row opens with its details.
    for &key in &context.finding_keys[id] {
        let _ = write!(
            out,
            " <a class=\"row\" href=\"#k{}\">{}</a>",
            context.keys[key],
            escape(&context.key_row(key).arch)
        );
    }
    if let Some(location) = &finding.location {
        let _ = write!(
            out,
            "<div class=\"loc\">--&gt; {}</div>",
            escape(&location.to_string())
        );
    }
    for note in &finding.notes {
        let _ = write!(out, "<div class=\"note\">note: {}</div>", escape(note));
    }
    if let Some(reason) = &finding.reason {
        let _ = write!(out, "<div class=\"note\">reason: {}</div>", escape(reason));
    }
    if let Some(help) = &finding.help {
        let _ = write!(out, "<div class=\"help\">help: {}</div>", escape(help));
    }
    out.push_str("</li>\n");
}
