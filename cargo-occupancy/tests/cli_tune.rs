//! `cargo occupancy tune`: the ladder of bounds for one kernel, assembled with the real nvcc,
//! and the objective's choice (the engine of the build's `min_blocks_per_sm = "auto"`). The
//! choice is checked against nvcc itself: the kernel compiled with the chosen
//! `__launch_bounds__` gets the registers the ladder says. Needs nvcc, ptxas and nvdisasm
//! (scripts/setup-cuda.sh).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{binary, fixtures, nvcc, stderr, stdout, work_dir};
use serde_json::Value;

fn tune(args: &[&str], cache: &Path) -> Output {
    binary()
        .args(["occupancy", "tune"])
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .output()
        .expect("run cargo-occupancy")
}

/// ptxas's registers for `source` compiled for sm_90.
fn registers_of(source: &Path) -> u64 {
    let output = std::process::Command::new(nvcc())
        .args(["-cubin", "-arch=sm_90", "-Xptxas", "-v", "-o", "/dev/null"])
        .arg(source)
        .output()
        .expect("run nvcc");
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    let used = log.split("Used ").nth(1).expect("ptxas reports registers");
    used.split(' ').next().unwrap().parse().unwrap()
}

/// ptxas's registers for `source` with `__launch_bounds__(256, blocks)` for its own.
fn compiled_with(dir: &Path, source: &Path, blocks: u64) -> u64 {
    let bounded = dir.join("bounded.cu");
    let text = std::fs::read_to_string(source).unwrap();
    std::fs::write(
        &bounded,
        text.replace(
            "__launch_bounds__(256)",
            &format!("__launch_bounds__(256, {blocks})"),
        ),
    )
    .unwrap();
    registers_of(&bounded)
}

/// The ladder of `tune_chain.cu`'s `chain` (50 registers, 4 blocks of 256 on sm_90), the kernel
/// without bounds first.
fn assert_ladder_shape(candidates: &[Value]) {
    // First the minimums below the kernel's own 4 blocks, which let ptxas use more registers
    // (one block: up to 255; three: up to 80): ptxas keeps 50 either way, no more warps. Then
    // each rung keeps more blocks than the one before, with fewer registers.
    let baseline = &candidates[0]["measured"];
    let below = candidates[1..]
        .iter()
        .take_while(|candidate| {
            candidate["bound"]["min_blocks_per_sm"].as_u64() < baseline["blocks_per_sm"].as_u64()
        })
        .count();
    assert_eq!(below, 2, "{candidates:?}");
    for (candidate, blocks) in candidates[1..3].iter().zip([1, 3]) {
        assert_eq!(candidate["bound"]["min_blocks_per_sm"], blocks);
        assert!(candidate["measured"]["registers"].as_u64() >= baseline["registers"].as_u64());
        assert_eq!(candidate["verdict"]["verdict"], "no_gain");
    }
    let mut above = vec![&candidates[0]];
    above.extend(&candidates[1 + below..]);
    for pair in above.windows(2) {
        let (lower, higher) = (&pair[0]["measured"], &pair[1]["measured"]);
        assert!(
            higher["blocks_per_sm"].as_u64() > lower["blocks_per_sm"].as_u64(),
            "{pair:?}"
        );
        assert!(
            higher["registers"].as_u64() < lower["registers"].as_u64(),
            "{pair:?}"
        );
    }
}

