//! End-to-end tests of the build gate: fixture crates (tests/fixtures/) built with cargo and the
//! real nvcc through `occupancy-build`, their diagnostics and reports snapshot-tested.
//!
//! Every fixture build shares one CARGO_TARGET_DIR (target/e2e/target) so occupancy-build and
//! its dependencies compile once. nvcc runs through tests/fixtures/nvcc-logger.sh, which logs each
//! invocation, so the tests can count what was compiled.

use std::collections::BTreeMap;
use std::process::Output;

use occupancy_tests::fixture::Fixture;
use occupancy_tests::{assert_success, e2e_root, text};

/// The build script's stderr as cargo shows it on failure, with machine paths redacted.
fn build_script_stderr(output: &Output, fixture: &Fixture) -> String {
    let all = String::from_utf8_lossy(&output.stderr);
    let section = all
        .split("--- stderr")
        .nth(1)
        .unwrap_or_else(|| panic!("no build-script stderr in:\n{all}"));
    section
        .lines()
        .map(|line| line.strip_prefix("  ").unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(&e2e_root().join("target").display().to_string(), "[TARGET]")
        .replace(&fixture.dir.display().to_string(), "[FIXTURE]")
        .lines()
        .map(redact_build_dir)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// `[TARGET]/debug/build/<package>-<hash>/out` → `[TARGET]/debug/build/[PACKAGE]/out`: the hash
/// depends on where the repository is checked out.
fn redact_build_dir(line: &str) -> String {
    match (line.find("/debug/build/"), line.find("/out/")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}/debug/build/[PACKAGE]{}", &line[..start], &line[end..])
        }
        _ => line.to_string(),
    }
}

/// The report without what differs between machines (none of it is a path today).
fn stable_report(mut report: serde_json::Value) -> serde_json::Value {
    report["crate"] = "[crate]".into();
    for list in ["kernels", "findings"] {
        for item in report[list].as_array_mut().into_iter().flatten() {
            item["crate"] = "[crate]".into();
        }
    }
    report
}

/// Whether cargo ran the fixture's build script in this build.
fn ran_build_script(output: &Output) -> bool {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .any(|line| line.contains("Running") && line.contains("build-script-build"))
}

#[test]
fn clean_crate_passes_and_writes_the_report() {
    let fixture = Fixture::new("clean", "clean");
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    assert!(
        !text(&output).contains("occupancy: "),
        "no findings expected:\n{}",
        text(&output)
    );
    insta::assert_json_snapshot!("clean_report", stable_report(fixture.report()));
    // The settings came from `cargo metadata` run as `$CARGO`: the manifest is watched, the
    // variable cargo sets itself is not.
    let lines = fixture.build_script_output();
    let manifest = format!(
        "cargo:rerun-if-changed={}",
        fixture.dir.join("Cargo.toml").display()
    );
    assert!(lines.lines().any(|line| line == manifest), "{lines}");
    assert!(
        !lines
            .lines()
            .any(|line| line == "cargo:rerun-if-env-changed=CARGO"),
        "{lines}"
    );
}

