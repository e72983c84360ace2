//! `cargo occupancy check` and its compile cache under races and damage, with the real nvcc
//! (scripts/setup-cuda.sh installs it; these tests fail, never skip, without it): concurrent
//! runs with different `-D` on one cache dir, a truncated cached PTX, one file named twice, a
//! device-only file in a scanned directory, and `report` on a failed build's report.

mod common;

use common::{binary, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

use occupancy_core::report::Report;

/// A fresh directory for one test (its own cache too, so tests do not share entries).
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn check_in(cache: &Path, args: &[&str]) -> Output {
    binary()
        .args(["occupancy", "check", "--cache-dir"])
        .arg(cache)
        .args(args)
        .output()
        .expect("run cargo-occupancy")
}

/// Static shared memory and `__launch_bounds__` both follow `-DTILE`: a row that mixes two
/// configurations (one's PTX bounds with the other's ptxas report) cannot look right.
const CONFIGURED: &str = r#"#ifndef TILE
#error TILE is not set
#endif
extern "C" __global__ void __launch_bounds__(TILE) configured(float* x) {
  __shared__ float tile[TILE];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = tile[TILE - 1 - threadIdx.x];
}
"#;

/// The one row of `configured`, checked against the TILE it was compiled with.
fn assert_configured(output: &Output, tile: u32, what: &str) {
    assert_eq!(output.status.code(), Some(0), "{what}: {}", stderr(output));
    let report = Report::from_json(&stdout(output)).unwrap();
    assert_eq!(report.kernels.len(), 1, "{what}: {:?}", report.kernels);
    let row = &report.kernels[0];
    assert_eq!(
        (row.static_smem_bytes, row.max_threads_per_block),
        (u64::from(tile) * 4, Some(tile)),
        "{what}: TILE={tile} got another configuration's numbers"
    );
}

#[test]
fn concurrent_runs_with_different_defines_never_mix() {
    let dir = scratch("defines");
    let cache = dir.join("cache");
    let source = dir.join("configured.cu");
    for round in 0..4 {
        // A new source text each round: every run compiles and publishes, racing the others.
        std::fs::write(&source, format!("{CONFIGURED}// round {round}\n")).unwrap();
        let runs: Vec<(u32, std::process::Child)> = [128, 256, 128, 256]
            .into_iter()
            .map(|tile| {
                let child = binary()
                    .args(["occupancy", "check", "--cache-dir"])
                    .arg(&cache)
                    .arg(&source)
                    .args(["--arch", "sm_90", "--json", "--"])
                    .arg(format!("-DTILE={tile}"))
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (tile, child)
            })
            .collect();
        for (tile, child) in runs {
            let output = child.wait_with_output().unwrap();
            assert_configured(&output, tile, &format!("round {round}"));
        }
    }
    // Both configurations stay cached side by side: a rerun of each is answered from its slot.
    for tile in [128, 256] {
        let output = check_in(
            &cache,
            &[
                source.to_str().unwrap(),
                "--arch",
                "sm_90",
                "--json",
                "--",
                &format!("-DTILE={tile}"),
            ],
        );
        assert_configured(&output, tile, "warm rerun");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn files_named(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_named(&path, extension, found);
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
}

#[test]
fn a_truncated_or_emptied_cached_ptx_is_recompiled() {
    let dir = scratch("truncated");
    let cache = dir.join("cache");
    let source = dir.join("configured.cu");
    std::fs::write(&source, CONFIGURED).unwrap();
    let args = [
        source.to_str().unwrap(),
        "--arch",
        "sm_90",
        "--json",
        "--",
        "-DTILE=128",
    ];
    let first = check_in(&cache, &args);
    assert_configured(&first, 128, "cold");
    for damage in ["truncated", "emptied"] {
        let mut cached = Vec::new();
        files_named(&cache, "ptx", &mut cached);
        assert_eq!(cached.len(), 1, "one cached PTX: {cached:?}");
        let text = std::fs::read(&cached[0]).unwrap();
        let kept = if damage == "truncated" {
            text.len() / 2
        } else {
            0
        };
        std::fs::write(&cached[0], &text[..kept]).unwrap();
        let again = check_in(&cache, &args);
        assert_configured(&again, 128, damage);
        assert_eq!(
            stdout(&again),
            stdout(&first),
            "{damage}: same report as the cold run"
        );
        let mut after = Vec::new();
        files_named(&cache, "ptx", &mut after);
        assert_eq!(
            std::fs::read(&after[0]).unwrap(),
            text,
            "{damage}: the entry was rebuilt"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_file_named_twice_is_checked_once() {
    let dir = scratch("twice");
    let cache = dir.join("cache");
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::write(
        dir.join("kernels/a.cu"),
        "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] += 1.0f; }\n",
    )
    .unwrap();
    let kernels = dir.join("kernels");
    let file = kernels.join("a.cu");
    let dotted = kernels.join(".").join("a.cu");
    for args in [
        [kernels.to_str().unwrap(), file.to_str().unwrap()],
        [file.to_str().unwrap(), dotted.to_str().unwrap()],
    ] {
        let output = check_in(&cache, &[args[0], args[1], "--arch", "sm_90", "--json"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        let report = Report::from_json(&stdout(&output)).unwrap();
        assert_eq!(report.kernels.len(), 1, "{args:?}: {:?}", report.kernels);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_device_only_file_in_a_directory_is_noted_and_the_rest_checked() {
    let dir = scratch("device-only");
    let cache = dir.join("cache");
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::write(
        dir.join("kernels/helpers.cu"),
        "__device__ float twice(float x) { return 2.0f * x; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("kernels/scale.cu"),
        "extern \"C\" __global__ void scale(float* x) { x[threadIdx.x] *= 3.0f; }\n",
    )
    .unwrap();
    let output = check_in(
        &cache,
        &[
            dir.join("kernels").to_str().unwrap(),
            "--arch",
            "sm_90",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = Report::from_json(&stdout(&output)).unwrap();
    let names: Vec<&str> = report.kernels.iter().map(|row| row.name.as_str()).collect();
    assert_eq!(names, ["scale"]);
    assert!(
        stderr(&output).contains("helpers.cu defines no kernel"),
        "{}",
        stderr(&output)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_says_when_a_build_failed_instead_of_zero_deny() {
    let dir = scratch("failed-report");
    let good = Report {
        crate_name: Some("good".into()),
        ..Report::default()
    };
    let failed = Report {
        crate_name: Some("broken".into()),
        failed: Some("nvcc failed to compile kernels/k.cu (exit status: 1):".into()),
        ..Report::default()
    };
    for (name, report) in [("good", &good), ("broken", &failed)] {
        std::fs::write(
            dir.join(format!("{name}.json")),
            occupancy_core::report::render_json(report),
        )
        .unwrap();
    }
    let report = |extra: &[&str]| {
        binary()
            .args(["occupancy", "report", "--dir"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let output = report(&[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("crate `broken`: its last build failed")
            && stderr(&output).contains("nvcc failed to compile kernels/k.cu"),
        "{}",
        stderr(&output)
    );
    let only_good = report(&["--crate", "good"]);
    assert_eq!(only_good.status.code(), Some(0), "{}", stderr(&only_good));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An nvcc (the real one, via `$NVCC`) that logs each call to `$OCCUPANCY_TEST_NVCC_LOG`; after
/// a compile (not the `--version` probe) it copies `$OCCUPANCY_TEST_EDIT` over
/// `$OCCUPANCY_TEST_SOURCE`: a save in the editor while nvcc compiles.
fn editing_nvcc(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("nvcc-editing.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$OCCUPANCY_TEST_NVCC_LOG\"\n\"$OCCUPANCY_TEST_REAL_NVCC\" \"$@\"\nstatus=$?\ncase \"$*\" in\n  *--version*) ;;\n  *) if [ -n \"$OCCUPANCY_TEST_EDIT\" ]; then cp \"$OCCUPANCY_TEST_EDIT\" \"$OCCUPANCY_TEST_SOURCE\"; fi ;;\nesac\nexit $status\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// A `.cu` saved while nvcc compiles it (issue 23, item 3a): the run reports what nvcc read and
/// says the result is not cached; the next run compiles the saved text, never replaying the old
/// numbers under the new text's key; the one after is a cache hit.
#[test]
fn a_source_saved_during_its_compile_is_not_cached_under_its_new_text() {
    let dir = scratch("saved-during");
    let cache = dir.join("cache");
    let source = dir.join("configured.cu");
    let saved = dir.join("saved.cu");
    std::fs::write(&source, format!("#define TILE 128\n{CONFIGURED}")).unwrap();
    std::fs::write(&saved, format!("#define TILE 256\n{CONFIGURED}")).unwrap();
    let log = dir.join("nvcc.log");
    let real_nvcc = real_nvcc();
    // Written once: the toolkit's identity (nvcc's size and time) is part of the cache slot.
    let nvcc = editing_nvcc(&dir);
    let run = |edit: bool| {
        let mut command = binary();
        command
            .args(["occupancy", "check", "--cache-dir"])
            .arg(&cache)
            .arg(&source)
            .args(["--arch", "sm_90", "--json"])
            .env("NVCC", &nvcc)
            .env("OCCUPANCY_TEST_REAL_NVCC", &real_nvcc)
            .env("OCCUPANCY_TEST_NVCC_LOG", &log)
            .env("OCCUPANCY_TEST_SOURCE", &source);
        if edit {
            command.env("OCCUPANCY_TEST_EDIT", &saved);
        }
        let _ = std::fs::remove_file(&log);
        let output = command.output().unwrap();
        let compiles = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.contains("--version"))
            .count();
        (output, compiles)
    };
    let (during, compiles) = run(true);
    assert_configured(&during, 128, "the run during which the file was saved");
    assert_eq!(compiles, 1);
    assert!(
        stderr(&during).contains("configured.cu changed while nvcc compiled")
            && stderr(&during).contains("does not cache it"),
        "{}",
        stderr(&during)
    );
    assert_eq!(
        std::fs::read(&source).unwrap(),
        std::fs::read(&saved).unwrap()
    );
    let (next, compiles) = run(false);
    assert_configured(&next, 256, "the run after the save");
    assert_eq!(compiles, 1, "the saved text is compiled, not replayed");
    let (again, compiles) = run(false);
    assert_configured(&again, 256, "a rerun");
    assert_eq!(compiles, 0, "and then cached");
    assert!(
        !stderr(&again).contains("changed while"),
        "{}",
        stderr(&again)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether these tests run as root, and so can make files of another user (`chown`).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0)
}

/// `chown -R 12345:12345 path`: a file another local user made.
fn give_to_another_user(path: &Path) {
    let status = std::process::Command::new("chown")
        .args(["-R", "12345:12345"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// `check configured.cu -DTILE=128` with `extra` arguments (a `--cache-dir`), the user's cache
/// home in `dir/xdg` and the temporary directory in `dir/tmp`, through the logging nvcc; what
/// it printed and how many compiles ran.
fn check_counting(dir: &Path, extra: &[&std::ffi::OsStr]) -> (Output, usize) {
    let source = dir.join("configured.cu");
    if !source.exists() {
        std::fs::write(&source, CONFIGURED).unwrap();
    }
    let nvcc = dir.join("nvcc-editing.sh");
    if !nvcc.exists() {
        editing_nvcc(dir);
    }
    let log = dir.join("nvcc.log");
    let _ = std::fs::remove_file(&log);
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let output = binary()
        .args(["occupancy", "check"])
        .arg(&source)
        .args(extra)
        .args(["--arch", "sm_90", "--json", "--", "-DTILE=128"])
        .env("XDG_CACHE_HOME", dir.join("xdg"))
        .env("TMPDIR", dir.join("tmp"))
        .env("NVCC", &nvcc)
        .env("OCCUPANCY_TEST_REAL_NVCC", real_nvcc())
        .env("OCCUPANCY_TEST_NVCC_LOG", &log)
        .output()
        .unwrap();
    let compiles = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.contains("--version"))
        .count();
    (output, compiles)
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Without `--cache-dir`, the cache is the user's own (issue 23, item 3b): under
/// `$XDG_CACHE_HOME/occupancy`, created private, reused by the next run; no longer one fixed
/// directory in the shared `/tmp`.
#[test]
fn the_default_cache_is_private_to_the_user() {
    let dir = scratch("default-cache");
    let (first, compiles) = check_counting(&dir, &[]);
    assert_configured(&first, 128, "cold");
    assert_eq!(compiles, 1);
    let cache = dir.join("xdg/occupancy");
    for private in [
        dir.join("xdg"),
        cache.clone(),
        cache.join("occupancy/cache"),
    ] {
        assert_eq!(mode(&private), 0o700, "{}", private.display());
    }
    let (again, compiles) = check_counting(&dir, &[]);
    assert_configured(&again, 128, "warm");
    assert_eq!(compiles, 0, "a cache hit: {}", stderr(&again));
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cache directory others may write, or another user's, is not used: one warning, the
/// compile runs in a private temporary directory, and nothing is read from or written to it.
#[test]
fn a_cache_dir_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("shared-cache");
    let shared = dir.join("shared");
    let arg = [std::ffi::OsStr::new("--cache-dir"), shared.as_os_str()];
    let (first, _) = check_counting(&dir, &arg);
    assert_configured(&first, 128, "in a private cache");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut owners = vec!["writable by group or others (mode 1777)"];
    if is_root() {
        owners.push("belongs to uid 12345");
    }
    for reason in owners {
        if reason.contains("uid") {
            give_to_another_user(&shared);
            std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let before = files_under(&shared);
        let (output, compiles) = check_counting(&dir, &arg);
        assert_configured(&output, 128, reason);
        assert_eq!(compiles, 1, "{reason}: compiled, not read from the cache");
        let message = stderr(&output);
        assert_eq!(message.matches("warning:").count(), 1, "{message}");
        assert!(
            message.contains(&format!(
                "the compile cache in {} is not used",
                shared.display()
            )) && message.contains(reason)
                && message.contains("compiling in a private temporary directory"),
            "{message}"
        );
        assert_eq!(
            files_under(&shared),
            before,
            "{reason}: the directory was written"
        );
    }
    assert!(
        files_under(&dir.join("tmp")).is_empty(),
        "the temporary directory was left behind"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file under `dir`, with its size and modification time.
fn files_under(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                stack.push(entry.path());
            }
            found.push((entry.path(), metadata.len(), metadata.modified().unwrap()));
        }
    }
    found.sort();
    found
}

/// An entry inside the user's own cache that another user planted (as root: `chown`) is not
/// used: the run says so, compiles, and replaces it; the next run is a cache hit.
#[test]
fn an_entry_another_user_planted_is_compiled_again() {
    if !is_root() {
        eprintln!("skipped: making another user's files needs root (chown)");
        return;
    }
    let dir = scratch("planted-entry");
    let cache = dir.join("cache");
    let arg = [std::ffi::OsStr::new("--cache-dir"), cache.as_os_str()];
    let (first, _) = check_counting(&dir, &arg);
    assert_configured(&first, 128, "cold");
    let mut manifests = Vec::new();
    files_named(&cache, "json", &mut manifests);
    let manifest = manifests
        .iter()
        .find(|path| path.ends_with("manifest.json"))
        .expect("an entry")
        .clone();
    give_to_another_user(manifest.parent().unwrap());
    let (planted, compiles) = check_counting(&dir, &arg);
    assert_configured(&planted, 128, "planted");
    assert_eq!(compiles, 1);
    let message = stderr(&planted);
    assert!(
        message.contains("the cached compile of")
            && message.contains("belongs to uid 12345")
            && message.contains("compiled again"),
        "{message}"
    );
    let (again, compiles) = check_counting(&dir, &arg);
    assert_configured(&again, 128, "after");
    assert_eq!(compiles, 0, "{}", stderr(&again));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The real nvcc, which the test's stand-in runs: `$NVCC` of the environment the test runs in
/// (a test may read it; the CLI reads its environment in env.rs alone).
#[allow(clippy::disallowed_methods)]
fn real_nvcc() -> std::ffi::OsString {
    std::env::var_os("NVCC").expect("scripts/setup-cuda.sh --env sets NVCC")
}
