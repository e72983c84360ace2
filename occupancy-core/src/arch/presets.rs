//! Product presets: an architecture plus the SM count of one product (H100 SXM5: sm_90, 132 SMs),
//! for grid-level figures (blocks per wave, minimum grid). `--gpu NAME` on the command line.

use super::{lookup, ArchFacts};
use serde::Serialize;

/// A product: an architecture plus its SM count, for grid-level figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuPreset {
    /// Preset name as typed after `--gpu`, e.g. `"h100"`.
    pub name: &'static str,
    /// Product name, e.g. `"H100 SXM5"`.
    pub product: &'static str,
    /// Canonical architecture name, e.g. `"sm_90"`.
    pub arch: &'static str,
    /// Streaming multiprocessors enabled on the product.
    pub sm_count: u32,
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

static PRESETS: &[GpuPreset] = &[
    GpuPreset {
        name: "gtx1080",
        product: "GeForce GTX 1080",
        arch: "sm_61",
        sm_count: 20,
    },
    GpuPreset {
        name: "p100",
        product: "Tesla P100 SXM2",
        arch: "sm_60",
        sm_count: 56,
    },
    GpuPreset {
        name: "v100",
        product: "Tesla V100 SXM2",
        arch: "sm_70",
        sm_count: 80,
    },
    GpuPreset {
        name: "t4",
        product: "Tesla T4",
        arch: "sm_75",
        sm_count: 40,
    },
    GpuPreset {
        name: "a100",
        product: "A100 SXM4",
        arch: "sm_80",
        sm_count: 108,
    },
    GpuPreset {
        name: "a10",
        product: "A10",
        arch: "sm_86",
        sm_count: 72,
    },
    GpuPreset {
        name: "rtx3090",
        product: "GeForce RTX 3090",
        arch: "sm_86",
        sm_count: 82,
    },
    GpuPreset {
        name: "orin",
        product: "Jetson AGX Orin 64GB",
        arch: "sm_87",
        sm_count: 16,
    },
    GpuPreset {
        name: "l4",
        product: "L4",
        arch: "sm_89",
        sm_count: 58,
    },
    GpuPreset {
        name: "l40s",
        product: "L40S",
        arch: "sm_89",
        sm_count: 142,
    },
    GpuPreset {
        name: "rtx4090",
        product: "GeForce RTX 4090",
        arch: "sm_89",
        sm_count: 128,
    },
    GpuPreset {
        name: "h100",
        product: "H100 SXM5",
        arch: "sm_90",
        sm_count: 132,
    },
    GpuPreset {
        name: "h100-pcie",
        product: "H100 PCIe",
        arch: "sm_90",
        sm_count: 114,
    },
    GpuPreset {
        name: "h200",
        product: "H200 SXM",
        arch: "sm_90",
        sm_count: 132,
    },
    GpuPreset {
        name: "b200",
        product: "B200",
        arch: "sm_100",
        sm_count: 148,
    },
    GpuPreset {
        name: "rtx5090",
        product: "GeForce RTX 5090",
        arch: "sm_120",
        sm_count: 170,
    },
    GpuPreset {
        name: "gb10",
        product: "GB10 (DGX Spark)",
        arch: "sm_121",
        sm_count: 48,
    },
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
        .find(|preset| normalize(preset.name) == wanted)
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
        assert_eq!(preset("rtx-4090").unwrap().arch, "sm_89");
        assert!(preset("h900").unwrap_err().to_string().contains("h100"));
    }
}
