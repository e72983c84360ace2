//! `compile_ptx` ships PTX without line information, and loses nothing the line information gave:
//! built as a crate's build.rs builds them (real nvcc and nvdisasm; scripts/setup-cuda.sh
//! installs both; this test fails, never skips, without them), the corpus files
//! (`tests/kernels/`) must
//!
//! * ship the PTX of a plain `nvcc -ptx` (no `-lineinfo`): no `.loc`, `.file` or debug section,
//!   the same kernels with the same directives, the same text but for unused `$L__func_end`
//!   labels;
//! * still put each kernel's row at the line the `-lineinfo` PTX gives (its first `.loc`);
//! * give the SASS facts of the former one-step compile: per arch, the facts that `nvcc -cubin
//!   -arch=compute_80 -code=sm_X -lineinfo` of the `.cu` gives, for every kernel the SASS stage
//!   read (a subset of them: the stage reads only what a lint can report on), all of them for a
//!   kernel with local memory, all but its loops' lines for one without;
//! * pass the user's arguments to both nvcc steps, with the numbers of the one-step compile.

// A test reads the environment it runs in (the CUDA tools setup-cuda.sh installed).
#![allow(clippy::disallowed_methods, clippy::too_many_lines)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_build::{Build, Error};
use occupancy_core::ptxas;
use occupancy_core::report::Report;
use occupancy_core::sass::{analyze, LineFacts, SassFacts};

/// The corpus files that compile for sm_80 (launch_bounds.cu has clusters, setmaxnreg.cu needs
/// sm_90a; tests/tests/sass_subset.rs covers both).
const FILES: [&str; 5] = [
    "spills.cu",
    "shared_memory.cu",
    "device_frames.cu",
    "constants.cu",
    "sass_evidence.cu",
];
const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

fn corpus(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("tests/kernels")
        .join(file)
}

fn nvcc() -> PathBuf {
    std::env::var_os("NVCC")
        .map(PathBuf::from)
        .expect("NVCC is not set: run `source <(scripts/setup-cuda.sh --env)`")
}

/// Runs `program args paths`; its stdout. It must succeed.
fn run(program: &Path, args: &[&str], paths: &[&Path]) -> String {
    let output = Command::new(program)
        .args(args)
        .args(paths)
        .output()
        .unwrap_or_else(|error| panic!("{}: {error}", program.display()));
    assert!(
        output.status.success(),
        "{} {args:?} {paths:?}: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `spills.cu`'s kernels declared: their findings are rendered in full, lines and all, so the
/// SASS stage reads them with line tables; every other kernel is undeclared.
const SPILLS_DECLARED: &str = "#[occupancy::kernel(family = \"*window_sum*\", block = 128, allow(spills, spill_in_loop, unlaunchable, reason = \"the corpus spills on purpose\"))]\nfn window_sums();\n";

/// The corpus built for sm_80 + sm_90 from one compute_80 PTX, as a crate's build.rs builds it
/// (`spills` denies the spilling kernels): the package, OUT_DIR and the report.
fn build() -> (PathBuf, PathBuf, Report) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("line-info");
    let (pkg, out) = common::scratch_package(&dir, "\n[workspace]\n", SPILLS_DECLARED);
    for file in FILES {
        std::fs::copy(corpus(file), pkg.join("kernels").join(file)).unwrap();
    }
    // `fp64` (allow by default) enabled: more kernels, on every arch, for the SASS stage.
    let mut env = occupancy_build::TrackedEnv::new();
    env.set("OCCUPANCY_LINT_FP64", Some("warn"));
    let mut build = common::package_build(&pkg, &out);
    build.env(env).source_dir("kernels");
    for arch in ARCHS {
        build.arch(arch);
    }
    match build.try_compile_ptx() {
        Ok(_) | Err(Error::Denied { .. }) => {}
        Err(error) => panic!("{error}"),
    }
    let report =
        Report::from_json(&std::fs::read_to_string(out.join("occupancy.json")).unwrap()).unwrap();
    (pkg, out, report)
}

/// The lines of a PTX text but `$L__func_endN:` labels and blank lines.
fn code_lines(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("$L__func_end"))
        .collect()
}

/// `nvcc -ptx -arch=compute_80 [flags]` of `source`.
fn ptx_of(source: &Path, flags: &[&str]) -> String {
    let ptx = source.with_extension(format!("{}.ptx", flags.len()));
    let mut args = vec!["-ptx", "-arch=compute_80"];
    args.extend(flags);
    args.push("-o");
    run(&nvcc(), &args, &[&ptx, source]);
    std::fs::read_to_string(&ptx).unwrap()
}

