//! Resolution: a [`Build`] (the builder's calls) plus the environment and Cargo.toml, read once
//! into the [`Context`] every stage works from. Nothing after this reads the builder or an
//! environment variable; every error here names the setting to change.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use occupancy_core::lint::{Level, LintId};

use crate::config::{self, OccupancySettings};
use crate::context::{Context, SourceKind};
use crate::env::TrackedEnv;
use crate::nvcc_archs::NvccArchs;
use crate::process::ToolTimeouts;
use crate::targets::{self, ArchInputs, SmArch};
use crate::{jobs, Build, Error};

impl Build {
    /// Resolves the builder, the (tracked) environment and the package's Cargo.toml into the
    /// build's [`Context`].
    pub(crate) fn resolve(&self) -> Result<Context, Error> {
        let out_dir = self.dir_setting(&self.out_dir, "OUT_DIR", "out_dir")?;
        let manifest_dir =
            self.dir_setting(&self.manifest_dir, "CARGO_MANIFEST_DIR", "manifest_dir")?;
        // First: `cargo metadata` below is the first tool to run, held to these limits too.
        let timeouts = ToolTimeouts::from_env(&self.env)?;
        // `cargo metadata` with the cargo that runs the build (`$CARGO`; set by cargo, not tracked).
        let cargo = self.env.get("CARGO").map(PathBuf::from);
        let settings = config::load(&manifest_dir, cargo.as_deref(), &timeouts)?;
        let crate_name = self
            .env
            .get("CARGO_PKG_NAME")
            .or_else(|| settings.package_name.clone())
            .unwrap_or_else(|| "crate".to_string());
        self.resolve_in(out_dir, manifest_dir, settings, crate_name, timeouts)
    }

    /// The context of a check of sources outside any package (`Build::check_sources`): no
    /// Cargo.toml is read, nothing is declared; `.manifest_dir(...)` (default: the current
    /// directory) is only where paths are shown from, `.out_dir(...)` holds the compile cache.
    pub(crate) fn resolve_without_package(&self) -> Result<Context, Error> {
        let out_dir = self
            .out_dir
            .clone()
            .ok_or(Error::SourceCheckWithoutOutDir)?;
        let out_dir = std::path::absolute(&out_dir).unwrap_or(out_dir);
        let manifest_dir = self
            .manifest_dir
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let timeouts = ToolTimeouts::from_env(&self.env)?;
        self.resolve_in(
            out_dir,
            manifest_dir,
            OccupancySettings::default(),
            String::new(),
            timeouts,
        )
    }

    /// The context of a check of a declaring package's sources
    /// ([`SourceCheck::in_package`](crate::SourceCheck)): the package's, as its build resolves
    /// it, with the request's levels above the package's (where the environment's stand in a
    /// build: the command line's include them) and its block as the launch of undeclared kernels.
    pub(crate) fn resolve_package_check(
        &self,
        request: &crate::SourceCheck,
    ) -> Result<Context, Error> {
        let mut context = self.resolve()?;
        context.env_lint_levels = request.lint_levels.clone();
        if let Some(threads) = request.block_threads {
            context.settings.block = Some(occupancy_core::spec::BlockDim::linear(threads));
        }
        Ok(context)
    }

