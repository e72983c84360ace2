//! ptxas's warnings that change a kernel's resources, on real compiles (nvcc/ptxas 13.0 from
//! scripts/setup-cuda.sh; these tests fail, never skip, without it): each joins its kernel's
//! record and is quoted by the finding that reports what ptxas did (docs/ptxas-formats.md,
//! "Warnings that change resources"). The kernels are `tests/kernels/register_caps.cu` and
//! `.ptx`, and `setmaxnreg.cu`.

mod common;

use common::{binary, repo_root, stderr, stdout};
use std::path::{Path, PathBuf};

use occupancy_core::report::{Finding, Report};

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-warnings-cache")
}

/// `cargo occupancy check --json ARGS` from the repository root: its report, after asserting the
/// exit code (1 when a deny finding stands, 0 otherwise).
fn check(args: &[&str], code: i32) -> Report {
    let output = binary()
        .args(["occupancy", "check", "--json", "--cache-dir"])
        .arg(cache_dir())
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run cargo-occupancy");
    assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
    Report::from_json(&stdout(&output)).unwrap()
}

/// The findings of `lint`, as (kernel, arch) and the finding.
fn found<'r>(report: &'r Report, lint: &str) -> Vec<(String, String, &'r Finding)> {
    report
        .findings
        .iter()
        .filter(|finding| finding.lint.as_str() == lint)
        .map(|finding| {
            (
                finding.kernel.clone().unwrap_or_default(),
                finding.arch.clone().unwrap_or_default(),
                finding,
            )
        })
        .collect()
}

const ARCHS: [&str; 4] = ["sm_80", "sm_90", "sm_100", "sm_120"];

fn with_archs(mut args: Vec<&str>) -> Vec<&str> {
    for arch in ARCHS {
        args.extend(["--arch", arch]);
    }
    args
}

fn registers(report: &Report, kernel: &str, arch: &str) -> u32 {
    report
        .kernels
        .iter()
        .find(|row| row.name == kernel && row.arch == arch)
        .unwrap_or_else(|| panic!("{kernel} on {arch}"))
        .registers
}

/// `__maxnreg__(8)` is raised to ptxas's lower bound of 24 on every arch, and the finding quotes
/// ptxas; `__maxnreg__(300)` (ignored: as without a cap) and a cap ptxas applies are no finding.
#[test]
fn a_register_cap_below_ptxas_s_lower_bound_is_found_on_each_arch() {
    let report = check(&with_archs(vec!["tests/kernels/register_caps.cu"]), 1);
    let caps = found(&report, "register_cap_ignored");
    assert_eq!(caps.len(), ARCHS.len(), "{caps:#?}");
    for ((kernel, arch, finding), expected) in caps.iter().zip(ARCHS) {
        assert_eq!((kernel.as_str(), arch.as_str()), ("raised_cap", expected));
        assert_eq!(finding.level.as_str(), "warn");
        assert_eq!(
            finding.message,
            format!("ptxas raised the register cap of kernel `raised_cap` on {arch} from 8 to 24: `.maxnreg 8` (`__maxnreg__(8)`) is below the fewest registers per thread ptxas compiles a kernel for")
        );
        assert_eq!(
            finding.notes[0],
            "ptxas: ptxas warning : For entry raised_cap adjusting per thread register count of 8 to lower bound of 24"
        );
        assert_eq!(registers(&report, "raised_cap", arch), 24);
        assert!(finding
            .help
            .as_deref()
            .unwrap()
            .starts_with("raise the kernel's `__maxnreg__`/`.maxnreg` to 24 or more"));
    }
    // `-maxrregcount=8` is raised for the kernel it caps (no bound of its own) on each arch;
    // the kernels with `__maxnreg__` keep theirs and get no finding for it.
    let mut args = with_archs(vec!["tests/kernels/register_caps.cu"]);
    args.extend(["--", "-maxrregcount=8"]);
    let report = check(&args, 1);
    let caps = found(&report, "register_cap_ignored");
    let uncapped: Vec<_> = caps.iter().filter(|(k, _, _)| k == "uncapped").collect();
    assert_eq!(uncapped.len(), ARCHS.len(), "{caps:#?}");
    for (_, arch, finding) in &uncapped {
        assert_eq!(
            finding.notes[0],
            format!("ptxas: ptxas warning : For profile {arch} adjusting per thread register count of 8 to lower bound of 24")
        );
        assert!(finding.message.contains("`-maxrregcount=8` is below"));
        assert_eq!(registers(&report, "uncapped", arch), 24);
    }
    assert!(caps
        .iter()
        .all(|(kernel, _, _)| kernel == "uncapped" || kernel == "raised_cap"));
}

/// `-maxntid` and `-minnctapersm` passed to ptxas beside `-maxrregcount` are dropped, for every
/// kernel `-maxrregcount` caps; the finding quotes both warnings.
#[test]
fn ptxas_options_dropped_for_maxrregcount_are_found() {
    let report = check(
        &[
            "tests/kernels/register_caps.cu",
            "--arch",
            "sm_90",
            "--",
            "-maxrregcount=40",
            "-Xptxas",
            "-maxntid=256,-minnctapersm=4",
        ],
        1,
    );
    let caps = found(&report, "register_cap_ignored");
    let kernels: Vec<&str> = caps.iter().map(|(kernel, _, _)| kernel.as_str()).collect();
    assert_eq!(kernels, ["raised_cap", "uncapped"], "{caps:#?}");
    let finding = caps[1].2;
    assert_eq!(
        finding.message,
        "ptxas ignored `-minnctapersm` for kernel `uncapped` on sm_90: beside `-maxrregcount` it drops the option, and `-maxrregcount` alone caps the kernel's registers"
    );
    assert_eq!(
        finding.notes[..2],
        [
            "ptxas: ptxas warning : Conflicting options -maxrregcount and -minnctapersm specified, ignoring -minnctapersm option",
            "ptxas: ptxas warning : Conflicting options -maxrregcount and -maxntid specified, ignoring -maxntid option",
        ]
    );
    assert_eq!(registers(&report, "uncapped", "sm_90"), 40);
}

