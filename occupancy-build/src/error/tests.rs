//! Every cause's message names what to change, and keeps the error it came from.

use std::error::Error as _;
use std::path::PathBuf;

use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::{Location, LocationKind};

use super::*;

/// A cause, the words its message must contain (the setting, file or declaration to change),
/// and whether it keeps an underlying error as its `source`.
struct Case {
    error: Error,
    names: &'static [&'static str],
    has_source: bool,
}

fn case(error: Error, names: &'static [&'static str], has_source: bool) -> Case {
    Case {
        error,
        names,
        has_source,
    }
}

fn attribute(path: &str, line: u32, column: u32) -> Location {
    Location {
        kind: LocationKind::RustAttribute,
        path: path.to_string(),
        line,
        column,
    }
}

fn io_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory")
}

fn unknown_arch() -> occupancy_core::arch::UnknownArch {
    occupancy_core::arch::lookup("sm_1").unwrap_err()
}

fn arch(name: &str) -> SmArch {
    SmArch::parse(name).unwrap()
}

/// The settings of the build: the builder, the environment, the target archs.
fn setting_cases() -> Vec<Case> {
    vec![
        case(
            Error::DirectoryNotSet {
                variable: "OUT_DIR",
                method: "out_dir",
            },
            &["OUT_DIR is not set", "`.out_dir(...)`"],
            false,
        ),
        case(Error::SourceCheckWithoutOutDir, &["`.out_dir(...)`"], false),
        case(
            Error::BadSassSetting {
                value: "some".into(),
            },
            &["OCCUPANCY_SASS=\"some\"", "`all`", "`needed`"],
            false,
        ),
        case(
            Error::BadLintLevel {
                setting: "OCCUPANCY_LINT_SPILLS".into(),
                error: "loud".parse::<Level>().unwrap_err(),
            },
            &["OCCUPANCY_LINT_SPILLS: ", "`loud`", "`deny`"],
            true,
        ),
        case(
            Error::UnknownLint {
                table: "[package.metadata.occupancy.lints]".into(),
                unknown: "spils".parse::<LintId>().unwrap_err(),
            },
            &[
                "[package.metadata.occupancy.lints]: ",
                "`spils`",
                "`spills`",
            ],
            true,
        ),
        case(
            Error::EmptyArchList {
                setting: "OCCUPANCY_ARCHS",
            },
            &["OCCUPANCY_ARCHS is set but names no architecture"],
            false,
        ),
        case(
            Error::JitArchBelowTargets {
                setting: "`.jit_arch(...)`",
                jit_arch: arch("sm_80"),
                lowest: arch("sm_90"),
            },
            &[
                "`.jit_arch(...)`: sm_80",
                "compute_90",
                "add sm_80 to the target archs",
            ],
            false,
        ),
        case(
            Error::NoArchFacts {
                arch: "sm_1".into(),
                unknown: unknown_arch(),
            },
            &["no facts for sm_1", "remove it from the target archs"],
            true,
        ),
    ]
}

/// The sources, the declarations and Cargo.toml's kernel tables.
fn source_cases() -> Vec<Case> {
    vec![
        case(
            Error::SourceMissing {
                path: PathBuf::from("/crate/kernels/gone.cu"),
            },
            &["/crate/kernels/gone.cu", "relative to the package root"],
            false,
        ),
        case(
            Error::NoSources,
            &["`.file(...)`", "`.source_dir(...)`"],
            false,
        ),
        case(
            Error::DuplicateStem {
                stem: "scale".into(),
                path: PathBuf::from("kernels/b/scale.cu"),
            },
            &["`scale`", "kernels/b/scale.cu", "rename one"],
            false,
        ),
        case(
            Error::DeclaredTwice {
                kernel: "saxpy".into(),
                first: attribute("src/lib.rs", 3, 1),
                second: attribute("src/other.rs", 7, 5),
            },
            &["`saxpy`", "src/lib.rs:3:1", "src/other.rs:7:5"],
            false,
        ),
        case(
            Error::AmbiguousFamily {
                kernel: "affine_f32".into(),
                families: Box::new([
                    FamilyDeclaration::new("affine_*".into(), attribute("src/lib.rs", 1, 1)),
                    FamilyDeclaration::new("*_f32".into(), attribute("src/lib.rs", 3, 0)),
                ]),
            },
            &[
                "`family = \"affine_*\"` (src/lib.rs:1:1)",
                "`family = \"*_f32\"` (src/lib.rs:3:0)",
                "declare `affine_f32` on its own",
            ],
            false,
        ),
        case(
            Error::DeclaredArchNotBuilt {
                declaration: attribute("src/lib.rs", 9, 1),
                kernel: "hot".into(),
                declared: ["sm_100".to_string(), "sm_90".to_string()].into(),
                built: vec!["sm_90".into()],
            },
            &[
                "src/lib.rs:9:1",
                "does not target [\"sm_100\"] (it targets sm_90)",
            ],
            false,
        ),
        case(
            Error::UnknownKernelTable {
                name: "spil".into(),
                suggestions: vec!["spill".into()],
                compiled_kernels: 2,
            },
            &[
                "[package.metadata.occupancy.kernels.spil]",
                "did you mean `spill`?",
            ],
            false,
        ),
    ]
}

