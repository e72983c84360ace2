//! Which GPU architectures a build compiles for, and where that list came from.
//!
//! Order of precedence (first that gives a list wins): the builder's `.arch()`, `OCCUPANCY_ARCHS`,
//! `CUDA_COMPUTE_CAP` (the variable candle and bindgen_cuda read), `archs` in
//! `[package.metadata.occupancy]` / `[workspace.metadata.occupancy]`, the GPUs `nvidia-smi` reports,
//! then [`DEFAULT_ARCHS`]. This module parses and orders; it runs `nvidia-smi` only through the
//! closure its caller passes.

use std::path::Path;

use occupancy_core::arch::UnknownArch;

use crate::nvcc_archs::{explain_unknown, NvccArchs};
use crate::process::{run_bounded, ToolKind, ToolTimeouts};
use crate::Error;

pub use occupancy_core::arch::Arch;

/// The build's name for [`Arch`], the one architecture type of `occupancy-core` (kept so that
/// `occupancy_build::SmArch` keeps compiling).
pub type SmArch = Arch;

/// The list used when nothing else names an architecture: Ampere (A100) and Hopper (H100), the
/// two data-centre generations most CUDA crates target today.
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_90"];

/// Parses a comma, semicolon or space separated list in [`Arch`]'s grammar; duplicates are
/// removed, order is sorted. An unknown name is an error naming `setting`, and says whether the
/// installed nvcc (asked through `nvcc` only then) knows it.
pub fn parse_list(
    text: &str,
    setting: &str,
    nvcc: &dyn Fn() -> Option<NvccArchs>,
) -> Result<Vec<Arch>, Error> {
    let mut archs = Vec::new();
    for item in text.split(|c: char| c == ',' || c == ';' || c.is_whitespace()) {
        if !item.is_empty() {
            archs.push(Arch::parse(item).map_err(|error| unknown(setting, error, nvcc))?);
        }
    }
    archs.sort();
    archs.dedup();
    Ok(archs)
}

/// The build error of an unknown name in `setting`.
pub fn unknown(setting: &str, error: UnknownArch, nvcc: &dyn Fn() -> Option<NvccArchs>) -> Error {
    let listing = error.newer_than_table.and_then(|_| nvcc());
    Error::UnknownArch {
        setting: setting.to_string(),
        explanation: explain_unknown(&error, listing.as_ref()),
        unknown: error,
    }
}

/// Where the target list came from (shown in reports and in `cargo:warning`s about defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArchSource {
    /// `.arch(...)` on the builder.
    Builder,
    /// `OCCUPANCY_ARCHS`.
    OccupancyArchsEnv,
    /// `CUDA_COMPUTE_CAP`.
    CudaComputeCapEnv,
    /// `archs` in Cargo.toml metadata.
    Metadata,
    /// `nvidia-smi --query-gpu=compute_cap`.
    InstalledGpu,
    /// [`DEFAULT_ARCHS`].
    Default,
}

impl ArchSource {
    /// The name reports use (the serde name): `builder`, `occupancy_archs_env`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            ArchSource::Builder => "builder",
            ArchSource::OccupancyArchsEnv => "occupancy_archs_env",
            ArchSource::CudaComputeCapEnv => "cuda_compute_cap_env",
            ArchSource::Metadata => "metadata",
            ArchSource::InstalledGpu => "installed_gpu",
            ArchSource::Default => "default",
        }
    }
}

/// The inputs to arch resolution, in precedence order.
#[derive(Debug, Default)]
pub struct ArchInputs<'a> {
    pub builder: &'a [Arch],
    pub occupancy_archs_env: Option<String>,
    pub cuda_compute_cap_env: Option<String>,
    pub metadata: Option<Vec<String>>,
}