fn has_line_info(line: &str) -> bool {
    let code = line.trim_start();
    [".loc", ".file", ".section"].iter().any(|directive| {
        code.starts_with(&format!("{directive}\t")) || code.starts_with(&format!("{directive} "))
    })
}

/// The facts of every kernel of `source` on `arch` after a one-step `-lineinfo` compile, file
/// paths relative to `pkg` as in the report.
fn one_step_facts(
    source: &Path,
    arch: &str,
    pkg: &Path,
    spilled: &dyn Fn(&str) -> bool,
) -> BTreeMap<String, SassFacts> {
    let cubin = source.with_extension(format!("{arch}.cubin"));
    let code = format!("-code={arch}");
    run(
        &nvcc(),
        &["-cubin", "-arch=compute_80", &code, "-lineinfo", "-o"],
        &[&cubin, source],
    );
    let nvdisasm = PathBuf::from(
        std::env::var_os("OCCUPANCY_NVDISASM")
            .expect("OCCUPANCY_NVDISASM is not set: run `source <(scripts/setup-cuda.sh --env)`"),
    );
    let text = run(&nvdisasm, &["-c", "-g", "-ndf"], &[&cubin]);
    let prefix = format!("{}/", pkg.display());
    analyze(&text, spilled)
        .unwrap()
        .into_iter()
        .map(|mut facts| {
            for group in &mut facts.lines {
                group.file = group.file.replace(&prefix, "");
            }
            for found in &mut facts.loops {
                found.file = found.file.take().map(|file| file.replace(&prefix, ""));
            }
            (facts.kernel.clone(), facts)
        })
        .collect()
}

#[test]
fn shipped_ptx_has_no_line_info_and_nothing_the_line_info_gave_is_lost() {
    let (pkg, out, report) = build();
    let (mut read, mut with_local_memory) = (0, 0);
    for file in FILES {
        let source = pkg.join("kernels").join(file);
        let stem = file.trim_end_matches(".cu");
        let shipped = std::fs::read_to_string(out.join(format!("{stem}.ptx"))).unwrap();
        assert!(
            !shipped.lines().any(has_line_info),
            "{file}: the shipped PTX has line information"
        );
        let plain = ptx_of(&source, &[]);
        assert_eq!(
            code_lines(&shipped),
            code_lines(&plain),
            "{file}: the plain PTX ships"
        );
        assert_eq!(
            ptxas::parse_ptx_directives(&shipped),
            ptxas::parse_ptx_directives(&plain),
            "{file}: the same kernels and directives"
        );
        let lineinfo = ptx_of(&source, &["-lineinfo"]);
        let lines = ptxas::entry_source_lines(&lineinfo);
        assert!(!lines.is_empty(), "{file}: -lineinfo gives lines");
        for arch in ARCHS {
            let spilled = |kernel: &str| {
                report.kernels.iter().any(|row| {
                    row.name == kernel
                        && row.arch == arch
                        && row.spill_store_bytes + row.spill_load_bytes > 0
                })
            };
            let facts = one_step_facts(&source, arch, &pkg, &spilled);
            for (kernel, line) in &lines {
                let row = report
                    .kernels
                    .iter()
                    .find(|row| &row.name == kernel && row.arch == arch)
                    .unwrap_or_else(|| panic!("{file}: no {arch} row for {kernel}"));
                let at = row.source.as_ref().expect("a source location");
                assert_eq!(
                    (at.path.as_str(), at.line),
                    (format!("kernels/{file}").as_str(), line.line),
                    "{file}: {kernel} is defined where its first .loc says"
                );
                if let Some(sass) = &row.sass {
                    // A declared kernel with local memory is read from a line-table cubin:
                    // every fact, lines included (its findings name them). Any other kernel is
                    // read from the fatbin of the stripped PTX, which has no line tables: its
                    // facts are the same but for the source lines: its loops' are unknown, and
                    // its local accesses are grouped under a line that names none.
                    let local =
                        row.stack_frame_bytes + row.spill_store_bytes + row.spill_load_bytes > 0;
                    let lined = local && row.declaration.is_some();
                    let mut expected = facts[kernel].clone();
                    if !lined {
                        for found in &mut expected.loops {
                            (found.file, found.line) = (None, None);
                        }
                        expected.lines = without_line_table(&expected.lines);
                    }
                    assert_eq!(sass, &expected, "{file}: {kernel} on {arch}");
                    read += 1;
                    with_local_memory += usize::from(lined);
                }
            }
        }
    }
    let rows = report.kernels.len();
    eprintln!("line_info: the SASS stage read {read} of {rows} rows ({with_local_memory} with local memory, with their lines), each as the one-step compile");
    assert!(
        read >= 10 && read < rows,
        "the SASS stage read {read} of {rows} rows: some, not all"
    );
    assert!(
        with_local_memory >= 4 && with_local_memory < read,
        "{with_local_memory} of the {read} rows read have local memory: both kinds are compared"
    );
}

