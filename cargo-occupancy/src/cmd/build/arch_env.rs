//! `--arch` for builders that ask the machine's GPU which code to make: the variables each
//! builder reads (docs/zero-edit.md has the recipe per builder), set for `cargo build` unless
//! the user set them, and the words for a build script that failed for want of a GPU.
//!
//! | builder | variable | `--arch sm_80 --arch sm_90` |
//! |---|---|---|
//! | cudaforge, bindgen_cuda, candle-layer-norm, dfdx | `CUDA_COMPUTE_CAP` (one number) | `80` (the lowest: its PTX JITs to the rest) |
//! | openvm-cuda-builder | `CUDA_ARCH` (comma-separated) | `80,90` |
//! | CMake (cmake-rs crates) | `CUDAARCHS` (CMake's default for `CMAKE_CUDA_ARCHITECTURES`) | `80;90` |
//! | llama-cpp-sys-2, whisper-rs-sys (forward `CMAKE_*` as `-D`) | `CMAKE_CUDA_ARCHITECTURES` | `80;90` |
//!
//! `NVCC_APPEND_FLAGS` is never set: nvcc appends it to every call, and a second `-arch` breaks
//! `nvcc --ptx` (cudaforge, bindgen_cuda). A builder that still asks `nvidia-smi` (dfdx always
//! does; the others without `CUDA_COMPUTE_CAP`) finds, on a machine without one, a stand-in
//! that answers `--query-gpu=compute_cap` with the lowest `--arch` and fails anything else.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

/// The variables `--arch` sets: (name, separator of a list; `None`: one number, the lowest).
pub const BUILDER_VARIABLES: [(&str, Option<&str>); 4] = [
    ("CUDA_COMPUTE_CAP", None),
    ("CUDA_ARCH", Some(",")),
    ("CUDAARCHS", Some(";")),
    ("CMAKE_CUDA_ARCHITECTURES", Some(";")),
];

/// The compute capability numbers of `archs` (`sm_90a` → 90), sorted, without repeats.
fn numbers(archs: &[String]) -> Vec<u32> {
    let mut numbers: Vec<u32> = archs
        .iter()
        .filter_map(|arch| occupancy_core::arch::lookup(arch).ok())
        .map(|facts| facts.major * 10 + facts.minor)
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
}

/// The variables to set for `archs`: each of [`BUILDER_VARIABLES`] the environment (`set`)
/// does not already have.
pub fn variables(
    archs: &[String],
    set: &BTreeMap<&'static str, OsString>,
) -> Vec<(String, OsString)> {
    let numbers = numbers(archs);
    let Some(lowest) = numbers.first() else {
        return Vec::new();
    };
    BUILDER_VARIABLES
        .iter()
        .filter(|(name, _)| !set.contains_key(name))
        .map(|(name, separator)| {
            let value = match separator {
                None => lowest.to_string(),
                Some(separator) => (numbers.iter().map(ToString::to_string))
                    .collect::<Vec<_>>()
                    .join(separator),
            };
            ((*name).to_owned(), OsString::from(value))
        })
        .collect()
}

/// `CUDA_PATH` set to `CUDA_HOME` when the user set `CUDA_HOME` and none of the names other
/// builders look for the toolkit under (bindgen_cuda: `CUDA_PATH`, `CUDA_ROOT`,
/// `CUDA_TOOLKIT_ROOT_DIR`, else `/usr/local/cuda`): a toolkit installed from the Python
/// wheels (scripts/setup-cuda.sh) lives at no standard path.
pub fn toolkit_variables(set: &BTreeMap<&'static str, OsString>) -> Vec<(String, OsString)> {
    let named = ["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"]
        .iter()
        .any(|name| set.contains_key(name));
    match (set.get("CUDA_HOME"), named) {
        (Some(home), false) => vec![("CUDA_PATH".to_owned(), home.clone())],
        _ => Vec::new(),
    }
}

/// Whether `nvidia-smi` is on `path` (a `PATH` value).
pub fn has_nvidia_smi(path: Option<&OsString>) -> bool {
    path.is_some_and(|path| std::env::split_paths(path).any(|dir| dir.join("nvidia-smi").is_file()))
}