#[test]
fn spill_fails_the_build_at_the_attribute() {
    let fixture = Fixture::new("spill", "spill");
    let output = fixture.cargo_build(&[]);
    assert!(
        !output.status.success(),
        "a spilling kernel must fail the build:\n{}",
        text(&output)
    );
    let stderr = build_script_stderr(&output, &fixture);
    assert!(
        stderr.contains("error[spills]: kernel `hot` spills"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--> src/lib.rs:9:5"),
        "points at the attribute: {stderr}"
    );
    insta::assert_snapshot!("spill_diagnostics", stderr);
    let report = fixture.report();
    assert_eq!(report["findings"][0]["lint"], "spills");
    assert_eq!(report["findings"][0]["level"], "deny");
}

#[test]
fn warn_level_warns_and_passes() {
    let fixture = Fixture::new("spill", "spill-warn");
    let output = fixture.cargo_build(&[("OCCUPANCY_LINT_SPILLS", "warn")]);
    assert_success(&output);
    let warnings: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.contains("occupancy: warning[spills]"))
        .map(|line| line.replace(&fixture.name, "[crate]"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one concise warning per lint:\n{}",
        text(&output)
    );
    insta::assert_snapshot!("spill_warnings", warnings.join("\n"));
}

#[test]
fn regression_against_the_baseline_fails_and_blessing_fixes_it() {
    let fixture = Fixture::new("regress", "regress");
    let lock = fixture.dir.join("occupancy.lock");
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    let blessed = std::fs::read_to_string(&lock).expect("OCCUPANCY_BLESS=1 writes occupancy.lock");
    assert_success(&fixture.cargo_build(&[]));

    fixture.edit("kernels/reduce.cu", "#define LIVE 8", "#define LIVE 40");
    let output = fixture.cargo_build(&[]);
    assert!(
        !output.status.success(),
        "more registers than the baseline must fail:\n{}",
        text(&output)
    );
    let stderr = build_script_stderr(&output, &fixture);
    assert!(
        stderr.contains("error[regression]: kernel `reduce` is worse than the baseline on sm_90"),
        "{stderr}"
    );
    assert!(stderr.contains("--> src/lib.rs:7:1"), "{stderr}");
    insta::assert_snapshot!("regression_diagnostics", stderr);

    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    assert_ne!(
        std::fs::read_to_string(&lock).unwrap(),
        blessed,
        "blessing rewrote the baseline"
    );
    assert_success(&fixture.cargo_build(&[]));
}

#[test]
fn rebuilds_rerun_and_recompile_exactly_what_changed() {
    let fixture = Fixture::new("clean", "incremental");
    assert_success(&fixture.cargo_build(&[]));
    let first = fixture.nvcc_compiles();
    assert_eq!(first.len(), 2, "one nvcc per .cu file: {first:#?}");

    // Nothing touched: cargo does not even run the build script.
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    assert!(
        !ran_build_script(&output),
        "nothing changed, yet the build script ran:\n{}",
        text(&output)
    );
    assert_eq!(fixture.nvcc_compiles().len(), 2);

    // A header included by saxpy.cu only: the build script reruns and recompiles saxpy.cu alone.
    fixture.edit(
        "kernels/common.cuh",
        "#define SAXPY_UNROLL 1",
        "#define SAXPY_UNROLL 1 // touched",
    );
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    assert!(
        ran_build_script(&output),
        "an included header changed: the build script must rerun"
    );
    let after_header = fixture.nvcc_compiles();
    assert_eq!(after_header.len(), 3, "{after_header:#?}");
    assert!(after_header[2].ends_with("saxpy.cu"), "{}", after_header[2]);

    // One of the two .cu files changes: only that one is recompiled.
    fixture.edit("kernels/scale.cu", "y[i] = a * y[i];", "y[i] = y[i] * a;");
    assert_success(&fixture.cargo_build(&[]));
    let after_source = fixture.nvcc_compiles();
    assert_eq!(after_source.len(), 4, "{after_source:#?}");
    assert!(after_source[3].ends_with("scale.cu"), "{}", after_source[3]);
}

#[test]
fn missing_nvcc_says_how_to_install_it_and_how_to_opt_out() {
    let fixture = Fixture::new("clean", "no-nvcc");
    let missing = [("NVCC", "/nonexistent/bin/nvcc")];
    let output = fixture.cargo_build(&missing);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = build_script_stderr(&output, &fixture);
    assert!(
        stderr.contains("NVCC=/nonexistent/bin/nvcc, which is not an executable file"),
        "{stderr}"
    );
    assert!(stderr.contains("pip install nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime nvidia-cuda-cccl"), "{stderr}");
    assert!(stderr.contains("OCCUPANCY_SKIP=1"), "{stderr}");

    // Explicit opt-outs pass, and say loudly that nothing was checked.
    for opt_out in [("OCCUPANCY_SKIP", "1"), ("DOCS_RS", "1")] {
        let output = fixture.cargo_build(&[missing[0], opt_out]);
        assert_success(&output);
        assert!(
            text(&output).contains("no kernel was compiled and nothing was checked"),
            "{opt_out:?}:\n{}",
            text(&output)
        );
    }
}

#[test]
fn nvcc_errors_are_shown_as_nvcc_wrote_them() {
    let fixture = Fixture::new("clean", "nvcc-error");
    fixture.edit(
        "kernels/scale.cu",
        "y[i] = a * y[i];",
        "y[i] = a * undefined_name;",
    );
    let output = fixture.cargo_build(&[]);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = build_script_stderr(&output, &fixture);
    assert!(
        stderr.contains("nvcc failed to compile [FIXTURE]/kernels/scale.cu"),
        "{stderr}"
    );
    assert!(
        stderr.contains("scale.cu(5): error: identifier \"undefined_name\" is undefined"),
        "{stderr}"
    );
}

#[test]
fn declarations_are_checked_against_what_was_compiled() {
    let fixture = Fixture::new("mismatch", "mismatch");
    let output = fixture.cargo_build(&[]);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = build_script_stderr(&output, &fixture);
    // __launch_bounds__(128) in the .cu, block = 256 and min_blocks_per_sm = 4 in Rust.
    assert!(
        stderr.contains(
            "error[unlaunchable]: kernel `narrow` was compiled for at most 128 threads per block"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("error[bounds_mismatch]: kernel `narrow` was not compiled with the declared launch bounds"), "{stderr}");
    // A typo in a declared name: the PTX file made elsewhere has `external_scale`. Whether a
    // declaration matched a kernel is for every `Build` of the build script to say: a failing
    // build names it as a note, and the attribute fails once the build script passes.
    assert!(
        stderr.contains(
            "note[missing_kernel]: declared kernel `external_scal` is not in any compiled output (src/lib.rs:13:1): did you mean `name = \"external_scale\"`?"
        ),
        "{stderr}"
    );
    insta::assert_snapshot!("mismatch_diagnostics", stderr);
    fixture.edit(
        "src/lib.rs",
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 4)]",
        "#[occupancy::kernel(block = 128)]",
    );
    let output = fixture.cargo_build(&[]);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = text(&output);
    assert!(
        stderr.contains(
            "error: missing_kernel: declared kernel `external_scal` is not in any compiled output"
        ) && stderr.contains("= help: did you mean `name = \"external_scale\"`?")
            && stderr.contains("--> src/lib.rs:13:1"),
        "the attribute fails with the suggestion:\n{stderr}"
    );
    // The PTX made elsewhere was assembled by ptxas and checked like the rest.
    let report = fixture.report();
    let external = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|kernel| kernel["name"] == "external_scale")
        .unwrap();
    assert_eq!(external["rust_name"], "external_scale");
    assert!(external["registers"].as_u64().unwrap() > 0, "{external}");
}

