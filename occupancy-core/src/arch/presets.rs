//! Product presets: an architecture plus the SM count of one product (H100 SXM5: sm_90, 132 SMs),
//! for grid-level figures (blocks per wave, minimum grid), and where recorded, the SM groups a
//! thread-block cluster may span (active clusters). `--gpu NAME` on the command line.

use super::{lookup, ArchFacts};
use serde::Serialize;

/// A product: an architecture plus its SM count, for grid-level figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuPreset {
    /// Preset name as typed after `--gpu`, e.g. `"h100"`.
    pub name: &'static str,
    /// Other names `--gpu` accepts for it (`h100-sxm`).
    pub aliases: &'static [&'static str],
    /// Product name, e.g. `"H100 SXM5"`.
    pub product: &'static str,
    /// Canonical architecture name, e.g. `"sm_90"`.
    pub arch: &'static str,
    /// Streaming multiprocessors enabled on the product.
    pub sm_count: u32,
    /// SMs per cluster group: the SMs one thread-block cluster may span (a GPC, as the driver's
    /// cluster scheduler sees it), largest first, summing to `sm_count`. Recorded from a chip of
    /// the product; `None` where not recorded, and cluster answers are then upper bounds
    /// ([`crate::calc::clusters`]).
    pub cluster_groups: Option<&'static [u32]>,
    /// Where the SM count and the cluster groups come from.
    pub source: &'static str,
}

impl GpuPreset {
    /// The architecture row of this product.
    pub fn arch_facts(&self) -> &'static ArchFacts {
        lookup(self.arch).expect("every preset names a known architecture")
    }
}

/// Preset name that matches no known product.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU preset `{name}`; known: {known}", known = known_presets())]
#[non_exhaustive]
pub struct UnknownPreset {
    pub name: String,
}

/// H100 SXM's and H200's cluster groups, as the driver's cluster scheduler sees them on the two
/// chips recorded (`scripts/gpu-cluster-occupancy.sh`; the same on both): seven GPCs of 18, 18 and
/// 16 SMs, one of 8, and four TPCs (2 SMs) that no cluster larger than 2 ever spanned.
const HOPPER_132_CLUSTER_GROUPS: &[u32] = &[18, 18, 16, 16, 16, 16, 16, 8, 2, 2, 2, 2];

/// A preset with no aliases and no recorded cluster groups.
const fn gpu(
    name: &'static str,
    product: &'static str,
    arch: &'static str,
    sm_count: u32,
    source: &'static str,
) -> GpuPreset {
    GpuPreset {
        name,
        aliases: &[],
        product,
        arch,
        sm_count,
        cluster_groups: None,
        source,
    }
}

static PRESETS: &[GpuPreset] = &[
    gpu("gtx1080", "GeForce GTX 1080", "sm_61", 20, "20 SMs: NVIDIA GeForce GTX 1080 whitepaper (GP104)"),
    gpu("p100", "Tesla P100 SXM2", "sm_60", 56, "56 SMs: NVIDIA Tesla P100 whitepaper"),
    gpu("v100", "Tesla V100 SXM2", "sm_70", 80, "80 SMs: NVIDIA Tesla V100 whitepaper"),
    gpu("t4", "Tesla T4", "sm_75", 40, "40 SMs: NVIDIA Turing whitepaper (2,560 CUDA cores / 64)"),
    gpu("a100", "A100 SXM4", "sm_80", 108, "108 SMs: NVIDIA A100 whitepaper"),
    gpu("a10", "A10", "sm_86", 72, "72 SMs: NVIDIA A10 datasheet (9,216 CUDA cores / 128)"),
    gpu("rtx3090", "GeForce RTX 3090", "sm_86", 82, "82 SMs: NVIDIA Ampere GA102 whitepaper"),
    gpu("orin", "Jetson AGX Orin 64GB", "sm_87", 16, "16 SMs: Jetson AGX Orin datasheet (2,048 CUDA cores / 128)"),
    gpu("l4", "L4", "sm_89", 58, "58 SMs: NVIDIA L4 datasheet (7,424 CUDA cores / 128)"),
    gpu("l40s", "L40S", "sm_89", 142, "142 SMs: NVIDIA L40S datasheet (18,176 CUDA cores / 128)"),
    gpu("rtx4090", "GeForce RTX 4090", "sm_89", 128, "128 SMs: NVIDIA Ada GPU architecture whitepaper"),
    GpuPreset {
        aliases: &["h100-sxm", "h100-sxm5"],
        cluster_groups: Some(HOPPER_132_CLUSTER_GROUPS),
        ..gpu(
            "h100",
            "H100 SXM5",
            "sm_90",
            132,
            "132 SMs: NVIDIA Hopper whitepaper; the driver of an H100 80GB HBM3 (580.159.04) reports 132; cluster groups recorded on it (tests/fixtures/gpu/clusters/h100-sxm)",
        )
    },
    gpu("h100-pcie", "H100 PCIe", "sm_90", 114, "114 SMs: NVIDIA Hopper whitepaper; cluster groups not recorded"),
    GpuPreset {
        cluster_groups: Some(HOPPER_132_CLUSTER_GROUPS),
        ..gpu(
            "h200",
            "H200 SXM",
            "sm_90",
            132,
            "132 SMs: the driver of an H200 (580.159.04) reports 132; cluster groups recorded on it (tests/fixtures/gpu/clusters/h200)",
        )
    },
    gpu("b200", "B200", "sm_100", 148, "148 SMs as B200 devices report them (public device queries; not checked here); cluster groups not recorded"),
    gpu("rtx5090", "GeForce RTX 5090", "sm_120", 170, "170 SMs: NVIDIA RTX Blackwell GPU architecture whitepaper (21,760 CUDA cores / 128); cluster groups not recorded"),
    gpu("gb10", "GB10 (DGX Spark)", "sm_121", 48, "48 SMs: DGX Spark specifications (6,144 CUDA cores / 128); cluster groups not recorded"),
];

/// Every product preset.
pub fn presets() -> &'static [GpuPreset] {
    PRESETS
}

/// Comma-separated preset names, for error messages.
pub(crate) fn known_presets() -> String {
    PRESETS
        .iter()
        .map(|preset| preset.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Finds a product preset by name (case-insensitive; `-`, `_` and spaces ignored).
pub fn preset(name: &str) -> Result<&'static GpuPreset, UnknownPreset> {
    let normalize = |text: &str| -> String {
        text.chars()
            .filter(|c| !matches!(c, '-' | '_' | ' '))
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let wanted = normalize(name);
    PRESETS
        .iter()
        .find(|preset| {
            normalize(preset.name) == wanted
                || preset
                    .aliases
                    .iter()
                    .any(|alias| normalize(alias) == wanted)
        })
        .ok_or_else(|| UnknownPreset {
            name: name.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_resolve() {
        for preset in presets() {
            assert!(preset.sm_count > 0);
            let _ = preset.arch_facts();
        }
        assert_eq!(preset("H100").unwrap().sm_count, 132);
        assert_eq!(preset("h100-sxm").unwrap().name, "h100");
        for preset in presets() {
            if let Some(groups) = preset.cluster_groups {
                assert_eq!(
                    groups.iter().sum::<u32>(),
                    preset.sm_count,
                    "{}",
                    preset.name
                );
                assert!(
                    groups.windows(2).all(|pair| pair[0] >= pair[1]),
                    "{}",
                    preset.name
                );
            }
        }
        assert_eq!(preset("rtx-4090").unwrap().arch, "sm_89");
        assert!(preset("h900").unwrap_err().to_string().contains("h100"));
    }
}
