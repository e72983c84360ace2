//! `cargo occupancy calc | arch | sweep` on the built binary: output shapes, the batch contract,
//! both invocation forms, and bad input (exit 2 with a clear message, never a panic).

mod common;

use common::{binary, run_with_stdin, stderr, stdout};
use serde_json::Value;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    binary()
        .args(args)
        .output()
        .expect("running cargo-occupancy")
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&stdout(output))
        .unwrap_or_else(|error| panic!("{error}: {}", stdout(output)))
}

fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn calc_table_names_what_binds() {
    let output = run(&[
        "occupancy",
        "calc",
        "--arch",
        "sm_90",
        "--block",
        "256",
        "--registers",
        "64",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("calc_sm_90_256_64", stdout(&output));
}

#[test]
fn calc_table_with_gpu_shared_memory_and_launch_bounds() {
    let output = run(&[
        "calc",
        "--gpu",
        "h100",
        "--block",
        "128",
        "--registers",
        "40",
        "--static-smem",
        "20000",
        "--barriers",
        "3",
        "--max-threads",
        "256",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("calc_h100_smem_bound", stdout(&output));
}

/// `--cluster` on a GPU whose GPC layout was recorded: the driver's answer (tests/fixtures/gpu/
/// clusters, replayed in full by cluster_replay.rs); elsewhere an upper bound, or why none runs.
#[test]
fn calc_cluster_counts_clusters_on_a_named_gpu() {
    let table = run(&[
        "calc",
        "--gpu",
        "h100-sxm",
        "--block",
        "128",
        "--registers",
        "32",
        "--cluster",
        "4x4",
        "--non-portable-cluster",
    ]);
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
    insta::assert_snapshot!("calc_h100_cluster_16", stdout(&table));

    let answer = json(&run(&[
        "calc",
        "--gpu",
        "h100",
        "--block",
        "256",
        "--registers",
        "64",
        "--cluster",
        "2",
        "--json",
    ]));
    assert_eq!(answer["blocks_per_sm"], 4);
    assert_eq!(answer["cluster"]["max_active_clusters"], 264);
    assert_eq!(answer["cluster"]["exact"], true);

    let refused = json(&run(&[
        "calc",
        "--gpu",
        "h100",
        "--block",
        "128",
        "--cluster",
        "9",
        "--json",
    ]));
    assert_eq!(refused["cluster"]["max_active_clusters"], 0);
    assert_eq!(refused["cluster"]["problem"]["kind"], "needs_non_portable");

    let bound = json(&run(&[
        "calc",
        "--gpu",
        "b200",
        "--block",
        "128",
        "--cluster",
        "8",
        "--json",
    ]));
    assert_eq!(bound["cluster"]["exact"], false);
    assert_eq!(bound["cluster"]["max_active_clusters"], 148);

    let no_gpu = run(&[
        "calc",
        "--arch",
        "sm_90",
        "--block",
        "128",
        "--cluster",
        "2",
    ]);
    assert_eq!(no_gpu.status.code(), Some(2));
    assert!(stderr(&no_gpu).contains("--gpu"), "{}", stderr(&no_gpu));
    let zero = run(&[
        "calc",
        "--gpu",
        "h100",
        "--block",
        "128",
        "--cluster",
        "2x0",
    ]);
    assert_eq!(zero.status.code(), Some(2));
}

/// A malformed `--cluster` names the flag, the whole value and what was expected (issue #42,
/// class 14: `2x` and `x2` said "`` is not a non-negative integer").
#[test]
fn calc_cluster_says_what_shape_was_expected() {
    for value in ["2x", "x2", "2x0", "2xx1", "a"] {
        let out = run(&[
            "calc",
            "--gpu",
            "h100",
            "--block",
            "128",
            "--cluster",
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{value}");
        let text = stderr(&out);
        assert!(
            text.contains(&format!(
                "`--cluster {value}`: expected `X[xY[xZ]]` with each a positive integer, e.g. `2x1x1`"
            )),
            "{value}: {text}"
        );
        assert!(!text.contains("``"), "{value}: {text}");
    }
}

#[test]
fn calc_json_in_both_invocation_forms() {
    let args = [
        "calc",
        "--arch",
        "sm_90a",
        "--block",
        "256",
        "--registers",
        "64",
        "--json",
    ];
    let direct = json(&run(&args));
    let mut cargo_form = vec!["occupancy"];
    cargo_form.extend(args);
    assert_eq!(direct, json(&run(&cargo_form)));
    assert_eq!(direct["blocks_per_sm"], 4);
    assert_eq!(direct["warps_per_sm"], 32);
    assert_eq!(direct["occupancy"], 0.5);
    assert_eq!(direct["limiters"], serde_json::json!(["registers"]));
    assert_eq!(direct["arch"], "sm_90");
}

#[test]
fn calc_zero_blocks_has_a_reason() {
    let output = run(&[
        "calc",
        "--arch",
        "9.0",
        "--block",
        "512",
        "--max-threads",
        "256",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let answer = json(&output);
    assert_eq!(answer["blocks_per_sm"], 0);
    assert_eq!(answer["limiters"], serde_json::json!(["launch_bounds"]));
    assert!(answer["reason"]
        .as_str()
        .unwrap()
        .contains("__launch_bounds__"));
}

/// Issue 23 (round 2): static + dynamic shared memory past 4 GiB is counted in 64 bits: the
/// table, the JSON and the batch give the exact figures, never a saturated 4294967295 or a
/// "-4294967295 B gains a block".
#[test]
fn shared_memory_past_4_gib_is_exact_and_says_by_how_much_it_is_over() {
    let args = [
        "occupancy",
        "calc",
        "--arch",
        "sm_90",
        "--block",
        "256",
        "--static-smem",
        "3000000000",
        "--dynamic-smem",
        "3000000000",
    ];
    let table = run(&args);
    assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
    let text = stdout(&table);
    assert!(!text.contains("4294967295"), "{text}");
    assert!(
        text.contains("6000001024 B of a 233472 B configuration"),
        "{text}"
    );
    assert!(
        text.contains("shared memory: 6000001024 B per block exceed the per-block limit of 233472 B on sm_90 by 5999767552 B; no block runs until the launch asks for less"),
        "{text}"
    );
    assert!(!text.contains("B gains a block"), "{text}");
    let answer = json(&run(&[&args[..], &["--json"]].concat()));
    assert_eq!(answer["allocated_smem_per_block"], 6_000_001_024u64);
    assert_eq!(
        answer["headroom"]["smem_to_gain_block_bytes"],
        5_999_767_552u64
    );
    let batch = run_with_stdin(
        &["occupancy", "calc", "--batch", "-"],
        "{\"arch\":\"sm_90\",\"block\":256,\"static_smem\":3000000000,\"dynamic_smem\":3000000000}\n",
    );
    assert_eq!(json_lines(&batch)[0], answer);
}

/// Bad command lines, and a piece of the message each must print.
const BAD_INPUT: &[(&[&str], &str)] = &[
    (
        &["calc", "--arch", "sm_91", "--block", "256"],
        "unknown architecture `sm_91`; known: sm_50",
    ),
    (&["calc", "--arch", "sm_90", "--block", "-5"], "negative"),
    (
        &["calc", "--arch", "sm_90", "--block", "abc"],
        "not a non-negative integer",
    ),
    (
        &[
            "calc",
            "--arch",
            "sm_90",
            "--block",
            "64",
            "--registers",
            "1e3",
        ],
        "not a non-negative integer",
    ),
    (
        &[
            "calc",
            "--arch",
            "sm_90",
            "--block",
            "64",
            "--static-smem",
            "99999999999",
        ],
        "larger than",
    ),
    (
        &[
            "calc",
            "--arch",
            "sm_90",
            "--block",
            "64",
            "--carveout",
            "150",
        ],
        "carveout",
    ),
    (&["calc", "--block", "64"], "--arch"),
    (
        &["calc", "--gpu", "h900", "--block", "64"],
        "unknown GPU preset `h900`",
    ),
    (
        &["calc", "--gpu", "a100", "--arch", "sm_90", "--block", "64"],
        "drop one",
    ),
    (&["calc", "--arch", "sm_90"], "--block"),
    (
        &[
            "calc",
            "--arch",
            "sm_90",
            "--batch",
            "/nonexistent/batch.jsonl",
        ],
        "cannot read batch file",
    ),
    (
        &["sweep", "--arch", "sm_90", "--block", "5..=1"],
        "empty range",
    ),
    (&["sweep", "--arch", "sm_90", "--block", "0..=4:0"], "step"),
    (
        &[
            "sweep",
            "--arch",
            "sm_90",
            "--static-smem",
            "0..=4000000000",
            "--dynamic-smem",
            "0..=4000000000",
            "--summary",
        ],
        "sweep too large",
    ),
    (&["arch", "gfx90a"], "unknown architecture"),
];

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    for (args, message) in BAD_INPUT {
        let output = run(args);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
        assert!(
            error.contains(message),
            "{args:?}: expected {message:?} in {error}"
        );
        assert!(!error.contains("panicked"), "{args:?}: {error}");
    }
}

#[test]
fn batch_answers_each_line_in_order_and_fails_at_the_end() {
    let input = [
        r#"{"arch": "sm_90", "block": 256, "registers": 64}"#,
        r#"{"arch": "sm_91", "block": 256}"#,
        r#"{"arch": "sm_80", "block": 128, "registers": 32, "static_smem": 1000, "dynamic_smem": 60000, "barriers": 2, "max_threads": 128, "carveout": 50, "max_dynamic_smem": 70000}"#,
        r#"{"arch": "sm_90", "block": -1}"#,
        r#"{"arch": "sm_90", "block": 1.5}"#,
        r#"not json"#,
        r#"{"arch": "sm_90", "block": 64, "regs": 3}"#,
        r#"{"arch": "sm_90"}"#,
        r#"{"arch": "sm_90", "block": 64, "carveout": "default"}"#,
        r#"{"arch": "sm_90", "block": 64, "carveout": 101}"#,
        r#"[1, 2]"#,
    ]
    .join("\n");
    let output = run_with_stdin(&["occupancy", "calc", "--batch", "-"], &input);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("8 bad batch line"),
        "{}",
        stderr(&output)
    );
    let answers = json_lines(&output);
    assert_eq!(answers.len(), 11);
    let single = json(&run(&[
        "calc",
        "--arch",
        "sm_90",
        "--block",
        "256",
        "--registers",
        "64",
        "--json",
    ]));
    assert_eq!(answers[0], single, "absent keys default as documented");
    let is_error = |index: usize, text: &str| {
        let message = answers[index]["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(text),
            "line {}: {message:?} lacks {text:?}",
            index + 1
        );
    };
    is_error(1, "unknown architecture");
    // 1000 + 60000 + 1024 reserved = 62080 B of GA100's 164 KB (50% -> 82 KB -> 100 KB step).
    assert_eq!(answers[2]["blocks_per_sm"], 1);
    assert_eq!(answers[2]["smem_config_per_sm"], 100 * 1024);
    assert_eq!(answers[2]["limiters"], serde_json::json!(["shared_memory"]));
    is_error(3, "non-negative integer");
    is_error(4, "non-negative integer");
    is_error(5, "not JSON");
    is_error(6, "unknown key `regs`");
    is_error(7, "missing `block`");
    assert_eq!(answers[8]["blocks_per_sm"], 32);
    is_error(9, "carveout");
    is_error(10, "expected a JSON object");

    let good = run_with_stdin(
        &["calc", "--batch", "-", "--arch", "sm_86"],
        "{\"block\": 1024}\n{\"block\": 32, \"arch\": \"sm_120a\"}\n",
    );
    assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    let answers = json_lines(&good);
    assert_eq!(answers[0]["arch"], "sm_86");
    assert_eq!(answers[0]["blocks_per_sm"], 1);
    assert_eq!(answers[1]["arch"], "sm_120");
    assert_eq!(answers[1]["blocks_per_sm"], 24);
}

#[test]
fn arch_json_has_the_scripted_keys_and_h100_facts() {
    let output = run(&["arch", "--json"]);
    assert_eq!(output.status.code(), Some(0));
    let rows = json(&output);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), occupancy_core::arch::all().len());
    assert!(
        rows.iter().any(|row| row["name"] == "sm_88")
            && rows.iter().any(|row| row["name"] == "sm_107")
    );
    let keys = [
        "name",
        "major",
        "minor",
        "max_threads_per_block",
        "max_threads_per_sm",
        "max_warps_per_sm",
        "max_blocks_per_sm",
        "regs_per_sm",
        "regs_per_block",
        "max_regs_per_thread",
        "smem_per_sm",
        "smem_per_block",
        "smem_per_block_optin",
        "reserved_smem_per_block",
        "source",
    ];
    for row in rows {
        for key in keys {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
    }
    let hopper = rows.iter().find(|row| row["name"] == "sm_90").unwrap();
    assert_eq!(hopper["max_threads_per_sm"], 2048);
    assert_eq!(hopper["max_blocks_per_sm"], 32);
    assert_eq!(hopper["regs_per_sm"], 65536);
    assert_eq!(hopper["smem_per_sm"], 233472);
    assert_eq!(hopper["smem_per_block"], 49152);
    assert_eq!(hopper["smem_per_block_optin"], 232448);
    assert_eq!(hopper["reserved_smem_per_block"], 1024);
    let table = stdout(&run(&["occupancy", "arch"]));
    assert!(
        table.contains("sm_121") && table.contains("Hopper"),
        "{table}"
    );
    let gpus = stdout(&run(&["arch", "--gpus"]));
    assert!(gpus.contains("h100") && gpus.contains("rtx5090"), "{gpus}");
}

#[test]
fn sweep_summary_and_csv_equal_the_sum_of_single_answers() {
    let ranges = [
        "--block",
        "1..=1024:101",
        "--registers",
        "0..=256:37",
        "--static-smem",
        "0..=100000:24999",
        "--dynamic-smem",
        "0..=60000:30000",
    ];
    let mut args = vec![
        "sweep",
        "--arch",
        "sm_89",
        "--barriers",
        "2",
        "--carveout",
        "40",
    ];
    args.extend(ranges);
    args.push("--summary");
    let summary = json(&run(&args));
    let mut lines = String::new();
    let mut configs = 0;
    for block in (1..=1024).step_by(101) {
        for registers in (0..=256).step_by(37) {
            for static_smem in (0..=100_000).step_by(24_999) {
                for dynamic_smem in (0..=60_000).step_by(30_000) {
                    configs += 1;
                    lines.push_str(&format!(
                        "{{\"arch\":\"sm_89\",\"block\":{block},\"registers\":{registers},\"static_smem\":{static_smem},\"dynamic_smem\":{dynamic_smem},\"barriers\":2,\"carveout\":40}}\n"
                    ));
                }
            }
        }
    }
    let batch = run_with_stdin(&["calc", "--batch", "-"], &lines);
    assert_eq!(batch.status.code(), Some(0), "{}", stderr(&batch));
    let sum: u64 = json_lines(&batch)
        .iter()
        .map(|answer| answer["blocks_per_sm"].as_u64().unwrap())
        .sum();
    assert!(sum > 0);
    assert_eq!(summary["configs"], configs);
    assert_eq!(summary["sum_blocks"], sum);

    let mut csv_args = vec![
        "sweep",
        "--arch",
        "sm_89",
        "--barriers",
        "2",
        "--carveout",
        "40",
        "--csv",
    ];
    csv_args.extend(ranges);
    let csv = stdout(&run(&csv_args));
    assert_eq!(csv.lines().count(), configs + 1);
    let csv_sum: u64 = csv
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_sum, sum);
}

#[test]
fn sweep_default_prints_three_curves() {
    let output = run(&[
        "occupancy",
        "sweep",
        "--arch",
        "sm_90",
        "--block",
        "256",
        "--registers",
        "64",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("sweep_curves_sm_90_256_64", stdout(&output));
}

/// Runs with `stdin`, reading at most 1 MB of output: a batch that repeats itself forever (it
/// once printed one error line per read of a directory until the disk was full) fails here
/// instead of hanging.
fn run_bounded(args: &[&str], stdin: std::process::Stdio) -> (Option<i32>, String, String) {
    use std::io::Read;
    let mut child = binary()
        .args(args)
        .stdin(stdin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running cargo-occupancy");
    let mut out = Vec::new();
    let limit = 1 << 20;
    child
        .stdout
        .take()
        .unwrap()
        .take(limit)
        .read_to_end(&mut out)
        .unwrap();
    if out.len() as u64 >= limit {
        child.kill().unwrap();
        panic!(
            "{args:?} printed more than 1 MB: {}",
            String::from_utf8_lossy(&out[..200])
        );
    }
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_batch_read_error_ends_with_one_message_and_exit_2() {
    let dir = std::env::temp_dir();
    let dir_text = dir.to_str().unwrap();
    let (code, out, error) = run_bounded(
        &["occupancy", "calc", "--batch", dir_text],
        std::process::Stdio::null(),
    );
    assert_eq!(code, Some(2), "{error}");
    assert!(out.is_empty(), "{out}");
    assert!(error.contains("is a directory"), "{error}");
    assert_eq!(error.lines().count(), 1, "{error}");

    let directory_as_stdin = std::fs::File::open(&dir).unwrap();
    let (code, out, error) = run_bounded(
        &["occupancy", "calc", "--batch", "-", "--arch", "sm_90"],
        directory_as_stdin.into(),
    );
    assert_eq!(code, Some(2), "{error}");
    assert!(out.is_empty(), "{out}");
    assert!(
        error.contains("reading the batch input (stdin) at line 1") && error.contains("stops here"),
        "{error}"
    );
    assert_eq!(error.lines().count(), 1, "{error}");
}

#[test]
fn batch_fields_select_the_answer() {
    let input = "{\"arch\": \"sm_90\", \"block\": 256, \"registers\": 64}\n{\"arch\": \"sm_107\", \"block\": 1024}\n";
    let output = run_with_stdin(
        &["calc", "--batch", "-", "--fields", "blocks_per_sm,limiters"],
        input,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "{\"blocks_per_sm\":4,\"limiters\":[\"registers\"]}\n{\"blocks_per_sm\":1,\"limiters\":[\"warps\"]}\n"
    );
    let unknown = run(&["calc", "--batch", "-", "--fields", "blocks"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown field `blocks`"),
        "{}",
        stderr(&unknown)
    );
    let without_batch = run(&[
        "calc", "--arch", "sm_90", "--block", "64", "--fields", "limiters",
    ]);
    assert_eq!(without_batch.status.code(), Some(2));
}

/// An architecture the installed nvcc lists and the table lacks: the CLI names that nvcc and
/// says occupancy needs an update.
#[test]
fn an_arch_only_the_installed_nvcc_knows_says_update_occupancy() {
    let dir = std::env::temp_dir().join(format!("occupancy-cli-nvcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nvcc = dir.join("nvcc");
    std::fs::write(
        &nvcc,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Build cuda_14.0.r14.0'; else printf 'compute_120\\ncompute_130\\n'; fi\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = binary()
        .args(["calc", "--arch", "sm_130", "--block", "64"])
        .env("NVCC", &nvcc)
        .output()
        .unwrap();
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{error}");
    assert!(error.contains(&nvcc.display().to_string()), "{error}");
    assert!(
        error.contains("cuda_14.0") && error.contains("knows compute_130"),
        "{error}"
    );
    assert!(error.contains("update occupancy"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}
