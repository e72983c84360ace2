//! The build gate under a compiler cache: nvcc wrapped by sccache (which the `cc` crate puts in
//! front of nvcc when `RUSTC_WRAPPER` names it) must give the checks the same ptxas report on a
//! cache hit as on a miss and as without sccache, and the build must fail the same way.
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
//! 4. for sm_80 and sm_90 from one PTX (`-arch=compute_80 -code=sm_80,sm_90`), which sccache
//!    0.16 cannot compile: occupancy-build must compile it without the cache and say so.
//!
//! Builds 1 to 3 must give the reference report (paths and names aside) and the same error
//! lines, with no source replayed from occupancy-build's own cache; build 4 the same sm_80
//! result plus sm_90's.
//!
//! The fixture builds share target/e2e/target with build_e2e.rs, so occupancy-build and its
//! dependencies are compiled once for both.

use occupancy_tests::sccache::{
    arch_results, build, check_two_arch_build, error_lines, Fixture, SccacheServer,
};
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
    //    0.16 cannot run (it drops a ptxas step and fatbinary fails): occupancy-build compiles
    //    without the cache, warns, and checks both archs exactly as without sccache.
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