#[test]
fn the_cuda_side_takes_its_bounds_from_the_rust_declaration() {
    let fixture = Fixture::new("clean", "bounds");
    assert_success(&fixture.cargo_build(&[]));
    let minnctapersm =
        |report: &serde_json::Value| report["kernels"][0]["min_blocks_per_sm"].clone();
    assert_eq!(fixture.report()["kernels"][0]["name"], "saxpy");
    assert_eq!(minnctapersm(&fixture.report()), 4);
    // Editing the Rust declaration alone recompiles the kernel with the new bounds.
    fixture.edit(
        "src/lib.rs",
        "min_blocks_per_sm = 4",
        "min_blocks_per_sm = 2",
    );
    assert_success(&fixture.cargo_build(&[]));
    assert_eq!(
        minnctapersm(&fixture.report()),
        2,
        "bounds follow the declaration"
    );
    let compiles = fixture.nvcc_compiles();
    assert_eq!(
        compiles.len(),
        3,
        "scale.cu does not name saxpy's bounds: not recompiled\n{compiles:#?}"
    );
    assert!(compiles[2].ends_with("saxpy.cu"), "{}", compiles[2]);
    let header = std::fs::read_dir(e2e_root().join("target/debug/build"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path().join("out/occupancy_bounds.h"))
        .find(|path| path.exists() && path.to_string_lossy().contains(&fixture.name))
        .expect("occupancy_bounds.h in OUT_DIR");
    let header = std::fs::read_to_string(header).unwrap();
    assert!(
        header.contains("#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(256, 2)"),
        "{header}"
    );
    assert!(
        header.contains("#define OCCUPANCY_BOUNDS_scale __launch_bounds__(128)"),
        "{header}"
    );

    // OCCUPANCY_SKIP with nvcc present: compiled, not checked, and said so.
    let output = fixture.cargo_build(&[("OCCUPANCY_SKIP", "1")]);
    assert_success(&output);
    assert!(
        text(&output).contains("kernels were compiled but nothing was checked"),
        "{}",
        text(&output)
    );
    assert!(fixture.report()["skipped"]
        .as_str()
        .unwrap()
        .contains("OCCUPANCY_SKIP"));
}

#[test]
fn two_builds_of_one_crate_are_checked_as_one_crate() {
    // candle's shape: PTX for run-time loading and a static library for FFI, two `Build`s.
    let fixture = Fixture::new("products", "products");
    let output = fixture.cargo(&["build", "--offline"], &[]);
    assert_success(&output);
    // A green build reads in a few lines: one per lint and product, callees by name.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let printed: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            !line.starts_with("Compiling ") && !line.starts_with("Blocking ")
        })
        .collect();
    assert!(printed.len() <= 15, "{} lines:\n{stderr}", printed.len());
    let calls: Vec<&&str> = printed
        .iter()
        .filter(|line| line.contains("warning[call]"))
        .collect();
    assert_eq!(calls.len(), 2, "one `call` line per product:\n{stderr}");
    // The undeclared kernels were checked at the launch their kernel table gives, and the
    // summary says so (the table names kernels of the library, a later `Build` than the PTX's).
    assert!(
        printed.iter().any(|line| line.contains(
            "warning[undeclared_kernel]: 2 undeclared kernels are compiled without a declaration"
        ) && line.contains(
            "checked at block (32, 4) from [package.metadata.occupancy.kernels.\"mul_mat_vec_*\"]"
        )),
        "{stderr}"
    );
    assert!(
        calls
            .iter()
            .all(|line| line.contains("calls `__assertfail`") && !line.contains("`R2`")),
        "{stderr}"
    );
    let report = fixture.report();
    let products: BTreeMap<String, String> = report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| {
            (
                source["path"].as_str().unwrap().to_string(),
                source["product"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        products,
        BTreeMap::from(
            [
                ("kernels/ptx/affine.cu", "PTX"),
                ("kernels/ptx/copy.cu", "PTX"),
                ("kernels/lib/moe.cu", "library `moe`"),
                ("kernels/lib/mmvq.cu", "library `moe`"),
            ]
            .map(|(path, product)| (path.to_string(), product.to_string()))
        ),
        "{report}"
    );
    // Rows of both products, every kernel on both archs, each declaration's kernels with it.
    let rows: BTreeMap<(String, String), Option<String>> = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                (
                    row["demangled"].as_str().unwrap().to_string(),
                    row["arch"].as_str().unwrap().to_string(),
                ),
                row["rust_name"].as_str().map(str::to_string),
            )
        })
        .collect();
    for (kernel, declared) in [
        ("affine_f32", Some("affine")),
        ("affine_f64", Some("affine")),
        ("affine_i64", Some("affine")),
        ("copy_f32", Some("copy_f32")),
        ("moe_gemm", Some("launch_moe_gemm")),
        (
            "void mul_mat_vec_q<1>(float const*, float const*, float*, int)",
            None,
        ),
        (
            "void mul_mat_vec_q<2>(float const*, float const*, float*, int)",
            None,
        ),
    ] {
        for arch in ["sm_80", "sm_90"] {
            assert_eq!(
                rows.get(&(kernel.to_string(), arch.to_string())),
                Some(&declared.map(str::to_string)),
                "{kernel} on {arch}: {rows:?}"
            );
        }
    }
    assert_eq!(rows.len(), 14, "{rows:?}");
    for row in report["kernels"].as_array().unwrap() {
        let expected = match row["demangled"].as_str().unwrap() {
            name if name.contains("mul_mat_vec_q") => 128,
            "copy_f32" | "affine_f32" | "affine_f64" | "affine_i64" => 256,
            _ => 128, // moe_gemm, declared with block = 128
        };
        assert_eq!(row["block"], expected, "{row}");
    }
    let denied: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["level"] == "deny")
        .collect();
    assert!(denied.is_empty(), "{denied:?}");
    // The crate compiles and its declarations read the facts of both products.
    let output = fixture.cargo(&["test", "--offline", "--lib"], &[]);
    assert_success(&output);
    // A declared kernel that no product compiled fails at its attribute, with a suggestion
    // from every product's kernels.
    fixture.edit(
        "src/lib.rs",
        "#[cfg(test)]",
        "#[occupancy::kernel(block = 128)]\npub fn moe_gem();\n\n#[cfg(test)]",
    );
    let output = fixture.cargo_build(&[]);
    let stderr = text(&output);
    assert!(
        !output.status.success()
            && stderr.contains(
                "error: missing_kernel: declared kernel `moe_gem` is not in any compiled output"
            )
            && stderr.contains("did you mean `name = \"moe_gemm\"`?")
            && stderr.contains("matched against every product of the build script: PTX (4 kernels), library `moe` (3 kernels)"),
        "{stderr}"
    );
}

