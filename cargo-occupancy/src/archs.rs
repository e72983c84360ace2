//! Architecture names, wherever the CLI reads one (`--arch`, `--gpu`, a batch line's `arch`, a
//! log's record): the one grammar of [`Arch`], and the same message everywhere when the table
//! lacks a name the installed nvcc knows.

use std::cell::OnceCell;

use occupancy_build::cli::{explain_unknown, NvccArchs, ToolTimeouts};
use occupancy_build::TrackedEnv;
use occupancy_core::arch::{self, Arch, ArchFacts, GpuPreset};

use crate::error::CliError;

/// `--arch` and `--gpu`, the target of `calc` and `sweep`, declared once
/// ([`ArchNames::resolve_target`] reads them).
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// Architecture: sm_90, sm_90a, compute_90, 90, 9.0, sm_100f, ...
    #[arg(long)]
    pub arch: Option<String>,
    /// GPU product preset (h100, a100, l40s, rtx4090, b200, rtx5090, ...): arch plus SM count.
    #[arg(long)]
    pub gpu: Option<String>,
}

/// Reads architecture names for one run. A well-formed name the table lacks is checked against
/// the installed nvcc, so that the message says whether occupancy is behind the compiler; nvcc
/// is asked once per run (a batch of many lines naming a newer architecture runs it twice, not
/// twice per line), and only then.
#[derive(Debug)]
pub struct ArchNames {
    /// Where nvcc is looked for (`NVCC`, `CUDA_HOME`, `PATH`, ...), as a build looks.
    env: TrackedEnv,
    timeouts: ToolTimeouts,
    installed: OnceCell<Option<NvccArchs>>,
}

impl ArchNames {
    /// Names read with nvcc looked for in `env`, run within `timeouts`.
    pub fn new(env: TrackedEnv, timeouts: ToolTimeouts) -> ArchNames {
        ArchNames {
            env,
            timeouts,
            installed: OnceCell::new(),
        }
    }

    /// Parses a name in the one grammar of [`Arch`], with the whole story when the table lacks
    /// it.
    pub fn parse(&self, text: &str) -> Result<Arch, String> {
        Arch::parse(text).map_err(|error| {
            let nvcc = error.newer_than_table.and_then(|_| self.installed());
            explain_unknown(&error, nvcc)
        })
    }

    /// The facts of an architecture named on the command line or in an input, with
    /// [`ArchNames::parse`]'s message when the table lacks it: every command's `--arch` goes
    /// through here, so that each says the same when the installed nvcc knows an architecture
    /// occupancy does not.
    pub fn lookup(&self, text: &str) -> Result<&'static ArchFacts, String> {
        self.parse(text).map(Arch::facts)
    }

    /// Resolves `--arch` and `--gpu`: at least one; when both, they must agree.
    pub fn resolve_target(
        &self,
        arch_name: Option<&str>,
        gpu_name: Option<&str>,
    ) -> Result<Target, CliError> {
        let gpu = gpu_name
            .map(arch::preset)
            .transpose()
            .map_err(|error| CliError::usage(error.to_string()))?;
        let arch = match (arch_name, gpu) {
            (Some(name), _) => self.lookup(name).map_err(CliError::Usage)?,
            (None, Some(gpu)) => gpu.arch_facts(),
            (None, None) => {
                return Err(CliError::usage(
                    "pass --arch (e.g. --arch sm_90) or --gpu (e.g. --gpu h100)",
                ))
            }
        };
        if let Some(gpu) = gpu {
            if gpu.arch != arch.name {
                return Err(CliError::Usage(format!(
                    "--gpu {} is {}, but --arch names {}; drop one of them",
                    gpu.name, gpu.arch, arch.name
                )));
            }
        }
        Ok(Target { arch, gpu })
    }

    /// The installed nvcc's listing, asked the first time it is needed.
    fn installed(&self) -> Option<&NvccArchs> {
        self.installed
            .get_or_init(|| NvccArchs::installed(&self.env, &self.timeouts))
            .as_ref()
    }
}

/// The architecture a command targets, and the product when `--gpu` named one.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub arch: &'static ArchFacts,
    pub gpu: Option<&'static GpuPreset>,
}
