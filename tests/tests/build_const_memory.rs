//! `max_const_bytes` on sm_90 and later, where ptxas prints no constant banks: the build reads
//! them from the compiled cubins (`.nv.constant0.<kernel>`, `.nv.constant3`), so the budget is
//! checked there as on sm_80 (where they come from ptxas's report, and equal the cubin's), not
//! reported as uncheckable.

use occupancy_tests::sccache::Fixture;
use occupancy_tests::text;

#[test]
fn a_constant_budget_is_checked_on_sm_90_from_the_cubin() {
    let fixture = Fixture::new("const-budget");
    // The spill fixture's kernel, declared with a constant budget below its parameter bank
    // (ptxas reports 372 bytes of cmem[0] on sm_80) and no minimum that makes it spill.
    std::fs::write(
        fixture.dir.join("src/lib.rs"),
        "pub mod ptx {\n    include!(concat!(env!(\"OUT_DIR\"), \"/occupancy_ptx.rs\"));\n}\n\n\
         #[occupancy::kernel]\nextern \"C\" {\n    \
         #[occupancy::kernel(block = 256, max_const_bytes = 256, max_spill_bytes = 100000, max_stack_bytes = 100000)]\n    \
         pub fn hot(input: *const f32, output: *mut f32, n: i32);\n}\n",
    )
    .unwrap();
    let output = fixture.cargo_build(None, Some("sm_80,sm_90"));
    let log = text(&output);
    assert!(!output.status.success(), "the budget is exceeded:\n{log}");
    for arch in ["sm_80", "sm_90"] {
        assert!(
            log.contains("kernel `hot` uses")
                && log.contains(&format!("bytes of constant memory on {arch}")),
            "const_memory checked on {arch}:\n{log}"
        );
    }
    assert!(
        !log.contains("cannot be checked"),
        "no budget left unchecked:\n{log}"
    );
    let report = fixture.report();
    let findings = report["findings"].as_array().unwrap();
    let on = |arch: &str| {
        findings
            .iter()
            .find(|finding| finding["lint"] == "const_memory" && finding["arch"] == arch)
            .unwrap_or_else(|| panic!("a const_memory finding on {arch}: {report:#}"))
    };
    assert_eq!(on("sm_80")["level"], "deny");
    assert_eq!(on("sm_90")["level"], "deny");
}
