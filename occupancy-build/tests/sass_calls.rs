//! The `call` lint names what a kernel calls, whatever the SASS calls it through: built with the
//! real nvcc and nvdisasm (scripts/setup-cuda.sh installs both; this test fails, never skips,
//! without them) for sm_80, sm_90 and sm_120, the corpus's `calls.cu` (`tests/kernels/`) must give
//!
//! * per kernel, the callees its PTX's `call` instructions name (`__assertfail` for `assert`,
//!   `vprintf` for `printf`, `malloc` and `free` for `new` and `delete`), read from the
//!   constant-bank slots whose relocations name them (`CALL.ABS.NOINC R2`); and for a call
//!   through a PTX register (a function pointer), an indirect call;
//! * findings, in the report and in the facts it carries, that never name a register;
//!
//! both in a crate's build (`compile_ptx`: kernels without local memory read from the shipped
//! binary, `prints`, whose `printf` buffer is local memory, from a line-table cubin) and in
//! `cargo occupancy check` (`Build::check_sources`: everything from the binary).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_build::{Build, SourceCheck};
use occupancy_core::lint::LintId;
use occupancy_core::report::Report;
use occupancy_core::sass::INDIRECT_CALLEE;

const ARCHS: [&str; 3] = ["sm_80", "sm_90", "sm_120"];
const KERNELS: [&str; 4] = ["asserts", "prints", "heap", "through_pointer"];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("tests/kernels/calls.cu")
}

/// `calls.cu` built as a crate's build.rs builds it, every kernel declared: the report and the
/// shipped PTX.
fn build() -> (Report, String) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sass-calls");
    let declarations: String = KERNELS
        .iter()
        .map(|name| format!("#[occupancy::kernel(block = 256)]\nfn {name}();\n"))
        .collect();
    let (pkg, out) = common::scratch_package(&dir, "\n[workspace]\n", &declarations);
    std::fs::copy(corpus(), pkg.join("kernels/calls.cu")).unwrap();
    let mut build = common::package_build(&pkg, &out);
    build.file("kernels/calls.cu");
    for arch in ARCHS {
        build.arch(arch);
    }
    build
        .try_compile_ptx()
        .unwrap_or_else(|error| panic!("{error}"));
    let report =
        Report::from_json(&std::fs::read_to_string(out.join("occupancy.json")).unwrap()).unwrap();
    (
        report,
        std::fs::read_to_string(out.join("calls.ptx")).unwrap(),
    )
}

/// Per kernel, the callees of its PTX's `call` instructions: the function named, or
/// [`INDIRECT_CALLEE`] for a call through a register (`call (retval0), %rd8, ...`).
fn ptx_callees(ptx: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut callees: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut kernel: Option<String> = None;
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let code = line.trim();
        if let Some(name) = occupancy_core::ptxas::entry_declared_on(line) {
            kernel = Some(name.to_owned());
        } else if code.contains(".func") {
            kernel = None; // a device function's calls are not a kernel's
        }
        let (Some(kernel), true) = (&kernel, code.starts_with("call")) else {
            continue;
        };
        // `call.uni (retval0), \n vprintf, \n (...);` spans lines.
        let mut statement = code.to_owned();
        while !statement.contains(';') {
            statement.push(' ');
            statement.push_str(lines.next().unwrap().trim());
        }
        let operands = statement.split_once(char::is_whitespace).unwrap().1.trim();
        let operands = match operands.strip_prefix('(') {
            Some(retval) => retval.split_once("),").unwrap().1.trim(),
            None => operands,
        };
        let callee = operands.split(',').next().unwrap().trim();
        let callee = match callee.starts_with('%') {
            true => INDIRECT_CALLEE,
            false => callee,
        };
        callees
            .entry(kernel.clone())
            .or_default()
            .insert(callee.to_owned());
    }
    callees
}

/// Per (kernel, arch), the callees of the report's SASS facts.
fn sass_callees(report: &Report) -> BTreeMap<(String, String), BTreeSet<String>> {
    report
        .kernels
        .iter()
        .map(|row| {
            let facts = row
                .sass
                .as_ref()
                .unwrap_or_else(|| panic!("{} on {}: no SASS facts", row.name, row.arch));
            let callees = facts.calls.iter().map(|call| call.callee.clone()).collect();
            ((row.name.clone(), row.arch.clone()), callees)
        })
        .collect()
}

