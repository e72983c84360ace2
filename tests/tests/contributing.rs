//! CONTRIBUTING.md's recipes stay true: every `path#text` they cite names a file of the repository
//! that holds that text, every plain `path` they cite exists, and the import graph of every crate
//! has no circle (the house rule the recipes rely on), the build helper every user's build
//! script compiles holds no archive or ZIP reader, and one finding type, one launch decision and
//! one route to the gate's findings carry every path (docs/architecture.md).

use occupancy_tests::repo_root;
use std::process::Command;

/// The backticked spans of a Markdown text, outside fenced code blocks.
fn code_spans(markdown: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push(span);
        }
    }
    spans
}

/// A span that names a repository file: a relative path with a directory and an extension.
fn cited_path(span: &str) -> Option<(&str, Option<&str>)> {
    let (path, text) = match span.split_once('#') {
        Some((path, text)) => (path, Some(text)),
        None => (span, None),
    };
    let looks_like_file = path.contains('/')
        && !path.contains(' ')
        && !path.contains('<')
        && !path.contains('*')
        && !path.starts_with('/')
        && !path.starts_with('$')
        && path
            .rsplit('/')
            .next()
            .is_some_and(|name| name.contains('.'));
    looks_like_file.then_some((path, text))
}

/// Fails unless every `path#text` and plain `path` that `doc` cites is there (and it cites at
/// least ten); `what`: what to update, said in the failure.
fn assert_cites_what_is_there(doc: &str, what: &str) {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join(doc)).expect(doc);
    let mut cited = 0;
    let mut broken = Vec::new();
    for (path, text) in code_spans(&text).into_iter().filter_map(cited_path) {
        cited += 1;
        match (std::fs::read_to_string(root.join(path)), text) {
            (Err(error), _) => broken.push(format!("`{path}`: {error}")),
            (Ok(content), Some(text)) if !content.contains(text) => {
                broken.push(format!("`{path}` does not contain `{text}`"))
            }
            _ => {}
        }
    }
    assert!(cited >= 10, "{doc} cites only {cited} files");
    assert!(
        broken.is_empty(),
        "{doc} cites what is not there; update {what}:\n{}",
        broken.join("\n")
    );
}

/// The workspace's crates, leaf first.
const CRATES: [&str; 7] = [
    "occupancy-model",
    "occupancy-core",
    "occupancy-macros",
    "occupancy",
    "occupancy-build",
    "occupancy-binary",
    "cargo-occupancy",
];

#[test]
fn every_file_and_text_the_recipes_cite_exists() {
    assert_cites_what_is_there("CONTRIBUTING.md", "the recipe");
}

/// docs/architecture.md is a map of where each invariant lives: what it cites is there.
#[test]
fn every_file_and_text_the_architecture_map_cites_exists() {
    assert_cites_what_is_there("docs/architecture.md", "the map");
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = repo_root();
    for krate in CRATES {
        let output = Command::new("python3")
            .arg(root.join("scripts/module-cycles.py"))
            .arg(root.join(krate).join("src"))
            .output()
            .expect("python3 runs scripts/module-cycles.py");
        assert!(
            output.status.success(),
            "{krate} has import circles:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The circle check counts an import of the crate root as what it names: `crate::Error`,
/// re-exported by lib.rs from `error.rs`, is an import of `error.rs` (issue #36: two circles of
/// occupancy-build hid behind such re-exports). A scratch crate whose one circle goes through
/// the root must be reported; without the re-export the same files have none.
#[test]
fn the_circle_check_sees_through_re_exports_of_the_crate_root() {
    let dir = repo_root().join("target/contributing/root-circle");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("lib.rs", "mod config;\nmod error;\npub use error::Error;\n");
    write(
        "error.rs",
        "pub enum Error { Settings(crate::config::SettingsError) }\n",
    );
    write("config.rs", "use crate::Error;\npub struct SettingsError;\npub fn load() -> Result<(), Error> { Ok(()) }\n");
    let check = || {
        Command::new("python3")
            .arg(repo_root().join("scripts/module-cycles.py"))
            .arg(&dir)
            .output()
            .expect("python3 runs scripts/module-cycles.py")
    };
    let output = check();
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("config.rs, error.rs"), "{said}");
    write("config.rs", "pub struct SettingsError;\n");
    assert!(check().status.success());
}

/// Crates that read archives or compressed containers (`object` reads `ar` archives): none may be
/// in the build helper's tree.
const ARCHIVE_CRATES: &[&str] = &[
    "zip",
    "miniz_oxide",
    "flate2",
    "libz-sys",
    "zstd",
    "ar",
    "tar",
    "object",
    "goblin",
    "elf",
    "occupancy-binary",
];

/// The build helper every user's build script compiles holds what a build script needs, not
/// the binary front end of `cargo occupancy check` (issue #36): its dependency tree has no
/// archive or ZIP crate, and its sources read neither `ar` archives nor ZIP files (their magic
/// numbers, which the binary front end's readers test, are nowhere in it).
#[test]
fn the_build_helper_holds_no_archive_or_zip_reader() {
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "occupancy-build",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--offline", "--locked"])
        .current_dir(&root)
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(tree.contains("occupancy-core"), "{tree}");
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|line| line.split(' ').next())
        .collect();
    let found: Vec<&&str> = ARCHIVE_CRATES
        .iter()
        .filter(|krate| names.contains(krate))
        .collect();
    assert!(
        found.is_empty(),
        "occupancy-build depends on {found:?}: archive and ZIP reading belongs in occupancy-binary\n{tree}"
    );
    let magic = [
        "!<arch>",
        "!<thin>",
        "PK\\x03\\x04",
        "PK\\x05\\x06",
        "0xBA55_ED50",
    ];
    let mut stack = vec![root.join("occupancy-build/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let read = magic.iter().find(|magic| text.contains(*magic));
                assert!(
                    read.is_none(),
                    "{} reads `{}`: the binary front end's readers live in occupancy-binary",
                    path.display(),
                    read.unwrap_or(&"")
                );
            }
        }
    }
}