/// The library kernel `moe_gemm` with eight loads in flight: more registers (24 -> 28 on
/// sm_80, 30 on sm_90 with nvcc 13.0), no spill, the same occupancy at its block of 128.
const MOE_WITH_MORE_REGISTERS: &str = "    float acc[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) acc[k] = x[(i + k * 977) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += acc[k] * acc[7 - k];
    y[i] = s * (float)(e + 1);";

/// The schema-1 lock the previous occupancy-build wrote for the same numbers: one stamp per
/// arch (with its flags), kernels by name without their source.
fn schema_1_of(lock: &serde_json::Value) -> serde_json::Value {
    let mut toolchains = serde_json::Map::new();
    let mut kernels = serde_json::Map::new();
    for archs in lock["sources"].as_object().unwrap().values() {
        for (arch, entries) in archs.as_object().unwrap() {
            let mut stamp = lock["toolchains"][arch].clone();
            stamp["flags"] = entries["flags"].clone();
            toolchains.insert(arch.clone(), stamp);
            for (kernel, numbers) in entries["kernels"].as_object().unwrap() {
                let kernel = kernels
                    .entry(kernel.clone())
                    .or_insert_with(|| serde_json::json!({}));
                kernel[arch] = numbers.clone();
            }
        }
    }
    serde_json::json!({ "schema_version": 1, "toolchains": toolchains, "kernels": kernels })
}

