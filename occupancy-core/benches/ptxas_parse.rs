//! Throughput of the ptxas log parser over a large log made by repeating real nvcc 13 output
//! (four archs, spills, device functions, warnings). Target: at least 300 MB/s.
//! Run with `scripts/bench-parse.sh --divan`; the headline figure is `benches/ptxas_throughput.rs`.

use divan::counter::BytesCount;
use divan::Bencher;
use occupancy_core::ptxas::{parse_cuobjdump_resource_usage, parse_log, LogParser};

fn main() {
    divan::main();
}

const REAL_LOG: &str = include_str!("../tests/fixtures/ptxas/nvcc13_multiarch.log");
const REAL_DUMP: &str = include_str!("../tests/fixtures/ptxas/cuobjdump_shared_memory.txt");
const LOG_BYTES: usize = 32 << 20;

fn repeated(text: &str, bytes: usize) -> String {
    text.repeat(bytes / text.len() + 1)
}

#[divan::bench(sample_count = 5)]
fn parse_log_32_mib(bencher: Bencher) {
    let log = repeated(REAL_LOG, LOG_BYTES);
    bencher
        .counter(BytesCount::of_str(&log))
        .bench(|| parse_log(divan::black_box(&log)).unwrap().kernels.len());
}

#[divan::bench(sample_count = 5)]
fn stream_64_kib_chunks_32_mib(bencher: Bencher) {
    let log = repeated(REAL_LOG, LOG_BYTES);
    bencher.counter(BytesCount::of_str(&log)).bench(|| {
        let mut parser = LogParser::new();
        for chunk in divan::black_box(log.as_bytes()).chunks(64 << 10) {
            parser.feed(chunk);
        }
        parser.finish().unwrap().kernels.len()
    });
}

#[divan::bench(sample_count = 5)]
fn cuobjdump_16_mib(bencher: Bencher) {
    let dump = repeated(REAL_DUMP, 16 << 20);
    bencher.counter(BytesCount::of_str(&dump)).bench(|| {
        parse_cuobjdump_resource_usage(divan::black_box(&dump))
            .unwrap()
            .len()
    });
}