/// Where the stages that must stay pure live: the parse and evaluate stages of the build helper
/// (docs/architecture.md, "Where I/O happens"), and every file of `occupancy-core`. A path ending
/// in `/` is a folder, read whole.
const PURE_STAGES: &[&str] = &[
    "occupancy-build/src/parse.rs",
    "occupancy-build/src/parse/",
    "occupancy-build/src/evaluate.rs",
    "occupancy-build/src/rows.rs",
    "occupancy-build/src/levels.rs",
    "occupancy-build/src/matching.rs",
    "occupancy-build/src/expectations.rs",
    "occupancy-build/src/launch_check.rs",
    "occupancy-core/src/",
];

/// What a module that does I/O or runs a process writes: the standard library's file system,
/// processes, environment and network, and the build helper's own modules that read, write or
/// run (their names as a pure stage would call them).
const IO_MARKS: &[&str] = &[
    "std::fs",
    "std::process",
    "std::env",
    "std::net",
    "std::io::stdin",
    "std::io::stdout",
    "File::",
    "OpenOptions",
    "Command::",
    "read_to_string(",
    "read_dir(",
    "canonicalize(",
    ".is_file()",
    ".exists()",
    "crate::process",
    "run_bounded",
    "write_atomic",
    "WorkDir",
    "crate::own_binary",
    "crate::compile_reads",
    "crate::disassemble",
    "crate::spill_help",
    "crate::cache",
    "line_table_cubins",
    "fsutil::read",
    "command_without_wrapper",
    "ptx_summary::summary",
    "read_kernel_lines",
];

/// A Rust file's code without its comments and without its tests (what follows the first
/// `#[cfg(test)]`; files named `tests.rs` are tests whole).
fn code_outside_tests(path: &std::path::Path) -> String {
    if path.file_name().is_some_and(|name| name == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    uncommented(text.split("#[cfg(test)]").next().unwrap_or_default())
}

/// `code` without its `//` comments (doc comments name the read stage; that is no I/O).
fn uncommented(code: &str) -> String {
    code.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `.rs` files under each of `paths` (a file, or a folder ending in `/`).
fn rust_files(root: &std::path::Path, paths: &[&str]) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = paths.iter().map(|path| root.join(path)).collect();
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .flatten()
                    .map(|e| e.path()),
            );
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The marks of I/O or a process in `code`.
fn io_marks(code: &str) -> Vec<&'static str> {
    IO_MARKS
        .iter()
        .copied()
        .filter(|mark| code.contains(mark))
        .collect()
}

/// Parse and evaluate do no I/O and run no process (issue #36): the build helper's read stage
/// (`compile_reads.rs`) reads what parse needs before it, the probe stage (`spill_help.rs`)
/// runs ptxas after evaluate. A parse or evaluate module (or `occupancy-core`) that names the
/// file system, a process or the environment fails here; move that read or run into a stage of
/// its own and hand the pure stage a typed value.
#[test]
fn parse_and_evaluate_do_no_io_and_run_no_process() {
    let root = repo_root();
    let files = rust_files(&root, PURE_STAGES);
    assert!(
        files.len() > 50,
        "{} files: PURE_STAGES moved?",
        files.len()
    );
    let mut found = Vec::new();
    for path in &files {
        let marks = io_marks(&code_outside_tests(path));
        if !marks.is_empty() {
            found.push(format!("{}: {}", path.display(), marks.join(", ")));
        }
    }
    assert!(
        found.is_empty(),
        "a pure stage does I/O or runs a process (docs/architecture.md, \"Where I/O happens\"):\n{}",
        found.join("\n")
    );
}

