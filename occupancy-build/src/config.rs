//! `[package.metadata.occupancy]` and `[workspace.metadata.occupancy]`: the crate's settings.
//!
//! Package keys override workspace keys; lint tables merge (package wins per lint). Environment
//! variables override both (see `docs/configuration.md`). This module reads Cargo.toml files and
//! validates keys; it never guesses a misspelled key, it names it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::Error;

/// The settings from Cargo.toml metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// `archs = ["sm_80", "sm_90"]`.
    pub archs: Option<Vec<String>>,
    /// `jit_archs = ["sm_120"]`: GPUs the shipped PTX must also run on, checked on what ptxas
    /// (the driver's JIT) makes of that PTX there.
    pub jit_archs: Option<Vec<String>>,
    /// `ptx_per_arch = true`: one PTX per target arch (see `Build::ptx_per_arch`).
    pub ptx_per_arch: Option<bool>,
    /// `[...metadata.occupancy.lints] spills = "warn"`: lint name to level word.
    pub lints: BTreeMap<String, String>,
    /// `[...metadata.occupancy.kernels.<name>.lints]`: per-kernel levels.
    pub kernel_lints: BTreeMap<String, BTreeMap<String, String>>,
    /// The `<name>`s of `[package.metadata.occupancy.kernels.<name>]` (not the workspace's, whose
    /// kernels may live in other members): each must name a kernel of this package.
    pub package_kernel_tables: Vec<String>,
    /// `baseline = "occupancy.lock"` (relative to the package root).
    pub baseline: Option<PathBuf>,
    /// `reports = ["json"]`.
    pub reports: Option<Vec<String>>,
    /// `block = 1024`: threads per block at which undeclared kernels are checked.
    pub block_threads: Option<u32>,
    /// `unchecked = "why"`: the attribute's opt-out for crates without an occupancy build
    /// (read by the macro; a crate whose build runs is checked anyway).
    pub unchecked: Option<String>,
    /// `require_reasons = false`: allow `allow(...)`/`expect(...)` of deny-by-default lints
    /// without a `reason` (default: required).
    pub require_reasons: Option<bool>,
    /// Files read (for `rerun-if-changed`).
    pub files_read: Vec<PathBuf>,
}

const KNOWN_KEYS: &[&str] = &[
    "archs",
    "block",
    "jit_archs",
    "ptx_per_arch",
    "lints",
    "kernels",
    "baseline",
    "reports",
    "unchecked",
    "require_reasons",
];

/// Reads the package manifest at `manifest_dir/Cargo.toml` and its workspace root's, if any.
pub fn load(manifest_dir: &Path) -> Result<Metadata, Error> {
    let manifest_path = manifest_dir.join("Cargo.toml");
    let package = read_toml(&manifest_path)?;
    let mut metadata = Metadata {
        files_read: vec![manifest_path.clone()],
        ..Metadata::default()
    };
    // The workspace root: this manifest if it has [workspace], else the nearest ancestor that does.
    let workspace_table = if package.get("workspace").is_some() {
        package.get("workspace").cloned()
    } else {
        let mut found = None;
        for ancestor in manifest_dir.ancestors().skip(1) {
            let candidate = ancestor.join("Cargo.toml");
            if candidate.is_file() {
                let parsed = read_toml(&candidate)?;
                if let Some(workspace) = parsed.get("workspace") {
                    metadata.files_read.push(candidate);
                    found = Some(workspace.clone());
                    break;
                }
            }
        }
        found
    };
    if let Some(table) = workspace_table
        .as_ref()
        .and_then(|workspace| workspace.get("metadata"))
        .and_then(|metadata| metadata.get("occupancy"))
    {
        apply(&mut metadata, table, "[workspace.metadata.occupancy]")?;
    }
    if let Some(table) = package
        .get("package")
        .and_then(|p| p.get("metadata"))
        .and_then(|m| m.get("occupancy"))
    {
        apply(&mut metadata, table, "[package.metadata.occupancy]")?;
    }
    Ok(metadata)
}

