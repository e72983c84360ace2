//! Differential test: our calculator against NVIDIA's `cuda_occupancy.h`, compiled at test time
//! with g++ (`differential_harness.cpp`), fed the same device facts from `occupancy_core::arch`.
//!
//! The header is the newest release (CUDA 13.5, installed by `scripts/setup-cuda.sh` into
//! `.cache/cuda/venv-oracle`, separately from the nvcc 13.0 the builds use). A header that lacks
//! an architecture of the table answers "unknown device" for it, and a header whose rules moved
//! answers differently: both fail here, so a new release cannot drift past unnoticed.
//!
//! At least 1,000,000 random occupancy queries per run across every arch (barriers, carveouts,
//! opt-in shared memory, launch bounds and out-of-range sizes in the mix), plus max-potential
//! block size and available-dynamic-shared-memory queries: 0 mismatches allowed.
//!
//! Compared bit-exactly: status, blocks, every per-resource block limit, allocated registers and
//! shared memory per block, and the header's limiting-factor bits. Two cases are compared by
//! their definition instead:
//! - a block above the kernel's `__launch_bounds__` maximum: the header ignores it, we answer 0
//!   blocks with limiter `launch_bounds`; all other per-resource limits must still be equal and
//!   the header's block count must be the minimum of them;
//! - limiter bits when the barrier limit lowers the count below another resource's limit: the
//!   header keeps the bits of the resources that bound before barriers were applied; our
//!   `limiters` name only the resources whose limit equals the final count.
//!
//! Seed: random per run and printed; set `OCCUPANCY_DIFF_SEED` to replay, and
//! `OCCUPANCY_DIFF_CONFIGS` to change the number of occupancy queries.

// A test reads the environment it runs in; the root clippy.toml's disallowed-methods are for
// the crates' own code.
#![allow(clippy::disallowed_methods)]

use occupancy_core::arch::{all, ArchFacts};
use occupancy_core::calc::{
    available_dynamic_smem_per_block, max_potential_block_size, resources, Carveout, KernelFacts,
    Launch, Limiter,
};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

const INT_MAX: i64 = i32::MAX as i64;
const OCC_LIMIT_WARPS: u32 = 0x01;
const OCC_LIMIT_REGISTERS: u32 = 0x02;
const OCC_LIMIT_SHARED_MEMORY: u32 = 0x04;
const OCC_LIMIT_BLOCKS: u32 = 0x08;
const OCC_LIMIT_BARRIERS: u32 = 0x10;

/// splitmix64: small, fast, reproducible.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `low..=high`.
    fn range(&mut self, low: u32, high: u32) -> u32 {
        low + (self.next() % (u64::from(high - low) + 1)) as u32
    }
    fn percent(&mut self) -> u32 {
        self.range(0, 99)
    }
}

fn header_path() -> PathBuf {
    if let Some(path) = std::env::var_os("OCCUPANCY_CUDA_OCCUPANCY_H") {
        return PathBuf::from(path);
    }
    if let Some(cuda_home) =
        std::env::var_os("OCCUPANCY_ORACLE_CUDA_HOME").or_else(|| std::env::var_os("CUDA_HOME"))
    {
        return PathBuf::from(cuda_home)
            .join("include")
            .join("cuda_occupancy.h");
    }
    PathBuf::new()
}

