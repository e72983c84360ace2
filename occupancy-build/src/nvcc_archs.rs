//! What the installed nvcc knows about architectures: `nvcc --list-gpu-arch`, read only when a
//! name is unknown to the table, so that the error can say exactly whether the tool is behind the
//! compiler (a newer architecture: update occupancy) or the name is simply wrong.

use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::arch::UnknownArch;

use crate::env::TrackedEnv;
use crate::process::{run_bounded, ToolKind, ToolTimeouts};
use crate::toolchain::locate_nvcc;

/// An nvcc and the virtual architectures it lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvccArchs {
    pub nvcc: PathBuf,
    /// nvcc's last `--version` line, e.g. `Build cuda_13.5.r13.5/compiler.39125733_0`.
    pub version: String,
    /// `compute_75`, `compute_80`, ... as listed.
    pub listed: Vec<String>,
}

impl NvccArchs {
    /// Runs `nvcc --version` and `nvcc --list-gpu-arch`, each within the probes' limit; `None`
    /// when either fails or does not answer in time.
    pub fn of(nvcc: &Path, timeouts: &ToolTimeouts) -> Option<NvccArchs> {
        let stdout = |flag: &str| -> Option<String> {
            let mut command = Command::new(nvcc);
            command.arg(flag);
            let output = run_bounded(&mut command, timeouts, ToolKind::Probe).ok()?;
            output
                .status
                .success()
                .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let version = stdout("--version")?.lines().last()?.trim().to_string();
        let listed = stdout("--list-gpu-arch")?
            .split_whitespace()
            .map(str::to_string)
            .collect();
        Some(NvccArchs {
            nvcc: nvcc.to_path_buf(),
            version,
            listed,
        })
    }

    /// The nvcc a build would use (NVCC, CUDA_HOME, CUDA_PATH, PATH), if there is one.
    pub fn installed(env: &TrackedEnv, timeouts: &ToolTimeouts) -> Option<NvccArchs> {
        NvccArchs::of(&locate_nvcc(env).ok()?, timeouts)
    }

    fn lists(&self, number: u32) -> bool {
        self.listed
            .iter()
            .any(|name| name.strip_prefix("compute_") == Some(number.to_string().as_str()))
    }
}

/// The whole story of an unknown architecture name: the table's error, and when the name is
/// well-formed, whether the installed nvcc knows it (then occupancy is behind: update it).
pub fn explain_unknown(error: &UnknownArch, nvcc: Option<&NvccArchs>) -> String {
    let (Some(number), Some(nvcc)) = (error.newer_than_table, nvcc) else {
        return error.to_string();
    };
    if nvcc.lists(number) {
        format!(
            "`{}`: {} ({}) knows compute_{number}, but occupancy {} does not; update occupancy \
             (`cargo update -p occupancy-build`, and `cargo install cargo-occupancy` for the CLI) \
             to check this architecture, or pick a known one; known: {}",
            error.name.trim(),
            nvcc.nvcc.display(),
            nvcc.version,
            env!("CARGO_PKG_VERSION"),
            occupancy_core::arch::known_names()
        )
    } else {
        format!(
            "{error}; {} ({}) does not list compute_{number} either",
            nvcc.nvcc.display(),
            nvcc.version
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::arch::Arch;

    fn listing(listed: &[&str]) -> NvccArchs {
        NvccArchs {
            nvcc: PathBuf::from("/opt/cuda-14/bin/nvcc"),
            version: "Build cuda_14.0.r14.0/compiler.1_0".into(),
            listed: listed.iter().map(|name| name.to_string()).collect(),
        }
    }

    #[test]
    fn an_arch_the_installed_nvcc_knows_says_occupancy_needs_an_update() {
        let error = Arch::parse("sm_130").unwrap_err();
        let message = explain_unknown(&error, Some(&listing(&["compute_120", "compute_130"])));
        assert!(message.contains("/opt/cuda-14/bin/nvcc"), "{message}");
        assert!(message.contains("cuda_14.0"), "{message}");
        assert!(
            message.contains("knows compute_130, but occupancy"),
            "{message}"
        );
        assert!(message.contains("update occupancy"), "{message}");
    }

    #[test]
    fn an_arch_nobody_knows_says_so() {
        let error = Arch::parse("sm_130").unwrap_err();
        let message = explain_unknown(&error, Some(&listing(&["compute_120"])));
        assert!(
            message.contains("does not list compute_130 either"),
            "{message}"
        );
        let typo = Arch::parse("sm90").unwrap_err();
        assert_eq!(
            explain_unknown(&typo, Some(&listing(&["compute_90"]))),
            typo.to_string()
        );
        assert_eq!(explain_unknown(&error, None), error.to_string());
    }

    #[test]
    fn reads_a_real_listing_from_a_fake_nvcc() {
        let dir = std::env::temp_dir().join(format!("occupancy-nvcc-archs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let nvcc = dir.join("nvcc");
        std::fs::write(
            &nvcc,
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Build cuda_14.0'; else printf 'compute_90\\ncompute_130\\n'; fi\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let listing = NvccArchs::of(&nvcc, &ToolTimeouts::default()).unwrap();
        assert_eq!(listing.version, "Build cuda_14.0");
        assert_eq!(listing.listed, ["compute_90", "compute_130"]);
        assert!(listing.lists(130) && !listing.lists(13));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
