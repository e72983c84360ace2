//! The build gate under a compiler cache: nvcc wrapped by sccache (which the `cc` crate puts in
//! front of nvcc when `RUSTC_WRAPPER` names it) must give the checks the same ptxas report on a
//! cache hit as on a miss and as without sccache, and the build must fail the same way.
//!
//! Under sccache occupancy-build runs nvcc's steps itself, each compiler through the cache
//! (`occupancy-build/src/compile/steps.rs`): sccache 0.16, run as one nvcc command, fails one PTX
//! for several archs, `nvcc -c` of two archs and `.ptx` inputs.
//!
//! The `spill` fixture (a kernel whose declared `min_blocks_per_sm` makes ptxas spill, so the
//! `spills` lint denies the build) is built:
//!
//! 0. without sccache, for sm_80: the reference report and error;
//! 1. with a private sccache server (its own cache directory and config, a free loopback port,
//!    an idle timeout, `--stop-server` at the end) and an empty cache: cicc and ptxas miss;
//! 2. the same crate after its build-script output (OUT_DIR, with occupancy-build's per-file
//!    cache) is deleted, so only sccache can avoid compiling: cicc and ptxas must both hit;
//! 3. a second copy of the crate at another path with another package name (another OUT_DIR):
//!    cicc hashes the source's path and runs again, ptxas (the shipped PTX, which names no
//!    path) must hit;
//! 4. for sm_80 and sm_90 from one PTX (`-arch=compute_80 -code=sm_80,sm_90`): cicc and sm_80's
//!    ptxas hit, sm_90's ptxas runs, nothing is compiled by nvcc alone.
//!
//! Builds 1 to 3 must give the reference report (paths and names aside) and the same error
//! lines, with no source replayed from occupancy-build's own cache; build 4 the same sm_80
//! result plus sm_90's.
//!
//! Then each form sccache 0.16 fails as one nvcc command (two archs from one PTX with
//! `compile_ptx`, `compile_lib` for two archs, a `.ptx_file`) is built three times, each from an
//! empty OUT_DIR and with a server of its own: without sccache, with an empty cache (every
//! compiler step misses), and again (every step hits). Every build ships the same bytes (the
//! PTX, the static library) and gives the same report and errors, and none falls back to nvcc
//! alone.
//!
//! The fixture builds share target/e2e/target with build_e2e.rs, so occupancy-build and its
//! dependencies are compiled once for both.

use occupancy_tests::sccache::{
    arch_results, build, check_two_arch_build, error_lines, Fixture, SccacheServer,
};
use occupancy_tests::{nvcc, text};
use serde_json::json;

#[test]
fn ptxas_report_survives_an_sccache_hit() {
    let server = SccacheServer::start();
    let first = Fixture::new("sccache");
    let other = Fixture::new("sccache-other");
    let one_arch = Some("sm_80");

    // 0. Without sccache: what the gate says when nvcc runs alone.
    let (plain_report, plain_errors) = first.reference(one_arch);
    first.remove_build_outputs();

    // 1. An empty cache: nvcc's cicc and ptxas steps run.
    let (miss_report, miss_stats, miss_log) = build(&first, &server, one_arch);
    let miss_archs = arch_results(&miss_report);
    assert_eq!(miss_archs.len(), 1, "{miss_report:#}");
    assert!(miss_archs[0]["registers"].as_u64().unwrap() > 0);
    assert!(miss_archs[0]["spill_store_bytes"].as_u64().unwrap() > 0);
    assert_eq!(miss_stats.hits("CUBIN"), 0, "a cold cache: {miss_stats}");
    assert!(
        miss_stats.misses("CUBIN") >= 1,
        "nvcc ran under sccache, which ran ptxas: {miss_stats}"
    );
    assert_eq!(
        miss_report, plain_report,
        "the report under sccache equals the report without it"
    );
    assert_eq!(error_lines(&miss_log, &first), plain_errors);

    // 2. Same crate, OUT_DIR deleted: only sccache can skip the compile, and it skips all of it.
    first.remove_build_outputs();
    let (same_path_report, same_path_stats, same_path_log) = build(&first, &server, one_arch);
    assert_eq!(
        same_path_stats.misses("CUBIN") + same_path_stats.misses("PTX"),
        0,
        "every cicc and ptxas step replayed: {same_path_stats}"
    );
    assert!(
        same_path_stats.hits("CUBIN") >= 1 && same_path_stats.hits("PTX") >= 1,
        "{same_path_stats}"
    );
    assert_eq!(
        same_path_report, miss_report,
        "the report on an sccache hit equals the report on a miss"
    );
    assert_eq!(
        error_lines(&same_path_log, &first),
        error_lines(&miss_log, &first)
    );

    // 3. Another copy at another path (another OUT_DIR): cicc's step hashes the source's path,
    //    so it runs again; ptxas assembles the shipped PTX, stripped of the `-lineinfo` PTX's
    //    `.file` directives that name the path, so it hits. The report is the same.
    let (other_path_report, other_path_stats, other_path_log) = build(&other, &server, one_arch);
    assert_eq!(
        (
            other_path_stats.misses_by_kind(),
            other_path_stats.hits_by_kind()
        ),
        (json!({ "PTX": 1 }), json!({ "CUBIN": 1 })),
        "cicc ran again at the other path, ptxas hit: {other_path_stats}"
    );
    assert_eq!(
        other_path_report, miss_report,
        "the report on an sccache hit equals the report on a miss"
    );
    assert_eq!(
        error_lines(&other_path_log, &other),
        error_lines(&miss_log, &first)
    );

    // 4. Two real archs from one PTX (`-arch=compute_80 -code=sm_80,sm_90`), which sccache
    //    0.16 cannot run as one nvcc command (it drops a ptxas step and fatbinary fails): nvcc's
    //    steps run through it, and both archs are checked exactly as without sccache.
    first.remove_build_outputs();
    let (two_arch_report, two_arch_stats, two_arch_log) = build(&first, &server, None);
    check_two_arch_build(
        &two_arch_report,
        &two_arch_stats,
        &two_arch_log,
        &first,
        &miss_archs[0],
    );
}