/// The scan sees what it is there to see: the modules that read and run on the pure stages'
/// behalf are caught by it, and a comment naming the file system is not.
#[test]
fn the_io_scan_catches_the_stages_that_read_and_run() {
    let root = repo_root();
    for stage in [
        "occupancy-build/src/compile_reads.rs",
        "occupancy-build/src/spill_help.rs",
        "occupancy-build/src/own_binary.rs",
    ] {
        let code = code_outside_tests(&root.join(stage));
        assert!(
            !io_marks(&code).is_empty(),
            "{stage} reads or runs nothing?"
        );
    }
    assert!(io_marks(&uncommented("let text = 1; // std::fs::read, said")).is_empty());
    assert_eq!(
        io_marks(&uncommented("let text = std::fs::read(path)?;")),
        ["std::fs"]
    );
}

/// Every non-test `.rs` file of the workspace's crates, with its text up to its first
/// `#[cfg(test)]` (unit tests may build what they check any way they like).
fn library_sources() -> Vec<(String, String)> {
    let root = repo_root();
    let mut sources = Vec::new();
    let mut stack: Vec<_> = CRATES
        .iter()
        .map(|krate| root.join(krate).join("src"))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let text = std::fs::read_to_string(&path).unwrap();
                let library = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
                let shown = path.strip_prefix(&root).unwrap().display().to_string();
                sources.push((shown, library));
            }
        }
    }
    sources.sort();
    sources
}

/// The files whose library code holds `needle`.
fn files_with(sources: &[(String, String)], needle: &str) -> Vec<String> {
    sources
        .iter()
        .filter(|(_, text)| text.contains(needle))
        .map(|(path, _)| path.clone())
        .collect()
}

/// Issue #36: one finding type carries every path, from the check that makes it to the report,
/// the diagnostic and the facts file (`occupancy-core/src/finding.rs`). The four types it
/// replaced (a check's `Finding`, `LeveledFinding`, the report's `Finding`, `SettledFinding`)
/// are gone, and no crate declares a type of its own named for a finding.
#[test]
fn one_finding_type_carries_every_path() {
    let sources = library_sources();
    let declared: Vec<String> = sources
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .filter(|line| {
                    let line = line.trim_start();
                    ["struct ", "enum ", "type "].iter().any(|kind| {
                        line.split(kind).nth(1).is_some_and(|rest| {
                            let name: String = rest
                                .chars()
                                .take_while(|c| c.is_alphanumeric() || *c == '_')
                                .collect();
                            name.ends_with("Finding")
                        }) && !line.starts_with("//")
                    })
                })
                .map(move |line| format!("{path}: {}", line.trim()))
        })
        .collect();
    assert_eq!(
        declared,
        ["occupancy-core/src/finding.rs: pub struct Finding {"],
        "one finding type (occupancy_core::finding::Finding) carries every finding: give it a field rather than declaring another"
    );
    for gone in ["LeveledFinding", "SettledFinding"] {
        assert_eq!(files_with(&sources, gone), Vec::<String>::new(), "{gone}");
    }
}

/// Issue #36: the launch a kernel is checked at is decided in one place,
/// `occupancy-core/src/lint/checked_launch.rs#pub fn checked_launch(`, for the build's declared
/// and undeclared kernels, `check` on sources, logs and binaries, `cargo occupancy build` and
/// `explain` on logs (which asks for the compiled maximum, `at_compiled_max`). The default block
/// is read there alone, and the deciders it replaced are gone.
#[test]
fn the_launch_a_kernel_is_checked_at_is_decided_in_one_place() {
    let sources = library_sources();
    assert_eq!(
        files_with(&sources, "fn checked_launch("),
        ["occupancy-core/src/lint/checked_launch.rs"]
    );
    assert_eq!(
        files_with(&sources, "checked_launch(&"),
        [
            "cargo-occupancy/src/cmd/check.rs",
            "cargo-occupancy/src/cmd/explain.rs",
            "occupancy-build/src/launch_check.rs",
            "occupancy-build/src/rows.rs",
        ],
        "every path that checks or explains a kernel asks checked_launch for its launch"
    );
    assert_eq!(
        files_with(&sources, "DEFAULT_UNDECLARED_BLOCK_THREADS"),
        [
            "occupancy-core/src/lint/checked_launch.rs",
            "occupancy-core/src/lint/evaluate.rs",
        ],
        "the default block is checked_launch's (evaluate.rs re-exports it)"
    );
    for gone in [
        "fn undeclared_launch(",
        "UndeclaredLaunch",
        "DEFAULT_BLOCK:",
        "fn checked_row(",
    ] {
        assert_eq!(files_with(&sources, gone), Vec::<String>::new(), "{gone}");
    }
}