fn read_toml(path: &Path) -> Result<toml::Value, Error> {
    let text = std::fs::read_to_string(path).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })?;
    text.parse::<toml::Value>().map_err(|error| Error::Config {
        message: format!("{} is not valid TOML: {error}", path.display()),
    })
}

fn apply(metadata: &mut Metadata, table: &toml::Value, section: &str) -> Result<(), Error> {
    let table = table.as_table().ok_or_else(|| Error::Config {
        message: format!("{section} must be a table"),
    })?;
    for (key, value) in table {
        let wrong = |expected: &str| Error::Config {
            message: format!("{section} `{key}` must be {expected}"),
        };
        match key.as_str() {
            "archs" => {
                metadata.archs = Some(
                    string_list(value)
                        .ok_or_else(|| wrong("a list of strings, e.g. [\"sm_80\", \"sm_90\"]"))?,
                )
            }
            "jit_archs" => {
                metadata.jit_archs = Some(
                    string_list(value)
                        .ok_or_else(|| wrong("a list of strings, e.g. [\"sm_120\"]"))?,
                )
            }
            "ptx_per_arch" => {
                metadata.ptx_per_arch = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?)
            }
            "reports" => {
                let formats = string_list(value)
                    .ok_or_else(|| wrong("a list of strings, e.g. [\"json\"]"))?;
                if let Some(unknown) = formats.iter().find(|format| format.as_str() != "json") {
                    return Err(Error::Config {
                        message: format!(
                            "{section} `reports`: unknown format {unknown:?} (supported: \"json\")"
                        ),
                    });
                }
                metadata.reports = Some(formats)
            }
            "block" => {
                let threads = value
                    .as_integer()
                    .filter(|threads| {
                        (1..=i64::from(occupancy_core::spec::MAX_THREADS_PER_BLOCK))
                            .contains(threads)
                    })
                    .ok_or_else(|| {
                        wrong("threads per block, an integer from 1 to 1024, e.g. `block = 1024`")
                    })?;
                metadata.block_threads = Some(threads as u32);
            }
            "baseline" => {
                metadata.baseline = Some(PathBuf::from(
                    value.as_str().ok_or_else(|| wrong("a path string"))?,
                ))
            }
            "require_reasons" => {
                metadata.require_reasons =
                    Some(value.as_bool().ok_or_else(|| wrong("true or false"))?)
            }
            "unchecked" => {
                metadata.unchecked = Some(
                    value
                        .as_str()
                        .filter(|reason| !reason.trim().is_empty())
                        .ok_or_else(|| {
                            wrong(
                                "a non-empty string saying why the crate's kernels are not checked",
                            )
                        })?
                        .to_string(),
                )
            }
            "lints" => {
                for (lint, level) in level_table(value, section, "lints")? {
                    metadata.lints.insert(lint, level);
                }
            }
            "kernels" => {
                let kernels = value
                    .as_table()
                    .ok_or_else(|| wrong("a table of kernel names"))?;
                for (kernel, settings) in kernels {
                    if section.starts_with("[package") {
                        metadata.package_kernel_tables.push(kernel.clone());
                    }
                    let sub = format!("{section} kernels.{kernel}");
                    let settings = settings.as_table().ok_or_else(|| Error::Config {
                        message: format!("{sub} must be a table with `lints`"),
                    })?;
                    for (key, value) in settings {
                        if key != "lints" {
                            return Err(Error::Config {
                                message: format!("{sub}: unknown key `{key}` (expected `lints`)"),
                            });
                        }
                        let entry = metadata.kernel_lints.entry(kernel.clone()).or_default();
                        for (lint, level) in level_table(value, &sub, "lints")? {
                            entry.insert(lint, level);
                        }
                    }
                }
            }
            other => {
                let hint = occupancy_core::lint::did_you_mean(other, KNOWN_KEYS.iter().copied())
                    .map(|key| format!("did you mean `{key}`? "))
                    .unwrap_or_default();
                return Err(Error::Config {
                    message: format!(
                        "{section}: unknown key `{other}` ({hint}known keys: {})",
                        KNOWN_KEYS.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}

fn string_list(value: &toml::Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_string))
        .collect()
}

fn level_table(
    value: &toml::Value,
    section: &str,
    key: &str,
) -> Result<Vec<(String, String)>, Error> {
    let table = value.as_table().ok_or_else(|| Error::Config {
        message: format!("{section} `{key}` must be a table like {{ spills = \"warn\" }}"),
    })?;
    table
        .iter()
        .map(|(lint, level)| {
            level
                .as_str()
                .map(|level| (lint.clone(), level.to_string()))
                .ok_or_else(|| Error::Config {
                    message: format!(
                        "{section} `{key}.{lint}` must be one of \"allow\", \"warn\", \"deny\""
                    ),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-config-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn package_overrides_workspace_and_lints_merge() {
        let root = temp_dir("merge");
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers=[\"k\"]\n[workspace.metadata.occupancy]\narchs=[\"sm_80\"]\nbaseline=\"ws.lock\"\n[workspace.metadata.occupancy.lints]\nspills=\"warn\"\nstack_frame=\"deny\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("k")).unwrap();
        std::fs::write(
            root.join("k/Cargo.toml"),
            "[package]\nname=\"k\"\n[package.metadata.occupancy]\narchs=[\"sm_90\"]\n[package.metadata.occupancy.lints]\nspills=\"deny\"\n[package.metadata.occupancy.kernels.saxpy.lints]\nlow_occupancy=\"allow\"\n",
        )
        .unwrap();
        let metadata = load(&root.join("k")).unwrap();
        assert_eq!(metadata.archs, Some(vec!["sm_90".to_string()]));
        assert_eq!(metadata.baseline, Some(PathBuf::from("ws.lock")));
        assert_eq!(
            metadata.lints.get("spills").map(String::as_str),
            Some("deny")
        );
        assert_eq!(
            metadata.lints.get("stack_frame").map(String::as_str),
            Some("deny")
        );
        assert_eq!(metadata.kernel_lints["saxpy"]["low_occupancy"], "allow");
        assert_eq!(metadata.files_read.len(), 2);
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
        std::fs::create_dir_all(root.join("k")).unwrap();
        std::fs::write(root.join("k/Cargo.toml"), "[package]\nname=\"k\"\n").unwrap();
        assert_eq!(load(&root.join("k")).unwrap().block_threads, Some(1024));
        std::fs::write(
            root.join("k/Cargo.toml"),
            "[package]\nname=\"k\"\n[package.metadata.occupancy]\nblock=2048\n",
        )
        .unwrap();
        let error = load(&root.join("k")).unwrap_err().to_string();
        assert!(
            error.contains("[package.metadata.occupancy] `block` must be threads per block"),
            "{error}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn unknown_keys_are_named() {
        let root = temp_dir("unknown");
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname=\"k\"\n[package.metadata.occupancy]\narch=[\"sm_90\"]\n",
        )
        .unwrap();
        let error = load(&root).unwrap_err().to_string();
        assert!(
            error.contains("unknown key `arch`") && error.contains("archs"),
            "{error}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn ptx_per_arch_is_a_bool_and_a_wrong_value_names_the_key() {
        let root = temp_dir("per-arch");
        let write = |value: &str| {
            std::fs::write(
                root.join("Cargo.toml"),
                format!(
                    "[package]\nname=\"k\"\n[package.metadata.occupancy]\nptx_per_arch={value}\n"
                ),
            )
            .unwrap()
        };
        write("true");
        assert_eq!(load(&root).unwrap().ptx_per_arch, Some(true));
        write("\"yes\"");
        let error = load(&root).unwrap_err().to_string();
        assert!(
            error.contains("[package.metadata.occupancy] `ptx_per_arch` must be true or false"),
            "{error}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