    /// Everything but where the package is and what its Cargo.toml says.
    fn resolve_in(
        &self,
        out_dir: PathBuf,
        manifest_dir: PathBuf,
        settings: OccupancySettings,
        crate_name: String,
        timeouts: ToolTimeouts,
    ) -> Result<Context, Error> {
        let env = &self.env;
        let nvcc = || NvccArchs::installed(env, &timeouts);
        if let Some(first) = self.arch_errors.first() {
            return Err(targets::unknown("in `.arch(...)`", first.clone(), &nvcc));
        }
        let (archs, arch_source) = self.target_archs(&settings, &timeouts, &nvcc)?;
        let (archs, jit_archs) = self.with_jit_archs(&settings, archs, &nvcc)?;
        Ok(Context {
            ptx_per_arch: self.ptx_per_arch.or(settings.ptx_per_arch).unwrap_or(false),
            skip_reason: skip_reason(env),
            sources: self.sources(&manifest_dir),
            source_dirs: self
                .source_dirs
                .iter()
                .map(|dir| manifest_dir.join(dir))
                .collect(),
            nvcc_args: std::iter::once(OsString::from("-I"))
                .chain(std::iter::once(out_dir.as_os_str().to_owned()))
                .chain(self.user_args())
                .collect(),
            stamped_flags: self.stamped_flags(),
            declaration_roots: self.declaration_roots(&manifest_dir),
            cudart: self.cudart,
            check: self.check,
            env_lint_levels: env_lint_levels(env)?,
            bless: env.flag("OCCUPANCY_BLESS"),
            max_jobs: jobs::max_parallel_jobs(env),
            target_triple: env.get("TARGET"),
            target_os: env
                .get("CARGO_CFG_TARGET_OS")
                .unwrap_or_else(|| "linux".to_string()),
            read_all_sass: crate::sass_stage::sass_setting(env)?,
            nvdisasm: env.get("OCCUPANCY_NVDISASM").map(PathBuf::from),
            cuobjdump: env.get("OCCUPANCY_CUOBJDUMP").map(PathBuf::from),
            tool_timeouts: timeouts,
            out_dir,
            manifest_dir,
            crate_name,
            settings,
            archs,
            jit_archs,
            arch_source,
        })
    }

    /// The target archs and where they came from (`targets::resolve`). nvidia-smi is asked
    /// only when nothing earlier decides; one that is missing or fails means no GPU here, one
    /// that hangs past its time limit fails the build.
    fn target_archs(
        &self,
        settings: &OccupancySettings,
        timeouts: &ToolTimeouts,
        nvcc: &dyn Fn() -> Option<NvccArchs>,
    ) -> Result<(Vec<SmArch>, targets::ArchSource), Error> {
        let mut gpu_query_failed = None;
        let query_gpu = || {
            targets::query_installed_gpus(timeouts).unwrap_or_else(|error| {
                gpu_query_failed = Some(error);
                None
            })
        };
        let archs = targets::resolve(
            ArchInputs {
                builder: &self.archs,
                occupancy_archs_env: self.env.get("OCCUPANCY_ARCHS"),
                cuda_compute_cap_env: self.env.get("CUDA_COMPUTE_CAP"),
                metadata: settings.archs.clone(),
            },
            query_gpu,
            nvcc,
        );
        match gpu_query_failed {
            Some(error) => Err(error),
            None => archs,
        }
    }

    /// A directory the builder names, else the variable cargo sets for build scripts; made
    /// absolute against the current directory here, once: tools run in other directories.
    fn dir_setting(
        &self,
        given: &Option<PathBuf>,
        variable: &'static str,
        method: &'static str,
    ) -> Result<PathBuf, Error> {
        let dir = match given {
            Some(dir) => dir.clone(),
            None => self
                .env
                .get(variable)
                .map(PathBuf::from)
                .ok_or(Error::DirectoryNotSet { variable, method })?,
        };
        Ok(std::path::absolute(&dir).unwrap_or(dir))
    }

    /// The target archs plus the GPUs the shipped PTX must also run on (`.jit_arch(...)`, else
    /// `jit_archs` in the metadata), sorted; and the JIT-only ones. The PTX targets the lowest
    /// target arch, so a JIT arch below it could not load the PTX at all: an error.
    fn with_jit_archs(
        &self,
        settings: &OccupancySettings,
        mut archs: Vec<SmArch>,
        nvcc: &dyn Fn() -> Option<NvccArchs>,
    ) -> Result<(Vec<SmArch>, Vec<SmArch>), Error> {
        let (names, setting) = if self.jit_archs.is_empty() {
            (
                settings.jit_archs.clone().unwrap_or_default(),
                "`jit_archs` in [package.metadata.occupancy]",
            )
        } else {
            (self.jit_archs.clone(), "`.jit_arch(...)`")
        };
        let jit = targets::parse_list(&names.join(","), setting, nvcc)?;
        let lowest = archs.first().copied();
        if let (Some(lowest), Some(older)) = (lowest, jit.iter().find(|arch| Some(**arch) < lowest))
        {
            return Err(Error::JitArchBelowTargets {
                setting,
                jit_arch: *older,
                lowest,
            });
        }
        let jit_only: Vec<SmArch> = jit
            .into_iter()
            .filter(|arch| !archs.contains(arch))
            .collect();
        archs.extend(jit_only.iter().copied());
        archs.sort();
        Ok((archs, jit_only))
    }