/// `registers, stack, spill stores, spill loads` by (kernel, arch).
type Numbers = BTreeMap<(String, String), (u32, u64, u64, u64)>;

/// The user's arguments reach both steps of a `compile_ptx` compile: cicc's (`-I`, `-D`,
/// `-std`, `--use_fast_math`, `-O3`), which nvcc ignores for the `.ptx` input of the ptxas step
/// (no error), and ptxas's (`-maxrregcount`, `-Xptxas`), which nvcc passes to ptxas from a
/// `.ptx` input as from a `.cu`: every kernel gets the numbers of the former one-step compile.
#[test]
fn the_users_arguments_reach_cicc_and_ptxas() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("line-info-flags");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(dir.join("include/width.h"), "#define WIDTH_FROM_HEADER 1\n").unwrap();
    let source = dir.join("spills.cu");
    let text = std::fs::read_to_string(corpus("spills.cu")).unwrap();
    // Compiles only when -I and -D reached cicc.
    let guarded = format!("#include \"width.h\"\n#if !WIDTH_FROM_HEADER || !FROM_DEFINE\n#error flags lost\n#endif\n{text}");
    std::fs::write(&source, guarded).unwrap();
    let include = format!("-I{}", dir.join("include").display());
    let flags = [
        include.as_str(),
        "-DFROM_DEFINE=1",
        "-std=c++17",
        "--use_fast_math",
        "-O3",
        "-maxrregcount=40",
        "-Xptxas",
        "-O2",
    ];
    let mut build = Build::new();
    build
        .file(&source)
        .out_dir(dir.join("out"))
        .manifest_dir(&dir);
    for arch in ARCHS {
        build.arch(arch);
    }
    for flag in flags {
        build.flag(flag);
    }
    let checked = build
        .check_sources(&occupancy_build::SourceCheck::default())
        .unwrap_or_else(|error| panic!("{error}"));
    let ours: Numbers = checked
        .report
        .kernels
        .iter()
        .map(|row| {
            let numbers = (
                row.registers,
                row.stack_frame_bytes,
                row.spill_store_bytes,
                row.spill_load_bytes,
            );
            ((row.name.clone(), row.arch.clone()), numbers)
        })
        .collect();
    let mut args = vec![
        "-fatbin",
        "-arch=compute_80",
        "-code=sm_80,sm_90",
        "-lineinfo",
        "-Xptxas",
        "-v",
    ];
    args.extend(flags);
    args.push("-o");
    let output = Command::new(nvcc())
        .args(&args)
        .arg(dir.join("one-step.fatbin"))
        .arg(&source)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let one_step: Numbers = ptxas::parse_log(&String::from_utf8_lossy(&output.stderr))
        .unwrap()
        .kernels
        .iter()
        .filter(|record| record.entry)
        .map(|record| {
            let numbers = (
                record.registers.unwrap_or(0),
                record.stack_frame_bytes.unwrap_or(0),
                record.spill_store_bytes.unwrap_or(0),
                record.spill_load_bytes.unwrap_or(0),
            );
            ((record.name.clone(), record.arch.clone()), numbers)
        })
        .collect();
    assert_eq!(ours, one_step);
    // `__launch_bounds__` kernels keep their own cap; the unbounded one gets the command line's.
    for arch in ARCHS {
        let unbounded = ours[&("unbounded_window_sum".to_owned(), arch.to_owned())];
        assert_eq!(unbounded.0, 40, "-maxrregcount reached ptxas on {arch}");
        assert!(unbounded.2 > 0, "the cap makes ptxas spill on {arch}");
    }
}

