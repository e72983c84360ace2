//! `cargo occupancy check` on compiled binaries gives the rows and findings `check` gives on the
//! sources: the corpus compiled by plain nvcc (no `-Xptxas -v`) into fatbins, host objects, a
//! static library, a shared library and a wheel holding it, each read back (cubins from the ELF,
//! spills from ptxas's spill marks, the machine-code lints from nvdisasm's SASS of the kernels
//! the cubins mark) and compared, kernel x arch, field by field and finding by finding, with
//! `check` on the `.cu` files (ptxas's `-v` report, the SASS the PTX selects); and a lock
//! (`--lock`) judges a binary's kernels as it judges a source's. Needs the real nvcc, cuobjdump
//! and nvdisasm (scripts/setup-cuda.sh).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{binary, entry_rows, nvcc, repo_root, run_tool, stderr, stdout, work_dir};

/// Corpus kernels that compile for sm_80 and sm_90 (`launch_bounds.cu` needs sm_90,
/// `fails_to_compile.cu` fails on purpose).
const SOURCES: [&str; 7] = [
    "tests/kernels/constants.cu",
    "tests/kernels/spills.cu",
    "tests/kernels/shared_memory.cu",
    "tests/kernels/device_frames.cu",
    "tests/kernels/calls.cu",
    "tests/kernels/sass_evidence.cu",
    "tests/kernels/smem_spilling.cu",
];

/// The corpus kernels with machine-code findings, each lint at least once: `spill_in_loop`
/// (`sass_evidence.cu`, `smem_spilling.cu`), `local_array` and `fp64` (`sass_evidence.cu`),
/// `call` (`calls.cu`, `device_frames.cu`, `sass_evidence.cu`), and `spills.cu`'s spills.
const MACHINE_CODE_SOURCES: [&str; 5] = [
    "tests/kernels/spills.cu",
    "tests/kernels/sass_evidence.cu",
    "tests/kernels/calls.cu",
    "tests/kernels/device_frames.cu",
    "tests/kernels/smem_spilling.cu",
];

/// Findings a binary cannot reproduce, and why: `unreachable_bound` judges the minimum blocks
/// per SM of `__launch_bounds__`, which a cubin does not keep (ptxas turns it into a register
/// cap; docs/build.md, "What a binary does not keep").
const NOT_IN_A_BINARY: [&str; 1] = ["unreachable_bound"];

/// What a finding of a binary without line tables says in place of a line.
const UNKNOWN_LINE: &str =
    "an unknown line (the code has no line table: compile with `-lineinfo` for lines)";

/// The columns a binary must reproduce. `min_blocks_per_sm` and `max_registers` are PTX
/// directives a cubin does not keep (ptxas turns them into a register cap). A shared-memory
/// spill area (`smem_spill_bytes`) is read from the PTX for the sources, from the cubin's
/// `EIATTR_SHARED_SCRATCH` for the binaries.
const FIELDS: [&str; 12] = [
    "registers",
    "barriers",
    "static_smem_bytes",
    "smem_spill_bytes",
    "stack_frame_bytes",
    "spill_store_bytes",
    "spill_load_bytes",
    "max_threads_per_block",
    "block",
    "blocks_per_sm",
    "occupancy",
    "limiters",
];

/// `-gencode arch=compute_80,code=[sm_80,sm_90]`: the form `check` compiles sources in.
fn gencode() -> [&'static str; 2] {
    ["-gencode", "arch=compute_80,code=[sm_80,sm_90]"]
}

/// Builds every binary form of `sources` in `dir` with nvcc's `flags` besides: per source a
/// fatbin and an object, then `libcorpus.a` of the objects and `libcorpus.so` of the sources.
fn build_binaries(
    dir: &Path,
    sources: &[&str],
    flags: &[&str],
) -> BTreeMap<&'static str, Vec<PathBuf>> {
    let root = repo_root();
    let mut forms: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for source in sources {
        let stem = Path::new(source).file_stem().unwrap().to_str().unwrap();
        for (form, flag, extension) in [("fatbin", "-fatbin", "fatbin"), ("object", "-c", "o")] {
            let output = dir.join(format!("{stem}.{extension}"));
            run_tool(
                Command::new(nvcc())
                    .args(gencode())
                    .args(flags)
                    .arg(flag)
                    .arg(root.join(source))
                    .arg("-o")
                    .arg(&output),
            );
            forms.entry(form).or_default().push(output);
        }
    }
    let archive = dir.join("libcorpus.a");
    run_tool(
        Command::new("ar")
            .arg("rcs")
            .arg(&archive)
            .args(&forms["object"]),
    );
    forms.insert("static library", vec![archive]);
    let shared = dir.join("libcorpus.so");
    run_tool(
        Command::new(nvcc())
            .args(gencode())
            .args(flags)
            .args(["-shared", "-Xcompiler", "-fPIC"])
            .args(sources.iter().map(|source| root.join(source)))
            .arg("-o")
            .arg(&shared),
    );
    // A member of the same name with no device code (a host library) beside it.
    run_tool(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-x", "c", "-"])
            .arg("-o")
            .arg(dir.join("host.so"))
            .stdin(std::process::Stdio::null()),
    );
    let wheel = dir.join("corpus-1.0-py3-none-linux_x86_64.whl");
    let zip = format!(
        "import zipfile\nwith zipfile.ZipFile({:?}, 'w', zipfile.ZIP_DEFLATED) as w:\n    w.write({:?}, 'corpus/lib/libcorpus.so')\n    w.write({:?}, 'corpus/host/libcorpus.so')\n    w.writestr('corpus/__init__.py', '')\n",
        wheel.display().to_string(),
        shared.display().to_string(),
        dir.join("host.so").display().to_string()
    );
    run_tool(Command::new("python3").args(["-c", &zip]));
    forms.insert("shared library", vec![shared]);
    forms.insert("wheel", vec![wheel]);
    forms
}

