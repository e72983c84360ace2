//! The findings as SARIF 2.1.0, the format code-scanning tools (GitHub code scanning, IDE SARIF
//! viewers) read. Rules come from the lint registry ([`crate::lint::LintId::ALL`]); each result
//! points at the Rust attribute when the kernel is declared, else at the .cu kernel (with the .cu
//! kernel as a related location when both are known). Allow-level findings are left out, as
//! rustc leaves out allowed lints.

use serde_json::{json, Value};

use super::index::RowIndex;
use super::model::{Finding, KernelRow, Location, Report};
use crate::lint::{Level, LintId};

/// The SARIF level of a lint level.
fn sarif_level(level: Level) -> &'static str {
    match level {
        Level::Deny => "error",
        Level::Warn => "warning",
        Level::Allow => "none",
    }
}

/// A path as a SARIF artifact location: relative paths are relative to the source root
/// (`%SRCROOT%`), absolute ones become `file://` URIs.
use super::sass::source_line_locations as sass_lines;

fn artifact_location(path: &str) -> Value {
    let encoded = percent_encode(&path.replace('\\', "/"));
    if path.starts_with('/') {
        json!({ "uri": format!("file://{encoded}") })
    } else {
        json!({ "uri": encoded, "uriBaseId": "%SRCROOT%" })
    }
}

/// Percent-encodes the characters a URI reference may not contain.
fn percent_encode(path: &str) -> String {
    let mut out = String::new();
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'/'
            | b':'
            | b'@'
            | b'+' => out.push(byte as char),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

fn physical_location(location: &Location) -> Value {
    let mut physical = json!({ "artifactLocation": artifact_location(&location.path) });
    if location.line > 0 {
        let mut region = json!({ "startLine": location.line });
        if location.column > 0 {
            region["startColumn"] = json!(location.column);
        }
        physical["region"] = region;
    }
    json!({ "physicalLocation": physical })
}

fn rule(id: LintId) -> Value {
    let info = id.lint();
    json!({
        "id": id.as_str(),
        "name": id.as_str(),
        "shortDescription": { "text": info.summary },
        "fullDescription": { "text": info.why_bad },
        "help": {
            "text": format!("{}\n\nExample: {}", info.fix, info.example),
            "markdown": format!("**Fix.** {}\n\n**Example.** {}", info.fix, info.example),
        },
        "defaultConfiguration": { "level": sarif_level(id.default_level()) },
        "properties": { "tags": ["gpu", "cuda", "performance"] },
    })
}

fn uses_sass_lines(lint: LintId) -> bool {
    matches!(
        lint,
        LintId::Spills | LintId::SpillInLoop | LintId::LocalArray | LintId::LocalMemory
    )
}

/// The SARIF result of `finding`, located at `row` (the row it concerns, when known): what
/// [`render_sarif`] writes for each shown finding, for callers that write results one at a time.
pub fn sarif_result(finding: &Finding, row: Option<&KernelRow>) -> Value {
    let rule_index = LintId::ALL
        .iter()
        .position(|id| *id == finding.lint)
        .unwrap_or(0);
    let mut text = finding.message.clone();
    for note in &finding.notes {
        text.push_str(&format!("\nnote: {note}"));
    }
    if let Some(help) = &finding.help {
        text.push_str(&format!("\nhelp: {help}"));
    }
    let mut value = json!({
        "ruleId": finding.lint.as_str(),
        "ruleIndex": rule_index,
        "level": sarif_level(finding.level),
        "message": { "text": text },
    });
    let source = row.and_then(|row| row.source.as_ref());
    if let Some(location) = finding.location.as_ref().or(source) {
        value["locations"] = json!([physical_location(location)]);
        let mut related_locations = Vec::new();
        if let Some(source) = source.filter(|source| *source != location) {
            let mut related = physical_location(source);
            related["id"] = json!(1);
            related["message"] = json!({ "text": "the CUDA kernel" });
            related_locations.push(related);
        }
        // The source lines of the SASS evidence: where the spills and local arrays are.
        if uses_sass_lines(finding.lint) {
            for (location, message) in row.map_or_else(Vec::new, |row| sass_lines(row, 5)) {
                let mut related = physical_location(&location);
                related["id"] = json!(related_locations.len() + 1);
                related["message"] = json!({ "text": message });
                related_locations.push(related);
            }
        }
        if !related_locations.is_empty() {
            value["relatedLocations"] = Value::Array(related_locations);
        }
    }
    if let Some(kernel) = &finding.kernel {
        let display = row
            .map(|row| row.display_name().to_string())
            .unwrap_or_else(|| kernel.clone());
        let mut logical = json!({ "name": display, "kind": "function" });
        if display != *kernel {
            logical["decoratedName"] = json!(kernel);
        }
        value["locations"] = match value.get("locations").cloned() {
            Some(Value::Array(mut locations)) => {
                locations[0]["logicalLocations"] = json!([logical]);
                Value::Array(locations)
            }
            _ => json!([{ "logicalLocations": [logical] }]),
        };
    }
    let fingerprint = format!(
        "{}:{}:{}:{}",
        finding.lint,
        finding.crate_name.as_deref().unwrap_or(""),
        finding.kernel.as_deref().unwrap_or(""),
        finding.arch.as_deref().unwrap_or("")
    );
    value["partialFingerprints"] = json!({ "occupancyFinding/v1": fingerprint });
    let mut properties = serde_json::Map::new();
    if let Some(arch) = &finding.arch {
        properties.insert("arch".into(), json!(arch));
    }
    if let Some(crate_name) = &finding.crate_name {
        properties.insert("crate".into(), json!(crate_name));
    }
    if !properties.is_empty() {
        value["properties"] = Value::Object(properties);
    }
    value
}

/// Renders the report's warn and deny findings as one SARIF 2.1.0 log with one run.
/// `tool_version` is the version of the tool that ran (the CLI's or the build helper's).
pub fn render_sarif(report: &Report, tool_version: &str) -> String {
    let rules: Vec<Value> = LintId::ALL.iter().map(|id| rule(*id)).collect();
    let rows = RowIndex::new(&report.kernels);
    let results: Vec<Value> = report
        .shown_findings()
        .map(|finding| sarif_result(finding, rows.first_concerned(finding)))
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "occupancy",
                    "version": tool_version,
                    "informationUri": "https://example.invalid/occupancy",
                    "rules": rules,
                }
            },
            "originalUriBaseIds": { "%SRCROOT%": { "description": { "text": "The workspace or the directory checked." } } },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}