/// A `.minnctapersm` without `.maxntid` or `.reqntid` (hand-written PTX): ptxas ignores it and
/// warns naming a PTX line; each warning joins the kernel whose text holds that line.
#[test]
fn a_minimum_without_a_block_size_is_found_with_ptxas_s_warning() {
    let report = check(
        &[
            "tests/kernels/register_caps.ptx",
            "--arch",
            "sm_80",
            "--arch",
            "sm_90",
        ],
        0,
    );
    let bounds = found(&report, "unreachable_bound");
    let pairs: Vec<(&str, &str)> = bounds
        .iter()
        .map(|(kernel, arch, _)| (kernel.as_str(), arch.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("without_block_a", "sm_80"),
            ("without_block_a", "sm_90"),
            ("without_block_b", "sm_80"),
            ("without_block_b", "sm_90"),
        ]
    );
    for (kernel, arch, finding) in &bounds {
        let (blocks, line) = if kernel == "without_block_a" {
            (4, 41)
        } else {
            (2, 67)
        };
        assert_eq!(
            finding.message,
            format!("kernel `{kernel}` asks for at least {blocks} blocks per SM, but its PTX gives no block size (`.maxntid`, `.reqntid`): ptxas ignored the minimum on {arch}")
        );
        let quoted = format!("register_caps.ptx, line {line}; warning : .minnctapersm is ignored when neither .maxntid nor .reqntid is specified.");
        let quotes: Vec<&String> = finding
            .notes
            .iter()
            .filter(|note| note.starts_with("ptxas: ptxas "))
            .collect();
        assert_eq!(quotes.len(), 1, "{:#?}", finding.notes);
        assert!(quotes[0].ends_with(&quoted), "{quotes:?}");
        assert!(finding.notes.contains(&format!("for blocks of 256 threads (the launch checked), a minimum of up to 8 blocks per SM takes effect on {arch}: `__launch_bounds__(256, 8)`")));
    }
}

/// ptxas drops `setmaxnreg` without launch bounds (C7508), under `-rdc=true` (C7504) and `-G`
/// (C7505); the finding quotes the reason and gives its fix. `--arch sm_90a`: the SASS of an
/// arch-specific target is read (its records and the SASS name `sm_90a`, its rows `sm_90`).
#[test]
fn a_dropped_setmaxnreg_quotes_ptxas_s_reason() {
    let cases = [
        (
            None,
            "(C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.",
            vec!["unbounded_setmaxnreg"],
            "give the kernel a maximum block size",
        ),
        (
            Some("-rdc=true"),
            "(C7504) Potential Performance Loss: 'setmaxnreg' ignored to maintain compatibility across compilation units.",
            vec!["unbounded_setmaxnreg", "warp_specialized"],
            "compile the kernel's file as a whole program (without `-rdc=true`)",
        ),
        (
            Some("-G"),
            "(C7505) Potential Performance Loss: 'setmaxnreg' ignored to allow debugging.",
            vec!["unbounded_setmaxnreg", "warp_specialized"],
            "build without `-G`",
        ),
    ];
    for (flag, reason, kernels, help) in cases {
        let mut args = vec!["tests/kernels/setmaxnreg.cu", "--arch", "sm_90a"];
        if let Some(flag) = flag {
            args.extend(["--", flag]);
        }
        let report = check(&args, 1);
        let mut dropped = found(&report, "setmaxnreg_ignored");
        dropped.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<&str> = dropped
            .iter()
            .map(|(kernel, _, _)| kernel.as_str())
            .collect();
        assert_eq!(names, kernels, "{flag:?}: {dropped:#?}");
        for (_, arch, finding) in &dropped {
            assert_eq!(arch, "sm_90");
            assert_eq!(finding.notes, [format!("ptxas: ptxas info    : {reason}")]);
            assert!(
                finding.help.as_deref().unwrap().starts_with(help),
                "{:?}",
                finding.help
            );
        }
    }
}

/// Loops on an arch-specific Blackwell target: `sm_100a`'s SASS closes its loops with uniform
/// branches (`BRA.U UP0, ...`) and is read like `sm_100`'s: `spill_in_loop` fires on the loop
/// spill, not on the cold one.
#[test]
fn spills_in_loops_are_found_on_sm_100a() {
    let report = check(&["tests/kernels/sass_evidence.cu", "--arch", "sm_100a"], 1);
    let in_loops: Vec<String> = found(&report, "spill_in_loop")
        .into_iter()
        .map(|(kernel, _, _)| kernel)
        .collect();
    assert_eq!(in_loops, ["loop_spill"]);
    let spills: Vec<String> = found(&report, "spills")
        .into_iter()
        .map(|(kernel, _, _)| kernel)
        .collect();
    assert!(spills.contains(&"cold_spill".to_string()), "{spills:?}");
}