/// Resolves the target list; `query_gpu` is called only when nothing earlier decided, `nvcc`
/// only to explain an unknown architecture.
pub fn resolve(
    inputs: ArchInputs<'_>,
    query_gpu: impl FnOnce() -> Option<String>,
    nvcc: &dyn Fn() -> Option<NvccArchs>,
) -> Result<(Vec<Arch>, ArchSource), Error> {
    if !inputs.builder.is_empty() {
        let mut archs = inputs.builder.to_vec();
        archs.sort();
        archs.dedup();
        return Ok((archs, ArchSource::Builder));
    }
    if let Some(text) = inputs.occupancy_archs_env {
        let archs = parse_list(&text, "OCCUPANCY_ARCHS", nvcc)?;
        return non_empty(archs, ArchSource::OccupancyArchsEnv, "OCCUPANCY_ARCHS");
    }
    if let Some(text) = inputs.cuda_compute_cap_env {
        let archs = parse_list(&text, "CUDA_COMPUTE_CAP", nvcc)?;
        return non_empty(archs, ArchSource::CudaComputeCapEnv, "CUDA_COMPUTE_CAP");
    }
    if let Some(list) = inputs.metadata {
        let setting = "archs in [package.metadata.occupancy]";
        let archs = parse_list(&list.join(","), setting, nvcc)?;
        return non_empty(archs, ArchSource::Metadata, setting);
    }
    if let Some(text) = query_gpu() {
        let setting =
            "the GPU nvidia-smi reports (set OCCUPANCY_ARCHS to choose the architectures)";
        let archs = parse_list(&text, setting, nvcc)?;
        if !archs.is_empty() {
            return Ok((archs, ArchSource::InstalledGpu));
        }
    }
    let archs = DEFAULT_ARCHS
        .iter()
        .map(|name| Arch::parse(name).expect("the default archs are in the table"))
        .collect();
    Ok((archs, ArchSource::Default))
}

fn non_empty(
    archs: Vec<Arch>,
    source: ArchSource,
    setting: &'static str,
) -> Result<(Vec<Arch>, ArchSource), Error> {
    if archs.is_empty() {
        return Err(Error::EmptyArchList { setting });
    }
    Ok((archs, source))
}

/// Runs `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` and returns its output
/// (`9.0` per GPU), or `None` when there is no driver or no GPU. An nvidia-smi that does not
/// answer within the probes' limit (a driver in a bad state) is an error, not "no GPU".
pub fn query_installed_gpus(timeouts: &ToolTimeouts) -> Result<Option<String>, Error> {
    query_gpus(Path::new("nvidia-smi"), timeouts)
}

