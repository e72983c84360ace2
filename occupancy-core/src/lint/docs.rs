//! `docs/lints.md`, rendered from the lint declarations.

use super::id::LintId;
use super::level::Level;
use super::registry::Check;

/// Renders `docs/lints.md` from the registry. A test compares the committed file with this;
/// `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc` rewrites it.
/// Whether a kernel with no declaration gets the lint: `yes`, `if set` (machine-code lints that
/// need an explicit level there), or `no`.
fn undeclared_column(id: LintId) -> &'static str {
    match id.lint().check {
        check if check.checks_undeclared() => "yes",
        Check::Sass { .. } => "if set",
        Check::Undeclared(_) | Check::Worse(_) | Check::Stale(_) | Check::Product(_) => "yes",
        _ => "no",
    }
}

pub fn render_lints_markdown() -> String {
    let mut out = String::new();
    out.push_str("# Lints\n\n");
    out.push_str("<!-- Generated from occupancy-core/src/lint.rs by `render_lints_markdown`; a test fails when this file drifts.\n");
    out.push_str("     Regenerate with: OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc -->\n\n");
    out.push_str("Every finding of the build gate belongs to one of these lints. Each has a level, in clippy's words:\n");
    out.push_str("`allow` (recorded in the JSON report only), `warn` (a `cargo:warning`, the build goes on) or\n");
    out.push_str("`deny` (an error, the build fails).\n\n");
    out.push_str("## Setting levels\n\n");
    out.push_str("The most specific setting wins:\n\n");
    out.push_str("1. per kernel, in the declaration: `#[occupancy::kernel(block = 256, warn(spills), allow(low_occupancy, partial_warp, reason = \"register tiling\"))]`\n");
    out.push_str("   (allowing a lint that denies by default needs a `reason`; `expect(lint, reason = \"...\")` also fails the build once the finding is gone,\n");
    out.push_str("   see [declaring-kernels.md](declaring-kernels.md#expect));\n");
    out.push_str(
        "2. for one build, by environment variable: `OCCUPANCY_LINT_SPILLS=warn cargo build`;\n",
    );
    out.push_str("3. per crate, in Cargo.toml:\n\n");
    out.push_str("   ```toml\n   [package.metadata.occupancy.lints]\n   spills = \"warn\"\n   partial_warp = \"allow\"\n   ```\n\n");
    out.push_str(
        "   or for every crate of a workspace under `[workspace.metadata.occupancy.lints]`;\n",
    );
    out.push_str("4. the default level below.\n\n");
    out.push_str("A kernel with no `#[occupancy::kernel]` declaration is checked at the crate's default launch for\n");
    out.push_str("the hard failures only (column *undeclared*: `yes`); the machine-code lints marked `if set` reach it\n");
    out.push_str("only when their level is set explicitly (environment, `[package.metadata.occupancy.lints]`, or the\n");
    out.push_str("kernel's table), and `cargo occupancy check` checks every kernel at its command-line launch.\n\n");
    out.push_str(
        "| lint | default | undeclared | environment variable | summary |\n|---|---|---|---|---|\n",
    );
    for id in LintId::ALL {
        out.push_str(&format!(
            "| [`{id}`](#{id}) | {} | {} | `{}` | {} |\n",
            id.default_level(),
            undeclared_column(id),
            id.env_var(),
            id.lint().summary
        ));
    }
    for id in LintId::ALL {
        let info = id.lint();
        out.push_str(&format!("\n## {id}\n\n"));
        out.push_str(&format!("Default level: **{}**.\n\n", id.default_level()));
        out.push_str(&format!("{}\n\n", info.summary));
        out.push_str(&format!("**Why is this bad?** {}\n\n", info.why_bad));
        out.push_str(&format!("**Example.** {}\n\n", info.example));
        out.push_str(&format!("**Fix.** {}\n\n", info.fix));
        let other_level = if id.default_level() == Level::Deny {
            Level::Warn
        } else {
            Level::Deny
        };
        out.push_str(&format!(
            "**Configure.** Per kernel: `{other_level}({id})` in the attribute. Per crate: `{}` under `[package.metadata.occupancy.lints]`. Per build: `{}={other_level}`.\n",
            id.config_line(other_level),
            id.env_var()
        ));
    }
    out
}
