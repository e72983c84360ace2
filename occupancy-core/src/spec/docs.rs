//! The keys of `docs/declaring-kernels.md`, rendered from their declarations ([`KEYS`]).

use super::KEYS;

/// The lines that open the generated part of `docs/declaring-kernels.md`.
const KEYS_DOC_BEGIN: &str = "<!-- Keys generated from occupancy-model/src/keys.rs by `render_keys_markdown`; a test fails when this part drifts.\n     Regenerate with: OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test keys_doc -->\n";
/// The line that closes it.
const KEYS_DOC_END: &str = "<!-- End of the generated keys. -->\n";

/// Renders the keys of `docs/declaring-kernels.md` from [`KEYS`]: a table of every key (its
/// value, unit, what leaving it out means, the `KernelSpec` field it sets), then a section per
/// key, its documentation, between the comment lines that mark it (the first opens it, the last
/// closes it). `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test keys_doc` rewrites
/// that part of the file.
pub fn render_keys_markdown() -> String {
    let mut out = String::from(KEYS_DOC_BEGIN);
    out.push_str("\n| key | value | unit | when absent | field | summary |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for info in &KEYS {
        out.push_str(&format!(
            "| [`{name}`](#{name}) | {} | {} | {} | `{}` | {} |\n",
            info.kind,
            info.unit,
            info.when_absent,
            info.field,
            info.summary,
            name = info.name,
        ));
    }
    for info in &KEYS {
        out.push_str(&format!("\n### {}\n\n", info.name));
        for line in info.doc.lines() {
            // Each line of a doc comment keeps the space after `///`.
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
    }
    out.push('\n');
    out.push_str(KEYS_DOC_END);
    out
}