const BLESS: [(&str, &str); 1] = [("OCCUPANCY_BLESS", "1")];
const DENY_STALE: [(&str, &str); 1] = [("OCCUPANCY_LINT_BASELINE_STALE", "deny")];

/// candle's shape (PTX and a static library, two `Build`s) has one `occupancy.lock`: each
/// product is judged on its own sources, each bless keeps the other's entries and lists what
/// it changed, the previous version's lock is read, a deleted source is said once.
#[test]
fn a_crate_of_two_products_has_one_baseline_that_judges_each() {
    let fixture = Fixture::new("products", "lock-products");
    blessing_two_products_adds_each_once_and_stays_green(&fixture);
    let lock = a_library_regression_is_the_library_kernels_alone(&fixture);
    a_schema_1_lock_is_read_and_rewritten_as_it_was(&fixture, &lock);
    a_deleted_source_is_said_once_and_removed(&fixture);
}

fn blessing_two_products_adds_each_once_and_stays_green(fixture: &Fixture) {
    assert_success(&fixture.cargo_build(&BLESS));
    let lock = fixture.lock();
    assert_eq!(lock["schema_version"], 2, "{lock}");
    let sources: Vec<&String> = lock["sources"].as_object().unwrap().keys().collect();
    assert_eq!(
        sources,
        [
            "kernels/lib/mmvq.cu",
            "kernels/lib/moe.cu",
            "kernels/ptx/affine.cu",
            "kernels/ptx/copy.cu"
        ],
        "{lock}"
    );
    assert_eq!(
        lock["sources"]["kernels/lib/moe.cu"]["sm_90"]["flags"],
        serde_json::json!(["-O3"])
    );
    // Each Build's bless adds its own entries and removes none of the other's.
    let blessed = fixture.warnings_starting("occupancy: OCCUPANCY_BLESS is set");
    assert_eq!(blessed.len(), 2, "{blessed:?}");
    assert!(
        blessed[0].contains(": 8 added, 0 changed, 0 removed")
            && blessed[1].contains(": 6 added, 0 changed, 0 removed"),
        "{blessed:?}"
    );
    let changes = fixture.baseline_changes();
    assert_eq!(changes.len(), 14, "{changes:?}");
    assert!(changes.iter().all(|(change, ..)| change == "added"));

    // The baseline equals what both products compile to: nothing is stale, even denied.
    let output = fixture.cargo_build(&DENY_STALE);
    assert_success(&output);
    assert!(ran_build_script(&output));
    assert!(
        !text(&output).contains("baseline_stale"),
        "{}",
        text(&output)
    );
}