fn query_gpus(nvidia_smi: &Path, timeouts: &ToolTimeouts) -> Result<Option<String>, Error> {
    let mut command = std::process::Command::new(nvidia_smi);
    command.args(["--query-gpu=compute_cap", "--format=csv,noheader"]);
    let output = match run_bounded(&mut command, timeouts, ToolKind::Probe) {
        Ok(output) => output,
        Err(error @ Error::ToolTimedOut { .. }) => return Err(error),
        Err(_) => return Ok(None),
    };
    if !output.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8(output.stdout).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(archs: &[SmArch]) -> Vec<String> {
        archs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parses_every_spelling() {
        for (text, expected) in [
            ("sm_90", "sm_90"),
            ("90", "sm_90"),
            ("9.0", "sm_90"),
            ("compute_80", "sm_80"),
            ("sm_90a", "sm_90a"),
            ("12.0", "sm_120"),
            (" 86 ", "sm_86"),
        ] {
            assert_eq!(SmArch::parse(text).unwrap().to_string(), expected, "{text}");
        }
        for bad in [
            "", "sm_", "sm_9", "ninety", "9.10", "sm_90x", "0.5", "sm90", "sm_89a", "sm_999",
        ] {
            assert!(SmArch::parse(bad).is_err(), "{bad}");
        }
    }

    fn no_nvcc() -> Option<NvccArchs> {
        None
    }

    /// `.arch("sm90")` failed while `--arch sm90` worked, and `sm_89a`, `sm_090` reached nvcc:
    /// every setting now goes through the one grammar and names itself when it fails.
    #[test]
    fn a_bad_name_names_the_setting_and_suggests() {
        for (setting, inputs) in [
            (
                "OCCUPANCY_ARCHS",
                ArchInputs {
                    occupancy_archs_env: Some("sm_80,sm90".into()),
                    ..Default::default()
                },
            ),
            (
                "CUDA_COMPUTE_CAP",
                ArchInputs {
                    cuda_compute_cap_env: Some("09.0".into()),
                    ..Default::default()
                },
            ),
            (
                "archs in [package.metadata.occupancy]",
                ArchInputs {
                    metadata: Some(vec!["sm_89a".into()]),
                    ..Default::default()
                },
            ),
        ] {
            let error = resolve(inputs, || None, &no_nvcc).unwrap_err().to_string();
            assert!(error.contains(setting), "{error}");
            assert!(error.contains("did you mean"), "{error}");
            assert!(error.contains("sm_90/sm_90a"), "{error}");
        }
    }

    #[test]
    fn an_arch_newer_than_the_table_asks_the_installed_nvcc() {
        let nvcc = || {
            Some(NvccArchs {
                nvcc: "/usr/local/cuda-14/bin/nvcc".into(),
                version: "Build cuda_14.0".into(),
                listed: vec!["compute_130".into()],
            })
        };
        let inputs = ArchInputs {
            occupancy_archs_env: Some("sm_130".into()),
            ..Default::default()
        };
        let error = resolve(inputs, || None, &nvcc).unwrap_err().to_string();
        assert!(error.contains("OCCUPANCY_ARCHS"), "{error}");
        assert!(
            error.contains("/usr/local/cuda-14/bin/nvcc (Build cuda_14.0) knows compute_130"),
            "{error}"
        );
        assert!(error.contains("update occupancy"), "{error}");
        // A GPU the table lacks is an error too, not a silent fall back to the defaults.
        let error = resolve(ArchInputs::default(), || Some("13.0\n".into()), &nvcc).unwrap_err();
        assert!(error.to_string().contains("nvidia-smi"), "{error}");
    }

    #[test]
    fn lists_sort_and_dedup() {
        assert_eq!(
            names(&parse_list("90, 80;sm_90 8.0", "test", &no_nvcc).unwrap()),
            ["sm_80", "sm_90"]
        );
    }

    /// The names `resolve` picks and where they come from, with no nvcc to ask.
    fn resolved(
        inputs: ArchInputs<'_>,
        query_gpu: impl FnOnce() -> Option<String>,
    ) -> (Vec<String>, ArchSource) {
        let (archs, source) = resolve(inputs, query_gpu, &no_nvcc).unwrap();
        (names(&archs), source)
    }

    #[test]
    fn precedence_is_builder_env_metadata_gpu_default() {
        let builder = [SmArch::parse("sm_75").unwrap()];
        let all = || ArchInputs {
            builder: &[],
            occupancy_archs_env: Some("86".into()),
            cuda_compute_cap_env: Some("89".into()),
            metadata: Some(vec!["sm_70".into()]),
        };
        let with_builder = ArchInputs {
            builder: &builder,
            ..all()
        };
        assert_eq!(
            resolved(with_builder, || None),
            (vec!["sm_75".to_string()], ArchSource::Builder)
        );
        assert_eq!(
            resolved(all(), || None),
            (vec!["sm_86".to_string()], ArchSource::OccupancyArchsEnv)
        );
        let without_ours = ArchInputs {
            occupancy_archs_env: None,
            ..all()
        };
        assert_eq!(
            resolved(without_ours, || None),
            (vec!["sm_89".to_string()], ArchSource::CudaComputeCapEnv)
        );
        let metadata_only = ArchInputs {
            occupancy_archs_env: None,
            cuda_compute_cap_env: None,
            ..all()
        };
        assert_eq!(
            resolved(metadata_only, || panic!(
                "the GPU is not queried when metadata decides"
            )),
            (vec!["sm_70".to_string()], ArchSource::Metadata)
        );
        assert_eq!(
            resolved(ArchInputs::default(), || Some("9.0\n9.0\n".into())),
            (vec!["sm_90".to_string()], ArchSource::InstalledGpu)
        );
        assert_eq!(
            resolved(ArchInputs::default(), || None),
            (
                vec!["sm_80".to_string(), "sm_90".to_string()],
                ArchSource::Default
            )
        );
    }

    #[test]
    fn a_set_but_empty_list_is_an_error() {
        let error = resolve(
            ArchInputs {
                metadata: Some(vec![]),
                ..Default::default()
            },
            || None,
            &no_nvcc,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("names no architecture"),
            "{error}"
        );
        assert!(
            matches!(
                error,
                Error::EmptyArchList {
                    setting: "archs in [package.metadata.occupancy]"
                }
            ),
            "{error:?}"
        );
    }

    /// A driver in a bad state leaves nvidia-smi hanging: the build fails naming it instead of
    /// hanging too; a missing nvidia-smi is no GPU, as before.
    #[cfg(unix)]
    #[test]
    fn a_hung_nvidia_smi_fails_within_the_limit() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("occupancy-smi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let smi = dir.join("nvidia-smi");
        std::fs::write(&smi, "#!/bin/sh\nsleep 3600\n").unwrap();
        std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut env = crate::env::TrackedEnv::new();
        env.set("OCCUPANCY_TOOL_TIMEOUT", Some("0.3"));
        let timeouts = ToolTimeouts::from_env(&env).unwrap();
        let error = query_gpus(&smi, &timeouts).unwrap_err();
        assert!(
            matches!(&error, Error::ToolTimedOut { command, .. }
                if command.ends_with("nvidia-smi --query-gpu=compute_cap --format=csv,noheader")),
            "{error:?}"
        );
        assert!(
            query_gpus(&dir.join("missing"), &timeouts)
                .unwrap()
                .is_none(),
            "no nvidia-smi: no GPU"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
