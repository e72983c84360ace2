//! The SASS stage's line-table cubins (occupancy-build's `line_tables`) are assembled from a PTX
//! module cut down to the kernels read (`occupancy_core::ptxas::subset_ptx`). Over the kernel
//! corpus (`tests/kernels/`), every kernel cut out alone and assembled with `-lineinfo` must give
//! what the full `-lineinfo` compile of its `.cu` gives: the same ptxas report (registers,
//! barriers, stack frame, spills, static shared memory) and the same SASS facts (instructions,
//! local loads and stores by width, loops, source lines, calls and their callees' frames, FP64,
//! `setmaxnreg`), as nvdisasm and `occupancy_core::sass` read them. The build checks the report
//! each time and falls back to the whole module; this test shows the fallback is not what
//! makes the corpus pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::ptxas::{self, KernelRecord};
use occupancy_core::sass::{analyze, SassFacts};
use occupancy_tests::{nvcc, repo_root};

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sass_subset");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn nvdisasm() -> PathBuf {
    std::env::var_os("OCCUPANCY_NVDISASM")
        .map(PathBuf::from)
        .expect("OCCUPANCY_NVDISASM is not set: run `source <(scripts/setup-cuda.sh --env)`")
}

/// Runs `program args`; its stdout and stderr (it must succeed).
fn run(program: &Path, args: &[&std::ffi::OsStr]) -> (String, String) {
    let output = occupancy_tests::run_tool(Command::new(program).args(args));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `nvcc -cubin -arch=<arch> -lineinfo -Xptxas -v -o <cubin> <input>` (a `.cu` or a `.ptx`),
/// read back: ptxas's records and the SASS facts, by kernel.
fn assemble(
    input: &Path,
    arch: &str,
    cubin: &Path,
) -> (BTreeMap<String, KernelRecord>, BTreeMap<String, SassFacts>) {
    let arch_flag = format!("-arch={arch}");
    let (_, log) = run(
        &nvcc(),
        &[
            "-cubin".as_ref(),
            arch_flag.as_ref(),
            "-lineinfo".as_ref(),
            "-Xptxas".as_ref(),
            "-v".as_ref(),
            "-o".as_ref(),
            cubin.as_os_str(),
            input.as_os_str(),
        ],
    );
    let records = ptxas::parse_log(&log)
        .unwrap()
        .kernels
        .into_iter()
        .filter(|record| record.entry)
        .map(|record| (record.name.clone(), record))
        .collect();
    let (text, _) = run(
        &nvdisasm(),
        &["-c".as_ref(), "-g".as_ref(), cubin.as_os_str()],
    );
    let facts = analyze(&text, |_| true)
        .unwrap()
        .into_iter()
        .map(|facts| (facts.kernel.clone(), facts))
        .collect();
    (records, facts)
}

/// What the line-table compile must reproduce of a ptxas record.
fn resources(record: &KernelRecord) -> [Option<u64>; 6] {
    [
        record.registers.map(u64::from),
        record.barriers.map(u64::from),
        record.stack_frame_bytes,
        record.spill_store_bytes,
        record.spill_load_bytes,
        Some(record.static_smem_bytes),
    ]
}

/// Compares every kernel of one corpus file cut out alone with the file's full compile; returns
/// (kernels compared, kernels whose subset is smaller than the module).
fn compare_file(file: &str, arch: &str) -> (usize, usize) {
    let source = repo_root().join("tests/kernels").join(file);
    let stem = file.trim_end_matches(".cu");
    let dir = out_dir().join(stem);
    std::fs::create_dir_all(&dir).unwrap();
    let (full_records, full_facts) = assemble(&source, arch, &dir.join("full.cubin"));
    let lineinfo = dir.join("lineinfo.ptx");
    let virtual_arch = arch.replacen("sm_", "compute_", 1);
    run(
        &nvcc(),
        &[
            "-ptx".as_ref(),
            format!("-arch={virtual_arch}").as_ref(),
            "-lineinfo".as_ref(),
            "-o".as_ref(),
            lineinfo.as_os_str(),
            source.as_os_str(),
        ],
    );
    let module = std::fs::read_to_string(&lineinfo).unwrap();
    let kernels: Vec<String> = ptxas::parse_ptx_directives(&module)
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    assert_eq!(
        kernels.iter().collect::<BTreeSet<_>>(),
        full_records.keys().collect::<BTreeSet<_>>(),
        "{file}: the PTX's kernels are the compile's"
    );
    let mut smaller = 0;
    for kernel in &kernels {
        let alone = ptxas::subset_ptx(&module, &BTreeSet::from([kernel.clone()]))
            .unwrap_or_else(|error| panic!("{file}: {kernel}: {error}"));
        smaller += usize::from(alone.len() < module.len());
        let subset = dir.join(format!("{kernel}.ptx"));
        std::fs::write(&subset, &alone).unwrap();
        let (records, facts) = assemble(&subset, arch, &dir.join(format!("{kernel}.cubin")));
        assert_eq!(
            records.keys().collect::<Vec<_>>(),
            [kernel],
            "{file}: the subset of {kernel} holds that kernel alone"
        );
        assert_eq!(
            resources(&records[kernel]),
            resources(&full_records[kernel]),
            "{file}: ptxas's report of {kernel} alone and in the full compile"
        );
        assert_eq!(
            facts[kernel], full_facts[kernel],
            "{file}: the SASS facts of {kernel} alone and in the full compile"
        );
    }
    (kernels.len(), smaller)
}

#[test]
fn each_kernel_cut_out_alone_assembles_as_in_the_full_lineinfo_compile() {
    let files = [
        ("spills.cu", "sm_90"),
        ("shared_memory.cu", "sm_90"),
        ("device_frames.cu", "sm_90"),
        ("constants.cu", "sm_90"),
        ("launch_bounds.cu", "sm_90"),
        ("sass_evidence.cu", "sm_90"),
        ("setmaxnreg.cu", "sm_90a"),
    ];
    let results: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|(file, arch)| scope.spawn(move || compare_file(file, arch)))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let compared: usize = results.iter().map(|(kernels, _)| kernels).sum();
    let smaller: usize = results.iter().map(|(_, smaller)| smaller).sum();
    // The corpus is not empty by accident, and the subsets really leave code out.
    assert!(compared >= 20, "{compared} kernels compared");
    assert!(
        smaller >= 15,
        "{smaller} of {compared} subsets smaller than their module"
    );
    eprintln!("sass_subset: {compared} kernels, {smaller} cut smaller than their module");
}
