//! Settings read through `cargo metadata` from real manifests in scratch directories.

use super::*;
use occupancy_core::spec::BlockDim;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("occupancy-config-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A package at `dir` with `manifest` as its Cargo.toml and an empty library (cargo wants a target).
fn write_package(dir: &Path, manifest: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
}

fn load_from(dir: &Path) -> Result<OccupancySettings, SettingsError> {
    load(dir, None, &ToolTimeouts::default())
}

#[test]
fn package_overrides_workspace_and_lints_merge() {
    let root = temp_dir("merge");
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers=[\"k\"]\n[workspace.metadata.occupancy]\narchs=[\"sm_80\"]\nbaseline=\"ws.lock\"\n[workspace.metadata.occupancy.lints]\nspills=\"warn\"\nstack_frame=\"deny\"\n",
    )
    .unwrap();
    write_package(
        &root.join("k"),
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\narchs=[\"sm_90\"]\n[package.metadata.occupancy.lints]\nspills=\"deny\"\n[package.metadata.occupancy.kernels.saxpy.lints]\nlow_occupancy=\"allow\"\n",
    );
    let settings = load_from(&root.join("k")).unwrap();
    assert_eq!(settings.archs, Some(vec!["sm_90".to_string()]));
    assert_eq!(settings.baseline, Some(PathBuf::from("ws.lock")));
    assert_eq!(
        settings.lints.get("spills").map(String::as_str),
        Some("deny")
    );
    assert_eq!(
        settings.lints.get("stack_frame").map(String::as_str),
        Some("deny")
    );
    assert_eq!(settings.kernel_lints["saxpy"]["low_occupancy"], "allow");
    assert_eq!(settings.package_kernel_tables, vec!["saxpy".to_string()]);
    assert_eq!(settings.package_name.as_deref(), Some("k"));
    let manifests: Vec<PathBuf> = settings
        .manifest_paths
        .iter()
        .map(|path| canonical(path))
        .collect();
    assert_eq!(
        manifests,
        vec![
            canonical(&root.join("k/Cargo.toml")),
            canonical(&root.join("Cargo.toml"))
        ]
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_package_that_is_its_own_workspace_reads_both_tables_from_one_file() {
    let root = temp_dir("own-workspace");
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock=128\n[workspace]\n[workspace.metadata.occupancy]\nblock=64\nptx_per_arch=true\n",
    );
    let settings = load_from(&root).unwrap();
    assert_eq!(settings.block, Some(BlockDim::linear(128)));
    assert_eq!(settings.ptx_per_arch, Some(true));
    assert_eq!(
        settings.manifest_paths.len(),
        1,
        "{:?}",
        settings.manifest_paths
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn block_is_read_from_the_workspace_and_checked() {
    let root = temp_dir("block");
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers=[\"k\"]\n[workspace.metadata.occupancy]\nblock=1024\n",
    )
    .unwrap();
    write_package(&root.join("k"), "[package]\nname=\"k\"\n");
    assert_eq!(
        load_from(&root.join("k")).unwrap().block,
        Some(BlockDim::linear(1024))
    );
    write_package(
        &root.join("k"),
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock=2048\n",
    );
    let error = load_from(&root.join("k")).unwrap_err().to_string();
    assert!(
        error.contains("[package.metadata.occupancy] `block` must be threads per block"),
        "{error}"
    );
    // A 2-D block, as candle launches its matrix-vector kernels, of at most 1024 threads.
    write_package(
        &root.join("k"),
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock=[32, 4]\n",
    );
    assert_eq!(
        load_from(&root.join("k")).unwrap().block,
        Some(BlockDim::new(32, 4, 1))
    );
    for bad in ["[64, 32]", "[0, 4]", "[1, 2, 3, 4]", "[]", "\"256\""] {
        write_package(
            &root.join("k"),
            &format!("[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock={bad}\n"),
        );
        let error = load_from(&root.join("k")).unwrap_err().to_string();
        assert!(error.contains("`block = [32, 4]`"), "{bad}: {error}");
    }
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn kernel_tables_give_launches_by_name_or_pattern() {
    let root = temp_dir("kernel-launches");
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock=1024\n[package.metadata.occupancy.kernels.\"mul_mat_vec_*\"]\nblock=[32, 4]\ndynamic_smem=4096\n[package.metadata.occupancy.kernels.\"mul_mat_vec_*\".lints]\nspills=\"warn\"\n",
    );
    let settings = load_from(&root).unwrap();
    let launch = settings.kernel_launches["mul_mat_vec_*"];
    assert_eq!(launch.block, Some(BlockDim::new(32, 4, 1)));
    assert_eq!(launch.dynamic_smem_bytes, Some(4096));
    assert_eq!(settings.kernel_lints["mul_mat_vec_*"]["spills"], "warn");
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy.kernels.k]\nblocks=[32, 4]\n",
    );
    let error = load_from(&root).unwrap_err().to_string();
    assert!(
        error.contains("unknown key `blocks` (expected `lints`, `block` or `dynamic_smem`)"),
        "{error}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_wrong_value_names_the_file_to_edit() {
    let root = temp_dir("names-file");
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers=[\"k\"]\n[workspace.metadata.occupancy]\nreports=[\"xml\"]\n",
    )
    .unwrap();
    write_package(&root.join("k"), "[package]\nname=\"k\"\n");
    let error = load_from(&root.join("k")).unwrap_err().to_string();
    let workspace_manifest = root.join("Cargo.toml").display().to_string();
    assert!(
        error.starts_with(&format!(
            "{workspace_manifest}: [workspace.metadata.occupancy] `reports`: unknown format \"xml\""
        )),
        "{error}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn unknown_keys_are_named() {
    let root = temp_dir("unknown");
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\narch=[\"sm_90\"]\n",
    );
    let error = load_from(&root).unwrap_err().to_string();
    assert!(
        error.contains("[package.metadata.occupancy]: unknown key `arch` (did you mean `archs`?"),
        "{error}"
    );
    assert!(
        error.contains(&root.join("Cargo.toml").display().to_string()),
        "{error}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn ptx_per_arch_is_a_bool_and_a_wrong_value_names_the_key() {
    let root = temp_dir("per-arch");
    let write = |value: &str| {
        write_package(
            &root,
            &format!("[package]\nname=\"k\"\n[package.metadata.occupancy]\nptx_per_arch={value}\n"),
        )
    };
    write("true");
    assert_eq!(load_from(&root).unwrap().ptx_per_arch, Some(true));
    write("\"yes\"");
    let error = load_from(&root).unwrap_err().to_string();
    assert!(
        error.contains("[package.metadata.occupancy] `ptx_per_arch` must be true or false"),
        "{error}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_manifest_cargo_refuses_is_an_error_naming_it_with_cargos_words() {
    let root = temp_dir("invalid");
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy\n",
    );
    let error = load_from(&root).unwrap_err();
    assert!(
        matches!(error, SettingsError::CargoMetadata { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&root.join("Cargo.toml").display().to_string()),
        "{message}"
    );
    assert!(message.contains("unclosed table"), "{message}");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_virtual_manifest_is_not_a_package() {
    let root = temp_dir("virtual");
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers=[\"k\"]\n").unwrap();
    write_package(&root.join("k"), "[package]\nname=\"k\"\n");
    let error = load_from(&root).unwrap_err();
    assert!(
        matches!(error, SettingsError::NotAPackage { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains(".manifest_dir(...)"), "{error}");
    std::fs::remove_dir_all(root).unwrap();
}

/// The build's `$CARGO` runs, with `--no-deps --offline`: a workspace member whose dependency
/// exists nowhere (no registry, no network) does not stop the settings from being read.
#[test]
fn runs_the_given_cargo_without_resolving_or_downloading() {
    let root = temp_dir("given-cargo");
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers=[\"k\", \"other\"]\n[workspace.metadata.occupancy]\narchs=[\"sm_90\"]\n",
    )
    .unwrap();
    write_package(&root.join("k"), "[package]\nname=\"k\"\n");
    write_package(
        &root.join("other"),
        "[package]\nname=\"other\"\n[dependencies]\nno-such-crate-anywhere-occupancy = \"99\"\n",
    );
    let log = root.join("cargo-args.log");
    let wrapper = root.join("cargo-wrapper.sh");
    let real_cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{real_cargo}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let settings = load(&root.join("k"), Some(&wrapper), &ToolTimeouts::default()).unwrap();
    assert_eq!(settings.archs, Some(vec!["sm_90".to_string()]));
    let args = std::fs::read_to_string(&log).unwrap();
    assert_eq!(args.lines().count(), 1, "one cargo call: {args}");
    assert!(
        args.starts_with("metadata --format-version 1 --no-deps "),
        "{args}"
    );
    assert!(args.trim_end().ends_with("--offline"), "{args}");
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_cargo_that_cannot_run_is_an_error_not_default_settings() {
    let root = temp_dir("no-cargo");
    write_package(&root, "[package]\nname=\"k\"\n");
    let error = load(
        &root,
        Some(&root.join("no-such-cargo")),
        &ToolTimeouts::default(),
    )
    .unwrap_err();
    assert!(
        matches!(error, SettingsError::CargoMetadata { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("$CARGO"), "{error}");
    std::fs::remove_dir_all(root).unwrap();
}

/// A cargo that never answers fails the build within the limit, naming the command and the
/// setting, instead of hanging it (`cargo metadata` is the first tool a build runs).
#[cfg(unix)]
#[test]
fn a_hung_cargo_is_killed_and_named() {
    use std::os::unix::fs::PermissionsExt;
    let root = temp_dir("hung-cargo");
    write_package(&root, "[package]\nname=\"k\"\n");
    let cargo = root.join("hung-cargo.sh");
    std::fs::write(&cargo, "#!/bin/sh\nsleep 3600\n").unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut env = crate::env::TrackedEnv::new();
    env.set("OCCUPANCY_TOOL_TIMEOUT", Some("0.5"));
    let timeouts = ToolTimeouts::from_env(&env).unwrap();
    let started = std::time::Instant::now();
    let error = load(&root, Some(&cargo), &timeouts).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        matches!(error, SettingsError::CargoMetadataTimedOut { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    for part in [
        "hung-cargo.sh metadata --format-version 1 --no-deps",
        "within 0.5 s",
        "OCCUPANCY_TOOL_TIMEOUT",
        "Cargo.toml",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    std::fs::remove_dir_all(root).unwrap();
}

/// Issue 23 (round 2): `baseline = ...` naming a source file or a directory is refused at
/// resolution, naming the key, its table and what it names, never with advice to delete it
/// (blessing would replace it); a file of its own is read as before.
#[test]
fn a_baseline_that_names_a_source_file_or_a_directory_is_refused_naming_the_key() {
    let root = temp_dir("bad-baseline");
    std::fs::create_dir_all(root.join("src")).unwrap();
    for (value, problem) in [
        ("src/lib.rs", "names a Rust source file"),
        ("kernels/scale.cu", "names a CUDA source file"),
        ("src", "names a directory ("),
        ("locks/", "names a directory"),
        ("Cargo.toml", "names cargo's `Cargo.toml`"),
        ("", "is empty"),
    ] {
        write_package(
            &root,
            &format!("[package]\nname=\"k\"\n[package.metadata.occupancy]\nbaseline={value:?}\n"),
        );
        let error = load_from(&root).unwrap_err();
        assert!(
            matches!(error, SettingsError::BadBaseline { .. }),
            "{value}: {error}"
        );
        let text = error.to_string();
        assert!(
            text.contains(&format!(
                "[package.metadata.occupancy] `baseline = {value:?}` {problem}"
            )),
            "{text}"
        );
        assert!(text.contains("OCCUPANCY_BLESS=1"), "{text}");
        assert!(!text.contains("delete"), "{text}");
    }
    write_package(
        &root,
        "[package]\nname=\"k\"\n[package.metadata.occupancy]\nbaseline=\"locks/occupancy.json\"\n",
    );
    let settings = load_from(&root).unwrap();
    assert_eq!(
        settings.baseline,
        Some(PathBuf::from("locks/occupancy.json"))
    );
    std::fs::remove_dir_all(root).unwrap();
}