/// Writes into `dir` an `nvidia-smi` that answers `--query-gpu=compute_cap` with `lowest`
/// (`9.0`; `compute_cap` first unless the format says `noheader`) and fails every other call
/// saying what it is.
#[cfg(unix)]
pub fn write_nvidia_smi_stand_in(dir: &Path, archs: &[String]) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let Some(lowest) = numbers(archs).first().copied() else {
        return Ok(false);
    };
    let cap = format!("{}.{}", lowest / 10, lowest % 10);
    let script = format!(
        r#"#!/bin/sh
# Written by `cargo occupancy build --arch`: this machine has no nvidia-smi (no GPU). It answers
# the compute capability a build script asks for with the lowest --arch, and nothing else.
case "$*" in
  *compute_cap*)
    case "$*" in *noheader*) ;; *) echo compute_cap ;; esac
    echo {cap}
    exit 0 ;;
esac
echo "nvidia-smi: no GPU here; this stand-in of cargo occupancy build --arch answers only --query-gpu=compute_cap" >&2
exit 9
"#
    );
    let path = dir.join("nvidia-smi");
    std::fs::write(&path, script)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(true)
}

#[cfg(not(unix))]
pub fn write_nvidia_smi_stand_in(_dir: &Path, _archs: &[String]) -> std::io::Result<bool> {
    Ok(false)
}

/// What a failed build printed that says a build script wanted a GPU, worded as the variable
/// to set; `None` when nothing does.
pub fn gpu_hint(stderr: &str) -> Option<String> {
    const SIGNS: [&str; 9] = [
        "nvidia-smi",
        "CUDA_COMPUTE_CAP",
        "compute_cap",
        "CUDA_ARCH",
        "CUDAARCHS",
        "CMAKE_CUDA_ARCHITECTURES",
        "no GPU was detected",
        "Cannot find valid GPU",
        "-arch=native",
    ];
    let sign = SIGNS.iter().find(|sign| stderr.contains(*sign))?;
    Some(format!(
        "a build script asked this machine for its GPU (its output mentions `{sign}`): pass `--arch sm_XX` (it sets CUDA_COMPUTE_CAP, CUDA_ARCH, CUDAARCHS and CMAKE_CUDA_ARCHITECTURES for the builders that read them, and answers nvidia-smi's compute_cap query), or set the variable the builder reads yourself (docs/zero-edit.md)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_builder_gets_its_format_and_the_users_own_values_stand() {
        let archs = ["sm_90a".to_owned(), "sm_80".to_owned(), "sm_90".to_owned()];
        let set = BTreeMap::from([("CUDA_ARCH", OsString::from("86"))]);
        let variables = variables(&archs, &set);
        assert_eq!(
            variables,
            [
                ("CUDA_COMPUTE_CAP".to_owned(), OsString::from("80")),
                ("CUDAARCHS".to_owned(), OsString::from("80;90")),
                (
                    "CMAKE_CUDA_ARCHITECTURES".to_owned(),
                    OsString::from("80;90")
                ),
            ]
        );
        assert!(super::variables(&[], &BTreeMap::new()).is_empty());
    }

    #[test]
    fn cuda_path_follows_cuda_home_unless_a_toolkit_root_is_named() {
        let home = BTreeMap::from([("CUDA_HOME", OsString::from("/opt/cu13"))]);
        assert_eq!(
            toolkit_variables(&home),
            [("CUDA_PATH".to_owned(), OsString::from("/opt/cu13"))]
        );
        let mut named = home.clone();
        named.insert("CUDA_ROOT", OsString::from("/usr/local/cuda"));
        assert!(toolkit_variables(&named).is_empty());
        assert!(toolkit_variables(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn a_gpu_wanting_failure_names_the_flag() {
        let hint = gpu_hint(
            "thread 'main' panicked at build.rs:12: nvidia-smi failed: No such file or directory",
        )
        .unwrap();
        assert!(hint.contains("--arch sm_XX"), "{hint}");
        assert!(hint.contains("`nvidia-smi`"), "{hint}");
        assert_eq!(gpu_hint("error[E0425]: cannot find value `x`"), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_stand_in_answers_the_compute_cap_query_only() {
        let dir = std::env::temp_dir().join(format!("occupancy-smi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(write_nvidia_smi_stand_in(&dir, &["sm_90".into(), "sm_120".into()]).unwrap());
        let smi = dir.join("nvidia-smi");
        let run = |args: &[&str]| {
            std::process::Command::new(&smi)
                .args(args)
                .output()
                .unwrap()
        };
        let csv = run(&["--query-gpu=compute_cap", "--format=csv"]);
        assert_eq!(String::from_utf8_lossy(&csv.stdout), "compute_cap\n9.0\n");
        let bare = run(&["--query-gpu=compute_cap", "--format=csv,noheader"]);
        assert_eq!(String::from_utf8_lossy(&bare.stdout), "9.0\n");
        assert!(!run(&["-L"]).status.success());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
