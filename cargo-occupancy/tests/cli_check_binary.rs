//! `cargo occupancy check` on compiled binaries gives the rows `check` gives on the sources:
//! the corpus compiled by plain nvcc (no `-Xptxas -v`) into fatbins, host objects, a static
//! library, a shared library and a wheel holding it, each read back (cubins from the ELF, spills from ptxas's
//! spill marks) and compared, kernel x arch, field by field, with `check` on the `.cu` files
//! (ptxas's `-v` report). Needs the real nvcc and cuobjdump (scripts/setup-cuda.sh).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{binary, nvcc, repo_root, run_tool, stderr, stdout, work_dir};

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

/// Builds every binary form of the corpus in `dir`: per source a fatbin and an object, then
/// `libcorpus.a` of the objects and `libcorpus.so` of the sources.
fn build_binaries(dir: &Path) -> BTreeMap<&'static str, Vec<PathBuf>> {
    let root = repo_root();
    let mut forms: BTreeMap<&str, Vec<PathBuf>> = BTreeMap::new();
    for source in SOURCES {
        let stem = Path::new(source).file_stem().unwrap().to_str().unwrap();
        for (form, flag, extension) in [("fatbin", "-fatbin", "fatbin"), ("object", "-c", "o")] {
            let output = dir.join(format!("{stem}.{extension}"));
            run_tool(
                Command::new(nvcc())
                    .args(gencode())
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
            .args(["-shared", "-Xcompiler", "-fPIC"])
            .args(SOURCES.iter().map(|source| root.join(source)))
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

/// `check --json` on `paths` for sm_80 and sm_90: its kernel rows by (symbol, arch).
fn rows(paths: &[PathBuf], cache: &Path) -> BTreeMap<(String, String), serde_json::Value> {
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
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["entry"] == true)
        .map(|row| {
            let key = (
                row["name"].as_str().unwrap().to_owned(),
                row["arch"].as_str().unwrap().to_owned(),
            );
            (key, row.clone())
        })
        .collect()
}

#[test]
fn every_binary_form_gives_the_rows_of_the_sources() {
    let dir = work_dir("check-binary", "forms");
    let cache = dir.join("cache");
    let sources: Vec<PathBuf> = SOURCES.iter().map(PathBuf::from).collect();
    let expected = rows(&sources, &cache);
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
    for (form, paths) in build_binaries(&dir) {
        let found = rows(&paths, &cache);
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
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("holds no device code"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("no kernels found"),
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
