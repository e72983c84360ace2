//! Compile-fail tests (one per kind of mistake, reviewed .stderr files) and pass tests.
//! `TRYBUILD=overwrite cargo test -p occupancy --test ui` rewrites the .stderr files: review them.
//!
//! The cases compile as a crate whose occupancy build saw what `occupancy-build`'s scanner sees
//! in these files: a facts file (`occupancy_facts.json`) listing every declaration
//! `scan_source` finds, handed to the attribute through `OUT_DIR` as cargo would. A declaration
//! the scanner cannot see (made by `macro_rules!`) must then fail to compile.

use std::path::{Path, PathBuf};

use occupancy_core::facts::{BuildFacts, DeclarationFacts, FACTS_FILE, FACTS_SCHEMA_VERSION};
use occupancy_core::finding::Finding;
use occupancy_core::lint::{Level, LintId};
use occupancy_core::spec::{scan_source, KEYS};

/// What the build settles over every product for the declarations of
/// `fail_settled_findings.rs`: a kernel no product compiled (deny) and an expectation no
/// finding fulfilled (set to warn).
fn settled(rust_name: &str) -> Vec<Finding> {
    match rust_name {
        "settled_missing" => vec![Finding {
            level: Level::Deny,
            message: "declared kernel `settled_missing` is not in any compiled output".into(),
            notes: vec!["2 kernels compiled: settled_expected, settled_mising".into()],
            help: Some("did you mean `name = \"settled_mising\"`?".into()),
            ..Finding::new(LintId::MissingKernel)
        }],
        "settled_expected" => vec![Finding {
            level: Level::Warn,
            message: "kernel `settled_expected` expects `stack_frame`, but no `stack_frame` finding occurred on any target arch".into(),
            notes: Vec::new(),
            help: Some("remove `expect(stack_frame...)` from the declaration".into()),
            ..Finding::new(LintId::UnfulfilledExpectation)
        }],
        _ => Vec::new(),
    }
}

/// Every declaration the build's scanner finds in `files`.
fn scanned(files: &[PathBuf]) -> Vec<DeclarationFacts> {
    let mut declarations = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        // Files with syntax errors (some fail cases) hold nothing a build would check.
        for kernel in scan_source(&text).unwrap_or_default() {
            declarations.push(DeclarationFacts {
                settled: settled(&kernel.rust_name),
                not_checked: None,
                rust_name: kernel.rust_name,
                kernel_name: kernel.kernel_name,
                path: file
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(file)
                    .display()
                    .to_string(),
                line: u32::try_from(kernel.attribute.start.line).unwrap(),
                compiled: Vec::new(),
            });
        }
    }
    declarations
}

/// A pass case written from the key list (`occupancy_core::spec::KEYS`): one declaration per
/// key, with the key's example, and a check that the const holds the value. Every key declared reaches the
/// const through the attribute and the facade without a hand-written case (CONTRIBUTING.md,
/// "Adding an attribute key").
fn every_key_case() -> PathBuf {
    let mut declarations = String::new();
    let mut checks = String::new();
    for info in &KEYS {
        // The key and the keys it needs (`grid_blocks` needs `launch` and `gpus`).
        let arguments = occupancy_model::ExampleArguments(info.key).to_string();
        declarations.push_str(&format!(
            "#[occupancy::kernel({arguments})]\nfn key_{}();\n\n",
            info.name
        ));
        // The const prints its spec back as the attribute wrote it.
        checks.push_str(&format!(
            "    assert_eq!(KEY_{}_OCCUPANCY.spec.to_string(), {arguments:?});\n",
            info.name.to_ascii_uppercase(),
        ));
    }
    let source = format!(
        "// Written by tests/ui.rs from the key list: one declaration per key.\n\
         #![deny(warnings)]\n\n{declarations}fn main() {{\n{checks}}}\n"
    );
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-every-key/pass_every_key.rs");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, source).unwrap();
    path
}

/// The facts file of a build that saw the declarations in `files` and `more`, in a directory of
/// its own.
fn write_facts(files: &[PathBuf], more: Vec<DeclarationFacts>, directory: &str) -> PathBuf {
    let mut declarations = scanned(files);
    declarations.extend(more);
    let facts = BuildFacts {
        schema_version: FACTS_SCHEMA_VERSION,
        crate_name: "occupancy-tests".into(),
        skipped: None,
        declarations,
        settled: Vec::new(),
    };
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(directory);
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join(FACTS_FILE), facts.to_json()).unwrap();
    out_dir
}

/// The facts of the reviewed cases: the fixtures and every file under tests/ui.
fn write_ui_facts() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("tests/fixtures/declarations.rs")];
    for entry in std::fs::read_dir(root.join("tests/ui")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files.sort();
    // The scanner refuses this file with its own error (a real build stops there); listed so
    // the case shows rustc's error about the unmarked block, as it did before facts existed.
    let unmarked_block = DeclarationFacts {
        rust_name: "launch_saxpy".into(),
        kernel_name: "launch_saxpy".into(),
        path: "tests/ui/fail_declaration_in_unmarked_extern_block.rs".into(),
        line: 4,
        compiled: Vec::new(),
        settled: Vec::new(),
        not_checked: None,
    };
    write_facts(&files, vec![unmarked_block], "ui-out-dir")
}

#[test]
fn ui() {
    // trybuild's crate has no build script, so cargo sets no OUT_DIR of its own for it and
    // rustc (and the attribute) see this one.
    std::env::set_var("OUT_DIR", write_ui_facts());
    {
        let cases = trybuild::TestCases::new();
        cases.pass("tests/ui/pass_*.rs");
        cases.compile_fail("tests/ui/fail_*.rs");
    }
    // The case written from the key list, with a facts file of its own: what the reviewed
    // cases' messages list stays the same when a key is added.
    let every_key = every_key_case();
    std::env::set_var(
        "OUT_DIR",
        write_facts(
            std::slice::from_ref(&every_key),
            Vec::new(),
            "ui-every-key-out-dir",
        ),
    );
    trybuild::TestCases::new().pass(&every_key);
}