#[test]
fn tune_prints_the_ladder_and_the_choice_compiles_as_measured() {
    let dir = work_dir("cli_tune", "ladder");
    let cache = dir.join("cache");
    let source = fixtures().join("tune_chain.cu");
    let file = source.to_str().unwrap();
    let output = tune(
        &[
            file, "--kernel", "chain", "--arch", "sm_90", "--format", "json",
        ],
        &cache,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let tuned: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(tuned["knob"], "min_blocks_per_sm");
    assert_eq!(
        tuned["block"], 256,
        "the block comes from __launch_bounds__"
    );
    let arch = &tuned["archs"][0];
    assert_eq!(arch["arch"], "sm_90");
    let candidates = arch["tuning"]["candidates"].as_array().unwrap();
    assert_eq!(tuned["assembled"], candidates.len());
    assert_eq!(candidates[0]["bound"], "none");
    assert_ladder_shape(candidates);
    let chosen = arch["chosen"]["min_blocks_per_sm"]
        .as_u64()
        .unwrap_or_else(|| panic!("a minimum is chosen on sm_90: {arch}"));
    let candidate = candidates
        .iter()
        .find(|candidate| candidate["bound"] == arch["chosen"])
        .unwrap();
    assert_eq!(candidate["verdict"]["verdict"], "admissible", "{candidate}");
    assert_eq!(candidate["measured"]["spill_instructions_in_loops"], 0);
    assert_eq!(
        arch["qualifiers"],
        format!("__launch_bounds__(256, {chosen})")
    );
    // Every rung above the choice is refused, and says why.
    let at = candidates
        .iter()
        .position(|found| found == candidate)
        .unwrap();
    for refused in &candidates[at + 1..] {
        assert_ne!(refused["verdict"]["verdict"], "admissible", "{refused}");
    }
    // nvcc agrees: the source with the chosen bounds gets the chosen candidate's registers.
    let registers = candidate["measured"]["registers"].as_u64();
    assert_eq!(Some(compiled_with(&dir, &source, chosen)), registers);

    // The text: the table, the choice and its reason; nothing assembled again.
    let output = tune(&[file, "--kernel", "chain", "--arch", "sm_90"], &cache);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("`chain` on sm_90, block 256: min_blocks_per_sm = \"auto\" tried"),
        "{text}"
    );
    assert!(
        text.contains(&format!("* min_blocks_per_sm = {chosen} ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("chosen: min_blocks_per_sm = {chosen} (`min_blocks_per_sm = {chosen}` gives the most resident warps")),
        "{text}"
    );
    assert!(text.contains("block 256; 0 compiles assembled"), "{text}");
}

/// `tune_chain.cu` compiled to PTX for compute_90 in `dir`.
fn chain_ptx(dir: &Path) -> PathBuf {
    let ptx = dir.join("chain.ptx");
    let status = std::process::Command::new(nvcc())
        .args(["-ptx", "-arch=compute_90", "-o"])
        .arg(&ptx)
        .arg(fixtures().join("tune_chain.cu"))
        .status()
        .unwrap();
    assert!(status.success());
    ptx
}

#[test]
fn tune_reads_ptx_and_names_the_kernels_it_has() {
    let dir = work_dir("cli_tune", "ptx");
    let ptx = chain_ptx(&dir);
    let cache = dir.join("cache");
    let output = tune(
        &[
            ptx.to_str().unwrap(),
            "--kernel",
            "chain",
            "--arch",
            "sm_90",
            "--knob",
            "max-registers",
            "--format",
            "json",
        ],
        &cache,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let tuned: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(tuned["knob"], "max_registers");
    let candidates = tuned["archs"][0]["tuning"]["candidates"]
        .as_array()
        .unwrap();
    assert!(
        candidates[1..]
            .iter()
            .all(|candidate| candidate["bound"]["max_registers"].is_u64()),
        "{candidates:?}"
    );

    let output = tune(
        &[
            ptx.to_str().unwrap(),
            "--kernel",
            "chian",
            "--arch",
            "sm_90",
        ],
        &cache,
    );
    assert_eq!(output.status.code(), Some(2));
    let error = stderr(&output);
    assert!(
        error.contains("`min_blocks_per_sm = \"auto\"` could not choose the bounds of kernel `chian`: no compiled source defines it; the kernels are: chain"),
        "{error}"
    );
}

/// Issue #35's third pass: with no cache it may use (a world-writable `--cache-dir`), `tune`
/// compiles in a private temporary directory and removes it; it was removed before the compiles,
/// which made it again (not private) and left it in TMPDIR.
#[test]
fn tune_without_a_usable_cache_leaves_nothing_in_the_temporary_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("cli_tune", "temporary");
    let ptx = chain_ptx(&dir);
    let shared = dir.join("shared-cache");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let output = binary()
        .args(["occupancy", "tune"])
        .arg(&ptx)
        .args(["--kernel", "chain", "--arch", "sm_90", "--cache-dir"])
        .arg(&shared)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("compiling in a private temporary directory instead"),
        "{}",
        stderr(&output)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// `tune` of `chain` in `tune_chain.cu` on sm_90 through an nvcc wrapper that runs `misbehave`
/// (shell) on the cubin compile of the candidate `.minnctapersm MIN`, and the real nvcc
/// otherwise: its output (exit 2 asserted), its arguments and its cache.
fn tune_through_a_wrapper(name: &str, min: u32, misbehave: &str) -> (String, Vec<String>, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("cli_tune", name);
    let cache = dir.join("cache");
    let wrapper = dir.join("nvcc");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor last; do :; done\ncase \"$*\" in *-cubin*)\n  if grep -Eq 'minnctapersm[[:space:]]+{min}([^0-9]|$)' \"$last\" 2>/dev/null; then {misbehave}; fi;;\nesac\nexec '{}' \"$@\"\n",
            nvcc().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = fixtures().join("tune_chain.cu");
    let args: Vec<String> = [
        source.to_str().unwrap(),
        "--kernel",
        "chain",
        "--arch",
        "sm_90",
        "--format",
        "json",
    ]
    .map(str::to_owned)
    .to_vec();
    let output = binary()
        .args(["occupancy", "tune"])
        .args(&args)
        .arg("--cache-dir")
        .arg(&cache)
        .env("NVCC", &wrapper)
        .output()
        .unwrap();
    let error = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{error}\n{}",
        stdout(&output)
    );
    (error, args, cache)
}

/// The candidate `min_blocks_per_sm = MIN` is measured by a `tune` with the real nvcc on the
/// same cache: nothing of a failed run was kept.
fn measured_again(args: &[String], cache: &Path, min: u32) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = tune(&args, cache);
    assert!(output.status.success(), "{}", stderr(&output));
    let tuned: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let candidates = tuned["archs"][0]["tuning"]["candidates"]
        .as_array()
        .unwrap();
    let candidate = candidates
        .iter()
        .find(|candidate| candidate["bound"]["min_blocks_per_sm"] == min)
        .expect("the ladder holds the candidate");
    assert!(
        candidate["measured"].is_object(),
        "measured again: {candidate}"
    );
}

/// Issue #35, class 4: a ptxas that dies on one candidate (`.minnctapersm 3`: a wrapper of nvcc
/// that kills itself with SIGSEGV there) fails the tuning, naming the candidate and the tool,
/// instead of becoming that candidate's verdict ("compile failed"); nothing of it is kept, so
/// the next run with a working nvcc measures it (it was memoized and replayed).
#[test]
fn a_tool_that_dies_on_a_candidate_is_an_error_and_never_its_verdict() {
    let (error, args, cache) = tune_through_a_wrapper("crash", 3, "kill -SEGV $$");
    assert!(
        error.contains("assembling the candidate `min_blocks_per_sm = 3` on sm_90 failed in the tool, not on the bound")
            && error.contains("signal"),
        "{error}"
    );
    measured_again(&args, &cache, 3);
}

/// Issue #42, class 14: a ptxas that refuses one candidate (`.minnctapersm 5`: a wrapper of nvcc
/// that prints a `ptxas error` line there and exits 255) fails the tuning, naming the bound,
/// the kernel, the arch and ptxas's first error line, instead of choosing from the other
/// candidates (it chose "no bounds" with exit 0, and kept the failure as the bound's verdict);
/// the next run with the real nvcc measures that candidate.
#[test]
fn a_ptxas_error_on_a_candidate_fails_the_choice_and_is_not_kept() {
    let refuse = "echo \"ptxas error   : fake refusal of minnctapersm 5\" >&2; exit 255";
    let (error, args, cache) = tune_through_a_wrapper("refused", 5, refuse);
    assert!(
        error.contains("`min_blocks_per_sm = 5`")
            && error.contains("`chain`")
            && error.contains("sm_90")
            && error.contains("ptxas error   : fake refusal of minnctapersm 5"),
        "{error}"
    );
    measured_again(&args, &cache, 5);
}

/// ptxas's registers and spill bytes (stores + loads) for `kernel` of `source` compiled for
/// sm_90 with `header` as its `occupancy_bounds.h`; and its PTX with the entries' bound
/// directives taken out.
fn compiled_at(dir: &Path, source: &Path, kernel: &str, header: &str) -> ((u64, u64), String) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("occupancy_bounds.h"), header).unwrap();
    let output = std::process::Command::new(nvcc())
        .args([
            "-cubin",
            "-arch=sm_90",
            "-Xptxas",
            "-v",
            "-o",
            "/dev/null",
            "-I",
        ])
        .arg(dir)
        .arg(source)
        .output()
        .expect("run nvcc");
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    let entry = format!("Compiling entry function '{kernel}'");
    let log = &log[log
        .find(&entry)
        .unwrap_or_else(|| panic!("{entry} in {log}"))..];
    let log = match log[entry.len()..].find("Compiling entry function") {
        Some(end) => &log[..entry.len() + end],
        None => log,
    };
    let number_before = |text: &str, what: &str| -> u64 {
        let at = text
            .find(what)
            .unwrap_or_else(|| panic!("{what} in {text}"));
        let digits: String = text[..at]
            .trim_end()
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.chars().rev().collect::<String>().parse().unwrap()
    };
    let facts = (
        number_before(log, " registers"),
        number_before(log, " bytes spill stores") + number_before(log, " bytes spill loads"),
    );
    let ptx = dir.join("kernel.ptx");
    let status = std::process::Command::new(nvcc())
        .args(["-ptx", "-arch=compute_90", "-o"])
        .arg(&ptx)
        .arg("-I")
        .arg(dir)
        .arg(source)
        .status()
        .expect("run nvcc");
    assert!(status.success());
    let text = std::fs::read_to_string(&ptx).unwrap();
    let code = text
        .lines()
        .filter(|line| !line.contains(".maxntid") && !line.contains(".minnctapersm"))
        .collect::<Vec<_>>()
        .join("\n");
    (facts, code)
}

