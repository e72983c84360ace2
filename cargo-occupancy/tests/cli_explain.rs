//! `cargo occupancy explain`: facts from build reports, a ptxas log, or the command line.

mod common;

use common::{cargo_occupancy_in, fixtures, stderr, stdout};
use std::process::Output;

fn explain(args: &[&str]) -> Output {
    let args: Vec<&str> = std::iter::once("explain")
        .chain(args.iter().copied())
        .collect();
    cargo_occupancy_in(&args, &fixtures())
}

#[test]
fn from_build_reports_by_short_name() {
    let output = explain(&["sgemm_tiled", "--arch", "sm_90", "--dir", "reports"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn from_a_ptxas_log_with_a_block_override() {
    // window_sum<3> was compiled with __launch_bounds__(128, 8): 64 registers, spills.
    let output = explain(&[
        "corpus::spills::window_sum<3>",
        "--log",
        "logs/cmake-build.log",
        "--arch",
        "sm_80",
        "--block",
        "128",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("void corpus::spills::window_sum<3>(float*, float const*) on sm_80 (Ampere (GA100) 8.0), block 128"), "{text}");
    assert!(
        text.contains("spills 1768 B stored / 2580 B loaded"),
        "{text}"
    );
    assert!(
        text.contains("ptxas spilled 1768 B stored / 2580 B loaded per thread"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

/// `tests/kernels/unreachable_bounds.cu` compiled by nvcc 13.0 for sm_80, sm_86 and sm_90
/// (`logs/unreachable-bounds.log`, its compile times set to 1 ms) with its compute_80 PTX: what
/// ptxas did with a minimum it ignored (sm_86 holds 1536 threads, not 4 x 1024) and with one
/// shared memory keeps out of reach, and the largest minimum that takes effect: the findings of
/// `unreachable_bound`, from the same check as `cargo occupancy check`.
#[test]
fn a_minimum_ptxas_ignored_or_that_cannot_take_effect_is_explained() {
    let with_ptx = |kernel: &str, arch: &str| {
        explain(&[
            kernel,
            "--log",
            "logs/unreachable-bounds.log",
            "--ptx",
            "logs/unreachable-bounds.ptx",
            "--arch",
            arch,
        ])
    };
    let ignored = with_ptx("ignored_minimum", "sm_86");
    assert_eq!(ignored.status.code(), Some(0), "{}", stderr(&ignored));
    let text = stdout(&ignored);
    assert!(text.starts_with("ignored_minimum on sm_86 (Ampere (GA10x) 8.6), block 1024\n  compiled with __launch_bounds__(1024, 4)"), "{text}");
    assert!(text.contains("  - warn[unreachable_bound]: kernel `ignored_minimum` asks for at least 4 blocks of 1024 threads per SM, more than sm_86 holds: ptxas ignored the minimum; the largest it honours there is 1\n"), "{text}");
    assert!(text.contains("      note: ptxas: ptxas warning : Value of threads per SM for entry ignored_minimum is out of range. .minnctapersm will be ignored\n"), "{text}");
    insta::assert_snapshot!("ignored_minimum_sm_86", text);
    let capped = with_ptx("shared_capped", "sm_80");
    assert_eq!(capped.status.code(), Some(0), "{}", stderr(&capped));
    let text = stdout(&capped);
    assert!(text.contains("shared memory let only 3 reside on sm_80: its registers are capped for blocks that cannot run; the largest minimum that can take effect is 3"), "{text}");
    insta::assert_snapshot!("shared_capped_sm_80", text);
    // A minimum every arch honours: nothing to say.
    let reachable = stdout(&with_ptx("reachable_minimum", "sm_90"));
    assert!(!reachable.contains("What ptxas did"), "{reachable}");
    // The log alone: ptxas's warning, and what the launch explained could ask for instead.
    let alone = explain(&[
        "ignored_minimum",
        "--log",
        "logs/unreachable-bounds.log",
        "--arch",
        "sm_90",
    ]);
    let text = stdout(&alone);
    assert!(text.contains("  - warn[unreachable_bound]: ptxas ignored the minimum blocks per SM of kernel `ignored_minimum` on sm_90\n"), "{text}");
    assert!(text.contains("      note: for blocks of 256 threads (the launch checked), a minimum of up to 8 blocks per SM takes effect on sm_90: `__launch_bounds__(256, 8)`\n"), "{text}");
}

#[test]
fn direct_facts_on_two_archs() {
    let output = explain(&[
        "my_kernel",
        "--registers",
        "72",
        "--static-smem",
        "8192",
        "--block",
        "256",
        "--arch",
        "sm_80",
        "--arch",
        "sm_90",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("my_kernel on sm_80"), "{text}");
    assert!(text.contains("my_kernel on sm_90"), "{text}");
    // 72 registers: 2304 per warp, 7 warps per sub-partition → 28 warps → 3 blocks of 8 warps.
    assert!(
        text.contains("→ 3 blocks/SM × 8 warps = 24 of 64 warps: 37.5% occupancy"),
        "{text}"
    );
    // Every knob line has blocks and occupancy from the calculator.
    assert!(
        text.contains(
            "__launch_bounds__(256, 4) or max_registers = 64 (now 72): 4 blocks/SM, 50.0%"
        ),
        "{text}"
    );
    for curve in [
        "Occupancy vs threads per block",
        "Occupancy vs registers per thread",
        "Occupancy vs shared memory per block",
    ] {
        assert_eq!(text.matches(curve).count(), 2, "{curve}");
    }
}

#[test]
fn a_launch_over_the_bounds_is_explained_as_a_bug() {
    let output = explain(&[
        "k",
        "--registers",
        "32",
        "--max-threads",
        "128",
        "--block",
        "256",
        "--arch",
        "sm_90",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("The launch cannot start on sm_90"), "{text}");
    assert!(
        text.contains("__launch_bounds__ maximum of 128 threads"),
        "{text}"
    );
}

#[test]
fn errors_exit_2_with_what_to_do() {
    let unknown = explain(&["nope", "--dir", "reports"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no kernel named `nope`; the kernels are:"),
        "{}",
        stderr(&unknown)
    );
    assert!(
        stderr(&unknown).contains("histogram"),
        "{}",
        stderr(&unknown)
    );

    let ambiguous = explain(&["s", "--dir", "reports"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(
        stderr(&ambiguous).contains("matches several kernels"),
        "{}",
        stderr(&ambiguous)
    );

    let no_arch = explain(&["k", "--registers", "32"]);
    assert_eq!(no_arch.status.code(), Some(2));
    assert!(
        stderr(&no_arch).contains("name the architecture with --arch"),
        "{}",
        stderr(&no_arch)
    );

    let missing_log = explain(&["k", "--log", "logs/absent.log"]);
    assert_eq!(missing_log.status.code(), Some(2));
    assert!(
        stderr(&missing_log).contains("cannot read `logs/absent.log`: "),
        "{}",
        stderr(&missing_log)
    );

    let wrong_arch = explain(&["histogram", "--dir", "reports", "--arch", "sm_75"]);
    assert_eq!(wrong_arch.status.code(), Some(2));
    assert!(
        stderr(&wrong_arch).contains("was not compiled for sm_75; its facts cover: sm_80, sm_90"),
        "{}",
        stderr(&wrong_arch)
    );

    let bad_carveout = explain(&["histogram", "--dir", "reports", "--carveout", "150"]);
    assert_eq!(bad_carveout.status.code(), Some(2));
    assert!(
        stderr(&bad_carveout).contains("--carveout `150`"),
        "{}",
        stderr(&bad_carveout)
    );
}