/// The cache entries' `-lineinfo` PTX files under `out`, by file name: an entry has one when its
/// source was compiled in two steps.
fn lineinfo_ptx_files(out: &Path) -> Vec<String> {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.to_string_lossy().ends_with(".lineinfo.ptx") {
                found.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut found = Vec::new();
    walk(&out.join("occupancy/cache"), &mut found);
    found.sort();
    found
}

/// A source whose previous compile spilled in many kernels is compiled in one step, ptxas
/// making line tables for all (`line_info::spills_are_common`): `spills.cu` after an edit, while
/// `constants.cu`, which does not spill, stays in two. Both ways give the same report and SASS
/// facts, lines included.
#[test]
fn a_source_that_spilled_in_many_kernels_is_compiled_in_one_step_next_time() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("line-info-one-step");
    // Declared, so that a two-step build reads their lines too (an undeclared kernel's facts
    // from a binary without line tables have none; see the test above).
    let declared = format!(
        "{SPILLS_DECLARED}#[occupancy::kernel(block = 256)]\nfn scale();\n#[occupancy::kernel(block = 256)]\nfn plain_copy();\n"
    );
    let (pkg, out) = common::scratch_package(&dir, "\n[workspace]\n", &declared);
    for file in ["spills.cu", "constants.cu"] {
        std::fs::copy(corpus(file), pkg.join("kernels").join(file)).unwrap();
    }
    let build = || {
        let mut build = common::package_build(&pkg, &out);
        build.source_dir("kernels").arch("sm_80").arch("sm_90");
        match build.try_compile_ptx() {
            Ok(_) | Err(Error::Denied { .. }) => {}
            Err(error) => panic!("{error}"),
        }
        let json = std::fs::read_to_string(out.join("occupancy.json")).unwrap();
        Report::from_json(&json).unwrap()
    };
    let first = build();
    assert_eq!(
        lineinfo_ptx_files(&out),
        ["constants.lineinfo.ptx", "spills.lineinfo.ptx"],
        "no previous compile: both in two steps"
    );
    let spilled = first
        .kernels
        .iter()
        .filter(|row| row.spill_store_bytes > 0)
        .count();
    assert!(
        spilled * 100 >= first.kernels.len(),
        "{spilled} of {} rows spill",
        first.kernels.len()
    );
    // An edit that changes no line of code: a comment at the end of each file.
    for file in ["spills.cu", "constants.cu"] {
        let path = pkg.join("kernels").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n// edited\n")).unwrap();
    }
    let second = build();
    let lineinfo = lineinfo_ptx_files(&out);
    assert!(
        lineinfo.contains(&"constants.lineinfo.ptx".to_owned()),
        "constants.cu spills nowhere: two steps again: {lineinfo:?}"
    );
    // The old entries stay until the cache collects them; the new spills entry has none.
    let spills_entries = lineinfo
        .iter()
        .filter(|name| name.starts_with("spills"))
        .count();
    assert!(spills_entries <= 1, "{lineinfo:?}");
    let entry_of_latest = |stem: &str| {
        let slot = std::fs::read_dir(out.join("occupancy/cache"))
            .unwrap()
            .flatten()
            .find(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{stem}-"))
            })
            .unwrap()
            .path();
        let current = std::fs::read_to_string(slot.join("current")).unwrap();
        slot.join(current.trim())
    };
    assert!(
        !entry_of_latest("spills")
            .join("spills.lineinfo.ptx")
            .exists(),
        "spills.cu spilled in most kernels: compiled in one step"
    );
    assert!(entry_of_latest("constants")
        .join("constants.lineinfo.ptx")
        .exists());
    let rows = |report: &Report| {
        let mut rows: Vec<String> = report
            .kernels
            .iter()
            .map(|row| serde_json::to_string(row).unwrap())
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(
        rows(&second),
        rows(&first),
        "the same rows, SASS facts and lines included"
    );
    assert!(second.kernels.iter().any(|row| row
        .sass
        .as_ref()
        .is_some_and(|facts| !facts.lines.is_empty())));
}

/// What the local accesses of `lines` become in code read without a line table: one group per
/// kind and loop depth, under a line that names none (empty file, line 0), ordered as the SASS
/// reader orders its groups (deepest loop first, then most accesses).
fn without_line_table(lines: &[LineFacts]) -> Vec<LineFacts> {
    let mut groups: BTreeMap<_, LineFacts> = BTreeMap::new();
    for found in lines {
        let group = groups
            .entry((found.kind, found.loop_depth))
            .or_insert_with(|| {
                let mut group = found.clone();
                (group.file, group.line, group.loads, group.stores) = (String::new(), 0, 0, 0);
                group
            });
        group.loads += found.loads;
        group.stores += found.stores;
    }
    let mut grouped: Vec<LineFacts> = groups.into_values().collect();
    grouped.sort_by_key(|group| std::cmp::Reverse((group.loop_depth, group.loads + group.stores)));
    grouped
}