/// `check --json` on `paths` for sm_80 and sm_90 with `extra` arguments: its report.
fn report(paths: &[PathBuf], cache: &Path, extra: &[&str]) -> serde_json::Value {
    let output: Output = binary()
        .args([
            "occupancy",
            "check",
            "--json",
            "--arch",
            "sm_80",
            "--arch",
            "sm_90",
        ])
        .args(extra)
        .arg("--cache-dir")
        .arg(cache)
        .args(paths)
        .current_dir(repo_root())
        .output()
        .expect("run cargo-occupancy");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "check failed:\n{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("were not checked"),
        "{}",
        stderr(&output)
    );
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// `check --json` on `paths` for sm_80 and sm_90: its kernel rows by (symbol, arch).
fn rows(paths: &[PathBuf], cache: &Path) -> BTreeMap<(String, String), serde_json::Value> {
    entry_rows(&report(paths, cache, &[]))
}

/// A finding as compared: lint, kernel, arch and message.
type FindingKey = (String, String, String, String);

/// A report's findings (but those a binary cannot reproduce) as compared, each with how many
/// times it is there; with `lines_alike`, every line a finding names reads `<line>`: a source's
/// `tests/kernels/x.cu:12`, a line-less binary's unknown line and a loop's SASS offset.
fn findings_of(report: &serde_json::Value, lines_alike: bool) -> BTreeMap<FindingKey, usize> {
    let mut found = BTreeMap::new();
    for finding in report["findings"].as_array().unwrap() {
        let text = |key: &str| finding[key].as_str().unwrap_or_default().to_owned();
        if NOT_IN_A_BINARY.contains(&text("lint").as_str()) {
            continue;
        }
        let mut message = text("message");
        if lines_alike {
            message = lines_made_alike(&message);
        }
        let key = (text("lint"), text("kernel"), text("arch"), message);
        *found.entry(key).or_default() += 1;
    }
    found
}

/// `message` with every line it names as `<line>` (see [`findings_of`]).
fn lines_made_alike(message: &str) -> String {
    let message = message.replace(UNKNOWN_LINE, "<line>");
    let mut words: Vec<String> = Vec::new();
    let mut tokens = message.split(' ').peekable();
    while let Some(token) = tokens.next() {
        let at_line = token.split_once(".cu:").is_some_and(|(_, rest)| {
            rest.trim_end_matches([',', ')'])
                .chars()
                .all(|c| c.is_ascii_digit())
        });
        if at_line {
            let tail: String = token
                .chars()
                .skip_while(|c| *c != ',' && *c != ')')
                .collect();
            words.push(format!("<line>{tail}"));
        } else if token == "SASS" && tokens.peek() == Some(&"offset") {
            tokens.next();
            let offset = tokens.next().unwrap_or_default();
            assert!(offset.starts_with("0x"), "{message}");
            words.push("<line>".to_owned());
        } else {
            words.push(token.to_owned());
        }
    }
    words.join(" ")
}

/// How many findings of each machine-code lint there are.
fn machine_code_lints(findings: &BTreeMap<FindingKey, usize>) -> BTreeMap<String, usize> {
    let mut lints = BTreeMap::new();
    for (lint, ..) in findings.keys() {
        if ["spill_in_loop", "local_array", "call", "fp64"].contains(&lint.as_str()) {
            *lints.entry(lint.clone()).or_default() += 1;
        }
    }
    lints
}

#[test]
fn every_binary_form_gives_the_rows_of_the_sources() {
    let dir = work_dir("check-binary", "forms");
    let cache = dir.join("cache");
    let sources: Vec<PathBuf> = SOURCES.iter().map(PathBuf::from).collect();
    let from_sources = report(&sources, &cache, &[]);
    let expected = entry_rows(&from_sources);
    let expected_findings = findings_of(&from_sources, true);
    assert!(expected.len() >= 20, "the corpus has kernels: {expected:?}");
    let spilling = expected
        .values()
        .filter(|row| row["spill_store_bytes"].as_u64() > Some(0))
        .count();
    assert!(spilling > 0, "the corpus has a spilling kernel");
    let spill_areas = (expected.values())
        .filter(|row| row["smem_spill_bytes"].as_u64() > Some(0))
        .count();
    assert_eq!(
        spill_areas, 4,
        "smem_spilling.cu's two kernels on sm_80 and sm_90"
    );
    // Built without `-lineinfo`: the same findings, the machine-code ones naming no line.
    for (form, paths) in build_binaries(&dir, &SOURCES, &[]) {
        let from_binary = report(&paths, &cache, &[]);
        assert_eq!(
            findings_of(&from_binary, true),
            expected_findings,
            "{form}: the findings of the sources"
        );
        let unknown = (from_binary["findings"].as_array().unwrap().iter())
            .filter(|finding| finding["message"].as_str().unwrap().contains(UNKNOWN_LINE))
            .count();
        assert!(
            unknown >= 8,
            "{form}: spill_in_loop and local_array say the line is unknown"
        );
        let found = entry_rows(&from_binary);
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{form}: the same kernels x archs"
        );
        for (key, want) in &expected {
            let got = &found[key];
            for field in FIELDS {
                assert_eq!(got[field], want[field], "{form}: {key:?}.{field}");
            }
            assert_eq!(got["source"]["kind"], "binary", "{form}: {key:?}");
        }
    }
}

