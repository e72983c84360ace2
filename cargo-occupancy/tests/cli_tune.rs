//! `cargo occupancy tune`: the ladder of bounds for one kernel, assembled with the real nvcc,
//! and the objective's choice (the engine of the build's `min_blocks_per_sm = "auto"`). The
//! choice is checked against nvcc itself: the kernel compiled with the chosen
//! `__launch_bounds__` gets the registers the ladder says. Needs nvcc, ptxas and nvdisasm
//! (scripts/setup-cuda.sh).

mod common;

use std::path::Path;
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

#[test]
fn tune_reads_ptx_and_names_the_kernels_it_has() {
    let dir = work_dir("cli_tune", "ptx");
    let ptx = dir.join("chain.ptx");
    let status = std::process::Command::new(nvcc())
        .args(["-ptx", "-arch=compute_90", "-o"])
        .arg(&ptx)
        .arg(fixtures().join("tune_chain.cu"))
        .status()
        .unwrap();
    assert!(status.success());
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

/// Issue #35, class 4: a ptxas that dies on one candidate (`.minnctapersm 3`: a wrapper of nvcc
/// that kills itself with SIGSEGV there) fails the tuning, naming the candidate and the tool,
/// instead of becoming that candidate's verdict ("compile failed"); nothing of it is kept, so
/// the next run with a working nvcc measures it (it was memoized and replayed).
#[test]
fn a_tool_that_dies_on_a_candidate_is_an_error_and_never_its_verdict() {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("cli_tune", "crash");
    let cache = dir.join("cache");
    let wrapper = dir.join("nvcc");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor last; do :; done\ncase \"$*\" in *-cubin*)\n  if grep -Eq 'minnctapersm[[:space:]]+3([^0-9]|$)' \"$last\" 2>/dev/null; then kill -SEGV $$; fi;;\nesac\nexec '{}' \"$@\"\n",
            nvcc().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let source = fixtures().join("tune_chain.cu");
    let args = [
        source.to_str().unwrap(),
        "--kernel",
        "chain",
        "--arch",
        "sm_90",
        "--format",
        "json",
    ];
    let output = binary()
        .args(["occupancy", "tune"])
        .args(args)
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
    assert!(
        error.contains("assembling the candidate `min_blocks_per_sm = 3` on sm_90 failed in the tool, not on the bound")
            && error.contains("signal"),
        "{error}"
    );
    let output = tune(&args, &cache);
    assert!(output.status.success(), "{}", stderr(&output));
    let tuned: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let candidates = tuned["archs"][0]["tuning"]["candidates"]
        .as_array()
        .unwrap();
    let two = candidates
        .iter()
        .find(|candidate| candidate["bound"]["min_blocks_per_sm"] == 3)
        .expect("the ladder holds min_blocks_per_sm = 3");
    assert!(two["measured"].is_object(), "measured again: {two}");
}