/// Returns the lock blessed with the library's new numbers.
fn a_library_regression_is_the_library_kernels_alone(fixture: &Fixture) -> serde_json::Value {
    // A library kernel uses more registers: a regression at its declaration, nothing else.
    fixture.edit(
        "kernels/lib/moe.cu",
        "    y[i] = x[i] * (float)(e + 1);",
        MOE_WITH_MORE_REGISTERS,
    );
    let output = fixture.cargo_build(&DENY_STALE);
    assert!(!output.status.success(), "{}", text(&output));
    let stderr = build_script_stderr(&output, fixture);
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("error["))
        .collect();
    // One error per declaration and lint, the other arch in a note.
    assert_eq!(
        errors,
        ["error[regression]: kernel `moe_gemm` is worse than the baseline on sm_80"],
        "{stderr}"
    );
    assert!(
        stderr.contains("also: kernel `moe_gemm` is worse than the baseline on sm_90"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches(" --> src/lib.rs:19:5").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("cause: the source or the declaration changed"),
        "{stderr}"
    );

    // Blessing accepts it, and lists the two entries it changed.
    assert_success(&fixture.cargo_build(&BLESS));
    let blessed = fixture.warnings_starting("occupancy: OCCUPANCY_BLESS is set");
    assert!(
        blessed[0].ends_with(": no entry changed")
            && blessed[1].contains(": 0 added, 2 changed, 0 removed (changed: `moe_gemm` on sm_80 in kernels/lib/moe.cu (registers: 24 -> "),
        "{blessed:?}"
    );
    let changed = |arch: &str| {
        (
            "changed".to_string(),
            "kernels/lib/moe.cu".to_string(),
            "moe_gemm".to_string(),
            arch.to_string(),
        )
    };
    assert_eq!(
        fixture.baseline_changes(),
        [changed("sm_80"), changed("sm_90")]
    );
    fixture.lock()
}

fn a_schema_1_lock_is_read_and_rewritten_as_it_was(fixture: &Fixture, lock: &serde_json::Value) {
    // The lock the previous version wrote is read: compared by name, said once.
    let schema_1 = serde_json::to_string_pretty(&schema_1_of(lock)).unwrap();
    std::fs::write(fixture.dir.join("occupancy.lock"), schema_1).unwrap();
    let output = fixture.cargo_build(&DENY_STALE);
    assert_success(&output);
    assert!(ran_build_script(&output));
    let said = fixture.warnings_starting("occupancy: the baseline occupancy.lock is schema 1");
    assert_eq!(said.len(), 1, "{}", text(&output));
    assert!(
        said[0].ends_with("are compared by kernel name; the next `OCCUPANCY_BLESS=1 cargo build` rewrites it as schema 2"),
        "{said:?}"
    );
    assert!(
        !text(&output).contains("baseline_stale"),
        "{}",
        text(&output)
    );

    // A bless rewrites it as schema 2: every entry under its source again, as before.
    assert_success(&fixture.cargo_build(&BLESS));
    assert_eq!(&fixture.lock(), lock);
    assert!(
        fixture
            .warnings_starting("occupancy: the baseline occupancy.lock is schema 1")
            .is_empty(),
        "the bless's own line says it"
    );
    let blessed = fixture.warnings_starting("occupancy: OCCUPANCY_BLESS is set");
    assert!(
        blessed[0].contains("(a schema-1 baseline, rewritten as schema 2): 0 added, 0 changed, 0 removed, 8 attributed")
            && blessed[1].contains(": 0 added, 0 changed, 0 removed, 6 attributed"),
        "{blessed:?}"
    );
}

fn a_deleted_source_is_said_once_and_removed(fixture: &Fixture) {
    // A source deleted with its Build's line: its entries are stale, said once for the run (by
    // the PTX Build, the first to compare), and the next bless removes them, naming why.
    std::fs::remove_file(fixture.dir.join("kernels/lib/mmvq.cu")).unwrap();
    fixture.edit("build.rs", ", \"kernels/lib/mmvq.cu\"", "");
    // The launch table of its kernels goes with them (a table naming no kernel is refused).
    fixture.edit(
        "Cargo.toml",
        "[package.metadata.occupancy.kernels.\"mul_mat_vec_*\"]\nblock = [32, 4]\n",
        "",
    );
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    let stale: Vec<String> = fixture.report()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "baseline_stale")
        .map(|finding| finding["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(stale.len(), 4, "{stale:?}");
    assert!(
        stale
            .iter()
            .all(|message| message.ends_with("but its source kernels/lib/mmvq.cu no longer exists")),
        "{stale:?}"
    );
    assert_eq!(
        fixture
            .warnings_starting("occupancy: warning[baseline_stale]")
            .len(),
        1,
        "{}",
        text(&output)
    );
    assert_success(&fixture.cargo_build(&BLESS));
    let blessed = fixture.warnings_starting("occupancy: OCCUPANCY_BLESS is set");
    assert!(
        blessed[0].contains(": 0 added, 0 changed, 4 removed (removed: `mul_mat_vec_q<1>` on sm_80 in kernels/lib/mmvq.cu (its source kernels/lib/mmvq.cu no longer exists)")
            && blessed[1].ends_with(": no entry changed"),
        "{blessed:?}"
    );
    assert!(fixture.lock()["sources"]
        .get("kernels/lib/mmvq.cu")
        .is_none());
}