    /// Every source in order: the CUDA sources ([`Build::cuda_sources`]), then the PTX files.
    fn sources(&self, manifest_dir: &Path) -> Vec<(PathBuf, SourceKind)> {
        let cuda = self
            .cuda_sources(manifest_dir)
            .into_iter()
            .map(|path| (path, SourceKind::Cuda));
        let ptx = self
            .ptx_files
            .iter()
            .map(|path| (path.clone(), SourceKind::Ptx));
        cuda.chain(ptx)
            .map(|(path, kind)| (manifest_dir.join(path), kind))
            .collect()
    }

    /// The CUDA sources: `.file`s, then the `.cu` files of each `.source_dir` (sorted), with
    /// relative paths taken from the package root.
    pub(crate) fn cuda_sources(&self, manifest_dir: &Path) -> Vec<PathBuf> {
        let mut sources = self.cuda_files.clone();
        for dir in &self.source_dirs {
            let mut found = Vec::new();
            collect_files(&manifest_dir.join(dir), "cu", &mut found);
            found.sort();
            sources.extend(found);
        }
        sources
    }

    /// The nvcc arguments from includes, defines and flags, in that order.
    fn user_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        for include in &self.includes {
            args.push(OsString::from("-I"));
            args.push(include.as_os_str().to_owned());
        }
        args.extend(self.define_args().into_iter().map(OsString::from));
        args.extend(self.flags.iter().cloned());
        args
    }

    /// `-DNAME` / `-DNAME=VALUE` of each define.
    fn define_args(&self) -> Vec<String> {
        self.defines
            .iter()
            .map(|(name, value)| match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            })
            .collect()
    }

    /// Defines and flags as text, then nvcc's flag variables: the baseline's toolchain stamp.
    fn stamped_flags(&self) -> Vec<String> {
        let mut flags = self.define_args();
        flags.extend(
            self.flags
                .iter()
                .map(|flag| flag.to_string_lossy().into_owned()),
        );
        for variable in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"] {
            if let Some(value) = self.env.get(variable) {
                flags.push(format!("{variable}={value}"));
            }
        }
        flags
    }

    /// `.declarations(...)` paths (relative to the package root), else `src/`.
    fn declaration_roots(&self, manifest_dir: &Path) -> Vec<PathBuf> {
        if self.rust_sources.is_empty() {
            return vec![manifest_dir.join("src")];
        }
        self.rust_sources
            .iter()
            .map(|path| manifest_dir.join(path))
            .collect()
    }
}

/// Why nothing is checked: `OCCUPANCY_SKIP` or a docs.rs build.
fn skip_reason(env: &TrackedEnv) -> Option<String> {
    if env.flag("OCCUPANCY_SKIP") {
        Some("OCCUPANCY_SKIP is set".to_string())
    } else if env.get("DOCS_RS").is_some() {
        Some("building on docs.rs (DOCS_RS is set)".to_string())
    } else {
        None
    }
}

/// `OCCUPANCY_LINT_<ID>=allow|warn|deny` for every lint.
fn env_lint_levels(env: &TrackedEnv) -> Result<BTreeMap<LintId, Level>, Error> {
    let mut levels = BTreeMap::new();
    for id in LintId::ALL {
        let variable = id.env_var();
        if let Some(value) = env.get(&variable) {
            let level: Level = value.trim().parse().map_err(|error| Error::BadLintLevel {
                setting: variable.clone(),
                error,
            })?;
            levels.insert(id, level);
        }
    }
    Ok(levels)
}