/// Files read and written, and the tools run.
fn file_and_tool_cases() -> Vec<Case> {
    vec![
        case(
            Error::UnreadableBaseline {
                path: PathBuf::from("occupancy-baseline.json"),
                error: serde_json::from_str::<u32>("{").unwrap_err(),
            },
            &["occupancy-baseline.json", "OCCUPANCY_BLESS=1"],
            true,
        ),
        case(
            Error::UnsupportedBaselineSchema {
                path: PathBuf::from("occupancy-baseline.json"),
                schema_version: 7,
            },
            &[
                "occupancy-baseline.json",
                "schema_version 7",
                "OCCUPANCY_BLESS=1",
            ],
            false,
        ),
        case(
            Error::Io {
                path: PathBuf::from("/out/occupancy.json"),
                error: io_error(),
            },
            &["/out/occupancy.json"],
            true,
        ),
        case(
            Error::NotNvcc {
                nvcc: PathBuf::from("/usr/bin/nvcc"),
                status: "exit status: 1".into(),
                output: "usage: ...".into(),
            },
            &[
                "`/usr/bin/nvcc --version` did not answer like nvcc (exit status: 1)",
                "point NVCC at the nvcc executable",
            ],
            false,
        ),
        case(
            Error::ArchiveFailed {
                library: "kernels".into(),
                error: cc::Error::from(io_error()),
            },
            &["libkernels.a"],
            true,
        ),
    ]
}

/// Time limits, untrusted caches and outputs that cannot be written safely (issue 23).
fn fault_cases() -> Vec<Case> {
    vec![
        case(
            Error::UntrustedCache {
                path: PathBuf::from("/tmp/cargo-occupancy-check"),
                reason: "belongs to uid 1001, not to you (uid 1000)".into(),
            },
            &[
                "/tmp/cargo-occupancy-check is not used: it belongs to uid 1001",
                "chmod go-w",
            ],
            false,
        ),
        case(
            Error::Unwritable {
                path: PathBuf::from("/out/occupancy.lock"),
                reason: "is a directory".into(),
            },
            &["/out/occupancy.lock cannot be written: it is a directory"],
            false,
        ),
        case(
            Error::ToolNotStarted {
                command: "/opt/cuda/bin/nvdisasm -c -g k.cubin".into(),
                error: io_error(),
            },
            &["`/opt/cuda/bin/nvdisasm -c -g k.cubin`"],
            true,
        ),
        case(
            Error::ToolTimedOut {
                command: "/opt/cuda/bin/nvcc --version".into(),
                limit: std::time::Duration::from_secs(60),
                hint: "set OCCUPANCY_TOOL_TIMEOUT".into(),
            },
            &[
                "`/opt/cuda/bin/nvcc --version` did not finish within 60 s",
                "killed, with every process it started",
                "OCCUPANCY_TOOL_TIMEOUT",
            ],
            false,
        ),
        case(
            Error::BadToolTimeout {
                value: "soon".into(),
            },
            &["OCCUPANCY_TOOL_TIMEOUT=\"soon\"", "above 0"],
            false,
        ),
    ]
}

#[test]
fn every_cause_names_what_to_change_and_keeps_its_source() {
    let cases = setting_cases()
        .into_iter()
        .chain(source_cases())
        .chain(file_and_tool_cases())
        .chain(fault_cases());
    for Case {
        error,
        names,
        has_source,
    } in cases
    {
        let message = error.to_string();
        assert!(message.starts_with("occupancy-build: "), "{message}");
        for name in names {
            assert!(message.contains(name), "{name:?} not in {message:?}");
        }
        assert_eq!(error.source().is_some(), has_source, "{error:?}");
        if let Some(source) = error.source() {
            assert!(message.contains(&source.to_string()), "{message}");
        }
    }
}

#[test]
fn several_failures_say_each_one() {
    let error = Error::Several(vec![
        Error::SourceMissing {
            path: PathBuf::from("a.cu"),
        },
        Error::NvccFailed {
            file: PathBuf::from("b.cu"),
            status: "exit status: 2".into(),
            diagnostics: "b.cu(5): error: identifier \"x\" is undefined".into(),
            command: "nvcc b.cu".into(),
            notes: Vec::new(),
        },
    ]);
    let message = error.to_string();
    assert!(
        message.starts_with("occupancy-build: source a.cu does not exist")
            && message.contains("\n\nnvcc failed to compile b.cu (exit status: 2):")
            && message.contains("b.cu(5): error"),
        "{message}"
    );
}

#[test]
fn a_kernel_table_with_no_close_name_says_how_many_kernels_there_are() {
    let hint = |suggestions: &[&str], compiled_kernels| {
        Error::UnknownKernelTable {
            name: "x".into(),
            suggestions: suggestions.iter().map(ToString::to_string).collect(),
            compiled_kernels,
        }
        .to_string()
    };
    assert!(hint(&[], 1).contains("no declaration; the build compiled 1 kernel ("));
    assert!(hint(&[], 3).contains("; the build compiled 3 kernels ("));
    assert!(hint(&["a", "b"], 3).contains(": did you mean one of `a`, `b`? ("));
}