/// A form of compile sccache 0.16 fails as one nvcc command, built without sccache, with an
/// empty cache and again: the same products, report and errors each time, every compiler step
/// (`steps`, sccache's counters by kind) a miss and then a hit, nothing compiled by nvcc alone.
fn check_form(fixture: &Fixture, steps: serde_json::Value) {
    let (reference_report, reference_errors) = fixture.failed_build(None);
    let reference_products = fixture.products();
    let server = SccacheServer::start_with(&fixture.name, "", None);
    let mut timings = Vec::new();
    for (build_number, cache) in ["empty", "warm"].into_iter().enumerate() {
        fixture.remove_build_outputs();
        let started = std::time::Instant::now();
        let (report, stats, log) = build(fixture, &server, None);
        timings.push(format!("{cache} {:.1} s", started.elapsed().as_secs_f64()));
        let (expected_misses, expected_hits) = match build_number {
            0 => (&steps, &json!({})),
            _ => (&json!({}), &steps),
        };
        assert_eq!(
            (&stats.misses_by_kind(), &stats.hits_by_kind()),
            (expected_misses, expected_hits),
            "{}, {cache} cache: every step through sccache: {stats}",
            fixture.name
        );
        assert_eq!(stats.not_cacheable(), 0, "{}: {stats}", fixture.name);
        assert!(
            !log.contains("compiled without the compiler cache"),
            "{}, {cache} cache: no rerun of nvcc alone:\n{log}",
            fixture.name
        );
        assert_eq!(report, reference_report, "{}, {cache} cache", fixture.name);
        assert_eq!(error_lines(&log, fixture), reference_errors);
        assert!(
            fixture.products() == reference_products,
            "{}, {cache} cache: the build ships what the build without sccache ships",
            fixture.name
        );
    }
    eprintln!(
        "{}: builds through sccache: {}",
        fixture.name,
        timings.join(", ")
    );
}

#[test]
fn one_ptx_for_two_archs_is_cached_step_by_step() {
    let fixture = Fixture::new("cached-two-arch-ptx");
    check_form(&fixture, json!({ "PTX": 1, "CUBIN": 2 }));
}

#[test]
fn a_static_library_for_two_archs_is_cached_step_by_step() {
    let fixture = Fixture::with_build_script(
        "cached-lib",
        "fn main() {\n    occupancy_build::Build::new().file(\"kernels/hot.cu\").compile_lib(\"hot\");\n}\n",
    );
    // cicc, ptxas per arch, cudafe++ (`CUDA (Device code)`) and the host compile (`C/C++`).
    check_form(
        &fixture,
        json!({ "PTX": 1, "CUBIN": 2, "CUDA (Device code)": 1, "C/C++": 1 }),
    );
}

#[test]
fn a_ptx_file_is_cached_step_by_step() {
    let fixture = Fixture::with_build_script(
        "cached-ptx-input",
        "fn main() {\n    occupancy_build::Build::new().ptx_file(\"kernels/hot.ptx\").compile_ptx();\n}\n",
    );
    // The kernel's PTX, with the bounds its declaration asks for.
    let include = fixture.dir.join("bounds");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(
        include.join("occupancy_bounds.h"),
        "#define OCCUPANCY_BOUNDS_hot __launch_bounds__(256, 8)\n",
    )
    .unwrap();
    let output = std::process::Command::new(nvcc())
        .args(["-ptx", "-arch=compute_80", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(fixture.dir.join("kernels/hot.ptx"))
        .arg(fixture.dir.join("kernels/hot.cu"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    // ptxas per arch; no cicc.
    check_form(&fixture, json!({ "CUBIN": 2 }));
}