fn collect_files(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, extension, found);
        } else if path.extension().is_some_and(|ext| ext == extension) {
            found.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A builder outside any package, reading only `variables` (set, or hidden with `None`).
    fn builder_with(variables: &[(&str, Option<&str>)]) -> Build {
        let mut env = TrackedEnv::new();
        for (name, value) in variables {
            env.set(name, *value);
        }
        let mut build = Build::new();
        build.env(env).cargo_metadata(false).arch("sm_90");
        build
    }

    #[test]
    fn outside_cargo_the_directory_to_give_is_named_and_returned_as_is() {
        let mut build = builder_with(&[("OUT_DIR", None), ("CARGO_MANIFEST_DIR", None)]);
        let error = build.try_compile_ptx().unwrap_err();
        assert!(
            matches!(
                error,
                Error::DirectoryNotSet {
                    variable: "OUT_DIR",
                    method: "out_dir"
                }
            ),
            "{error:?}"
        );
        build.out_dir(std::env::temp_dir());
        let error = build.try_compile_lib("kernels").unwrap_err();
        assert!(
            matches!(
                error,
                Error::DirectoryNotSet {
                    variable: "CARGO_MANIFEST_DIR",
                    method: "manifest_dir"
                }
            ),
            "{error:?}"
        );
    }

    #[test]
    fn relative_directories_are_made_absolute_once() {
        // The SASS stage runs cuobjdump in a work directory of its own: a relative OUT_DIR
        // named a file that was not there.
        let mut build = Build::new();
        build.out_dir("target/some-out");
        let dir = build
            .dir_setting(&build.out_dir, "OUT_DIR", "out_dir")
            .unwrap();
        assert!(dir.is_absolute(), "{}", dir.display());
        assert!(dir.ends_with("target/some-out"), "{}", dir.display());
    }

    #[test]
    fn a_source_check_needs_an_out_dir() {
        let error = builder_with(&[]).resolve_without_package().unwrap_err();
        assert!(
            matches!(error, Error::SourceCheckWithoutOutDir),
            "{error:?}"
        );
    }

    #[test]
    fn bad_environment_settings_are_typed_errors_naming_the_variable() {
        let resolve = |variables: &[(&str, Option<&str>)]| {
            let mut build = builder_with(variables);
            build.out_dir(std::env::temp_dir());
            build.resolve_without_package().unwrap_err()
        };
        let error = resolve(&[("OCCUPANCY_SASS", Some("every"))]);
        assert!(
            matches!(&error, Error::BadSassSetting { value } if value == "every"),
            "{error:?}"
        );
        let error = resolve(&[("OCCUPANCY_LINT_SPILLS", Some("loud"))]);
        assert!(
            matches!(&error, Error::BadLintLevel { setting, error }
                if setting == "OCCUPANCY_LINT_SPILLS" && error.given == "loud"),
            "{error:?}"
        );
        let mut build = builder_with(&[]);
        build.out_dir(std::env::temp_dir()).jit_arch("sm_80");
        let error = build.resolve_without_package().unwrap_err();
        assert!(
            matches!(&error, Error::JitArchBelowTargets { setting: "`.jit_arch(...)`", jit_arch, lowest }
                if jit_arch.to_string() == "sm_80" && lowest.to_string() == "sm_90"),
            "{error:?}"
        );
    }

    #[test]
    fn source_dirs_expand_from_the_package_root_in_order() {
        let root = std::env::temp_dir().join(format!("occupancy-sources-{}", std::process::id()));
        std::fs::create_dir_all(root.join("kernels/nested")).unwrap();
        for file in [
            "kernels/b.cu",
            "kernels/a.cu",
            "kernels/nested/c.cu",
            "kernels/readme.md",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let mut build = Build::new();
        build.file("extra.cu").source_dir("kernels");
        let sources = build.cuda_sources(&root);
        assert_eq!(
            sources,
            vec![
                PathBuf::from("extra.cu"),
                root.join("kernels/a.cu"),
                root.join("kernels/b.cu"),
                root.join("kernels/nested/c.cu")
            ]
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
