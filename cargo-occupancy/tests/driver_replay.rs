//! Replays answers recorded from a real GPU's driver through `cargo occupancy calc --batch`.
//!
//! `scripts/gpu-verify.sh` asked an H100's driver (`cuOccupancyMaxActiveBlocksPerMultiprocessor`)
//! about every kernel of the corpus over 120,942 launch configurations (block size x dynamic
//! shared memory x carveout x opt-in), with the registers, static shared memory and barriers
//! ptxas reported, and recorded each question as a `calc --batch` request beside the driver's
//! answer (docs/verification/h100-sm90/driver-replay.jsonl.gz; docs/verification.md says how).
//! CI has no GPU: this test keeps the calculator equal to that driver on every one of them, and
//! to the refused launches above a kernel's `__launch_bounds__` (0 blocks).

use flate2::read::GzDecoder;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn calculator_equals_the_recorded_h100_driver() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/verification/h100-sm90/driver-replay.jsonl.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = BufReader::new(GzDecoder::new(file)).lines();
    let header: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        header["device"]["arch"], "sm_90",
        "recorded on {}",
        header["device"]
    );

    let mut requests = String::new();
    let mut expected = Vec::new();
    for line in lines {
        let record: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        requests.push_str(&record["request"].to_string());
        requests.push('\n');
        expected.push(record);
    }
    assert!(
        expected.len() > 100_000,
        "only {} recorded configurations",
        expected.len()
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_cargo-occupancy"))
        .args(["occupancy", "calc", "--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(requests.as_bytes()).unwrap());
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let answers: Vec<serde_json::Value> = output
        .stdout
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    assert_eq!(answers.len(), expected.len());
    let mut mismatches = Vec::new();
    let mut refused_launches = 0;
    for (answer, record) in answers.iter().zip(&expected) {
        if record["launch_refused"] == true {
            refused_launches += 1;
            // Refused either by the kernel's __launch_bounds__ or because its registers times the
            // block's threads exceed the per-block register file (the driver's own max threads).
            let limiters = answer["limiters"].as_array().unwrap();
            assert!(
                !limiters.is_empty()
                    && limiters
                        .iter()
                        .all(|l| l == "launch_bounds" || l == "registers"),
                "{record} -> {answer}"
            );
        }
        if answer["blocks_per_sm"] != record["driver_blocks_per_sm"] {
            mismatches.push(format!(
                "{} -> tool {} driver {}",
                record["request"], answer["blocks_per_sm"], record["driver_blocks_per_sm"]
            ));
        }
    }
    assert!(
        refused_launches > 0,
        "the recording holds no refused launch"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first: {:#?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(10)]
    );
}
