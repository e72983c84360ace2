//! Compiles the kernel corpus (`tests/kernels/`) with the real compiler, parses ptxas's report,
//! snapshots the records and cross-checks every record against `cuobjdump --dump-resource-usage`
//! of the same build.
//!
//! nvcc 13 builds sm_75, sm_80, sm_90 and sm_120 in one command per file; the 12.9 ptxas
//! (`OCCUPANCY_PTXAS_LEGACY`) assembles sm_52, sm_61 and sm_70 from PTX that nvcc 13 wrote for
//! compute_75, with `.version`/`.target` rewritten (the PTX uses nothing newer than sm_52 has).
//! All builds run in parallel.

use occupancy_core::ptxas::{
    cuobjdump_reserved_shared_bytes, parse_cuobjdump_resource_usage, parse_log,
    parse_ptx_directives, CuobjdumpFunction, KernelRecord, ParseOutput,
};
use occupancy_tests::{cuda_home, nvcc, repo_root};
use std::path::{Path, PathBuf};
use std::process::Command;

const MODERN_ARCHS: [&str; 4] = ["sm_75", "sm_80", "sm_90", "sm_120"];
const LEGACY_ARCHS: [&str; 3] = ["sm_52", "sm_61", "sm_70"];

/// One compiler run: its log, what it built, and how to read the build's cuobjdump figures.
#[derive(Debug)]
struct Build {
    name: String,
    /// The command, with paths relative to the repository, for the snapshot.
    command: String,
    log: String,
    succeeded: bool,
    /// Object or cubin to cross-check, and the arch when it is a bare cubin (no arch header).
    object: Option<(PathBuf, Option<String>)>,
    relocatable: bool,
    debug: bool,
    module_declares_dynamic_smem: bool,
}

fn kernels_dir() -> PathBuf {
    repo_root().join("tests/kernels")
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("parse_corpus");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn legacy_ptxas() -> PathBuf {
    match std::env::var_os("OCCUPANCY_PTXAS_LEGACY") {
        Some(path) => PathBuf::from(path),
        None => panic!("OCCUPANCY_PTXAS_LEGACY is not set: run `source <(scripts/setup-cuda.sh --env)` (installs the 12.9 ptxas for sm_50..sm_72)"),
    }
}

fn declares_dynamic_smem(source: &str) -> bool {
    std::fs::read_to_string(kernels_dir().join(source))
        .unwrap()
        .contains("extern __shared__")
}

fn run(program: &Path, args: &[String]) -> (String, bool) {
    let output = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()));
    let mut log = String::from_utf8_lossy(&output.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stderr));
    (log, output.status.success())
}

fn display(program: &str, args: &[String]) -> String {
    let root = format!("{}/", repo_root().display());
    let out = format!("{}/", out_dir().display());
    format!("{program} {}", args.join(" "))
        .replace(&out, "$OUT/")
        .replace(&root, "")
}

