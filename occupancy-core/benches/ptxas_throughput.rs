//! Plain throughput figure for `scripts/bench-parse.sh`: parses a 64 MiB log made by repeating
//! real nvcc 13 output (four archs, spills, device functions, warnings) and prints MB/s by wall
//! clock and by this thread's CPU time (`/proc/thread-self/schedstat`), since a shared machine
//! makes wall-clock figures depend on its load. Target: at least 300 MB/s.

use occupancy_core::ptxas::parse_log;
use std::time::Instant;

const REAL_LOG: &str = include_str!("../tests/fixtures/ptxas/nvcc13_multiarch.log");
const LOG_BYTES: usize = 64 << 20;
const RUNS: usize = 7;

fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to read.
    let log = REAL_LOG.repeat(LOG_BYTES / REAL_LOG.len() + 1);
    let megabytes = log.len() as f64 / 1e6;
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    let mut kernels = 0;
    for _ in 0..RUNS {
        let (started, cpu_started) = (Instant::now(), thread_cpu_ns());
        let output = parse_log(std::hint::black_box(&log)).expect("a real log parses");
        let seconds = started.elapsed().as_secs_f64();
        if let (Some(before), Some(after)) = (cpu_started, thread_cpu_ns()) {
            cpu.push(megabytes / ((after - before) as f64 / 1e9));
        }
        wall.push(megabytes / seconds);
        kernels = output.kernels.len();
    }
    println!("parse_log over {megabytes:.1} MB ({kernels} kernel records), {RUNS} runs:");
    println!(
        "  wall clock: median {:.0} MB/s, best {:.0} MB/s",
        median(wall.clone()),
        wall.iter().cloned().fold(0.0, f64::max)
    );
    if !cpu.is_empty() {
        println!(
            "  CPU time:   median {:.0} MB/s, best {:.0} MB/s",
            median(cpu.clone()),
            cpu.iter().cloned().fold(0.0, f64::max)
        );
    }
    let figure = if cpu.is_empty() {
        median(wall)
    } else {
        median(cpu)
    };
    println!(
        "  target >= 300 MB/s: {}",
        if figure >= 300.0 { "met" } else { "NOT met" }
    );
}
