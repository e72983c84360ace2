//! Throughput of the ptxas log parser over a large log made by repeating real nvcc 13 output
//! (four archs, spills, device functions, warnings). Target: at least 300 MB/s.
//! Also the PTX directive scanner over a generated PTX module full of `// begin inline asm`
//! comment lines (the shape that made a quadratic comment scan take 53 s, issue 10).
//! Run with `scripts/bench-parse.sh --divan`; the headline figure is `benches/ptxas_throughput.rs`.

use divan::counter::BytesCount;
use divan::Bencher;
use occupancy_core::ptxas::{
    parse_cuobjdump_resource_usage, parse_log, parse_ptx_directives, LogParser,
};

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

/// A PTX module of about `bytes` bytes shaped like candle's inline-asm-heavy kernels: entries
/// with launch directives whose bodies hold a `// begin inline asm` comment every few lines
/// (about 18,600 such lines in 5 MB), a few `/* */` blocks and `.file` strings.
fn inline_asm_ptx(bytes: usize) -> String {
    let mut ptx =
        String::from(".version 9.0\n.target sm_90\n.address_size 64\n.file 1 \"/src//k.cu\"\n");
    let mut kernel = 0;
    while ptx.len() < bytes {
        ptx.push_str(&format!(
            "\t// .globl\tk{kernel}\n.visible .entry k{kernel}(\n\t.param .u64 k{kernel}_param_0\n)\n.maxntid 256, 1, 1\n{{\n\t/* body */\n"
        ));
        for line in 0..40 {
            ptx.push_str(&format!(
                "\t// begin inline asm\n\tcvt.rn.f16.f32 %rs{line}, %f{line};\n\t// end inline asm\n\tadd.s32 \t%r{line}, %r{line}, 1;\n\tst.global.u32 \t[%rd1], %r{line};\n\tld.global.u32 \t%r{line}, [%rd2];\n\tmul.lo.s32 \t%r{line}, %r{line}, 3;\n"
            ));
        }
        ptx.push_str("\tret;\n}\n");
        kernel += 1;
    }
    ptx
}

#[divan::bench(args = [1 << 20, 5 << 20, 20 << 20], sample_count = 5)]
fn ptx_directives_inline_asm(bencher: Bencher, bytes: usize) {
    let ptx = inline_asm_ptx(bytes);
    bencher
        .counter(BytesCount::of_str(&ptx))
        .bench(|| parse_ptx_directives(divan::black_box(&ptx)).len());
}