fn nvcc_build(name: &str, source: &str, extra: &[&str], archs: &[&str]) -> Build {
    let object = out_dir().join(format!("{name}.o"));
    let mut args: Vec<String> = vec![
        "-c".into(),
        "-Xptxas".into(),
        "-v,-warn-spills,-warn-lmem-usage".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    for arch in archs {
        let number = arch.trim_start_matches("sm_");
        args.push("-gencode".into());
        args.push(format!("arch=compute_{number},code=sm_{number}"));
    }
    args.push(kernels_dir().join(source).display().to_string());
    args.push("-o".into());
    args.push(object.display().to_string());
    let (log, succeeded) = run(&nvcc(), &args);
    Build {
        name: name.to_string(),
        command: display("nvcc", &args),
        log,
        succeeded,
        object: succeeded.then_some((object, None)),
        relocatable: extra.contains(&"-rdc=true"),
        debug: extra.contains(&"-G"),
        module_declares_dynamic_smem: declares_dynamic_smem(source),
    }
}

/// PTX from nvcc 13 for compute_75, rewritten to `.version 8.8` / `.target sm_XX`, assembled by
/// the 12.9 ptxas for each legacy arch (one ptxas run each, logs concatenated as a build would).
fn legacy_build(name: &str, source: &str) -> Build {
    let ptx = out_dir().join(format!("{name}.ptx"));
    let ptx_args: Vec<String> = vec![
        "-ptx".into(),
        "-arch=compute_75".into(),
        kernels_dir().join(source).display().to_string(),
        "-o".into(),
        ptx.display().to_string(),
    ];
    let (log, ok) = run(&nvcc(), &ptx_args);
    assert!(ok, "nvcc -ptx failed for {source}:\n{log}");
    let text = std::fs::read_to_string(&ptx).unwrap();
    let mut command = vec![display("nvcc", &ptx_args)];
    let mut full_log = String::new();
    let mut objects = Vec::new();
    for arch in LEGACY_ARCHS {
        let rewritten: String = text
            .lines()
            .map(|line| {
                if line.starts_with(".version ") {
                    ".version 8.8".to_string()
                } else if line.starts_with(".target ") {
                    format!(".target {arch}")
                } else {
                    line.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let arch_ptx = out_dir().join(format!("{name}.{arch}.ptx"));
        std::fs::write(&arch_ptx, rewritten).unwrap();
        let cubin = out_dir().join(format!("{name}.{arch}.cubin"));
        let args: Vec<String> = vec![
            "-v".into(),
            format!("-arch={arch}"),
            arch_ptx.display().to_string(),
            "-o".into(),
            cubin.display().to_string(),
        ];
        let (log, ok) = run(&legacy_ptxas(), &args);
        assert!(ok, "legacy ptxas failed for {source} {arch}:\n{log}");
        command.push(display("$OCCUPANCY_PTXAS_LEGACY", &args));
        full_log.push_str(&log);
        objects.push((cubin, arch.to_string()));
    }
    Build {
        name: name.to_string(),
        command: command.join(" && "),
        log: full_log,
        succeeded: true,
        // Legacy builds are cross-checked per cubin in `legacy_cross_check`.
        object: None,
        relocatable: false,
        debug: false,
        module_declares_dynamic_smem: declares_dynamic_smem(source),
    }
    .with_legacy_objects(objects)
}

impl Build {
    fn with_legacy_objects(self, objects: Vec<(PathBuf, String)>) -> Build {
        let records = in_log_order(
            parse_log(&self.log)
                .unwrap_or_else(|error| panic!("{}: {error}\n{}", self.name, self.log)),
        );
        for (cubin, arch) in objects {
            let dump = cuobjdump(&cubin);
            let of_arch: Vec<KernelRecord> = records
                .iter()
                .filter(|record| record.arch == arch)
                .cloned()
                .collect();
            assert!(!of_arch.is_empty(), "{}: no records for {arch}", self.name);
            cross_check(&self, &of_arch, &dump, Some(&arch));
        }
        self
    }
}

/// Entry kernels and callees (device functions) merged back in log order.
fn in_log_order(output: ParseOutput) -> Vec<KernelRecord> {
    let mut records = [output.kernels, output.callees].concat();
    records.sort_by_key(|record| record.line_number);
    records
}

fn cuobjdump(object: &Path) -> Vec<CuobjdumpFunction> {
    let output = Command::new(cuda_home().join("bin/cuobjdump"))
        .arg("--dump-resource-usage")
        .arg(object)
        .output()
        .expect("cuobjdump runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cuobjdump failed on {}: {}",
        object.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    parse_cuobjdump_resource_usage(&text).unwrap_or_else(|error| panic!("{error}\n{text}"))
}

/// Every record matches cuobjdump's figures for the same function and arch, and every function
/// cuobjdump lists has a record.
fn cross_check(
    build: &Build,
    records: &[KernelRecord],
    dump: &[CuobjdumpFunction],
    bare_arch: Option<&str>,
) {
    let arch_of = |function: &CuobjdumpFunction| {
        function
            .arch
            .clone()
            .or(bare_arch.map(str::to_string))
            .expect("cuobjdump arch")
    };
    for record in records {
        let found = dump
            .iter()
            .find(|function| function.name == record.name && arch_of(function) == record.arch);
        let context = format!("{}: `{}` for {}", build.name, record.name, record.arch);
        if !record.entry {
            // Device functions appear in cuobjdump only in relocatable (-rdc) or debug (-G) code.
            assert_eq!(
                found.is_some(),
                build.relocatable || build.debug,
                "{context}: device function listed by cuobjdump: {found:?}"
            );
            continue;
        }
        let function = found.unwrap_or_else(|| panic!("{context}: not in cuobjdump output"));
        assert_eq!(
            Some(function.registers),
            record.registers,
            "{context}: registers"
        );
        let expected_stack = if build.relocatable {
            occupancy_core::ptxas::StackSize::Bytes(0)
        } else {
            record
                .cumulative_stack
                .unwrap_or(occupancy_core::ptxas::StackSize::Bytes(0))
        };
        assert_eq!(
            function.stack, expected_stack,
            "{context}: STACK is the cumulative stack"
        );
        let reserve = cuobjdump_reserved_shared_bytes(
            &record.arch,
            record.static_smem_bytes,
            build.module_declares_dynamic_smem,
            build.relocatable,
        );
        assert_eq!(
            function.shared_bytes,
            record.static_smem_bytes + reserve,
            "{context}: SHARED"
        );
        for (bank, bytes) in &record.cmem {
            assert!(
                function.cmem.contains(&(*bank, *bytes)),
                "{context}: cmem[{bank}] {bytes} not in {:?}",
                function.cmem
            );
        }
        assert_eq!(
            (function.textures, function.surfaces, function.samplers),
            (record.textures, record.surfaces, record.samplers),
            "{context}: textures, surfaces, samplers"
        );
        assert_eq!(
            function.global_memory_bytes.unwrap_or(0),
            record.global_memory_bytes.unwrap_or(0),
            "{context}: module gmem"
        );
        // ptxas prints no constant banks at all for sm_90 and later; where it prints them they match.
        for bank in &record.module_cmem {
            assert!(
                function.module_cmem.contains(bank),
                "{context}: module constant bank {bank:?} not in {:?}",
                function.module_cmem
            );
        }
    }
    for function in dump {
        let arch = arch_of(function);
        assert!(
            records
                .iter()
                .any(|record| record.name == function.name && record.arch == arch),
            "{}: cuobjdump lists `{}` for {arch} but the ptxas log has no record of it",
            build.name,
            function.name
        );
    }
}

/// Records as snapshotted: compile times vary from run to run, so only their presence is kept.
fn snapshot_value(build: &Build, records: &[KernelRecord]) -> serde_json::Value {
    let mut kernels = serde_json::to_value(records).unwrap();
    for kernel in kernels.as_array_mut().unwrap() {
        let time = &mut kernel["compile_time_ms"];
        if !time.is_null() {
            *time = "[measured]".into();
        }
    }
    serde_json::json!({ "command": build.command, "kernels": kernels })
}

#[test]
fn corpus_reports_parse_snapshot_and_match_cuobjdump() {
    let builds: Vec<Build> = std::thread::scope(|scope| {
        let jobs = vec![
            scope.spawn(|| nvcc_build("spills", "spills.cu", &[], &MODERN_ARCHS)),
            scope.spawn(|| nvcc_build("shared_memory", "shared_memory.cu", &[], &MODERN_ARCHS)),
            scope.spawn(|| nvcc_build("device_frames", "device_frames.cu", &[], &MODERN_ARCHS)),
            scope.spawn(|| nvcc_build("constants", "constants.cu", &[], &MODERN_ARCHS)),
            scope.spawn(|| {
                nvcc_build(
                    "device_frames_rdc",
                    "device_frames.cu",
                    &["-rdc=true"],
                    &["sm_80", "sm_90"],
                )
            }),
            scope.spawn(|| {
                nvcc_build(
                    "device_frames_debug",
                    "device_frames.cu",
                    &["-G"],
                    &["sm_80", "sm_90"],
                )
            }),
            scope.spawn(|| nvcc_build("launch_bounds", "launch_bounds.cu", &[], &["sm_90"])),
            scope.spawn(|| {
                nvcc_build(
                    "spills_maxrregcount",
                    "spills.cu",
                    &["-maxrregcount=32"],
                    &["sm_90"],
                )
            }),
            scope.spawn(|| {
                nvcc_build(
                    "fails_to_compile",
                    "fails_to_compile.cu",
                    &[],
                    &["sm_80", "sm_90"],
                )
            }),
            scope.spawn(|| legacy_build("spills_legacy", "spills.cu")),
            scope.spawn(|| legacy_build("shared_memory_legacy", "shared_memory.cu")),
            scope.spawn(|| legacy_build("device_frames_legacy", "device_frames.cu")),
        ];
        jobs.into_iter()
            .map(|job| job.join().expect("build thread"))
            .collect()
    });
    for build in &builds {
        let output = parse_log(&build.log)
            .unwrap_or_else(|error| panic!("{}: {error}\nlog:\n{}", build.name, build.log));
        assert!(
            output.diagnostics.is_empty(),
            "{}: unexpected diagnostics {:#?}",
            build.name,
            output.diagnostics
        );
        if build.name == "fails_to_compile" {
            assert!(!build.succeeded, "fails_to_compile.cu must fail to compile");
            assert!(!output.errors.is_empty());
            let too_big: Vec<_> = output
                .kernels
                .iter()
                .filter(|record| record.name == "too_big")
                .collect();
            assert!(
                !too_big.is_empty() && too_big.iter().all(|record| !record.errors.is_empty()),
                "the error must be attached to too_big: {too_big:#?}"
            );
        } else {
            assert!(build.succeeded, "{} failed:\n{}", build.name, build.log);
        }
        assert!(output.kernels.iter().all(|record| record.entry));
        let records = in_log_order(output);
        if let Some((object, bare_arch)) = &build.object {
            cross_check(build, &records, &cuobjdump(object), bare_arch.as_deref());
        }
        insta::assert_json_snapshot!(build.name.clone(), snapshot_value(build, &records));
    }
    let capped = builds
        .iter()
        .find(|build| build.name == "spills_maxrregcount")
        .unwrap();
    let capped = parse_log(&capped.log).unwrap();
    let unbounded = capped
        .kernels
        .iter()
        .find(|record| record.name == "unbounded_window_sum")
        .unwrap();
    assert_eq!(
        unbounded.registers,
        Some(32),
        "-maxrregcount=32 caps the kernel without launch bounds"
    );
    assert!(
        unbounded
            .warnings
            .iter()
            .any(|warning| warning.contains("Overriding maximum register limit")),
        "{:?}",
        unbounded.warnings
    );
    assert!(
        capped
            .warnings
            .iter()
            .any(|warning| warning.contains("entry-specific value 64")),
        "{:?}",
        capped.warnings
    );
    let spills = parse_log(&builds[0].log).unwrap();
    let bounded: Vec<_> = spills
        .kernels
        .iter()
        .filter(|record| record.name.contains("window_sum") && record.name.starts_with("_Z"))
        .collect();
    assert!(
        bounded
            .iter()
            .all(|record| record.spill_store_bytes > Some(0) && !record.warnings.is_empty()),
        "launch bounds must force spills with -warn-spills warnings"
    );
}

#[test]
fn texture_references_are_counted() {
    let source = kernels_dir().join("texture_surface.ptx");
    let cubin = out_dir().join("texture_surface.cubin");
    let args: Vec<String> = vec![
        "-v".into(),
        "-arch=sm_75".into(),
        source.display().to_string(),
        "-o".into(),
        cubin.display().to_string(),
    ];
    let (modern, ok) = run(&cuda_home().join("bin/ptxas"), &args);
    assert!(ok, "{modern}");
    let legacy_args: Vec<String> = vec![
        "-v".into(),
        "-arch=sm_52".into(),
        source.display().to_string(),
        "-o".into(),
        out_dir()
            .join("texture_surface.sm_52.cubin")
            .display()
            .to_string(),
    ];
    let (legacy, ok) = run(&legacy_ptxas(), &legacy_args);
    assert!(ok, "{legacy}");
    for log in [&modern, &legacy] {
        let output = parse_log(log).unwrap();
        let record = &output.kernels[0];
        assert_eq!(
            (record.textures, record.surfaces, record.samplers),
            (2, 1, 1),
            "{log}"
        );
    }
    // cuobjdump 13.2 cannot read cubins with texture references ("Internal error: elf section
    // not found"), so these counts cannot be cross-checked. If this starts to pass, add the
    // cross-check.
    let dump = Command::new(cuda_home().join("bin/cuobjdump"))
        .arg("--dump-resource-usage")
        .arg(&cubin)
        .output()
        .unwrap();
    assert!(
        !dump.status.success(),
        "cuobjdump now reads texture-reference cubins: cross-check them"
    );
}

#[test]
fn ptx_launch_directives_match_the_sources_bounds() {
    let ptx = out_dir().join("launch_bounds.ptx");
    let args: Vec<String> = vec![
        "-ptx".into(),
        "-arch=sm_90".into(),
        kernels_dir().join("launch_bounds.cu").display().to_string(),
        "-o".into(),
        ptx.display().to_string(),
    ];
    let (log, ok) = run(&nvcc(), &args);
    assert!(ok, "{log}");
    let entries = parse_ptx_directives(&std::fs::read_to_string(&ptx).unwrap());
    insta::assert_json_snapshot!("launch_bounds_ptx", entries);
}
