//! End-to-end test of launch bounds chosen by the build (`min_blocks_per_sm = "auto"`,
//! `max_registers = "auto"`, issue #27): the fixture `tests/fixtures/auto` built for sm_80 and
//! sm_90 with one PTX per arch, so each arch gets its own choice. The choice must reach the
//! kernel's compile (the PTX that ships carries it, ptxas's registers are the chosen
//! candidate's), be in the report with every candidate and the reason, cost nothing on a
//! rebuild of unchanged kernels, and be recorded in `occupancy.lock`, where a changed choice is
//! a finding.

use serde_json::Value;

use occupancy_tests::fixture::Fixture;
use occupancy_tests::{assert_success, text};

/// The report's row of `kernel` on `arch`.
fn row<'a>(report: &'a Value, kernel: &str, arch: &str) -> &'a Value {
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == kernel && row["arch"] == arch)
        .unwrap_or_else(|| panic!("no row of {kernel} on {arch}"))
}

/// The bound's number for `key` (`"none"` has none).
fn number(bound: &Value, key: &str) -> Value {
    bound.get(key).cloned().unwrap_or(Value::Null)
}

/// Every "auto" row: the choice reached the compile and is the measured candidate's.
fn assert_choices_compiled(report: &Value) {
    for (kernel, key) in [
        ("chain", "min_blocks_per_sm"),
        ("chain_capped", "max_registers"),
        ("reduce", "min_blocks_per_sm"),
    ] {
        for arch in ["sm_80", "sm_90"] {
            let row = row(report, kernel, arch);
            let tuning = &row["tuning"];
            assert_eq!(tuning["knob"], key, "{row}");
            let candidates = tuning["candidates"].as_array().unwrap();
            assert_eq!(candidates[0]["bound"], "none", "{tuning}");
            assert_eq!(candidates[0]["verdict"]["verdict"], "baseline", "{tuning}");
            assert!(candidates.len() > 1, "a ladder was tried: {tuning}");
            let chosen = &tuning["chosen"];
            let candidate = candidates
                .iter()
                .find(|candidate| candidate["bound"] == *chosen)
                .unwrap_or_else(|| panic!("the choice is one of the candidates: {tuning}"));
            // The compiled kernel is the chosen candidate: its bound in the PTX, ptxas's
            // registers and the resident blocks.
            assert_eq!(row[key], number(chosen, key), "{kernel} {arch}: {row}");
            let measured = &candidate["measured"];
            assert_eq!(row["registers"], measured["registers"], "{kernel} {arch}");
            assert_eq!(
                row["blocks_per_sm"], measured["blocks_per_sm"],
                "{kernel} {arch}"
            );
            assert!(!tuning["reason"].as_str().unwrap().is_empty(), "{tuning}");
            // What ships keeps the objective: no spill (none is accepted).
            assert_eq!(row["spill_store_bytes"], 0, "{kernel} {arch}: {row}");
            for refused in candidates
                .iter()
                .filter(|candidate| candidate["verdict"]["verdict"] == "compiled_differently")
            {
                assert_ne!(refused["bound"], *chosen, "{tuning}");
            }
        }
    }
}

