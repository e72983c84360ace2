//! The keys of docs/declaring-kernels.md (their table and a section per key) are rendered from
//! their declarations in occupancy-model/src/keys.rs; this fails when the committed part drifts.
//! `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test keys_doc` rewrites it.

// A test reads the environment it runs in; the root clippy.toml's disallowed-methods are for
// the crates' own code.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use occupancy_core::spec::render_keys_markdown;

#[test]
fn docs_declaring_kernels_md_keys_match_their_declarations() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/declaring-kernels.md");
    let committed = std::fs::read_to_string(&path).expect("read docs/declaring-kernels.md");
    let rendered = render_keys_markdown();
    // The generated part opens with its first line and closes with its last.
    let (opening, closing) = (
        rendered.lines().next().unwrap(),
        rendered.lines().last().unwrap(),
    );
    let start = committed
        .find(opening)
        .expect("docs/declaring-kernels.md has the opening line of its generated keys");
    let end = committed[start..]
        .find(closing)
        .map(|end| start + end + closing.len() + 1)
        .expect("docs/declaring-kernels.md has the closing line of its generated keys");
    if std::env::var_os("OCCUPANCY_BLESS_DOCS").is_some() {
        let updated = format!("{}{rendered}{}", &committed[..start], &committed[end..]);
        std::fs::write(&path, updated).expect("write docs/declaring-kernels.md");
        return;
    }
    assert!(
        committed[start..end] == rendered,
        "the keys of docs/declaring-kernels.md differ from their declarations \
         (occupancy-model/src/keys.rs); regenerate them with \
         `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test keys_doc`"
    );
}