/// Built with `-lineinfo`, every binary form of the corpus kernels with machine-code findings
/// gives exactly the findings of `check` on the sources, lines included, `fp64` enabled; and
/// reading every kernel's SASS (`OCCUPANCY_SASS=all`) finds nothing more than reading the kernels
/// the cubins mark.
#[test]
fn machine_code_findings_of_every_binary_form_are_those_of_the_sources() {
    let dir = work_dir("check-binary", "machine-code");
    let cache = dir.join("cache");
    let sources: Vec<PathBuf> = MACHINE_CODE_SOURCES.iter().map(PathBuf::from).collect();
    let fp64 = ["--warn", "fp64"];
    let expected = findings_of(&report(&sources, &cache, &fp64), false);
    let lints: Vec<String> = machine_code_lints(&expected).into_keys().collect();
    assert_eq!(
        lints,
        ["call", "fp64", "local_array", "spill_in_loop"],
        "the corpus has each machine-code lint: {expected:#?}"
    );
    let forms = build_binaries(&dir, &MACHINE_CODE_SOURCES, &["-lineinfo"]);
    for (form, paths) in &forms {
        let found = findings_of(&report(paths, &cache, &fp64), false);
        assert_eq!(found, expected, "{form}: the findings of the sources");
    }
    let marked = findings_of(&report(&forms["shared library"], &cache, &[]), false);
    let everything = binary()
        .args([
            "occupancy",
            "check",
            "--json",
            "--arch",
            "sm_80",
            "--arch",
            "sm_90",
        ])
        .args(&forms["shared library"])
        .env("OCCUPANCY_SASS", "all")
        .current_dir(repo_root())
        .output()
        .unwrap();
    let everything: serde_json::Value = serde_json::from_str(&stdout(&everything)).unwrap();
    assert!(
        (everything["kernels"].as_array().unwrap().iter()).all(|row| !row["sass"].is_null()),
        "every row's SASS read"
    );
    assert_eq!(findings_of(&everything, false), marked);
}

#[test]
fn embedded_ptx_is_assembled_for_an_arch_without_a_cubin_and_a_compatible_cubin_is_run() {
    let dir = work_dir("check-binary", "ptx");
    let fatbin = dir.join("spills.fatbin");
    run_tool(
        Command::new(nvcc())
            .args([
                "-gencode",
                "arch=compute_80,code=[sm_80,compute_80]",
                "-fatbin",
            ])
            .arg(repo_root().join("tests/kernels/spills.cu"))
            .arg("-o")
            .arg(&fatbin),
    );
    let output = binary()
        .args([
            "occupancy",
            "check",
            "--json",
            "--arch",
            "sm_86",
            "--arch",
            "sm_90",
        ])
        .arg(&fatbin)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let kernels = report["kernels"].as_array().unwrap();
    let origin = |arch: &str| -> Vec<String> {
        kernels
            .iter()
            .filter(|row| row["arch"] == arch)
            .map(|row| row["source"]["path"].as_str().unwrap().to_owned())
            .collect()
    };
    let on_86 = origin("sm_86");
    let on_90 = origin("sm_90");
    assert!(
        !on_86.is_empty() && !on_90.is_empty(),
        "{}",
        stderr(&output)
    );
    assert!(
        on_86
            .iter()
            .all(|path| path.ends_with("sm_80 cubin (the driver runs it on sm_86)")),
        "{on_86:?}"
    );
    assert!(
        on_90
            .iter()
            .all(|path| path.contains("PTX sm_80 assembled for sm_90")),
        "{on_90:?}"
    );
    assert!(stderr(&output).contains("as the driver would JIT it"));
}

#[test]
fn a_file_without_device_code_is_no_kernel_and_a_broken_cubin_is_an_error() {
    let dir = work_dir("check-binary", "bad");
    let host = dir.join("host.o");
    std::fs::write(dir.join("host.c"), "int f(void) { return 1; }\n").unwrap();
    run_tool(
        Command::new("cc")
            .arg("-c")
            .arg(dir.join("host.c"))
            .arg("-o")
            .arg(&host),
    );
    let output = binary()
        .args(["occupancy", "check"])
        .arg(&host)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("holds no device code"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("no kernel found in") && stderr(&output).contains("host.o"),
        "{}",
        stderr(&output)
    );
    // An ELF for EM_CUDA cut after its header.
    let mut cubin = vec![0u8; 64];
    cubin[..6].copy_from_slice(b"\x7fELF\x02\x01");
    cubin[18] = 190;
    let broken = dir.join("broken.cubin");
    std::fs::write(&broken, &cubin).unwrap();
    let output = binary()
        .args(["occupancy", "check"])
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cannot read the kernels of"),
        "{}",
        stderr(&output)
    );
}