/// Compiles the harness once per test binary run.
fn build_harness() -> PathBuf {
    let header = header_path();
    assert!(
        header.is_file(),
        "NVIDIA's cuda_occupancy.h not found (looked at {:?}). The differential test needs it: \
         run `scripts/setup-cuda.sh && source <(scripts/setup-cuda.sh --env)` (sets \
         OCCUPANCY_CUDA_OCCUPANCY_H), or set OCCUPANCY_CUDA_OCCUPANCY_H / CUDA_HOME yourself.",
        header
    );
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/differential_harness.cpp");
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("occupancy_differential_harness");
    let output = Command::new(std::env::var("CXX").unwrap_or_else(|_| "g++".into()))
        .args(["-O2", "-std=c++14", "-w", "-include"])
        .arg(&header)
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
        .expect("running g++ failed: install a C++ compiler (g++) or point $CXX at one");
    assert!(
        output.status.success(),
        "compiling the cuda_occupancy.h harness failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

#[derive(Debug, Clone, Copy)]
enum Query {
    Occupancy {
        arch: usize,
        kernel: KernelFacts,
        launch: Launch,
    },
    PotentialBlockSize {
        arch: usize,
        kernel: KernelFacts,
        dynamic_smem_bytes: u32,
        carveout: Carveout,
    },
    AvailableDynamicSmem {
        arch: usize,
        kernel: KernelFacts,
        block_threads: u32,
        blocks_per_sm: u32,
        carveout: Carveout,
    },
}

fn random_kernel(random: &mut Random, arch: &ArchFacts, dynamic_smem_bytes: u32) -> KernelFacts {
    let registers_per_thread = match random.percent() {
        0..=14 => random.range(0, 64),
        15..=94 => random.range(0, 255),
        _ => random.range(256, 300),
    };
    let static_smem_bytes = match random.percent() {
        0..=39 => 0,
        40..=79 => random.range(0, 49_152),
        _ => random.range(0, arch.smem_per_block_optin + 2048),
    };
    let barriers = match random.percent() {
        0..=19 => 0,
        20..=59 => 1,
        _ => random.range(0, 16),
    };
    let max_threads_per_block = (random.percent() < 30).then(|| random.range(1, 1024));
    let max_dynamic_smem_bytes = match random.percent() {
        0..=49 => None,
        50..=64 => Some(dynamic_smem_bytes),
        _ => Some(random.range(0, arch.smem_per_block_optin + 2048)),
    };
    KernelFacts {
        registers_per_thread,
        static_smem_bytes,
        barriers,
        max_threads_per_block,
        max_dynamic_smem_bytes,
    }
}

fn random_dynamic_smem(random: &mut Random, arch: &ArchFacts) -> u32 {
    match random.percent() {
        0..=39 => 0,
        40..=69 => random.range(0, 49_152),
        _ => random.range(0, arch.smem_per_block_optin + 4096),
    }
}

fn random_carveout(random: &mut Random) -> Carveout {
    if random.percent() < 50 {
        Carveout::Default
    } else {
        Carveout::Percent(random.range(0, 100) as u8)
    }
}

fn random_block(random: &mut Random) -> u32 {
    match random.percent() {
        0..=49 => 32 * random.range(1, 32),
        50..=89 => random.range(1, 1024),
        _ => random.range(1025, 2048),
    }
}

fn random_query(random: &mut Random, occupancy_only: bool) -> Query {
    let arch = random.range(0, all().len() as u32 - 1) as usize;
    let facts = &all()[arch];
    let dynamic_smem_bytes = random_dynamic_smem(random, facts);
    let kernel = random_kernel(random, facts, dynamic_smem_bytes);
    let carveout = random_carveout(random);
    let kind = if occupancy_only {
        0
    } else {
        random.range(0, 1)
    };
    match kind {
        0 if !occupancy_only => Query::PotentialBlockSize {
            arch,
            kernel,
            dynamic_smem_bytes,
            carveout,
        },
        0 => Query::Occupancy {
            arch,
            kernel,
            launch: Launch {
                block_threads: random_block(random),
                dynamic_smem_bytes,
                carveout,
            },
        },
        _ => Query::AvailableDynamicSmem {
            arch,
            kernel,
            block_threads: random_block(random).min(1024),
            blocks_per_sm: random.range(0, 33),
            carveout,
        },
    }
}

fn carveout_number(carveout: Carveout) -> i32 {
    match carveout {
        Carveout::Default => -1,
        Carveout::Percent(percent) => i32::from(percent),
    }
}

/// The opt-in the header sees: the kernel's, or the calculator's documented default.
fn header_max_dynamic(arch: &ArchFacts, kernel: &KernelFacts, dynamic_smem_bytes: u32) -> u32 {
    occupancy_core::calc::resolved_max_dynamic_smem(arch, kernel, dynamic_smem_bytes)
}

fn write_function(
    out: &mut impl Write,
    arch_index: usize,
    kernel: &KernelFacts,
    max_dynamic: u32,
    carveout: Carveout,
) {
    let arch = &all()[arch_index];
    write!(
        out,
        " {} {} {} {} {} {} {}",
        arch_index,
        kernel.registers_per_thread,
        kernel.static_smem_bytes,
        kernel
            .max_threads_per_block
            .unwrap_or(arch.max_threads_per_block),
        max_dynamic,
        kernel.barriers,
        carveout_number(carveout)
    )
    .unwrap();
}

fn write_query(out: &mut impl Write, query: &Query) {
    match *query {
        Query::Occupancy {
            arch,
            kernel,
            launch,
        } => {
            out.write_all(b"o").unwrap();
            let max_dynamic = header_max_dynamic(&all()[arch], &kernel, launch.dynamic_smem_bytes);
            write_function(out, arch, &kernel, max_dynamic, launch.carveout);
            writeln!(
                out,
                " {} {}",
                launch.block_threads, launch.dynamic_smem_bytes
            )
            .unwrap();
        }
        Query::PotentialBlockSize {
            arch,
            kernel,
            dynamic_smem_bytes,
            carveout,
        } => {
            out.write_all(b"p").unwrap();
            let max_dynamic = header_max_dynamic(&all()[arch], &kernel, dynamic_smem_bytes);
            write_function(out, arch, &kernel, max_dynamic, carveout);
            writeln!(out, " {dynamic_smem_bytes}").unwrap();
        }
        Query::AvailableDynamicSmem {
            arch,
            kernel,
            block_threads,
            blocks_per_sm,
            carveout,
        } => {
            out.write_all(b"a").unwrap();
            let facts = &all()[arch];
            let opt_in_maximum = if facts.major >= 7 {
                facts.smem_per_block_optin
            } else {
                facts.smem_per_block
            };
            let max_dynamic = kernel
                .max_dynamic_smem_bytes
                .unwrap_or(opt_in_maximum.saturating_sub(kernel.static_smem_bytes));
            write_function(out, arch, &kernel, max_dynamic, carveout);
            writeln!(out, " {block_threads} {blocks_per_sm}").unwrap();
        }
    }
}

/// Returns a description of the mismatch, if any.
#[allow(clippy::too_many_lines)] // test code: every field of one answer compared in one place
fn check(query: &Query, line: &str) -> Option<String> {
    let fields: Vec<i64> = line
        .split_whitespace()
        .map(|field| field.parse().unwrap())
        .collect();
    match *query {
        Query::Occupancy {
            arch,
            kernel,
            launch,
        } => {
            let facts = &all()[arch];
            let ours = resources(facts, &kernel, &launch);
            let limits = ours.limits;
            let [status, blocks, flags, registers, smem, warps, block_slots, barriers, allocated_registers, allocated_smem] =
                fields[..]
            else {
                return Some(format!("malformed harness line {line:?}"));
            };
            let mut problems = Vec::new();
            let mut expect = |name: &str, header: i64, ours: i64| {
                if header != ours {
                    problems.push(format!("{name}: header {header}, ours {ours}"));
                }
            };
            let limit = |value: Option<u32>| value.map_or(INT_MAX, i64::from);
            expect("status", status, 0);
            expect("registers limit", registers, limit(limits.registers));
            expect("shared memory limit", smem, limit(limits.shared_memory));
            expect("warps limit", warps, i64::from(limits.warps));
            expect("blocks limit", block_slots, i64::from(limits.blocks));
            expect("barriers limit", barriers, limit(limits.barriers));
            expect(
                "allocated registers",
                allocated_registers,
                i64::from(ours.allocated_registers_per_block),
            );
            expect(
                "allocated shared memory",
                allocated_smem,
                i64::try_from(ours.allocated_smem_per_block)
                    .expect("the oracle's inputs are 32 bits"),
            );
            // What the header answers ignores launch bounds.
            let without_bounds = occupancy_core::calc::BlockLimits {
                launch_bounds: None,
                ..limits
            };
            let header_blocks = without_bounds.blocks_per_sm();
            expect("blocks", blocks, i64::from(header_blocks));
            let before_barriers = [limits.warps, limits.blocks]
                .into_iter()
                .chain(limits.registers)
                .chain(limits.shared_memory)
                .min()
                .unwrap();
            let mut expected_flags = 0;
            for (bit, value) in [
                (OCC_LIMIT_WARPS, Some(limits.warps)),
                (OCC_LIMIT_REGISTERS, limits.registers),
                (OCC_LIMIT_SHARED_MEMORY, limits.shared_memory),
                (OCC_LIMIT_BLOCKS, Some(limits.blocks)),
            ] {
                if value == Some(before_barriers) {
                    expected_flags |= bit;
                }
            }
            if limits.barriers == Some(header_blocks) {
                expected_flags |= OCC_LIMIT_BARRIERS;
            }
            expect("limiting factors", flags, i64::from(expected_flags));
            // Our own answer, by definition.
            let ours_blocks = limits.blocks_per_sm();
            let limiters = limits.limiters();
            if launch.block_threads > kernel.max_threads_per_block.unwrap_or(u32::MAX) {
                if ours_blocks != 0 || !limiters.contains(&Limiter::LaunchBounds) {
                    problems.push(format!(
                        "launch bounds: ours {ours_blocks} blocks, limiters {limiters:?}"
                    ));
                }
            } else if i64::from(ours_blocks) != blocks {
                problems.push(format!("blocks: header {blocks}, ours {ours_blocks}"));
            }
            (!problems.is_empty()).then(|| problems.join("; "))
        }
        Query::PotentialBlockSize {
            arch,
            kernel,
            dynamic_smem_bytes,
            carveout,
        } => {
            let suggestion =
                max_potential_block_size(&all()[arch], &kernel, |_| dynamic_smem_bytes, carveout);
            let expected = [
                0,
                i64::from(suggestion.blocks_per_sm),
                i64::from(suggestion.block_threads),
            ];
            (fields != expected)
                .then(|| format!("max potential block size: header {fields:?}, ours {expected:?}"))
        }
        Query::AvailableDynamicSmem {
            arch,
            kernel,
            block_threads,
            blocks_per_sm,
            carveout,
        } => {
            let ours = available_dynamic_smem_per_block(
                &all()[arch],
                &kernel,
                block_threads,
                blocks_per_sm,
                carveout,
            );
            let beyond_bounds = block_threads > kernel.max_threads_per_block.unwrap_or(u32::MAX);
            match (fields[0], ours) {
                (_, Err(_)) if beyond_bounds => None,
                (0, Ok(bytes)) if fields[1] == i64::from(bytes) => None,
                (1, Err(_)) => None,
                (status, ours) => Some(format!(
                    "available dynamic smem: header status {status} bytes {}, ours {ours:?}",
                    fields[1]
                )),
            }
        }
    }
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {text:?}")),
    )
}

#[test]
#[allow(clippy::too_many_lines)] // test code: the whole run, queries to summary, in one place
fn matches_cuda_occupancy_h_on_every_arch() {
    let harness = build_harness();
    let seed = env_number("OCCUPANCY_DIFF_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or(1)
    });
    let occupancy_queries = env_number("OCCUPANCY_DIFF_CONFIGS").unwrap_or(1_000_000);
    let other_queries = occupancy_queries / 20;
    println!("differential seed: {seed} (replay with OCCUPANCY_DIFF_SEED={seed})");

    let mut random = Random(seed);
    let mut queries: Vec<Query> = (0..occupancy_queries)
        .map(|_| random_query(&mut random, true))
        .collect();
    queries.extend((0..other_queries).map(|_| random_query(&mut random, false)));

    let mut child = Command::new(&harness)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the compiled harness");
    let mut stdin = BufWriter::with_capacity(1 << 20, child.stdin.take().unwrap());
    let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());

    let (mismatches, compared) = std::thread::scope(|scope| {
        let queries = &queries;
        scope.spawn(move || {
            writeln!(stdin, "{}", all().len()).unwrap();
            for arch in all() {
                writeln!(
                    stdin,
                    "{} {} {} {} {} {} {} {} {} {} {}",
                    arch.major,
                    arch.minor,
                    arch.max_threads_per_block,
                    arch.max_threads_per_sm,
                    arch.regs_per_block,
                    arch.regs_per_sm,
                    arch.warp_size,
                    arch.smem_per_block,
                    arch.smem_per_sm,
                    arch.smem_per_block_optin,
                    arch.reserved_smem_per_block
                )
                .unwrap();
            }
            for query in queries {
                write_query(&mut stdin, query);
            }
            stdin.flush().unwrap();
        });
        let mut mismatches = Vec::new();
        let mut compared = 0usize;
        for (query, line) in queries.iter().zip(stdout.lines()) {
            let line = line.expect("reading the harness output");
            compared += 1;
            if let Some(problem) = check(query, &line) {
                if mismatches.len() < 20 {
                    let arch = match query {
                        Query::Occupancy { arch, .. }
                        | Query::PotentialBlockSize { arch, .. }
                        | Query::AvailableDynamicSmem { arch, .. } => all()[*arch].name,
                    };
                    mismatches.push(format!("{arch}: {query:?}\n    {problem}"));
                } else {
                    mismatches.push(String::new());
                }
            }
        }
        (mismatches, compared)
    });
    let status = child.wait().expect("waiting for the harness");
    assert!(status.success(), "the harness failed: {status}");
    assert_eq!(
        compared,
        queries.len(),
        "the harness answered fewer queries than asked"
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} queries differ from cuda_occupancy.h at {} (seed {seed}); the oracle must be the \
         newest header (scripts/setup-cuda.sh installs it); first ones:\n{}",
        mismatches.len(),
        queries.len(),
        header_path().display(),
        mismatches
            .iter()
            .filter(|text| !text.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    println!("{compared} queries, 0 mismatches");
}