/// Issue #36: a kernel's findings come by one route, the core's pure
/// `occupancy-core/src/kernel.rs#pub fn evaluate(`: the gate's launch lints (`check_kernel`) and
/// the machine-code lints (`evaluate_sass`) of a kernel's values, each leveled. The build calls
/// it for declared and undeclared kernels; every front end of `check`, `explain` and
/// `cargo occupancy build` through `kernel::evaluate_at_launch`, which groups their rows by
/// kernel. A second caller of either check is a second route to findings; the routes it replaced
/// (the build's own calls, the SASS findings of sources and binaries made apart) are gone.
#[test]
fn the_gate_is_evaluated_by_one_route() {
    let sources = library_sources();
    let callers = |needle: &str, definition: &str| -> Vec<String> {
        files_with(&sources, needle)
            .into_iter()
            .filter(|path| path != definition)
            .collect()
    };
    assert_eq!(
        callers("check_kernel(", "occupancy-core/src/lint/evaluate.rs"),
        ["occupancy-core/src/kernel.rs"]
    );
    assert_eq!(
        callers("evaluate_sass(", "occupancy-core/src/lint/evaluate.rs"),
        ["occupancy-core/src/kernel.rs"]
    );
    assert_eq!(
        files_with(&sources, "kernel::evaluate("),
        ["occupancy-build/src/evaluate.rs"]
    );
    assert_eq!(
        files_with(&sources, "evaluate_at_launch("),
        [
            "cargo-occupancy/src/cmd/check.rs",
            "cargo-occupancy/src/cmd/explain.rs",
            "occupancy-build/src/pipeline.rs",
            "occupancy-core/src/kernel.rs",
        ]
    );
    for gone in [
        "fn sass_findings(",
        "binary_sass_findings",
        "AroundTheCode",
        "note_hottest_spill(",
    ] {
        let left: Vec<String> = callers(gone, "occupancy-core/src/kernel.rs");
        assert_eq!(left, Vec::<String>::new(), "{gone}");
    }
}

/// Issue #36: one value carries a kernel on an architecture through every path
/// (`occupancy-core/src/kernel.rs#pub struct KernelOnArch`: the arch's facts, looked up once;
/// the calculator's answer, computed once; the report's row made from them; the compiler's
/// record; the PTX directives; the compile's notes; the bound chosen for `"auto"`). Every front
/// end makes its kernels with `KernelOnArch::new` (the build's rows and spill probes, the
/// CLI's logs and binaries through `log_input::kernel_from_record`), and nothing outside the
/// core computes a kernel's occupancy again. The shapes it replaced (the build's
/// `(ArchFacts, KernelRecord, KernelRow)` tuples, `CheckedRow`, rows made from records apart
/// and wrapped after) are gone.
#[test]
fn one_kernel_on_arch_value_carries_the_build_and_check() {
    let sources = library_sources();
    assert_eq!(
        files_with(&sources, "pub struct KernelOnArch"),
        ["occupancy-core/src/kernel.rs"]
    );
    for gone in [
        "struct CheckedRow",
        "type ArchRow",
        "CheckedRow {",
        "fn from_record(",
        "KernelOnArch::of_row(",
        "row_from_record(",
    ] {
        assert_eq!(files_with(&sources, gone), Vec::<String>::new(), "{gone}");
    }
    assert_eq!(
        files_with(&sources, "KernelOnArch::new("),
        [
            "cargo-occupancy/src/cmd/log_input.rs",
            "occupancy-build/src/rows.rs",
            "occupancy-build/src/spill_help.rs",
        ],
        "every front end makes its kernels with KernelOnArch::new"
    );
    assert_eq!(
        files_with(&sources, "KernelRow::of_record("),
        ["occupancy-core/src/kernel.rs"],
        "a row is made from a compiler's record in KernelOnArch::new alone"
    );
    assert_eq!(
        files_with(&sources, "occupancy_on("),
        [
            "occupancy-core/src/kernel.rs",
            "occupancy-core/src/report/mod.rs"
        ],
        "a kernel's occupancy is computed once, in KernelOnArch::new (or for a row no record stands behind, KernelRow::compute)"
    );
    assert_eq!(
        files_with(&sources, "-> Result<Vec<KernelOnArch>, Error>"),
        [
            "occupancy-build/src/evaluate.rs",
            "occupancy-build/src/launch_check.rs",
            "occupancy-build/src/rows.rs",
        ],
        "the build's rows and a source check's are KernelOnArch values"
    );
}
