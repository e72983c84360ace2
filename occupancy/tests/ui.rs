//! Compile-fail tests (one per kind of mistake, reviewed .stderr files) and pass tests.
//! `TRYBUILD=overwrite cargo test -p occupancy --test ui` rewrites the .stderr files: review them.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass_*.rs");
    cases.compile_fail("tests/ui/fail_*.rs");
}
