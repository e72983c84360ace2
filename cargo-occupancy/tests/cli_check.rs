//! `cargo occupancy check` on the project's kernel corpus with the real nvcc (scripts/setup-cuda.sh
//! installs it; these tests fail, never skip, without it), plus logs and every exit code.

mod common;

use common::{binary, repo_root, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

use occupancy_core::report::Report;

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-cache")
}

/// The corpus files that compile for sm_80 and sm_90, one of them PTX (`launch_bounds.cu` needs
/// sm_90 and has its own test; `fails_to_compile.cu` is the nvcc-failure case).
const CORPUS: [&str; 5] = [
    "tests/kernels/constants.cu",
    "tests/kernels/spills.cu",
    "tests/kernels/shared_memory.cu",
    "tests/kernels/device_frames.cu",
    "tests/kernels/texture_surface.ptx",
];

fn check(args: &[&str]) -> Output {
    check_with_env(args, &[])
}

fn check_with_env(args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
    let mut command = binary();
    command
        .args(["occupancy", "check", "--cache-dir"])
        .arg(cache_dir())
        .args(args)
        .current_dir(repo_root());
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.output().expect("run cargo-occupancy")
}

fn corpus_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args: Vec<&str> = CORPUS.to_vec();
    args.extend(["--arch", "sm_80", "--arch", "sm_90"]);
    args.extend_from_slice(extra);
    args
}