/// Two sources of one name (`a/k.cu`, `b/k.cu`) compiled with `-lineinfo` (as a build compiles
/// them), in a static library (archived as CMake does, `ar qc`, so both members are `k.o`, with
/// a host object) and in a shared library: cuobjdump names a cubin after its module when the
/// compile recorded the source's name (`k.sm_80.cubin`), so the fatbins are read one at a time,
/// each in a directory of its own. Both kernels' rows are those of their objects read alone.
#[test]
fn libraries_of_two_sources_of_one_name_give_the_kernels_of_both() {
    let dir = work_dir("check-binary", "same-name");
    let sources = [
        ("a", "extern \"C\" __global__ void from_a(float *x) { x[threadIdx.x] *= 2.0f; }\n"),
        (
            "b",
            "extern \"C\" __global__ void from_b(float *x) {\n  __shared__ float s[256];\n  s[threadIdx.x] = x[threadIdx.x];\n  __syncthreads();\n  x[threadIdx.x] = s[255 - threadIdx.x];\n}\n",
        ),
    ];
    let (mut sources_written, mut objects) = (Vec::new(), Vec::new());
    for (sub, text) in sources {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        let source = dir.join(sub).join("k.cu");
        std::fs::write(&source, text).unwrap();
        let object = dir.join(sub).join("k.o");
        run_tool(
            Command::new(nvcc())
                .args(gencode())
                .args(["-lineinfo", "-c"])
                .arg(&source)
                .arg("-o")
                .arg(&object),
        );
        sources_written.push(source);
        objects.push(object);
    }
    std::fs::write(dir.join("host.c"), "int f(void) { return 1; }\n").unwrap();
    run_tool(
        Command::new("cc")
            .arg("-c")
            .arg(dir.join("host.c"))
            .arg("-o")
            .arg(dir.join("host.o")),
    );
    let archive = dir.join("libk.a");
    run_tool(
        Command::new("ar")
            .arg("qc")
            .arg(&archive)
            .args(&objects)
            .arg(dir.join("host.o")),
    );
    let shared = dir.join("libk.so");
    run_tool(
        Command::new(nvcc())
            .args(gencode())
            .args(["-lineinfo", "-shared", "-Xcompiler", "-fPIC"])
            .args(&sources_written)
            .arg("-o")
            .arg(&shared),
    );
    let cache = dir.join("cache");
    let alone = rows(&objects, &cache);
    let keys: Vec<(String, String)> = alone.keys().cloned().collect();
    assert_eq!(
        keys,
        [
            ("from_a".into(), "sm_80".into()),
            ("from_a".into(), "sm_90".into()),
            ("from_b".into(), "sm_80".into()),
            ("from_b".into(), "sm_90".into()),
        ]
    );
    assert_eq!(alone[&keys[3]]["static_smem_bytes"], 1024);
    for (library, member) in [(&archive, "libk.a(k.o)"), (&shared, "libk.so")] {
        let found = rows(std::slice::from_ref(library), &cache);
        assert_eq!(found.keys().cloned().collect::<Vec<_>>(), keys, "{member}");
        for (key, want) in &alone {
            for field in FIELDS {
                assert_eq!(found[key][field], want[field], "{member}: {key:?}.{field}");
            }
            let origin = found[key]["source"]["path"].as_str().unwrap();
            assert!(
                origin.ends_with(&format!("{member} {} cubin", key.1)),
                "{origin}"
            );
        }
    }
}