/// Whether `text` names a register (`R2`, `UR4`) as a word.
fn names_a_register(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|word| {
            let digits = word.strip_prefix("UR").or_else(|| word.strip_prefix('R'));
            digits.is_some_and(|digits| {
                !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
            })
        })
}

/// The `call` findings: the right ones, none naming a register; their messages, sorted.
fn call_findings(report: &Report) -> Vec<String> {
    let mut messages = Vec::new();
    for found in report
        .findings
        .iter()
        .filter(|found| found.lint == LintId::Call)
    {
        let help = found.help.as_deref().unwrap_or_default();
        for text in [found.message.as_str(), help]
            .into_iter()
            .chain(found.notes.iter().map(String::as_str))
        {
            assert!(!names_a_register(text), "a register named: {text}");
        }
        assert!(!help.contains("__forceinline__"), "{help}");
        messages.push(format!("{}\n  help: {help}", found.message));
    }
    messages.sort();
    messages
}

fn expected_callees() -> BTreeMap<&'static str, BTreeSet<String>> {
    let set = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
    BTreeMap::from([
        ("asserts", set(&["__assertfail"])),
        ("prints", set(&["vprintf"])),
        ("heap", set(&["free", "malloc"])),
        ("through_pointer", set(&[INDIRECT_CALLEE])),
    ])
}

#[test]
fn a_build_names_every_callee_the_ptx_calls() {
    let (report, ptx) = build();
    let from_ptx = ptx_callees(&ptx);
    let expected = expected_callees();
    assert_eq!(
        from_ptx,
        expected
            .iter()
            .map(|(kernel, callees)| ((*kernel).to_owned(), callees.clone()))
            .collect::<BTreeMap<_, _>>(),
        "the PTX calls what calls.cu says"
    );
    let from_sass = sass_callees(&report);
    assert_eq!(
        from_sass.len(),
        KERNELS.len() * ARCHS.len(),
        "{from_sass:#?}"
    );
    for ((kernel, arch), callees) in &from_sass {
        assert_eq!(callees, &from_ptx[kernel], "{kernel} on {arch}");
    }
    // `prints` was read from a line-table cubin: its facts have the printf buffer's line.
    for row in report.kernels.iter().filter(|row| row.name == "prints") {
        let facts = row.sass.as_ref().unwrap();
        assert!(!facts.lines.is_empty(), "{}: no lines", row.arch);
    }
    let messages = call_findings(&report);
    assert_eq!(messages.len(), 5 * ARCHS.len(), "{messages:#?}");
    for arch in ARCHS {
        let on = |needle: &str| {
            messages.iter().any(|message| {
                message.contains(needle) && message.contains(&format!(" on {arch}:"))
            })
        };
        assert!(
            on("kernel `asserts` calls `__assertfail` (device-side `assert()`"),
            "{arch}"
        );
        assert!(
            on("kernel `prints` calls `vprintf` (device-side `printf`"),
            "{arch}"
        );
        assert!(
            on("kernel `heap` calls `malloc` (the device heap"),
            "{arch}"
        );
        assert!(on("kernel `heap` calls `free`"), "{arch}");
        assert!(
            on("kernel `through_pointer` makes an indirect call through a function pointer"),
            "{arch}"
        );
    }
    let sm_90: Vec<&String> = messages
        .iter()
        .filter(|message| message.contains(" on sm_90:"))
        .collect();
    insta::assert_snapshot!(
        "call_findings_sm_90",
        sm_90
            .iter()
            .map(|message| message.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn cargo_occupancy_check_names_them_too() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sass-calls-check");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut build = Build::new();
    build.out_dir(&dir).manifest_dir(&dir).file(corpus());
    for arch in ["sm_80", "sm_90"] {
        build.arch(arch);
    }
    let output = build.check_sources(&SourceCheck::default()).unwrap();
    assert!(output.warnings.is_empty(), "{:?}", output.warnings);
    let expected = expected_callees();
    for ((kernel, arch), callees) in sass_callees(&output.report) {
        assert_eq!(callees, expected[kernel.as_str()], "{kernel} on {arch}");
    }
    let messages = call_findings(&output.report);
    assert_eq!(messages.len(), 10, "{messages:#?}");
}