#[test]
fn auto_bounds_are_chosen_per_arch_compiled_reported_cached_and_locked() {
    let fixture = Fixture::new("auto", "auto-bounds");
    let output = fixture.cargo_build(&[]);
    assert_success(&output);
    let report = fixture.report();
    assert_choices_compiled(&report);
    // The fixture's loop keeps 48 registers and no spill at 5 blocks of 256 threads: on sm_90,
    // where the compile without bounds takes more registers (4 blocks), a bound is chosen.
    let sm_90 = row(&report, "chain", "sm_90");
    let chosen = sm_90["tuning"]["chosen"]["min_blocks_per_sm"]
        .as_u64()
        .unwrap_or_else(|| panic!("sm_90 takes a minimum: {}", sm_90["tuning"]));
    assert!(
        sm_90["blocks_per_sm"].as_u64().unwrap()
            > sm_90["tuning"]["candidates"][0]["measured"]["blocks_per_sm"]
                .as_u64()
                .unwrap(),
        "the choice keeps more blocks than no bounds: {sm_90}"
    );
    let capped = row(&report, "chain_capped", "sm_90");
    assert!(
        capped["tuning"]["chosen"]["max_registers"].is_u64(),
        "{}",
        capped["tuning"]
    );
    // The reduction's minimum of 6 blocks passes when its PTX without bounds is assembled with
    // `.minnctapersm 6`, but nvcc compiles the source with `__launch_bounds__(256, 6)` into other
    // code, which spills on sm_90 (issue #34): the candidate is that compile, so it is measured
    // spilling and refused for it, and no bound needs refusing after the compile that ships.
    let reduce = row(&report, "reduce", "sm_90");
    let candidates = reduce["tuning"]["candidates"].as_array().unwrap();
    let six = candidates
        .iter()
        .find(|candidate| candidate["bound"]["min_blocks_per_sm"] == 6)
        .unwrap_or_else(|| panic!("6 blocks were tried: {}", reduce["tuning"]));
    let spilled = six["measured"]["spill_store_bytes"].as_u64().unwrap()
        + six["measured"]["spill_load_bytes"].as_u64().unwrap();
    assert!(spilled > 0, "{six}");
    assert_ne!(six["verdict"]["verdict"], "admissible", "{six}");
    for candidate in candidates {
        assert_ne!(
            candidate["verdict"]["verdict"], "compiled_differently",
            "{candidate}"
        );
    }
    for arch in ["sm_80", "sm_90"] {
        let tuning = &row(&report, "chain", arch)["tuning"];
        assert!(
            ["no_bound", "most_warps", "latency_model"]
                .contains(&tuning["decided_by"].as_str().unwrap_or_default()),
            "{tuning}"
        );
    }
    // The shipped sm_90 PTX carries the minimum; the header defines it under sm_90's
    // __CUDA_ARCH__ only.
    let header = newest_out(&fixture).join("occupancy_bounds.h");
    let header_text = std::fs::read_to_string(&header).unwrap();
    assert!(
        header_text.contains(&format!(
            "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900\n#define OCCUPANCY_MIN_BLOCKS_PER_SM_chain {chosen}\n"
        )),
        "{header_text}"
    );
    let ptx = std::fs::read_to_string(header.with_file_name("chain.compute_90.ptx")).unwrap();
    let entry = &ptx[ptx.find(".entry chain(").unwrap()..];
    let directives = &entry[..entry.find('{').unwrap()];
    assert!(
        directives.contains(&format!(".minnctapersm {chosen}\n")),
        "{directives}"
    );
    // The build script runs again with nothing changed in the kernels: no nvcc at all (the
    // compile cache has the chosen compile, the memo every candidate).
    // (Compiles and candidate assemblies run ptxas with `-v`; cc's probes of nvcc do not.)
    let invocations = |fixture: &Fixture| {
        std::fs::read_to_string(&fixture.nvcc_log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("-Xptxas -v"))
            .count()
    };
    let before = invocations(&fixture);
    // The first build: every candidate of the kernels on both archs assembled once, and the
    // compiles: without bounds, the source once per bound tried (both archs' PTX in one
    // compile: each candidate is the code its bound ships, issue #34), and with the choices.
    let candidates: usize = ["chain", "chain_capped", "reduce"]
        .iter()
        .flat_map(|kernel| ["sm_80", "sm_90"].map(|arch| (kernel, arch)))
        .map(|(kernel, arch)| {
            row(&report, kernel, arch)["tuning"]["candidates"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    let log = std::fs::read_to_string(&fixture.nvcc_log).unwrap();
    let assembled = (log.lines())
        .filter(|line| line.contains("/occupancy/auto-work/"))
        .count();
    assert_eq!(assembled, candidates, "{log}");
    let compiles = log
        .lines()
        .filter(|line| line.ends_with("chain.cu"))
        .count();
    // One compile per bound tried by any kernel: the header of a bound gives it to every
    // "auto" kernel of the knob, so kernels that try one bound share its compile.
    let mut bounds: Vec<String> = ["chain", "chain_capped", "reduce"]
        .iter()
        .flat_map(|kernel| ["sm_80", "sm_90"].map(|arch| (kernel, arch)))
        .flat_map(|(kernel, arch)| {
            row(&report, kernel, arch)["tuning"]["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|candidate| candidate["bound"].to_string())
                .filter(|bound| bound != "\"none\"")
                .collect::<Vec<_>>()
        })
        .collect();
    bounds.sort();
    bounds.dedup();
    let bounds_tried = bounds.len();
    assert_eq!(compiles, 2 + bounds_tried, "{log}");
    let front_end = (log.lines())
        .filter(|line| line.contains("/occupancy/front-end/") && line.ends_with("chain.cu"))
        .count();
    assert_eq!(front_end, bounds_tried, "{log}");
    fixture.edit(
        "src/lib.rs",
        "//! A crate whose",
        "//! A crate (touched) whose",
    );
    assert_success(&fixture.cargo_build(&[]));
    assert_eq!(
        invocations(&fixture),
        before,
        "an unchanged kernel is neither compiled nor tuned again"
    );
    assert_choices_compiled(&fixture.report());

    // The lock records each choice; a different choice in the lock is a finding that names
    // both.
    assert_success(&fixture.cargo_build(&[("OCCUPANCY_BLESS", "1")]));
    let mut lock = fixture.lock();
    let entry = &mut lock["sources"]["kernels/chain.cu"]["sm_90"]["kernels"]["chain"];
    assert_eq!(
        entry["chosen_bounds"]["min_blocks_per_sm"], chosen,
        "{entry}"
    );
    entry["chosen_bounds"] = Value::String("none".into());
    std::fs::write(
        fixture.dir.join("occupancy.lock"),
        serde_json::to_string_pretty(&lock).unwrap(),
    )
    .unwrap();
    fixture.edit("src/lib.rs", "(touched)", "(touched twice)");
    let output = fixture.cargo_build(&[]);
    let report = fixture.report();
    let stale = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["lint"] == "baseline_stale" && finding["kernel"] == "chain")
        .unwrap_or_else(|| panic!("no baseline_stale finding of chain:\n{}", text(&output)));
    assert_eq!(
        stale["message"], "the bounds the build chose for kernel `chain` on sm_90 changed",
        "{stale}"
    );
    assert!(
        stale["notes"]
            .as_array()
            .unwrap()
            .contains(&Value::String(format!(
                "chosen bounds: no bounds -> min_blocks_per_sm = {chosen}"
            ))),
        "{stale}"
    );
}

/// A `.ptx` input cannot include `occupancy_bounds.h`: the build writes the bounds `"auto"` chose
/// into a copy of it (each chosen kernel's `.entry`, every line where it was), compiles and ships
/// the copy, and never writes the input. A bound declared by number that the PTX lacks is a
/// `bounds_mismatch` whose help names the directives to write, not a header.
#[test]
fn auto_reaches_a_ptx_input_through_a_copy_with_its_lines_in_place() {
    let fixture = Fixture::new("auto", "auto-ptx");
    let include = fixture.dir.join("ptx-include");
    std::fs::create_dir_all(&include).unwrap();
    std::fs::write(
        include.join("occupancy_bounds.h"),
        "#define OCCUPANCY_BOUNDS_chain __launch_bounds__(256)\n#define OCCUPANCY_BOUNDS_chain_capped\n#define OCCUPANCY_BOUNDS_reduce __launch_bounds__(256)\n",
    )
    .unwrap();
    let input = fixture.dir.join("kernels/chain.ptx");
    let status = std::process::Command::new(occupancy_tests::nvcc())
        .args(["-ptx", "-arch=compute_90", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(&input)
        .arg(fixture.dir.join("kernels/chain.cu"))
        .status()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read_to_string(&input).unwrap();
    fixture.edit(
        "build.rs",
        ".file(\"kernels/chain.cu\")",
        ".ptx_file(\"kernels/chain.ptx\")",
    );
    fixture.edit(
        "Cargo.toml",
        "archs = [\"sm_80\", \"sm_90\"]",
        "archs = [\"sm_90\"]",
    );
    assert_success(&fixture.cargo_build(&[]));
    let report = fixture.report();
    let shipped = std::fs::read_to_string(newest_out(&fixture).join("chain.ptx")).unwrap();
    assert_eq!(
        std::fs::read_to_string(&input).unwrap(),
        written,
        "the input is not written"
    );
    assert_eq!(shipped.lines().count(), written.lines().count());
    for kernel in ["chain", "chain_capped", "reduce"] {
        let row = row(&report, kernel, "sm_90");
        let tuning = &row["tuning"];
        let chosen = &tuning["chosen"];
        let measured = tuning["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|candidate| candidate["bound"] == *chosen)
            .unwrap();
        assert_eq!(measured["measured"]["registers"], row["registers"], "{row}");
        let entry = shipped
            .lines()
            .skip_while(|line| !line.contains(&format!(".entry {kernel}(")))
            .take_while(|line| !line.starts_with('{'))
            .collect::<Vec<_>>()
            .join("\n");
        let directive = match (
            number(chosen, "min_blocks_per_sm"),
            number(chosen, "max_registers"),
        ) {
            (Value::Number(blocks), _) => {
                Some(format!(".maxntid 256, 1, 1 .minnctapersm {blocks}"))
            }
            (_, Value::Number(registers)) => Some(format!(".maxnreg {registers}")),
            _ => None,
        };
        match directive {
            Some(directive) => assert!(
                entry.contains(&directive),
                "{kernel}: {directive} in\n{entry}"
            ),
            None => assert!(
                !entry.contains(".minnctapersm") && !entry.contains(".maxnreg"),
                "{entry}"
            ),
        }
        // Its line is the input's.
        let line = |text: &str| {
            text.lines()
                .position(|found| found.contains(&format!(".entry {kernel}(")))
        };
        assert_eq!(line(&shipped), line(&written));
        assert_eq!(row["source"]["path"], "kernels/chain.ptx");
    }
    assert_eq!(
        number(
            &row(&report, "chain", "sm_90")["tuning"]["chosen"],
            "min_blocks_per_sm"
        ),
        serde_json::json!(5),
        "{report}"
    );
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|finding| finding["lint"] != "bounds_mismatch"));
    // A number declared that the PTX does not have: the help gives the directives.
    fixture.edit(
        "src/lib.rs",
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = \"auto\")]\n    pub fn chain(",
        "#[occupancy::kernel(block = 256, min_blocks_per_sm = 6)]\n    pub fn chain(",
    );
    let output = fixture.cargo_build(&[]);
    let log = text(&output);
    assert!(!output.status.success(), "{log}");
    assert!(
        log.contains("help: `kernels/chain.ptx` is PTX, which takes no `occupancy_bounds.h`: write `.maxntid 256, 1, 1 .minnctapersm 6` into the kernel's `.entry`"),
        "{log}"
    );
    // The last build's choice for `chain` (5) is not written into the copy any more.
    assert!(
        log.contains("min blocks per SM: declared 6, compiled none (.minnctapersm absent)"),
        "{log}"
    );
}

/// The newest OUT_DIR of the fixture's build script.
fn newest_out(fixture: &Fixture) -> std::path::PathBuf {
    let module = occupancy_tests::newest_build_file(&fixture.name, "out/occupancy_ptx.rs");
    module.parent().unwrap().to_path_buf()
}
