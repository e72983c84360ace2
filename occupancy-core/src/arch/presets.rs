//! Product presets: an architecture plus the SM count of one product (H100 SXM5: sm_90, 132 SMs),
//! each with where the count comes from: grid-level figures (blocks per wave, minimum grid) for
//! `--gpu NAME` on the command line, and the GPUs a declaration's `gpus = [...]` names, on which
//! `grid_exceeds_resident` checks a persistent or cooperative grid (an H20 has 78 SMs where a
//! launcher written for an H100 assumes 132); and, where recorded, the SM groups a thread-block
//! cluster may span, for the clusters resident at once.

use super::{lookup, ArchFacts};
use serde::Serialize;

/// A product: an architecture plus its SM count, for grid-level figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuPreset {
    /// Preset name as typed after `--gpu`, e.g. `"h100"`.
    pub name: &'static str,
    /// Other names the preset answers to, e.g. `"h100-sxm"`.
    pub aliases: &'static [&'static str],
    /// Product name, e.g. `"H100 SXM5"`.
    pub product: &'static str,
    /// Canonical architecture name, e.g. `"sm_90"`.
    pub arch: &'static str,
    /// Streaming multiprocessors enabled on the product (the driver's `multiProcessorCount`).
    pub sm_count: u32,
    /// SMs per cluster group: the SMs one thread-block cluster may span (a GPC, as the driver's
    /// cluster scheduler sees it), largest first, summing to `sm_count`. Recorded from a chip of
    /// the product; `None` where not recorded, and cluster answers are then upper bounds
    /// ([`crate::calc::clusters`]).
    pub cluster_groups: Option<&'static [u32]>,
    /// Where the SM count (and the cluster groups) come from: a page with the figure (a
    /// datasheet, whitepaper or a device query of the product), or the CUDA cores it lists
    /// divided by the cores per SM.
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