#[test]
fn corpus_json_has_the_contract_keys_and_denies_spills() {
    let output = check(&corpus_args(&["--json"]));
    assert_eq!(
        output.status.code(),
        Some(1),
        "spills deny by default\n{}",
        stderr(&output)
    );
    let text = stdout(&output);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    for row in value["kernels"].as_array().unwrap() {
        for key in [
            "name",
            "demangled",
            "arch",
            "entry",
            "registers",
            "barriers",
            "static_smem_bytes",
            "stack_frame_bytes",
            "spill_store_bytes",
            "spill_load_bytes",
            "blocks_per_sm",
            "occupancy",
            "limiters",
        ] {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
    }
    let report = Report::from_json(&text).unwrap();
    // Every kernel of every file on both archs, the PTX one included.
    for name in [
        "unbounded_window_sum",
        "static_tile",
        "named_barriers",
        "calls_gather",
        "texture_surface",
    ] {
        for arch in ["sm_80", "sm_90"] {
            assert!(
                report
                    .kernels
                    .iter()
                    .any(|row| row.name == name && row.arch == arch),
                "{name} on {arch}"
            );
        }
    }
    // Cross-check one row by hand: unbounded_window_sum uses 72 registers (ptxas) → 2304 per
    // warp, 7 warps per sub-partition, 28 warps: 3 blocks of 256 threads.
    let unbounded = report
        .kernels
        .iter()
        .find(|row| row.name == "unbounded_window_sum" && row.arch == "sm_90")
        .unwrap();
    assert_eq!(
        (
            unbounded.registers,
            unbounded.blocks_per_sm,
            unbounded.limiters.clone()
        ),
        (72, 3, vec!["registers".into()])
    );
    // The launch-bounded template is evaluated at its bound (128), not the default 256.
    let bounded = report
        .kernels
        .iter()
        .find(|row| row.demangled.contains("window_sum<3>") && row.arch == "sm_90")
        .unwrap();
    assert_eq!(
        (
            bounded.block,
            bounded.max_threads_per_block,
            bounded.min_blocks_per_sm
        ),
        (128, Some(128), Some(8))
    );
    assert!(report
        .findings
        .iter()
        .any(|f| f.lint.as_str() == "spills" && f.level.as_str() == "deny"));
    insta::assert_snapshot!(text);
}

#[test]
fn corpus_sarif_is_valid_sarif_2_1_0() {
    let output = check(&corpus_args(&["--sarif"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let sarif: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let schema_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-schema-2.1.0.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the SARIF schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|error| format!("{error} at {}", error.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF does not match the 2.1.0 schema:\n{}",
        errors.join("\n")
    );
    // The validator does reject a broken log (the test above can fail).
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = serde_json::json!("fatal");
    assert!(!validator.is_valid(&broken));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let result = results
        .iter()
        .find(|result| result["ruleId"] == "spills")
        .expect("a spills result");
    assert_eq!(result["level"], "error");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "tests/kernels/spills.cu"
    );
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        7
    );
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn corpus_markdown_and_html() {
    let html = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-corpus.html");
    let output = check(&corpus_args(&[
        "--markdown",
        "--html",
        html.to_str().unwrap(),
    ]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let page = std::fs::read_to_string(&html).unwrap();
    let report = Report::from_json(&stdout(&check(&corpus_args(&["--json"])))).unwrap();
    let entries = report.kernels.iter().filter(|row| row.entry).count();
    // Each entry row names its three curves (drawn when its details open; the browser test
    // checks the drawing).
    let curves: Vec<usize> = page
        .split("data-curves=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap_or("").split(' ').count())
        .collect();
    assert_eq!(curves, vec![3; entries]);
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn clean_file_exits_0_and_levels_change_the_verdict() {
    let clean = check(&["tests/kernels/shared_memory.cu", "--arch", "sm_90"]);
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}{}",
        stdout(&clean),
        stderr(&clean)
    );
    assert!(
        stdout(&clean).contains("0 deny, 0 warn"),
        "{}",
        stdout(&clean)
    );

    let spills_warned = check(&[
        "tests/kernels/spills.cu",
        "--arch",
        "sm_90",
        "--warn",
        "spills",
    ]);
    assert_eq!(
        spills_warned.status.code(),
        Some(0),
        "{}",
        stdout(&spills_warned)
    );
    assert!(stdout(&spills_warned).contains("warn[spills]"));

    let stack_denied = check(&[
        "tests/kernels/device_frames.cu",
        "--arch",
        "sm_90",
        "--deny",
        "stack_frame",
    ]);
    assert_eq!(
        stack_denied.status.code(),
        Some(1),
        "{}",
        stdout(&stack_denied)
    );
    assert!(stdout(&stack_denied).contains("deny[stack_frame]"));

    // A block over the compiled __launch_bounds__ is unlaunchable.
    let too_big = check(&[
        "tests/kernels/spills.cu",
        "--arch",
        "sm_90",
        "--block",
        "256",
        "--allow",
        "spills",
        "--allow",
        "stack_frame",
    ]);
    assert_eq!(too_big.status.code(), Some(1), "{}", stdout(&too_big));
    assert!(
        stdout(&too_big).contains("deny[unlaunchable]"),
        "{}",
        stdout(&too_big)
    );

    // Not a terminal: no progress bar.
    assert!(!stderr(&clean).contains('\r'), "{:?}", stderr(&clean));
}

#[test]
fn directories_are_searched_recursively() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("check-dir-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("nested/deeper")).unwrap();
    std::fs::copy(
        repo_root().join("tests/kernels/shared_memory.cu"),
        dir.join("nested/deeper/tiles.cu"),
    )
    .unwrap();
    std::fs::write(dir.join("nested/notes.txt"), "not a kernel").unwrap();
    let output = check(&[dir.to_str().unwrap(), "--arch", "sm_90", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = Report::from_json(&stdout(&output)).unwrap();
    assert!(report.kernels.iter().any(|row| row.name == "static_tile"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cmake_ptxas_log_is_checked_without_nvcc() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs/cmake-build.log");
    let output = check_with_env(
        &[log.to_str().unwrap(), "--arch", "sm_90"],
        &[
            ("NVCC", Some("/nonexistent/nvcc")),
            ("CUDA_HOME", None),
            ("CUDA_PATH", None),
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("deny[spills]"), "{text}");
    assert!(!text.contains("sm_80"), "--arch filters the log: {text}");
    assert!(
        text.contains("cmake-build.log:"),
        "findings point at the log line: {text}"
    );
}

#[test]
fn tool_and_usage_errors_exit_2() {
    let no_nvcc = check_with_env(
        &["tests/kernels/spills.cu"],
        &[
            ("NVCC", None),
            ("CUDA_HOME", None),
            ("CUDA_PATH", None),
            ("PATH", Some("/usr/bin:/bin")),
        ],
    );
    assert_eq!(no_nvcc.status.code(), Some(2));
    assert!(
        stderr(&no_nvcc).contains("nvcc, the CUDA compiler, was not found"),
        "{}",
        stderr(&no_nvcc)
    );
    assert!(
        stderr(&no_nvcc).contains("pip install"),
        "says how to install it: {}",
        stderr(&no_nvcc)
    );

    let missing = check(&["tests/kernels/absent.cu"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("cannot read tests/kernels/absent.cu"),
        "{}",
        stderr(&missing)
    );

    let broken = check(&["tests/kernels/fails_to_compile.cu", "--arch", "sm_90"]);
    assert_eq!(broken.status.code(), Some(2));
    assert!(
        stderr(&broken).contains("nvcc failed to compile"),
        "{}",
        stderr(&broken)
    );
    assert!(
        stderr(&broken).contains("error"),
        "nvcc's own diagnostics: {}",
        stderr(&broken)
    );

    let unknown_lint = check(&["tests/kernels/spills.cu", "--deny", "spill"]);
    assert_eq!(unknown_lint.status.code(), Some(2));
    assert!(
        stderr(&unknown_lint).contains("did you mean `spills`?"),
        "{}",
        stderr(&unknown_lint)
    );

    let unknown_arch = check(&["tests/kernels/spills.cu", "--arch", "sm_42"]);
    assert_eq!(unknown_arch.status.code(), Some(2));
    assert!(
        stderr(&unknown_arch).contains("unknown architecture `sm_42`"),
        "{}",
        stderr(&unknown_arch)
    );

    let zero_block = check(&["tests/kernels/spills.cu", "--block", "0"]);
    assert_eq!(zero_block.status.code(), Some(2));

    let not_a_log = Path::new(env!("CARGO_TARGET_TMPDIR")).join("not-a-log.txt");
    std::fs::write(&not_a_log, "hello\n").unwrap();
    let no_kernels = check(&[not_a_log.to_str().unwrap()]);
    assert_eq!(no_kernels.status.code(), Some(2));
    assert!(!stderr(&no_kernels).is_empty());

    let no_paths = check(&[]);
    assert_eq!(no_paths.status.code(), Some(2));
}

#[test]
fn arguments_after_the_separator_reach_nvcc() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-nvcc-args-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(dir.join("include/scale.cuh"), "#define SCALE 3.0f\n").unwrap();
    std::fs::write(
        dir.join("needs_flags.cu"),
        "#include \"scale.cuh\"\n#ifndef REQUIRED_DEFINE\n#error REQUIRED_DEFINE is not set\n#endif\nextern \"C\" __global__ void scaled(float* x) { x[threadIdx.x] *= SCALE; }\n",
    )
    .unwrap();
    let source = dir.join("needs_flags.cu");
    let include = format!("-I{}", dir.join("include").display());
    let without = check(&[source.to_str().unwrap(), "--arch", "sm_90"]);
    assert_eq!(without.status.code(), Some(2), "{}", stderr(&without));
    let with = check(&[
        source.to_str().unwrap(),
        "--arch",
        "sm_90",
        "--json",
        "--",
        &include,
        "-DREQUIRED_DEFINE",
    ]);
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    let report = Report::from_json(&stdout(&with)).unwrap();
    assert_eq!(
        report
            .kernels
            .iter()
            .map(|row| row.name.as_str())
            .collect::<Vec<_>>(),
        ["scaled"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn launch_bounds_from_the_ptx_set_the_evaluated_block() {
    let output = check(&[
        "tests/kernels/launch_bounds.cu",
        "--arch",
        "sm_90",
        "--json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = Report::from_json(&stdout(&output)).unwrap();
    let row = |demangled: &str| {
        report
            .kernels
            .iter()
            .find(|row| row.demangled == demangled)
            .unwrap()
    };
    // __launch_bounds__(64) on the template: evaluated at 64 threads, 2 warps per block, so the
    // 32 block slots bind before the 64 warp slots.
    let templated = row("void templated_bound<64>(float*)");
    assert_eq!(
        (templated.block, templated.max_threads_per_block),
        (64, Some(64))
    );
    assert_eq!(
        (templated.blocks_per_sm, templated.limiters.clone()),
        (32, vec!["warps".to_string(), "blocks".to_string()])
    );
    assert_eq!(row("bound_cluster_rank").block, 128);
    assert_eq!(row("bound_threads").block, 256);
    // `__cluster_dims__(2, 1, 1)`: the row carries the compiled cluster and, per sm_90 GPU, the
    // clusters resident at once: the H100 SXM's and H200's recorded layouts (exact), the other
    // sm_90 products' SM counts (bounds: the H100 PCIe's 114, the H20's 78). 256 threads, 8
    // blocks per SM: 528 clusters of 2 on 132 SMs.
    let cluster = row("fixed_cluster");
    assert_eq!(cluster.cluster, Some([2, 1, 1]));
    let counts: Vec<(&str, u32, bool)> = cluster
        .clusters
        .iter()
        .map(|gpu| (gpu.gpu.as_str(), gpu.max_active_clusters, gpu.exact))
        .collect();
    assert_eq!(
        counts,
        [
            ("h100", 528, true),
            ("h100-pcie", 456, false),
            ("h200", 528, true),
            ("gh200", 528, false),
            ("h800", 528, false),
            ("h20", 312, false)
        ]
    );
    assert!(row("bound_threads").clusters.is_empty());
}

/// The six architectures of issue #26's launch bounds, compiled in one `check`.
const BOUNDS_ARCHS: [&str; 6] = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

/// `unreachable_bound` on real compiles: a minimum blocks per SM ptxas ignores (more threads or
/// blocks than the SM holds; its warning is kept with the kernel and shown) and one shared
/// memory keeps out of reach, each with its reason and the largest minimum that can take effect
/// on each architecture; a reachable minimum is no finding.
#[test]
fn minimums_that_cannot_take_effect_are_found_on_each_arch() {
    let mut args = vec!["tests/kernels/unreachable_bounds.cu", "--json"];
    for arch in BOUNDS_ARCHS {
        args.extend(["--arch", arch]);
    }
    let output = check(&args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "warn by default: {}",
        stderr(&output)
    );
    let checked = BoundsReport(Report::from_json(&stdout(&output)).unwrap());
    checked.ignored_everywhere();
    checked.ignored_for_block_slots_on_sm_86();
    checked.capped_by_shared_memory();
    assert!(checked.found("reachable_minimum").is_empty());
}

/// The report of `unreachable_bounds.cu` on [`BOUNDS_ARCHS`].
struct BoundsReport(Report);

impl BoundsReport {
    /// The kernel's `unreachable_bound` findings (all at `warn`), in the order of the archs.
    fn found(&self, kernel: &str) -> Vec<&occupancy_core::report::Finding> {
        let mut found: Vec<_> = self
            .0
            .findings
            .iter()
            .filter(|f| {
                f.lint.as_str() == "unreachable_bound" && f.kernel.as_deref() == Some(kernel)
            })
            .collect();
        found.sort_by_key(|f| {
            BOUNDS_ARCHS
                .iter()
                .position(|arch| f.arch.as_deref() == Some(*arch))
        });
        assert!(
            found.iter().all(|f| f.level.as_str() == "warn"),
            "{found:#?}"
        );
        found
    }

    /// The registers ptxas used and the compiled `.minnctapersm` of the kernel on `arch`.
    fn registers(&self, kernel: &str, arch: &str) -> (u32, Option<u32>) {
        self.0
            .kernels
            .iter()
            .find(|row| row.name == kernel && row.arch == arch)
            .map(|row| (row.registers, row.min_blocks_per_sm))
            .unwrap()
    }

    /// 4 x 1024 threads: ignored everywhere, with ptxas's warning; 2 blocks are honoured where
    /// an SM holds 2048 threads, 1 where it holds 1536. ptxas applied no cap of 16 registers.
    fn ignored_everywhere(&self) {
        let ignored = self.found("ignored_minimum");
        let holds = [2048, 1536, 1536, 2048, 2048, 1536];
        assert_eq!(ignored.len(), 6, "{ignored:#?}");
        for ((finding, arch), holds) in ignored.iter().zip(BOUNDS_ARCHS).zip(holds) {
            let largest = holds / 1024;
            assert_eq!(finding.arch.as_deref(), Some(arch));
            assert_eq!(
                finding.message,
                format!("kernel `ignored_minimum` asks for at least 4 blocks of 1024 threads per SM, more than {arch} holds: ptxas ignored the minimum; the largest it honours there is {largest}")
            );
            let (used, minimum) = self.registers("ignored_minimum", arch);
            assert_eq!(minimum, Some(4));
            assert!(
                used > 16,
                "{arch}: {used} registers, the cap ptxas did not apply"
            );
            for note in [
                format!("4 blocks of 1024 threads need 4096 threads per SM, more than {arch}'s {holds}"),
                "ptxas: ptxas warning : Value of threads per SM for entry ignored_minimum is out of range. .minnctapersm will be ignored".to_string(),
                format!("ptxas compiled `ignored_minimum` as if no minimum were given: only the block of 1024 threads caps its registers (at most 64 per thread, not the 16 that 4 blocks would leave); it used {used}"),
            ] {
                assert!(finding.notes.contains(&note), "{arch}: {note}\n{:#?}", finding.notes);
            }
            assert!(
                finding.help.as_deref().unwrap().starts_with(&format!(
                    "write `__launch_bounds__(1024, {largest})` or less"
                )),
                "{:?}",
                finding.help
            );
        }
    }

    /// 24 x 64 threads: only sm_86's 16 block slots are too few, and ptxas says so there.
    fn ignored_for_block_slots_on_sm_86(&self) {
        let slots = self.found("slot_bound");
        assert_eq!(slots.len(), 1, "{slots:#?}");
        assert_eq!(
            slots[0].message,
            "kernel `slot_bound` asks for at least 24 blocks of 64 threads per SM, more than sm_86 holds: ptxas ignored the minimum; the largest it honours there is 16"
        );
        for note in [
            "sm_86 has 16 block slots per SM",
            "ptxas: ptxas warning : Value of minnctapersm for entry slot_bound is out of range. minnctapersm will be ignored",
        ] {
            assert!(
                slots[0].notes.contains(&note.to_string()),
                "{note}\n{:#?}",
                slots[0].notes
            );
        }
    }

    /// 5 x 256 threads with 48 KiB of static shared memory (+1 KiB reserved): ptxas caps
    /// registers at 48 for 5 blocks on every arch, shared memory holds 3 (sm_80: 164 KiB), 2
    /// (100 KiB) or 4 (228 KiB).
    fn capped_by_shared_memory(&self) {
        let capped = self.found("shared_capped");
        let largest = [3, 2, 2, 4, 4, 2];
        let per_sm = [167936, 102400, 102400, 233472, 233472, 102400];
        assert_eq!(capped.len(), 6, "{capped:#?}");
        for (index, (finding, arch)) in capped.iter().zip(BOUNDS_ARCHS).enumerate() {
            let largest = largest[index];
            assert_eq!(
                finding.message,
                format!("kernel `shared_capped` asks for at least 5 blocks per SM, but shared memory let only {largest} reside on {arch}: its registers are capped for blocks that cannot run; the largest minimum that can take effect is {largest}")
            );
            let shared = format!("shared memory: 50176 bytes per block (49152 static + 0 dynamic + 1024 reserved by the driver, in units of 128) fit {largest} times in the {} bytes per SM of {arch}", per_sm[index]);
            assert!(
                finding.notes.contains(&shared),
                "{shared}\n{:#?}",
                finding.notes
            );
            let (used, _) = self.registers("shared_capped", arch);
            assert!(
                used <= 48,
                "{arch}: {used} registers over the cap of 5 blocks"
            );
            assert!(!finding
                .notes
                .iter()
                .any(|note| note.contains("will be ignored")));
        }
    }
}

/// Shared-memory register spilling (`tests/kernels/smem_spilling.cu`, #26) on the six archs of
/// [`BOUNDS_ARCHS`]: the spill area told apart from the kernel's own shared memory in each
/// row, a `smem_spill` finding (warn) with what the area costs in resident blocks, and the
/// pragma suggested where a loop spill fits the shared memory the launch can add.
#[test]
fn spills_to_shared_memory_are_counted_apart_and_the_pragma_is_suggested() {
    let mut args = vec!["tests/kernels/smem_spilling.cu", "--json"];
    for arch in BOUNDS_ARCHS {
        args.extend(["--arch", arch]);
    }
    let output = check(&args);
    assert_eq!(
        output.status.code(),
        Some(1),
        "local spills deny: {}",
        stderr(&output)
    );
    let report = Report::from_json(&stdout(&output)).unwrap();
    let row = |kernel: &str, arch: &str| {
        report
            .kernels
            .iter()
            .find(|row| row.name == kernel && row.arch == arch)
            .unwrap_or_else(|| panic!("{kernel} on {arch}"))
    };
    // ptxas's spill area: all of `smem_spill_all`'s shared memory, all but the 4096 bytes of
    // `smem_spill_tile`'s tile; none where the minimum is ignored (1536 threads per SM) and
    // nothing spills, nor without the pragma.
    let areas = [("sm_80", 20480), ("sm_90", 19456), ("sm_100", 27648)];
    for (arch, area) in areas {
        let (all, tile) = (row("smem_spill_all", arch), row("smem_spill_tile", arch));
        assert_eq!(
            (all.static_smem_bytes, all.smem_spill_bytes),
            (area, Some(area))
        );
        assert_eq!(
            (tile.static_smem_bytes, tile.smem_spill_bytes),
            (area, Some(area - 4096)),
            "{arch}: ptxas sized the area to the same total beside the tile"
        );
    }
    for arch in ["sm_86", "sm_89", "sm_120"] {
        assert_eq!(row("smem_spill_all", arch).smem_spill_bytes, None);
        let tile = row("smem_spill_tile", arch);
        assert_eq!(
            (tile.static_smem_bytes, tile.smem_spill_bytes),
            (4096, None)
        );
    }
    for arch in BOUNDS_ARCHS {
        for kernel in ["loop_spill_room", "loop_spill_no_room"] {
            assert_eq!(row(kernel, arch).smem_spill_bytes, None, "{kernel} {arch}");
        }
    }
    smem_spill_findings(&report);
    pragma_suggestions(&report);
}

/// `smem_spill` (warn) for the two kernels with the pragma on the archs with an area: on sm_80
/// the area and the driver's 1 KiB per block leave 7 of the 8 blocks the registers allow.
fn smem_spill_findings(report: &Report) {
    let found: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.lint.as_str() == "smem_spill")
        .collect();
    assert_eq!(found.len(), 6, "{found:#?}");
    let finding = |kernel: &str, arch: &str| {
        found
            .iter()
            .find(|f| f.kernel.as_deref() == Some(kernel) && f.arch.as_deref() == Some(arch))
            .unwrap_or_else(|| panic!("smem_spill of {kernel} on {arch}"))
    };
    assert!(found.iter().all(|f| f.level.as_str() == "warn"));
    assert_eq!(
        finding("smem_spill_all", "sm_90").message,
        "kernel `smem_spill_all` spills registers to shared memory on sm_90: 19456 of its 19456 bytes of static shared memory are ptxas's spill area (`enable_smem_spilling`), 76 bytes per thread x 256 threads"
    );
    assert!(finding("smem_spill_tile", "sm_90")
        .message
        .contains("15360 of its 19456 bytes"));
    for kernel in ["smem_spill_all", "smem_spill_tile"] {
        assert_eq!(
            finding(kernel, "sm_80").notes[0],
            "the spill area costs 1 resident block on sm_80: 7 blocks of 256 threads fit with it, 8 without"
        );
        for arch in ["sm_90", "sm_100"] {
            assert_eq!(
                finding(kernel, arch).notes[0],
                format!("the spill area costs no resident block on {arch}: 8 blocks of 256 threads fit with it and without")
            );
        }
    }
}

/// `spill_in_loop` of `loop_spill_room` suggests the pragma where its stack frame x 256 threads
/// fits (sm_80: 104 x 256 = 26624 of 26880 bytes; sm_90: 112 x 256 = 28672 of 37888; sm_100,
/// whose loops close with uniform branches `BRA.U UP0, ...`: 104 x 256 = 26624 of 37888); no
/// kernel that has it already or whose frame does not fit gets the suggestion.
fn pragma_suggestions(report: &Report) {
    let in_loops = |kernel: &str| -> Vec<&occupancy_core::report::Finding> {
        report
            .findings
            .iter()
            .filter(|f| f.lint.as_str() == "spill_in_loop" && f.kernel.as_deref() == Some(kernel))
            .collect()
    };
    let suggests = |finding: &occupancy_core::report::Finding| {
        finding.help.as_deref().is_some_and(|help| {
            help.contains("asm volatile(\".pragma \\\"enable_smem_spilling\\\";\");")
        })
    };
    for (arch, frame, spare) in [
        ("sm_80", 104, 26880),
        ("sm_90", 112, 37888),
        ("sm_100", 104, 37888),
    ] {
        let finding = in_loops("loop_spill_room")
            .into_iter()
            .find(|f| f.arch.as_deref() == Some(arch))
            .unwrap_or_else(|| panic!("spill_in_loop of loop_spill_room on {arch}"));
        assert!(suggests(finding), "{arch}: {:?}", finding.help);
        let note = format!("shared memory has room for these spills on {arch}: {frame} bytes of stack frame x 256 threads = {} bytes, within the {spare} bytes per block the launch can add and keep its 6 resident blocks", frame * 256);
        assert!(
            finding.notes.contains(&note),
            "{note}\n{:#?}",
            finding.notes
        );
    }
    for kernel in ["loop_spill_no_room", "smem_spill_all", "smem_spill_tile"] {
        let found = in_loops(kernel);
        assert!(!found.is_empty(), "{kernel} spills in its loop");
        assert!(!found.iter().any(|f| suggests(f)), "{kernel}: {found:#?}");
    }
}

/// ptxas refuses `enable_smem_spilling` in a kernel with dynamic shared memory and names no
/// kernel; the compile error names `dynamic_tile`, its dynamic shared memory and the fix, and
/// not the kernel with the pragma and no dynamic shared memory.
#[test]
fn the_pragma_with_dynamic_shared_memory_is_an_error_naming_the_kernel() {
    let output = check(&["tests/kernels/smem_spilling_dynamic.cu", "--arch", "sm_90"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains(
            "ptxas fatal   : Pragma 'enable_smem_spilling' is not allowed for dynamic SMEM"
        ),
        "ptxas's own error stays: {text}"
    );
    assert!(
        text.contains("note: kernel `dynamic_tile` asks ptxas to spill registers to shared memory (`.pragma \"enable_smem_spilling\"`) and uses dynamic shared memory (`dynamic_smem`, `extern __shared__`): ptxas refuses the pragma in such a kernel; remove the pragma from `dynamic_tile`, or give it static shared memory (`__shared__ T name[N]`) in place of the dynamic"),
        "{text}"
    );
    assert!(!text.contains("`static_only`"), "{text}");
}

/// Compiled `__cluster_dims__` on every arch with clusters (real compiles for sm_90, sm_100 and
/// sm_120): each row carries the compiled cluster and, per GPU of its arch, the clusters resident
/// at once, exact only where the GPC layout is recorded (the H100 SXM and H200); a cluster of 16
/// blocks is `cluster_unlaunchable` on each (`check` cannot see the host's non-portable opt-in).
/// Before sm_90 nvcc itself refuses `__cluster_dims__`, and `check` fails with its error.
#[test]
fn compiled_clusters_on_every_arch_with_clusters() {
    let source = "cargo-occupancy/tests/fixtures/clusters.cu";
    let output = check(&[
        source, "--arch", "sm_90", "--arch", "sm_100", "--arch", "sm_120", "--json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    for arch in ["sm_90", "sm_100", "sm_120"] {
        let row = |name: &str| {
            rows.iter()
                .find(|row| row["name"] == name && row["arch"] == arch)
                .unwrap_or_else(|| panic!("{name} on {arch}"))
        };
        assert_eq!(row("tile_cluster")["cluster"], serde_json::json!([4, 2, 1]));
        assert_eq!(
            row("wide_cluster")["cluster"],
            serde_json::json!([16, 1, 1])
        );
        let gpus = row("tile_cluster")["clusters"].as_array().unwrap().clone();
        assert!(!gpus.is_empty(), "{arch}: no GPU of the arch counted");
        for gpu in &gpus {
            let name = gpu["gpu"].as_str().unwrap();
            let preset = occupancy_core::arch::preset(name).unwrap();
            assert_eq!(preset.arch, arch, "{name}");
            assert_eq!(
                gpu["exact"],
                preset.cluster_groups.is_some(),
                "{arch} {name}: exact only where the layout is recorded"
            );
            // 8 blocks per cluster, at most 8 per SM of 256 threads: never more clusters than SMs.
            let clusters = gpu["max_active_clusters"].as_u64().unwrap();
            assert!(
                clusters > 0 && clusters <= u64::from(preset.sm_count),
                "{arch} {name}: {clusters}"
            );
        }
    }
    let unlaunchable: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "cluster_unlaunchable")
        .map(|finding| {
            (
                finding["kernel"].as_str().unwrap(),
                finding["arch"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        unlaunchable,
        [
            ("wide_cluster", "sm_90"),
            ("wide_cluster", "sm_100"),
            ("wide_cluster", "sm_120")
        ]
    );

    // nvcc's front end fails: under `--keep` it leaves `clusters-<hash>..lgenfe.bc` in TMPDIR,
    // which must be the compile's own directory, removed with it (one was left in /tmp per run).
    let tmp = tempfile::tempdir().unwrap();
    let tmp_dir = tmp.path().to_str().unwrap();
    let before = check_with_env(&[source, "--arch", "sm_80"], &[("TMPDIR", Some(tmp_dir))]);
    assert_eq!(before.status.code(), Some(2), "{}", stderr(&before));
    assert!(
        stderr(&before).contains("__cluster_dims__ is not supported for this GPU architecture"),
        "{}",
        stderr(&before)
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "nvcc's scratch left in TMPDIR: {left:?}");
}

/// Issue #35, class 9: a source whose name holds a newline is found (nvcc's line markers write
/// it `\n`, which was taken as written: the file failed as missing), and one whose name is not
/// ASCII is shown as it is in findings (nvcc's `.file` writes its bytes in octal).
#[test]
fn a_source_named_with_a_newline_or_non_ascii_is_found_and_shown_as_it_is() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-names");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let spills = repo_root().join("tests/kernels/spills.cu");
    for (name, shown) in [
        ("s-\u{e9}.cu", "--> s-\u{e9}.cu:"),
        ("s\nx.cu", "--> \"s\\nx.cu\":"),
    ] {
        std::fs::copy(&spills, dir.join(name)).unwrap();
        let output = binary()
            .args(["occupancy", "check", "--cache-dir"])
            .arg(dir.join("cache"))
            .arg(name)
            .current_dir(&dir)
            .output()
            .unwrap();
        let said = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{name:?}: {said}");
        assert!(said.contains(shown), "{name:?}: {said}");
        assert!(!said.contains("\\303"), "{said}");
    }
}

/// Issue #42, class 9: a recursive kernel compiled with `-G`, whose stack ptxas cannot size,
/// was a 0-byte stack and no word of it. Its source (ptxas's warning), its cubin
/// (`EIATTR_MIN_STACK_SIZE` 0xffffffff, which cuobjdump prints `STACK:UNKNOWN`) and the ptxas
/// log of its compile each make a `stack_unknown` finding on sm_90.
#[test]
fn a_stack_the_compiler_cannot_size_is_reported_unknown_in_every_front_end() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-stack-unknown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("recursive.log");
    let source = repo_root().join("tests/kernels/recursive.cu");
    let compiled = std::process::Command::new(common::nvcc())
        .args(["-cubin", "-arch=sm_90", "-G", "-Xptxas", "-v", "-o"])
        .arg(dir.join("recursive.cubin"))
        .arg(&source)
        .output()
        .unwrap();
    assert!(compiled.status.success(), "{}", stderr(&compiled));
    std::fs::write(&log, &compiled.stderr).unwrap();
    let cubin = repo_root().join("occupancy-build/src/cubin/recursive_g.sm_90.cubin");
    for args in [
        vec![
            "tests/kernels/recursive.cu",
            "--arch",
            "sm_90",
            "--json",
            "--",
            "-G",
        ],
        vec![log.to_str().unwrap(), "--json"],
        vec![cubin.to_str().unwrap(), "--json"],
    ] {
        let output = check(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        let report = Report::from_json(&stdout(&output)).unwrap();
        let unknown: Vec<_> = report
            .findings
            .iter()
            .filter(|finding| finding.lint.as_str() == "stack_unknown")
            .collect();
        assert_eq!(unknown.len(), 1, "{args:?}: {:#?}", report.findings);
        assert_eq!(unknown[0].arch.as_deref(), Some("sm_90"), "{args:?}");
        assert!(
            unknown[0]
                .message
                .contains("`recursive_rec` has a stack of unknown size"),
            "{args:?}: {}",
            unknown[0].message
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
