//! docs/lints.md is rendered from the lint registry; this fails when the committed file drifts.
//! `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc` rewrites it.

// A test reads the environment it runs in; the root clippy.toml's disallowed-methods are for
// the crates' own code.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

#[test]
fn docs_lints_md_matches_the_registry() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/lints.md");
    let rendered = occupancy_core::lint::render_lints_markdown();
    if std::env::var_os("OCCUPANCY_BLESS_DOCS").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/lints.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/lints.md differs from the lint registry (occupancy-core/src/lint.rs); \
         regenerate it with `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc`"
    );
}
