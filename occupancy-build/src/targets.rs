//! Which GPU architectures a build compiles for, and where that list came from.
//!
//! Order of precedence (first that gives a list wins): the builder's `.arch()`, `OCCUPANCY_ARCHS`,
//! `CUDA_COMPUTE_CAP` (the variable candle and bindgen_cuda read), `archs` in
//! `[package.metadata.occupancy]` / `[workspace.metadata.occupancy]`, the GPUs `nvidia-smi` reports,
//! then [`DEFAULT_ARCHS`]. This module parses and orders; it runs `nvidia-smi` only through the
//! closure its caller passes.

use std::fmt;

use crate::Error;

/// The list used when nothing else names an architecture: Ampere (A100) and Hopper (H100), the
/// two data-centre generations most CUDA crates target today.
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_90"];

/// One real GPU architecture, `sm_90` or `sm_90a`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct SmArch {
    /// Major * 10 + minor: 90 for sm_90, 120 for sm_120.
    pub number: u32,
    /// Architecture-specific suffix (`a` or `f`), empty for the portable target.
    pub suffix: String,
}

impl SmArch {
    /// Parses `sm_90`, `sm_90a`, `compute_90`, `90`, `9.0`.
    pub fn parse(text: &str) -> Result<SmArch, Error> {
        let trimmed = text.trim();
        let bad = || {
            Error::Config {
            message: format!(
                "`{trimmed}` is not a GPU architecture; write `sm_90`, `90` or `9.0` (several: `80,90`)"
            ),
        }
        };
        let body = trimmed
            .strip_prefix("sm_")
            .or_else(|| trimmed.strip_prefix("compute_"))
            .unwrap_or(trimmed);
        if let Some((major, minor)) = body.split_once('.') {
            let major: u32 = major.parse().map_err(|_| bad())?;
            let minor: u32 = minor.parse().map_err(|_| bad())?;
            if minor > 9 || major == 0 {
                return Err(bad());
            }
            return Ok(SmArch {
                number: major * 10 + minor,
                suffix: String::new(),
            });
        }
        let digits_end = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        let (digits, suffix) = body.split_at(digits_end);
        let number: u32 = digits.parse().map_err(|_| bad())?;
        if !(10..=999).contains(&number) || !matches!(suffix, "" | "a" | "f") {
            return Err(bad());
        }
        Ok(SmArch {
            number,
            suffix: suffix.to_string(),
        })
    }

    /// Parses a comma or space separated list; duplicates are removed, order is sorted.
    pub fn parse_list(text: &str) -> Result<Vec<SmArch>, Error> {
        let mut archs = Vec::new();
        for item in text.split(|c: char| c == ',' || c == ';' || c.is_whitespace()) {
            if !item.is_empty() {
                archs.push(SmArch::parse(item)?);
            }
        }
        archs.sort();
        archs.dedup();
        Ok(archs)
    }

    /// `compute_90`: the virtual architecture nvcc generates PTX for.
    pub fn virtual_name(&self) -> String {
        format!("compute_{}{}", self.number, self.suffix)
    }
}

impl fmt::Display for SmArch {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "sm_{}{}", self.number, self.suffix)
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
    pub builder: &'a [SmArch],
    pub occupancy_archs_env: Option<String>,
    pub cuda_compute_cap_env: Option<String>,
    pub metadata: Option<Vec<String>>,
}

/// Resolves the target list; `query_gpu` is called only when nothing earlier decided.
pub fn resolve(
    inputs: ArchInputs<'_>,
    query_gpu: impl FnOnce() -> Option<String>,
) -> Result<(Vec<SmArch>, ArchSource), Error> {
    if !inputs.builder.is_empty() {
        let mut archs = inputs.builder.to_vec();
        archs.sort();
        archs.dedup();
        return Ok((archs, ArchSource::Builder));
    }
    if let Some(text) = inputs.occupancy_archs_env {
        return non_empty(
            SmArch::parse_list(&text)?,
            ArchSource::OccupancyArchsEnv,
            "OCCUPANCY_ARCHS",
        );
    }
    if let Some(text) = inputs.cuda_compute_cap_env {
        return non_empty(
            SmArch::parse_list(&text)?,
            ArchSource::CudaComputeCapEnv,
            "CUDA_COMPUTE_CAP",
        );
    }
    if let Some(list) = inputs.metadata {
        return non_empty(
            SmArch::parse_list(&list.join(","))?,
            ArchSource::Metadata,
            "archs in [package.metadata.occupancy]",
        );
    }
    if let Some(text) = query_gpu() {
        if let Ok(archs) = SmArch::parse_list(&text) {
            if !archs.is_empty() {
                return Ok((archs, ArchSource::InstalledGpu));
            }
        }
    }
    let archs = DEFAULT_ARCHS
        .iter()
        .map(|name| SmArch::parse(name))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((archs, ArchSource::Default))
}

fn non_empty(
    archs: Vec<SmArch>,
    source: ArchSource,
    what: &str,
) -> Result<(Vec<SmArch>, ArchSource), Error> {
    if archs.is_empty() {
        return Err(Error::Config {
            message: format!(
                "{what} is set but names no architecture; write e.g. `sm_80,sm_90` or remove it"
            ),
        });
    }
    Ok((archs, source))
}

/// Runs `nvidia-smi --query-gpu=compute_cap --format=csv,noheader` and returns its output
/// (`9.0` per GPU), or `None` when there is no driver or no GPU.
pub fn query_installed_gpus() -> Option<String> {
    let output = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
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
        for bad in ["", "sm_", "sm_9", "ninety", "9.10", "sm_90x", "0.5"] {
            assert!(SmArch::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lists_sort_and_dedup() {
        assert_eq!(
            names(&SmArch::parse_list("90, 80;sm_90 8.0").unwrap()),
            ["sm_80", "sm_90"]
        );
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
        let (archs, source) = resolve(
            ArchInputs {
                builder: &builder,
                ..all()
            },
            || None,
        )
        .unwrap();
        assert_eq!(
            (names(&archs), source),
            (vec!["sm_75".to_string()], ArchSource::Builder)
        );
        let (archs, source) = resolve(all(), || None).unwrap();
        assert_eq!(
            (names(&archs), source),
            (vec!["sm_86".to_string()], ArchSource::OccupancyArchsEnv)
        );
        let (archs, source) = resolve(
            ArchInputs {
                occupancy_archs_env: None,
                ..all()
            },
            || None,
        )
        .unwrap();
        assert_eq!(
            (names(&archs), source),
            (vec!["sm_89".to_string()], ArchSource::CudaComputeCapEnv)
        );
        let (archs, source) = resolve(
            ArchInputs {
                occupancy_archs_env: None,
                cuda_compute_cap_env: None,
                ..all()
            },
            || panic!("the GPU is not queried when metadata decides"),
        )
        .unwrap();
        assert_eq!(
            (names(&archs), source),
            (vec!["sm_70".to_string()], ArchSource::Metadata)
        );
        let (archs, source) = resolve(ArchInputs::default(), || Some("9.0\n9.0\n".into())).unwrap();
        assert_eq!(
            (names(&archs), source),
            (vec!["sm_90".to_string()], ArchSource::InstalledGpu)
        );
        let (archs, source) = resolve(ArchInputs::default(), || None).unwrap();
        assert_eq!(
            (names(&archs), source),
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
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("names no architecture"),
            "{error}"
        );
    }
}