static PRESETS: &[GpuPreset] = &[
    GpuPreset {
        name: "gtx1080",
        aliases: &[],
        product: "GeForce GTX 1080",
        arch: "sm_61",
        sm_count: 20,
        cluster_groups: None,
        source: "2560 CUDA cores (https://www.nvidia.com/es-la/geforce/products/10series/geforce-gtx-1080/) = 20 SMs of 128",
    },
    GpuPreset {
        name: "p100",
        aliases: &[],
        product: "Tesla P100 SXM2",
        arch: "sm_60",
        sm_count: 56,
        cluster_groups: None,
        source: "https://github.com/NVIDIA/nvbench/blob/main/examples/outputs/nvbench.example.exec_tag_sync.list.md (a GP100: Number of SMs: 56)",
    },
    GpuPreset {
        name: "v100",
        aliases: &[],
        product: "Tesla V100 SXM2",
        arch: "sm_70",
        sm_count: 80,
        cluster_groups: None,
        source: "https://github.com/NVIDIA/nvbench/blob/main/examples/outputs/nvbench.example.exec_tag_sync.list.md (a GV100: Number of SMs: 80)",
    },
    GpuPreset {
        name: "t4",
        aliases: &[],
        product: "Tesla T4",
        arch: "sm_75",
        sm_count: 40,
        cluster_groups: None,
        source: "https://github.com/sylvia-ymlin/cuda-kernels-from-scratch/blob/main/README.md (deviceQuery of a Tesla T4: 40 multiprocessors)",
    },
    GpuPreset {
        name: "a100",
        aliases: &[],
        product: "A100 SXM4",
        arch: "sm_80",
        sm_count: 108,
        cluster_groups: None,
        source: "https://developer.nvidia.com/blog/nvidia-ampere-architecture-in-depth/ (the A100 enables 108 of GA100's 128 SMs)",
    },
    GpuPreset {
        name: "a10",
        aliases: &[],
        product: "A10",
        arch: "sm_86",
        sm_count: 72,
        cluster_groups: None,
        source: "https://sysrqmts.com/ru/gpus/compare/nvidia-a10-pcie-vs-nvidia-quadro-rtx-4000 (A10 PCIe: 9216 shaders, SM count 72)",
    },
    GpuPreset {
        name: "a40",
        aliases: &[],
        product: "A40",
        arch: "sm_86",
        sm_count: 84,
        cluster_groups: None,
        source: "NVIDIA A40 datasheet as listed at https://www.ecer.com/corp/details-uuuedqa-p1bsay9-multi-display-setups-supported-by-48gb-gddr6-ecc-memory-nvidia-a40-gpu-and-vga-outputs.html (10,752 CUDA cores, 84 RT cores: 84 SMs of 128)",
    },
    GpuPreset {
        name: "rtx3090",
        aliases: &[],
        product: "GeForce RTX 3090",
        arch: "sm_86",
        sm_count: 82,
        cluster_groups: None,
        source: "https://github.com/Jumperkables/cuda-benchmarking/blob/main/00_deviceQuery/README.md (device query of an RTX 3090: 82 SMs)",
    },
    GpuPreset {
        name: "orin",
        aliases: &[],
        product: "Jetson AGX Orin 64GB",
        arch: "sm_87",
        sm_count: 16,
        cluster_groups: None,
        source: "https://github.com/JohnJeep/Learning-CS-Journey/blob/main/Architecture/Chip/NVIDIA.md (Orin: up to 2048 CUDA cores) = 16 SMs of 128",
    },
    GpuPreset {
        name: "l4",
        aliases: &[],
        product: "L4",
        arch: "sm_89",
        sm_count: 58,
        cluster_groups: None,
        source: "https://fpsbench.com/compare/gpu/nvidia-l4-vs-nvidia-tesla-m40 (7,424 shading units = 58 SMs of 128, what the driver reports; that page's `SM Count 60` is AD104's 7,680-core configuration)",
    },
    GpuPreset {
        name: "l40",
        aliases: &[],
        product: "L40",
        arch: "sm_89",
        sm_count: 142,
        cluster_groups: None,
        source: "https://www.mullet.se/product.html?product_id=355414 (NVIDIA's L40/L40S table: 18,176 CUDA cores, 142 RT cores: 142 SMs of 128)",
    },
    GpuPreset {
        name: "l40s",
        aliases: &[],
        product: "L40S",
        arch: "sm_89",
        sm_count: 142,
        cluster_groups: None,
        source: "https://m.reach.dog/shop/computizer/products/nvidia-l40s-48gb-gddr6-graphics-card-for-ai-and-graphics-performance (L40S: SM Count 142, 18176 shading units)",
    },
    GpuPreset {
        name: "rtx4090",
        aliases: &[],
        product: "GeForce RTX 4090",
        arch: "sm_89",
        sm_count: 128,
        cluster_groups: None,
        source: "https://github.com/thamada/nvidia-smi/blob/main/gls/RTX4090_deviceQuery.py (deviceQuery: (128) Multiprocessors)",
    },
    GpuPreset {
        name: "h100",
        aliases: &["h100-sxm", "h100-sxm5"],
        product: "H100 SXM5",
        arch: "sm_90",
        sm_count: 132,
        cluster_groups: Some(HOPPER_132_CLUSTER_GROUPS),
        source: "https://github.com/thamada/nvidia-smi/blob/main/nvsim/H100SXMx8_deviceQuery.py (deviceQuery of an H100 80GB HBM3: (132) Multiprocessors); https://glennklockwood.com/garden/processors/h100 (H100 SXM5: 132 SMs); cluster groups recorded on an H100 80GB HBM3 (tests/fixtures/gpu/clusters/h100-sxm)",
    },
    GpuPreset {
        name: "h100-pcie",
        aliases: &[],
        product: "H100 PCIe",
        arch: "sm_90",
        sm_count: 114,
        cluster_groups: None,
        source: "https://docs.nvidia.com/launchpad/ai/h100-mig/latest/h100-mig-gpu.html (H100 PCIe: 114 SMs per GPU)",
    },
    GpuPreset {
        name: "h200",
        aliases: &[],
        product: "H200 SXM",
        arch: "sm_90",
        sm_count: 132,
        cluster_groups: Some(HOPPER_132_CLUSTER_GROUPS),
        source: "https://glennklockwood.com/garden/processors/h100 (H200: the H100 SXM5 GPU, 132 SMs, with HBM3e); cluster groups recorded on an H200 (tests/fixtures/gpu/clusters/h200)",
    },
    GpuPreset {
        name: "gh200",
        aliases: &[],
        product: "GH200 (its H100)",
        arch: "sm_90",
        sm_count: 132,
        cluster_groups: None,
        source: "https://github.com/mredenti/PowerCapping/blob/main/configuration/OpenCL_benchmark.md (NVIDIA GH200 480GB: 132 compute units)",
    },
    GpuPreset {
        name: "h800",
        aliases: &[],
        product: "H800 SXM",
        arch: "sm_90",
        sm_count: 132,
        cluster_groups: None,
        source: "https://arxiv.org/abs/2412.19437 (DeepSeek-V3 report, trained on H800s: 20 of the H800's 132 SMs serve communication)",
    },
    GpuPreset {
        name: "h20",
        aliases: &[],
        product: "H20",
        arch: "sm_90",
        sm_count: 78,
        cluster_groups: None,
        source: "https://zangshuxian.com/new/674733024499207168 (Geekbench 6 reports the H20 with 78 SMs of GH100's 144; the launcher bug FlashMoE#3 assumed 132)",
    },
    GpuPreset {
        name: "b200",
        aliases: &[],
        product: "B200",
        arch: "sm_100",
        sm_count: 148,
        cluster_groups: None,
        source: "https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut (74 SMs enabled per die, 148 per GPU)",
    },
    GpuPreset {
        name: "rtx5090",
        aliases: &[],
        product: "GeForce RTX 5090",
        arch: "sm_120",
        sm_count: 170,
        cluster_groups: None,
        source: "https://pocketmags.com/linux-format-magazine/may-2025/articles/nvidia-geforce-rtx-5090 (GB202 in the RTX 5090: 170 SMs, 21,760 shaders)",
    },
    GpuPreset {
        name: "rtx-pro-6000",
        aliases: &[],
        product: "RTX PRO 6000 Blackwell",
        arch: "sm_120",
        sm_count: 188,
        cluster_groups: None,
        source: "https://store.sourcecode.com/en-us/bg-bucket-compare/125/9820 (RTX PRO 6000 Blackwell: 24,064 CUDA cores, 188 RT cores: 188 SMs of 128)",
    },
    GpuPreset {
        name: "gb10",
        aliases: &[],
        product: "GB10 (DGX Spark)",
        arch: "sm_121",
        sm_count: 48,
        cluster_groups: None,
        source: "https://satgeo.blog/2025/12/24/nvidia-dgx-sparks-gb10-architecture (GB10's Blackwell GPU: 6,144 CUDA cores = 48 SMs of 128)",
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
        assert_eq!(preset("h20").unwrap().sm_count, 78);
        assert_eq!(preset("RTX PRO 6000").unwrap().sm_count, 188);
        assert!(preset("h900").unwrap_err().to_string().contains("h100"));
    }

    /// Every product says where its SM count comes from, and names one product: no two names
    /// are the same once `-`, `_`, spaces and case are ignored (how `preset` compares them).
    #[test]
    fn every_preset_has_a_source_and_a_name_of_its_own() {
        for (index, gpu) in presets().iter().enumerate() {
            assert!(
                gpu.source.contains("https://"),
                "{}: {}",
                gpu.name,
                gpu.source
            );
            assert!(
                gpu.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                gpu.name
            );
            assert_eq!(preset(gpu.name).unwrap(), gpu);
            for other in &presets()[index + 1..] {
                assert_ne!(
                    gpu.name.replace('-', ""),
                    other.name.replace('-', ""),
                    "two presets answer to one name"
                );
            }
        }
    }
}