/// A kernel's compiled `__cluster_dims__` is read from the PTX of a source and from a cubin
/// (`EIATTR_CTA_PER_CLUSTER`) alike: the rows carry the cluster and the clusters resident on each
/// sm_90 GPU, and a cluster of 16 blocks is `cluster_unlaunchable` (`check` cannot see the
/// host's non-portable opt-in).
#[test]
fn compiled_clusters_are_read_from_sources_and_cubins() {
    let dir = work_dir("check-binary", "clusters");
    let source = repo_root().join("cargo-occupancy/tests/fixtures/clusters.cu");
    let cubin = dir.join("clusters.cubin");
    run_tool(
        Command::new(nvcc())
            .args(["-cubin", "-arch=sm_90", "-o"])
            .arg(&cubin)
            .arg(&source),
    );
    for input in [source, cubin] {
        let output = binary()
            .args(["occupancy", "check"])
            .arg(&input)
            .args(["--arch", "sm_90", "--json"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
        let row = |name: &str| {
            report["kernels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|row| row["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {}", input.display()))
                .clone()
        };
        assert_eq!(
            row("wide_cluster")["cluster"],
            serde_json::json!([16, 1, 1])
        );
        let tile = row("tile_cluster");
        assert_eq!(tile["cluster"], serde_json::json!([4, 2, 1]));
        // 256 threads of 8 warps: 8 blocks per SM; 8 blocks per cluster on the H100 SXM's
        // recorded layout: 124 clusters (its four 2-SM groups hold none).
        assert_eq!(tile["clusters"][0]["gpu"], "h100");
        assert_eq!(tile["clusters"][0]["max_active_clusters"], 124);
        assert_eq!(tile["clusters"][0]["exact"], true);
        let lints: Vec<(&str, &str)> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["lint"].as_str().unwrap().contains("cluster"))
            .map(|finding| {
                (
                    finding["lint"].as_str().unwrap(),
                    finding["kernel"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            lints,
            [("cluster_unlaunchable", "wide_cluster")],
            "{}",
            input.display()
        );
    }
}

/// `libk.a` in `dir`: the objects of `constants.cu` and `shared_memory.cu`.
fn library_of_two_objects(dir: &Path) {
    let mut objects = Vec::new();
    for stem in ["constants", "shared_memory"] {
        let object = dir.join(format!("{stem}.o"));
        run_tool(
            Command::new(nvcc())
                .args(gencode())
                .arg("-c")
                .arg(repo_root().join(format!("tests/kernels/{stem}.cu")))
                .arg("-o")
                .arg(&object),
        );
        objects.push(object);
    }
    run_tool(
        Command::new("ar")
            .arg("rcs")
            .arg(dir.join("libk.a"))
            .args(&objects),
    );
}

/// `check --lock occupancy.lock` in `dir` on `libk.a` and `source` for sm_90, with `extra`
/// arguments: its exit code, report (JSON) and standard error.
fn check_with_lock(
    dir: &Path,
    source: &Path,
    extra: &[&str],
) -> (Option<i32>, serde_json::Value, String) {
    let output = binary()
        .args(["occupancy", "check", "--json", "--arch", "sm_90"])
        .args(["--lock", "occupancy.lock", "--cache-dir", "cache"])
        .args(extra)
        .arg("libk.a")
        .arg(source)
        .current_dir(dir)
        .output()
        .unwrap();
    let report = serde_json::from_str(&stdout(&output)).unwrap_or_default();
    (output.status.code(), report, stderr(&output))
}

/// The findings of the lock in a report.
fn lock_findings(report: &serde_json::Value) -> Vec<serde_json::Value> {
    (report["findings"].as_array().unwrap().iter())
        .filter(|finding| {
            ["regression", "baseline_stale"].contains(&finding["lint"].as_str().unwrap())
        })
        .cloned()
        .collect()
}

/// `--lock` judges a binary's kernels as a source's: blessed from a static library and a `.cu`
/// file, each under its own path (the library's members as `libk.a(member.o)`), the same inputs
/// pass; a lock whose numbers for one of the library's kernels are better than the cubin's (a
/// change that made it worse) fails `check` with `regression` at that kernel's cubin, and one
/// whose numbers are worse is only stale; a lock that does not exist is an error unless blessed.
#[test]
fn a_regression_against_the_lock_fails_check_on_a_binary() {
    let dir = work_dir("check-binary", "lock");
    library_of_two_objects(&dir);
    let source = repo_root().join("tests/kernels/launch_bounds.cu");
    let (code, _, said) = check_with_lock(&dir, &source, &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("the lock occupancy.lock does not exist"),
        "{said}"
    );
    let (code, _, said) = check_with_lock(&dir, &source, &["--bless"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("note: wrote the lock occupancy.lock: "),
        "{said}"
    );
    let lock_path = dir.join("occupancy.lock");
    let mut lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock_path).unwrap()).unwrap();
    let shown_source = source.display().to_string();
    for key in [
        "libk.a(constants.o)",
        "libk.a(shared_memory.o)",
        &shown_source,
    ] {
        assert!(
            lock["sources"][key]["sm_90"]["kernels"].is_object(),
            "{key}: {lock:#}"
        );
    }
    let (code, report, said) = check_with_lock(&dir, &source, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(lock_findings(&report).is_empty(), "{report:#}");
    let entry = "/sources/libk.a(shared_memory.o)/sm_90/kernels/static_tile/registers";
    let compiled = lock.pointer(entry).unwrap().as_u64().unwrap();
    for (committed, lint, level, exit) in [
        (compiled - 1, "regression", "deny", 1),
        (compiled + 1, "baseline_stale", "warn", 0),
    ] {
        *lock.pointer_mut(entry).unwrap() = committed.into();
        let text = serde_json::to_string_pretty(&lock).unwrap() + "\n";
        std::fs::write(&lock_path, text).unwrap();
        let (code, report, said) = check_with_lock(&dir, &source, &[]);
        assert_eq!(code, Some(exit), "{lint}: {said}");
        let found = lock_findings(&report);
        assert_eq!(found.len(), 1, "{lint}: {found:#?}");
        let finding = &found[0];
        assert_eq!(
            [
                &finding["lint"],
                &finding["level"],
                &finding["kernel"],
                &finding["arch"]
            ],
            [lint, level, "static_tile", "sm_90"]
        );
        assert_eq!(
            finding["location"]["path"], "libk.a(shared_memory.o) sm_90 cubin",
            "{finding:#}"
        );
        let notes = finding["notes"].to_string();
        assert!(
            notes.contains(&format!("registers: {committed} -> {compiled}")),
            "{notes}"
        );
    }
}

/// `check --json ARGS` run in `dir`: its exit code, report (when it printed one) and stderr.
fn check_in(dir: &Path, args: &[&std::ffi::OsStr]) -> (Option<i32>, serde_json::Value, String) {
    let output = binary()
        .args(["occupancy", "check", "--json"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let report = serde_json::from_str(&stdout(&output)).unwrap_or_default();
    (output.status.code(), report, stderr(&output))
}

/// `spills.cu` compiled by nvcc with `flags` (`-fatbin`, `-c`) into `output`.
fn compile_spills(flags: &[&str], output: &Path) {
    run_tool(
        Command::new(nvcc())
            .args(flags)
            .arg(repo_root().join("tests/kernels/spills.cu"))
            .arg("-o")
            .arg(output),
    );
}

/// Issue #35, class 1: a fatbin or object that ships only PTX yields its kernels, assembled
/// for the PTX's own target as the driver would JIT them, with no `--arch` (it yielded no
/// kernel and no word); and a fatbin entry with a damaged header is an error naming the byte
/// (it read as "holds no device code").
#[test]
fn ptx_only_binaries_yield_their_kernels_and_a_damaged_fatbin_is_an_error() {
    let dir = work_dir("check-binary", "ptx-only");
    let ptx_only = ["-gencode", "arch=compute_80,code=compute_80"];
    for (flag, name) in [("-fatbin", "ptx.fatbin"), ("-c", "ptx.o")] {
        let path = dir.join(name);
        compile_spills(&[ptx_only[0], ptx_only[1], flag], &path);
        let (code, report, said) = check_in(&dir, &[path.as_os_str()]);
        assert_eq!(code, Some(1), "{name}: spills.cu spills:\n{said}");
        let rows = entry_rows(&report);
        assert!(
            !rows.is_empty() && rows.keys().all(|(_, arch)| arch == "sm_80"),
            "{name}: {rows:?}"
        );
        assert!(said.contains("ship only as PTX (sm_80)"), "{said}");
    }
    let mut damaged = std::fs::read(dir.join("ptx.fatbin")).unwrap();
    damaged[16..18].copy_from_slice(&0x77u16.to_le_bytes());
    std::fs::write(dir.join("damaged.fatbin"), &damaged).unwrap();
    let (code, _, said) = check_in(&dir, &["damaged.fatbin".as_ref()]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("damaged.fatbin")
            && said.contains("a damaged fatbin: the entry header at byte 16 has kind 119"),
        "{said}"
    );
}

/// Issue #35, class 1: in a directory beside a good fatbin, a GNU thin archive, a dangling link
/// named like a library and (not as root, who reads anything) an object that cannot be read are
/// each an error naming the file, exit 2 (each was skipped, exit 0); and a cuobjdump that exits
/// 0 having extracted nothing is an error, not a container without kernels.
#[test]
fn a_file_of_a_set_that_cannot_be_read_is_an_error_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("check-binary", "set");
    let good = dir.join("good.fatbin");
    compile_spills(
        &["-gencode", "arch=compute_80,code=sm_80", "-fatbin"],
        &good,
    );
    let object = dir.join("k.o");
    compile_spills(&["-gencode", "arch=compute_80,code=sm_80", "-c"], &object);
    let (code, _, said) = check_in(&dir, &[dir.as_os_str()]);
    assert_eq!(code, Some(1), "the good set reads: {said}");
    let case = |name: &str, make: &dyn Fn(&Path), says: &str| {
        let set = work_dir("check-binary", &format!("set-{name}"));
        std::fs::copy(&good, set.join("good.fatbin")).unwrap();
        make(&set);
        let (code, _, said) = check_in(&set, &[set.as_os_str()]);
        assert_eq!(code, Some(2), "{name}: {said}");
        assert!(said.contains(name) && said.contains(says), "{name}: {said}");
    };
    case(
        "libthin.a",
        &|set| {
            let status = Command::new("ar")
                .args(["rcT", "libthin.a"])
                .arg(&object)
                .current_dir(set)
                .status()
                .unwrap();
            assert!(status.success());
        },
        "a GNU thin archive",
    );
    case(
        "libgone.so",
        &|set| std::os::unix::fs::symlink(set.join("nowhere.so"), set.join("libgone.so")).unwrap(),
        "No such file",
    );
    case(
        "damaged.o",
        &|set| {
            let mut bytes = std::fs::read(&object).unwrap();
            bytes[0x3A..0x3C].copy_from_slice(&40u16.to_le_bytes());
            std::fs::write(set.join("damaged.o"), bytes).unwrap();
        },
        "a damaged ELF file",
    );
    case(
        "libloop.so",
        &|set| std::os::unix::fs::symlink("libloop.so", set.join("libloop.so")).unwrap(),
        "cannot read",
    );
    let root =
        std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    if !root {
        case(
            "locked.o",
            &|set| {
                std::fs::copy(&object, set.join("locked.o")).unwrap();
                let locked = std::fs::Permissions::from_mode(0o000);
                std::fs::set_permissions(set.join("locked.o"), locked).unwrap();
            },
            "Permission denied",
        );
    }
    fails_with_a_silent_tool(
        &dir,
        &good,
        "OCCUPANCY_CUOBJDUMP",
        "cuobjdump -xelf extracted nothing",
    );
}

/// `check FILE` with the tool `variable` names replaced by one that exits 0 having printed and
/// written nothing: exit 2, and the error says `says`.
fn fails_with_a_silent_tool(dir: &Path, file: &Path, variable: &str, says: &str) {
    use std::os::unix::fs::PermissionsExt;
    let silent = dir.join(format!("silent-{variable}"));
    std::fs::write(&silent, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&silent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = binary()
        .args(["occupancy", "check"])
        .arg(file)
        .env(variable, &silent)
        .output()
        .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains(says), "{said}");
}

/// Issue #35's third pass: a file named like a binary that is none, or a cubin that holds no
/// device code, was passed over (exit 0 beside the good fatbin); one past any real binary's
/// size was read to its end; an nvdisasm that exits 0 having printed nothing left the
/// machine-code lints unchecked.
#[test]
fn an_empty_damaged_or_huge_file_beside_good_ones_is_an_error_naming_it() {
    let dir = work_dir("check-binary", "damaged");
    let good = dir.join("good.fatbin");
    compile_spills(
        &["-gencode", "arch=compute_80,code=sm_80", "-fatbin"],
        &good,
    );
    let case = |name: &str, make: &dyn Fn(&Path), says: &str| {
        let set = work_dir("check-binary", &format!("damaged-{name}"));
        std::fs::copy(&good, set.join("good.fatbin")).unwrap();
        make(&set);
        let (code, _, said) = check_in(&set, &[set.as_os_str()]);
        assert_eq!(code, Some(2), "{name}: {said}");
        assert!(said.contains(name) && said.contains(says), "{name}: {said}");
    };
    let host = dir.join("host.o");
    std::fs::write(dir.join("host.c"), "int host(void) { return 1; }\n").unwrap();
    let status = Command::new("cc")
        .args(["-c", "host.c", "-o", "host.o"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    case(
        "empty.cubin",
        &|set| std::fs::write(set.join("empty.cubin"), "").unwrap(),
        "it is empty",
    );
    case(
        "notes.fatbin",
        &|set| std::fs::write(set.join("notes.fatbin"), "see README\n").unwrap(),
        "it is none",
    );
    case(
        "host.cubin",
        &|set| {
            std::fs::copy(&host, set.join("host.cubin")).unwrap();
        },
        "holds no device code",
    );
    case(
        "short.cubin",
        &|set| std::fs::write(set.join("short.cubin"), b"\x7fELF\x02\x01\x01\0\0\0").unwrap(),
        "a damaged ELF file",
    );
    case(
        "huge.fatbin",
        &|set| {
            let file = std::fs::File::create(set.join("huge.fatbin")).unwrap();
            std::io::Write::write_all(&mut &file, &0xBA55_ED50u32.to_le_bytes()).unwrap();
            file.set_len(occupancy_binary::MAX_BINARY_BYTES + 1)
                .unwrap();
        },
        "more than any binary this reads",
    );
    // A host object alone: the error names it, not "the given paths".
    let (code, _, said) = check_in(&dir, &[host.as_os_str()]);
    assert_eq!(code, Some(4), "{said}");
    assert!(
        said.contains("no kernel found in") && said.contains("host.o"),
        "{said}"
    );
    // An nvdisasm that exits 0 having printed nothing left the machine-code lints unchecked.
    fails_with_a_silent_tool(
        &dir,
        &good,
        "OCCUPANCY_NVDISASM",
        "printed no machine code for kernel",
    );
}

/// Issue #35, class 10: a binary's errors name the binary and the member, never a copy in the
/// scratch directory (deleted by then), and a binary's machine code that cannot be read is not
/// called "the compiler's output" (no compiler ran).
#[test]
fn a_binary_s_errors_name_it_and_its_member_not_scratch_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("check-binary", "messages");
    let mut cubin = vec![0u8; 64];
    cubin[..6].copy_from_slice(b"\x7fELF\x02\x01");
    cubin[18] = 190;
    std::fs::write(dir.join("broken.cubin"), &cubin).unwrap();
    run_tool(
        Command::new("ar")
            .args(["rcs", "libbad.a", "broken.cubin"])
            .current_dir(&dir),
    );
    let (code, _, said) = check_in(&dir, &["libbad.a".as_ref()]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("cannot read the kernels of `libbad.a`: libbad.a(broken.cubin): "),
        "{said}"
    );
    assert!(!said.contains("occupancy-binary-"), "{said}");

    let good = dir.join("good.fatbin");
    compile_spills(
        &["-gencode", "arch=compute_80,code=sm_80", "-fatbin"],
        &good,
    );
    let failing = dir.join("failing-nvdisasm");
    std::fs::write(
        &failing,
        "#!/bin/sh\necho 'nvdisasm fatal: broken' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = binary()
        .args(["occupancy", "check", "good.fatbin"])
        .current_dir(&dir)
        .env("OCCUPANCY_NVDISASM", &failing)
        .output()
        .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains(
            "cannot read the kernels of `good.fatbin`: its machine code could not be read"
        ),
        "{said}"
    );
    assert!(!said.contains("the compiler's output"), "{said}");
    assert!(!said.contains("occupancy-binary-"), "{said}");
}

/// Issue #35, class 1: a wheel's `.ptx` member (kept by the wheel reader, then never read) yields
/// its kernels, assembled for its target as the driver would JIT them.
#[test]
fn a_wheel_s_ptx_member_yields_its_kernels() {
    let dir = work_dir("check-binary", "wheel-ptx");
    let ptx = dir.join("k.ptx");
    compile_spills(&["-ptx", "-arch=compute_80"], &ptx);
    let wheel = dir.join("k-1.0-py3-none-linux_x86_64.whl");
    let zip = format!(
        "import zipfile\nwith zipfile.ZipFile({:?}, 'w', zipfile.ZIP_DEFLATED) as w:\n    w.write({:?}, 'k/kernels/k.ptx')\n",
        wheel.display().to_string(),
        ptx.display().to_string()
    );
    run_tool(Command::new("python3").args(["-c", &zip]));
    let (code, report, said) = check_in(&dir, &[wheel.as_os_str()]);
    assert_eq!(code, Some(1), "spills.cu spills: {said}");
    let rows = entry_rows(&report);
    assert!(
        !rows.is_empty() && rows.keys().all(|(_, arch)| arch == "sm_80"),
        "{rows:?}"
    );
    assert!(said.contains("(k/kernels/k.ptx): "), "{said}");
}

/// Issue #33, item 4: cuobjdump 13.x refuses some fatbins of CUDA 12.1 libraries ("Invalid
/// ELF": bitsandbytes 0.50.2's `libbitsandbytes_cuda121.so`), though each entry is a plain
/// cubin. Such a fatbin is read entry by entry here, with the rows the real cuobjdump gives; a
/// compressed entry, which only cuobjdump decompresses, is an error naming its arch. A
/// cuobjdump that refuses every fatbin stands in for the old libraries.
#[test]
fn a_fatbin_cuobjdump_refuses_is_read_entry_by_entry_with_the_same_rows() {
    use std::os::unix::fs::PermissionsExt;
    let dir = work_dir("check-binary", "refused-fatbin");
    let plain = dir.join("plain.fatbin");
    let gencode = [
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=sm_90",
    ];
    let mut flags = vec!["-fatbin", "--no-compress"];
    flags.extend(gencode);
    compile_spills(&flags, &plain);
    let (code, expected, said) = check_in(&dir, &[plain.as_os_str()]);
    assert_eq!(code, Some(1), "{said}");
    let refusing = dir.join("refusing-cuobjdump");
    std::fs::write(
        &refusing,
        "#!/bin/sh\necho \"cuobjdump fatal   : Invalid ELF in '$3'\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&refusing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |path: &Path| {
        let output = binary()
            .args(["occupancy", "check", "--json"])
            .arg(path)
            .env("OCCUPANCY_CUOBJDUMP", &refusing)
            .current_dir(&dir)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap_or_default();
        (output.status.code(), report, stderr(&output))
    };
    let (code, report, said) = run(&plain);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("its 2 entries were read from the fatbin itself"),
        "{said}"
    );
    let fields = [
        "registers",
        "spill_store_bytes",
        "spill_load_bytes",
        "stack_frame_bytes",
        "static_smem_bytes",
    ];
    let facts = |report: &serde_json::Value| -> BTreeMap<(String, String), Vec<serde_json::Value>> {
        entry_rows(report)
            .into_iter()
            .map(|(key, row)| {
                (
                    key,
                    fields.iter().map(|field| row[*field].clone()).collect(),
                )
            })
            .collect()
    };
    assert_eq!(facts(&report), facts(&expected));
    assert_eq!(facts(&report).len(), 6, "3 kernels on 2 archs");

    let compressed = dir.join("compressed.fatbin");
    let mut flags = vec!["-fatbin", "-Xfatbin", "-compress-all"];
    flags.extend(gencode);
    compile_spills(&flags, &compressed);
    let (code, _, said) = run(&compressed);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("its entries for sm_80, sm_90 are compressed"),
        "{said}"
    );
}

/// Issue #42, class 3: an object and a static library holding only arch-specific PTX
/// (`compute_90a`, no cubin) give their kernels' rows with `--arch sm_90`, assembled for sm_90a
/// as the driver JITs them on an sm_90 (they read as "no kernel found"), and say that newer
/// GPUs cannot JIT them; with `--arch sm_100` they give no row and the note says an sm_100
/// cannot load them (the file is not "empty").
#[test]
fn arch_specific_ptx_only_objects_yield_their_kernels_on_their_own_gpu() {
    let dir = work_dir("check-binary", "arch-specific-ptx");
    let object = dir.join("k.o");
    compile_spills(
        &["-c", "-gencode", "arch=compute_90a,code=compute_90a"],
        &object,
    );
    let library = dir.join("libk.a");
    let ar = Command::new("ar")
        .arg("rcs")
        .arg(&library)
        .arg(&object)
        .status();
    assert!(ar.unwrap().success());
    for path in [&object, &library] {
        let args = [path.as_os_str(), "--arch".as_ref(), "sm_90".as_ref()];
        let (code, report, said) = check_in(&dir, &args);
        assert!(report["kernels"].is_array(), "{path:?}: {said}");
        assert_eq!(code, Some(1), "{path:?}: spills.cu spills:\n{said}");
        let rows = entry_rows(&report);
        assert!(
            !rows.is_empty() && rows.keys().all(|(_, arch)| arch.starts_with("sm_90")),
            "{path:?}: {rows:?}\n{said}"
        );
        assert!(
            said.contains("for sm_90a as the driver would JIT it"),
            "{said}"
        );
        assert!(said.contains("a newer one too, cannot JIT it"), "{said}");

        let args = [path.as_os_str(), "--arch".as_ref(), "sm_100".as_ref()];
        let (_, report, said) = check_in(&dir, &args);
        let no_rows = report["kernels"].as_array().is_none_or(Vec::is_empty);
        assert!(no_rows, "{report:#}");
        assert!(
            said.contains("asked for sm_100: no row there, as a GPU of that arch cannot load it"),
            "{said}"
        );
    }
}
