//! Exactness of the SASS reader: over the kernel corpus (`tests/kernels/`) and a generated corpus
//! of loop nests under register pressure, compiled with `-lineinfo` by nvcc 13.0 (sm_90, sm_90a;
//! sm_80, sm_100 and sm_120, whose loops close with uniform branches `BRA.U UP0, ...` from
//! sm_100 on) and by the legacy 12.9 ptxas (sm_75, sm_80: nvdisasm 13.x no longer reads
//! sm_5x..sm_7x, the other archs that ptxas assembles), every count `occupancy_core::sass` gives (instructions,
//! `LDL`/`STL`, FP64 per kernel; instructions and `LDL`/`STL` per loop) equals a direct reading of
//! `cuobjdump -sass` on the same cubin by the simple counter below, which shares no code with the
//! reader: another disassembler's output format (absolute branch addresses), and loops as the
//! address range from a backward branch's target to the branch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::sass::{analyze, SassFacts};
use occupancy_tests::{nvcc, repo_root};

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sass_counts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tool(variable: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("{variable} is not set: run `source <(scripts/setup-cuda.sh --env)`")
        })
}

fn run(program: &Path, args: &[&str]) -> String {
    let dir = tool("OCCUPANCY_NVDISASM");
    let path = format!(
        "{}:{}",
        dir.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = occupancy_tests::run_tool(Command::new(program).args(args).env("PATH", path));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A kernel as read by the simple counter from `cuobjdump -sass`.
#[derive(Debug, Default, PartialEq, Eq)]
struct Direct {
    instructions: u32,
    loads: u32,
    stores: u32,
    fp64: u32,
    /// header address → (instructions, LDL, STL) in [header, last backward branch to it].
    loops: BTreeMap<u64, (u32, u32, u32)>,
}

/// `(address, mnemonic, last 0x operand)` of each instruction line of one function.
fn direct_functions(text: &str) -> BTreeMap<String, Vec<(u64, String, Option<u64>)>> {
    let mut functions: BTreeMap<String, Vec<(u64, String, Option<u64>)>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("Function : ") {
            current = Some(name.trim().to_owned());
            functions.entry(name.trim().to_owned()).or_default();
            continue;
        }
        let Some(rest) = trimmed.strip_prefix("/*") else {
            continue;
        };
        let Some((address, body)) = rest.split_once("*/") else {
            continue;
        };
        let body = body.trim();
        if body.starts_with("/*") || body.is_empty() {
            continue; // the second half of an encoding
        }
        let Ok(address) = u64::from_str_radix(address.trim(), 16) else {
            continue;
        };
        let statement = body.split(';').next().unwrap();
        let mut words = statement
            .split_whitespace()
            .filter(|word| !word.starts_with('@'));
        let mnemonic = words.next().unwrap_or("").to_owned();
        let target = statement
            .split([' ', ','])
            .filter_map(|word| word.strip_prefix("0x"))
            .next_back()
            .and_then(|hex| u64::from_str_radix(hex, 16).ok());
        if let Some(name) = &current {
            functions
                .get_mut(name)
                .unwrap()
                .push((address, mnemonic, target));
        }
    }
    functions
}

fn direct_count(instructions: &[(u64, String, Option<u64>)]) -> Direct {
    let base = |mnemonic: &str| mnemonic.split('.').next().unwrap().to_owned();
    let mut direct = Direct::default();
    // The kernel's own code ends where the first callee (a CALL target) starts.
    let body_end = instructions
        .iter()
        .filter(|(_, mnemonic, _)| base(mnemonic) == "CALL")
        .filter_map(|(_, _, target)| *target)
        .min()
        .unwrap_or(u64::MAX);
    let mut ranges: BTreeMap<u64, u64> = BTreeMap::new();
    for (address, mnemonic, target) in instructions {
        direct.instructions += 1;
        match base(mnemonic).as_str() {
            "LDL" => direct.loads += 1,
            "STL" => direct.stores += 1,
            "DADD" | "DFMA" | "DMUL" | "DMNMX" | "DSET" | "DSETP" | "DMMA" => direct.fp64 += 1,
            "BRA" => {
                if let Some(target) =
                    target.filter(|target| target < address && *address < body_end)
                {
                    let end = ranges.entry(target).or_insert(*address);
                    *end = (*end).max(*address);
                }
            }
            _ => {}
        }
    }
    for (header, end) in ranges {
        let inside = instructions
            .iter()
            .filter(|(address, _, _)| (header..=end).contains(address));
        let mut counts = (0, 0, 0);
        for (_, mnemonic, _) in inside {
            counts.0 += 1;
            counts.1 += u32::from(base(mnemonic) == "LDL");
            counts.2 += u32::from(base(mnemonic) == "STL");
        }
        direct.loops.insert(header, counts);
    }
    direct
}

fn ours(facts: &SassFacts) -> Direct {
    Direct {
        instructions: facts.instructions,
        loads: facts.local_loads_by_width.values().sum(),
        stores: facts.local_stores_by_width.values().sum(),
        fp64: facts.fp64_instructions,
        loops: facts
            .loops
            .iter()
            .map(|found| {
                (
                    found.header_offset,
                    (found.instructions, found.local_loads, found.local_stores),
                )
            })
            .collect(),
    }
}

/// Compares every kernel of one cubin; returns how many kernels and loops were compared.
fn compare(cubin: &Path) -> (usize, usize) {
    let nvdisasm = tool("OCCUPANCY_NVDISASM");
    let cuobjdump = nvcc().with_file_name("cuobjdump");
    let text = run(&nvdisasm, &["-c", "-g", cubin.to_str().unwrap()]);
    let read =
        analyze(&text, |_| true).unwrap_or_else(|error| panic!("{}: {error}", cubin.display()));
    let direct = direct_functions(&run(&cuobjdump, &["-sass", cubin.to_str().unwrap()]));
    let mut loops = 0;
    for facts in &read {
        let expected = direct_count(&direct[&facts.kernel]);
        assert_eq!(
            ours(facts),
            expected,
            "{} in {}",
            facts.kernel,
            cubin.display()
        );
        loops += expected.loops.len();
    }
    let entries = text.matches("STO_CUDA_ENTRY").count();
    assert_eq!(
        read.len(),
        entries,
        "every kernel of {} is read",
        cubin.display()
    );
    (read.len(), loops)
}

fn nvcc_cubin(source: &Path, arch: &str) -> PathBuf {
    let stem = source.file_stem().unwrap().to_str().unwrap();
    let cubin = out_dir().join(format!("{stem}.{arch}.cubin"));
    let output = Command::new(nvcc())
        .args(["-cubin", &format!("-arch={arch}"), "-lineinfo", "-o"])
        .arg(&cubin)
        .arg(source)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    cubin
}

fn legacy_cubin(source: &Path, arch: &str) -> PathBuf {
    let stem = source.file_stem().unwrap().to_str().unwrap();
    let ptx = out_dir().join(format!("{stem}.legacy.ptx"));
    let output = Command::new(nvcc())
        .args(["-ptx", "-arch=compute_75", "-lineinfo", "-o"])
        .arg(&ptx)
        .arg(source)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text: String = std::fs::read_to_string(&ptx)
        .unwrap()
        .lines()
        .map(|line| match line {
            line if line.starts_with(".version ") => ".version 8.8".to_owned(),
            line if line.starts_with(".target ") => format!(".target {arch}"),
            line => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let arch_ptx = out_dir().join(format!("{stem}.{arch}.ptx"));
    std::fs::write(&arch_ptx, text).unwrap();
    let cubin = out_dir().join(format!("{stem}.{arch}.legacy.cubin"));
    run(
        &tool("OCCUPANCY_PTXAS_LEGACY"),
        &[
            &format!("-arch={arch}"),
            "-lineinfo",
            "-o",
            cubin.to_str().unwrap(),
            arch_ptx.to_str().unwrap(),
        ],
    );
    cubin
}

/// Loop nests with `width` live accumulators under `__launch_bounds__(256, 8)` (32 registers):
/// spills inside loops of varying depth, some with run-time-indexed arrays and FP64.
fn generated_corpus() -> PathBuf {
    let mut source = String::new();
    for kernel in 0..6u32 {
        let width = 24 + kernel * 8;
        let depth = 1 + kernel % 3;
        let element = if kernel % 2 == 0 { "float" } else { "double" };
        source.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__(256, 8) generated_{kernel}({element}* out, const {element}* in, const int* index, int n) {{\n    {element} acc[{width}];\n#pragma unroll\n    for (int j = 0; j < {width}; ++j) acc[j] = in[threadIdx.x + j];\n"
        ));
        for level in 0..depth {
            source.push_str(&format!(
                "    for (int i{level} = 0; i{level} < n; ++i{level}) {{\n"
            ));
        }
        source.push_str(&format!(
            "        {element} x = in[(i0 * 256 + threadIdx.x) & 4095];\n#pragma unroll\n        for (int j = 0; j < {width}; ++j) acc[j] = acc[j] * x + acc[(j + {step}) % {width}];\n",
            step = kernel + 1
        ));
        if kernel % 3 == 2 {
            source.push_str(&format!("        acc[index[i0] & {}] += x;\n", width - 1));
        }
        source.push_str(&"    }\n".repeat(depth as usize));
        source.push_str(&format!(
            "    {element} sum = 0;\n#pragma unroll\n    for (int j = 0; j < {width}; ++j) sum += acc[j];\n    out[threadIdx.x] = sum;\n}}\n\n"
        ));
    }
    let path = out_dir().join("generated_loops.cu");
    std::fs::write(&path, source).unwrap();
    path
}

#[test]
fn every_count_equals_a_direct_reading_of_cuobjdump() {
    let kernels = repo_root().join("tests/kernels");
    let generated = generated_corpus();
    let mut cubins = Vec::new();
    for file in [
        "spills.cu",
        "shared_memory.cu",
        "device_frames.cu",
        "constants.cu",
        "launch_bounds.cu",
        "sass_evidence.cu",
    ] {
        cubins.push(nvcc_cubin(&kernels.join(file), "sm_90"));
    }
    cubins.push(nvcc_cubin(&kernels.join("setmaxnreg.cu"), "sm_90a"));
    cubins.push(nvcc_cubin(&generated, "sm_90"));
    for arch in ["sm_80", "sm_100", "sm_120"] {
        cubins.push(nvcc_cubin(&kernels.join("sass_evidence.cu"), arch));
        cubins.push(nvcc_cubin(&generated, arch));
    }
    for arch in ["sm_75", "sm_80"] {
        cubins.push(legacy_cubin(&kernels.join("sass_evidence.cu"), arch));
        cubins.push(legacy_cubin(&generated, arch));
    }
    let (mut kernels_compared, mut loops_compared) = (0, 0);
    for cubin in &cubins {
        let (kernels, loops) = compare(cubin);
        kernels_compared += kernels;
        loops_compared += loops;
    }
    // The corpus is not empty by accident: kernels and loops were compared.
    assert!(kernels_compared >= 60, "{kernels_compared} kernels");
    assert!(loops_compared >= 50, "{loops_compared} loops");
    eprintln!(
        "sass_counts: {kernels_compared} kernels, {loops_compared} loops, {} cubins",
        cubins.len()
    );
}

/// Kernels of one shape each under `__maxnreg__(32)`, a cap ptxas applies on every arch (a
/// minimum blocks per SM is ignored where the SM holds fewer threads): 48 accumulators updated
/// in a loop nest of depth 1, 2 or 3 (the spill inside the loops), the same pressure once after
/// a cheap loop (the spill outside it), and a loop with no pressure (no spill).
fn arch_corpus() -> PathBuf {
    let mut source = String::new();
    for depth in 1..=3u32 {
        source.push_str(&format!(
            "extern \"C\" __global__ void __maxnreg__(32) nest_{depth}(float* out, const float* in, int n) {{\n    float acc[48];\n#pragma unroll\n    for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j];\n"
        ));
        for level in 0..depth {
            source.push_str(&format!(
                "    for (int i{level} = 0; i{level} < n; ++i{level}) {{\n"
            ));
        }
        source.push_str("        float x = in[(i0 * 256 + threadIdx.x) & 4095];\n#pragma unroll\n        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * x + acc[(j + 1) % 48];\n");
        source.push_str(&"    }\n".repeat(depth as usize));
        source.push_str("    float sum = 0.0f;\n#pragma unroll\n    for (int j = 0; j < 48; ++j) sum += acc[j];\n    out[threadIdx.x] = sum;\n}\n\n");
    }
    source.push_str("extern \"C\" __global__ void __maxnreg__(32) cold(float* out, const float* in, int n) {\n    float sum = 0.0f;\n    for (int i = 0; i < n; ++i) sum += in[i * 256 + threadIdx.x];\n    if (sum < 0.0f) {\n        float acc[48];\n#pragma unroll\n        for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x * 48 + j];\n#pragma unroll\n        for (int j = 0; j < 48; ++j) sum += acc[j] * acc[(j * 7) % 48] * acc[(j * 13) % 48];\n    }\n    out[threadIdx.x] = sum;\n}\n\n");
    source.push_str("extern \"C\" __global__ void __maxnreg__(32) plain(float* out, const float* in, int n) {\n    float sum = 0.0f;\n    for (int i = 0; i < n; ++i) sum += in[i * 256 + threadIdx.x];\n    out[threadIdx.x] = sum;\n}\n");
    let path = out_dir().join("arch_loops.cu");
    std::fs::write(&path, source).unwrap();
    path
}

/// What the loop lints see of one kernel: its loops' depths (ascending), whether spills sit in
/// a loop and whether any sit outside loops.
#[derive(Debug, PartialEq, Eq)]
struct LoopShape {
    depths: Vec<u32>,
    spills_in_loops: bool,
    spills_outside_loops: bool,
}

fn loop_shapes(cubin: &Path) -> BTreeMap<String, LoopShape> {
    let text = run(
        &tool("OCCUPANCY_NVDISASM"),
        &["-c", "-g", cubin.to_str().unwrap()],
    );
    let read =
        analyze(&text, |_| true).unwrap_or_else(|error| panic!("{}: {error}", cubin.display()));
    read.into_iter()
        .map(|facts| {
            let mut depths: Vec<u32> = facts.loops.iter().map(|found| found.depth).collect();
            depths.sort_unstable();
            let in_loops = facts.spill_loads_in_loops + facts.spill_stores_in_loops;
            let shape = LoopShape {
                depths,
                spills_in_loops: in_loops > 0,
                spills_outside_loops: facts.spill_loads + facts.spill_stores > in_loops,
            };
            (facts.kernel, shape)
        })
        .collect()
}

/// The same source has the same loops, and the same spills in them, on every arch nvcc 13.0
/// compiles for: sm_100 and later close their loops with uniform branches whose predicate is an
/// operand (`BRA.U UP0, `(.L_x_27)`), where sm_80 and sm_90 write `@P0 BRA`; a reader that takes
/// those for unconditional jumps finds no loop there, and `spill_in_loop` never fires.
#[test]
fn loops_and_their_spills_are_the_same_on_every_arch() {
    let source = arch_corpus();
    let archs = [
        "sm_80", "sm_90", "sm_100", "sm_103", "sm_110", "sm_120", "sm_121",
    ];
    let shapes: Vec<(&str, BTreeMap<String, LoopShape>)> = archs
        .iter()
        .map(|arch| (*arch, loop_shapes(&nvcc_cubin(&source, arch))))
        .collect();
    let sm_90 = &shapes[1].1;
    for depth in 1..=3u32 {
        let nest = &sm_90[&format!("nest_{depth}")];
        assert!(nest.spills_in_loops, "nest_{depth}: {nest:?}");
        assert_eq!(
            nest.depths.iter().max(),
            Some(&depth),
            "nest_{depth}: {nest:?}"
        );
    }
    let cold = &sm_90["cold"];
    assert!(
        !cold.spills_in_loops && cold.spills_outside_loops,
        "{cold:?}"
    );
    let plain = &sm_90["plain"];
    assert!(
        !plain.depths.is_empty() && !plain.spills_in_loops && !plain.spills_outside_loops,
        "{plain:?}"
    );
    for (arch, found) in &shapes {
        eprintln!("{arch}: {found:?}");
    }
    for (arch, found) in &shapes {
        assert_eq!(found, sm_90, "{arch} against sm_90");
    }
}