/// Issue #34: each candidate is the code its bound ships. The fixture's kernels take their
/// bound from `OCCUPANCY_BOUNDS_<kernel>`, and nvcc 13.0's front end compiles them into other
/// PTX under some bounds than under `__launch_bounds__(256)`: `swiglu` from `(256, 5)` on,
/// `reduce` at `(256, 4)` and `(256, 6)`, where ptxas's registers or spills differ from the
/// PTX without bounds given the directive. Every candidate's registers and spills are those of
/// nvcc compiling the source with that bound, "no bounds" included (`__launch_bounds__(256)`,
/// as the kernel ships without a minimum), and so is the kernel without `__launch_bounds__` at
/// all (`OCCUPANCY_BOUNDS_<kernel>` empty), a candidate of every such source.
#[test]
fn each_candidate_is_the_source_compiled_at_its_bound() {
    let dir = work_dir("cli_tune", "front_end");
    let source = fixtures().join("tune_front_end.cu");
    let file = source.to_str().unwrap();
    for kernel in ["swiglu", "reduce"] {
        let output = tune(
            &[
                file, "--kernel", kernel, "--arch", "sm_90", "--block", "256", "--format", "json",
            ],
            &dir.join("cache"),
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let tuned: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(tuned["compiled_per_bound"], true, "{tuned}");
        let candidates = tuned["archs"][0]["tuning"]["candidates"]
            .as_array()
            .unwrap();
        assert!(candidates.len() > 2, "{tuned}");
        assert_eq!(
            candidates[1]["bound"], "no_launch_bounds",
            "the kernel without `__launch_bounds__` is tried: {tuned}"
        );
        let other = if kernel == "swiglu" {
            "reduce"
        } else {
            "swiglu"
        };
        let header = |qualifiers: &str| {
            format!("#define OCCUPANCY_BOUNDS_{kernel} {qualifiers}\n#define OCCUPANCY_BOUNDS_{other}\n")
        };
        let (_, unbounded_code) = compiled_at(
            &dir.join(format!("{kernel}-none")),
            &source,
            kernel,
            &header("__launch_bounds__(256)"),
        );
        let mut other_code = 0;
        for candidate in candidates {
            let blocks = candidate["bound"]["min_blocks_per_sm"].as_u64();
            let bare = candidate["bound"] == "no_launch_bounds";
            let qualifiers = match (blocks, bare) {
                (Some(blocks), _) => format!("__launch_bounds__(256, {blocks})"),
                (None, true) => String::new(),
                (None, false) => "__launch_bounds__(256)".to_string(),
            };
            let place = match bare {
                true => "bare".to_string(),
                false => blocks.unwrap_or(0).to_string(),
            };
            let (facts, code) = compiled_at(
                &dir.join(format!("{kernel}-{place}")),
                &source,
                kernel,
                &header(&qualifiers),
            );
            let measured = &candidate["measured"];
            let spilled = measured["spill_store_bytes"].as_u64().unwrap()
                + measured["spill_load_bytes"].as_u64().unwrap();
            assert_eq!(
                facts,
                (measured["registers"].as_u64().unwrap(), spilled),
                "{kernel} {qualifiers}: {candidate}"
            );
            other_code += usize::from(code != unbounded_code);
        }
        assert!(
            other_code > 0,
            "the fixture's {kernel} is a kernel whose PTX changes with the bound: {tuned}"
        );
    }
}

/// `runs` runs of `tune --format json` at once on one cache directory, each asserted to succeed;
/// their JSON, and what they left in the cache's scratch directory.
fn tune_at_once(runs: usize, args: &[&str], cache: &Path) -> (Vec<Value>, Vec<PathBuf>) {
    let children: Vec<std::process::Child> = (0..runs)
        .map(|_| {
            binary()
                .args(["occupancy", "tune"])
                .args(args)
                .args(["--arch", "sm_90", "--format", "json"])
                .arg("--cache-dir")
                .arg(cache)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("run cargo-occupancy")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect();
    let tuned = outputs
        .iter()
        .map(|output| {
            assert!(output.status.success(), "{}", stderr(output));
            serde_json::from_str(&stdout(output)).unwrap()
        })
        .collect();
    let work = cache.join("occupancy").join("auto-work");
    let left = std::fs::read_dir(&work)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    (tuned, left)
}

/// Issue #34: two `tune` runs at once on one cache directory used one scratch path for their
/// candidates and could fail with "ptxas reported nothing for ..."; each run has its own.
#[test]
fn tune_runs_at_once_on_one_cache_do_not_collide() {
    let dir = work_dir("cli_tune", "parallel");
    // A .cu whose kernel does not take OCCUPANCY_BOUNDS_chain: every candidate is assembled in
    // the scratch directory, none from a compile cache.
    let source = fixtures().join("tune_chain.cu");
    let (tuned, left) = tune_at_once(
        4,
        &[source.to_str().unwrap(), "--kernel", "chain"],
        &dir.join("cache"),
    );
    let choices: Vec<&Value> = tuned.iter().map(|one| &one["archs"][0]["chosen"]).collect();
    assert!(
        choices.windows(2).all(|pair| pair[0] == pair[1]),
        "{choices:?}"
    );
    assert!(left.is_empty(), "every run removes its scratch: {left:?}");
}

/// Issue #34, item 4, for the path every `"auto"` kernel of a `.cu` takes since candidates are
/// compiled as they ship: runs at once on one empty cache each compile the source at every bound
/// (one header directory per bound, the compile cache and the measurement memo shared), and every
/// run measures the same ladder, as one run alone does.
#[test]
fn tune_runs_at_once_compiling_the_source_at_each_bound_do_not_collide() {
    let dir = work_dir("cli_tune", "parallel_front_end");
    let source = fixtures().join("tune_front_end.cu");
    let args = [
        source.to_str().unwrap(),
        "--kernel",
        "swiglu",
        "--block",
        "256",
    ];
    let (tuned, left) = tune_at_once(3, &args, &dir.join("shared"));
    let (alone, _) = tune_at_once(1, &args, &dir.join("alone"));
    let ladder = |one: &Value| one["archs"][0]["tuning"].clone();
    for one in &tuned {
        assert_eq!(one["compiled_per_bound"], true, "{one}");
        assert_eq!(
            ladder(one),
            ladder(&alone[0]),
            "a run beside others measured another ladder"
        );
    }
    assert!(left.is_empty(), "every run removes its scratch: {left:?}");
}
