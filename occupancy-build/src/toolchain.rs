//! Finding nvcc and the command line `cc` would use for it.
//!
//! nvcc is looked up in `NVCC`, `CUDA_HOME/bin`, `CUDA_PATH/bin`, `PATH`, then
//! `/usr/local/cuda/bin`. The `cc` crate contributes what it knows about the host side (`-ccbin`,
//! `-Xcompiler -fPIC`, the target's flags) and the compiler cache from `RUSTC_WRAPPER` (sccache),
//! so a crate that already builds C++ with `cc` gets the same host setup for its CUDA code.
//! This module runs `nvcc --version` and nothing else, within the probes' time limit
//! ([`crate::process`]); the [`Toolchain`] carries the limits to every later run of a tool.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::env::TrackedEnv;
use crate::process::{run_bounded, ToolKind, ToolTimeouts};
use crate::Error;

pub use crate::words::NVCC_WHEELS;

/// A found nvcc, ready to be invoked.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The nvcc executable.
    pub nvcc: PathBuf,
    /// The toolkit root (`nvcc/..`), where `lib`/`lib64` hold cudart.
    pub cuda_home: PathBuf,
    /// A compiler cache in front of nvcc (`sccache`), as `cc` derives it from `RUSTC_WRAPPER`.
    pub wrapper: Option<OsString>,
    /// Host-side arguments from `cc` (`-ccbin=c++`, `-Xcompiler -fPIC`, ...).
    pub host_args: Vec<OsString>,
    /// `nvcc --version`, verbatim: part of every cache key.
    pub version_text: String,
    /// `13.0` from `release 13.0, V13.0.88`.
    pub release: String,
    /// The toolkit's identity files (nvcc, ptxas, cicc, `version.json`), as far as they exist:
    /// cargo reruns the build script when one changes, instead of watching hundreds of headers.
    pub identity_files: Vec<PathBuf>,
    /// Path, size and mtime of each identity file: part of every cache key, so a new ptxas or
    /// cicc under an unchanged nvcc still invalidates the cache.
    pub fingerprint: String,
    /// How long each tool may run (`OCCUPANCY_TOOL_TIMEOUT`, read at resolution).
    pub timeouts: ToolTimeouts,
    /// `PATH`'s directories as the build found them (read here, once, not tracked: `cc` does
    /// not track `PATH` either): where the SASS stage's tools are looked for last.
    pub search_path: Vec<PathBuf>,
}

#[cfg(test)]
impl Toolchain {
    /// A toolchain for unit tests, installed under `home` (nvcc 13.0), started by no one.
    pub(crate) fn for_tests(home: &str) -> Toolchain {
        Toolchain {
            nvcc: PathBuf::from(format!("{home}/bin/nvcc")),
            cuda_home: PathBuf::from(home),
            wrapper: None,
            host_args: Vec::new(),
            version_text: "Cuda compilation tools, release 13.0, V13.0.88".into(),
            release: "13.0".into(),
            identity_files: Vec::new(),
            fingerprint: format!("{home}/bin/ptxas 100 1\n"),
            timeouts: Default::default(),
            search_path: Vec::new(),
        }
    }
}

impl Toolchain {
    /// A toolkit tool (`cuobjdump`, `nvdisasm`, `ptxas`) beside nvcc, in the toolkit's `bin/`,
    /// or on the `PATH` the toolchain was found with.
    pub fn locate_tool(&self, name: &str) -> Option<PathBuf> {
        let beside_nvcc = self.nvcc.parent().map(|bin| bin.join(name));
        let in_home = self.cuda_home.join("bin").join(name);
        let on_path = self.search_path.iter().map(|dir| dir.join(name));
        beside_nvcc
            .into_iter()
            .chain(std::iter::once(in_home))
            .chain(on_path)
            .find(|path| path.is_file())
    }

    /// Finds nvcc and asks it for its version; every tool it runs later is held to `timeouts`.
    pub fn find(
        env: &TrackedEnv,
        use_cc_host_setup: bool,
        timeouts: &ToolTimeouts,
    ) -> Result<Toolchain, Error> {
        let nvcc = locate_nvcc(env)?;
        let output = run_bounded(
            Command::new(&nvcc).arg("--version"),
            timeouts,
            ToolKind::Probe,
        )?;
        let version_text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() || !version_text.contains("Cuda compilation tools") {
            return Err(Error::NotNvcc {
                status: output.status.to_string(),
                output: format!("{version_text}{}", String::from_utf8_lossy(&output.stderr)),
                nvcc,
            });
        }
        let release = version_text
            .split("release ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .unwrap_or("unknown")
            .trim()
            .to_string();
        // The toolkit root: CUDA_HOME/CUDA_PATH when they name one (NVCC may be a wrapper
        // script elsewhere), else the directory above nvcc's bin/.
        let cuda_home = ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(|variable| env.get(variable))
            .map(PathBuf::from)
            .find(|home| home.join("include").is_dir())
            .or_else(|| nvcc.parent().and_then(Path::parent).map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("/usr/local/cuda"));
        let (wrapper, host_args) = if use_cc_host_setup {
            cc_host_setup(env)
        } else {
            (None, Vec::new())
        };
        // nvcc reads these itself: they change its output, so they are part of the cache key.
        let mut version_text = version_text;
        for variable in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"] {
            if let Some(value) = env.get(variable) {
                version_text.push_str(&format!("\n{variable}={value}"));
            }
        }
        let identity_files = identity_files(&nvcc, &cuda_home);
        let fingerprint = fingerprint(&identity_files);
        Ok(Toolchain {
            nvcc,
            cuda_home,
            wrapper,
            host_args,
            version_text,
            release,
            identity_files,
            fingerprint,
            timeouts: *timeouts,
            search_path: env
                .get_untracked("PATH")
                .map(|paths| std::env::split_paths(&paths).collect())
                .unwrap_or_default(),
        })
    }

    /// `[wrapper] nvcc <host args from cc>`, to which callers add theirs.
    pub fn command(&self) -> Command {
        let mut command = match &self.wrapper {
            Some(wrapper) => {
                let mut command = Command::new(wrapper);
                command.arg(&self.nvcc);
                command
            }
            None => Command::new(&self.nvcc),
        };
        command.args(&self.host_args);
        command
    }

    /// `nvcc <host args from cc>` without the compiler cache: the fallback when the cache fails
    /// a compile that nvcc itself may not fail.
    pub fn command_without_wrapper(&self) -> Command {
        let mut command = Command::new(&self.nvcc);
        command.args(&self.host_args);
        command
    }

    /// nvcc's full version, `13.0.88` from `V13.0.88` (the release when no `V` is printed).
    pub fn nvcc_version(&self) -> String {
        full_version(&self.version_text).unwrap_or_else(|| self.release.clone())
    }

    /// ptxas's full version (`13.0.88`), asked from the ptxas in the toolkit (`CUDA_HOME/bin`,
    /// else beside nvcc); `unknown` when none answers, which never equals a recorded version.
    pub fn ptxas_version(&self) -> String {
        let candidates = [
            Some(self.cuda_home.join("bin").join("ptxas")),
            self.nvcc.parent().map(|dir| dir.join("ptxas")),
        ];
        candidates
            .into_iter()
            .flatten()
            .filter(|path| path.is_file())
            .find_map(|path| {
                let mut command = Command::new(path);
                command.arg("--version");
                let output = run_bounded(&mut command, &self.timeouts, ToolKind::Probe).ok()?;
                full_version(&String::from_utf8_lossy(&output.stdout))
            })
            .unwrap_or_else(|| "unknown".to_string())
    }

    /// The directory holding `libcudart_static.a` / `libcudart.so`, if any.
    pub fn cudart_dir(&self) -> Option<PathBuf> {
        [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
            "lib/x64",
        ]
        .iter()
        .map(|sub| self.cuda_home.join(sub))
        .find(|dir| {
            ["libcudart_static.a", "libcudart.so", "cudart_static.lib"]
                .iter()
                .any(|name| dir.join(name).exists())
                || std::fs::read_dir(dir)
                    .map(|entries| {
                        entries.flatten().any(|entry| {
                            entry.file_name().to_string_lossy().starts_with("libcudart")
                        })
                    })
                    .unwrap_or(false)
        })
    }
}

/// The files that identify a toolkit: a new release or patch replaces at least one of them.
/// The toolkit's and the system's headers (`/usr/include`, `/usr/lib`): hundreds of files that
/// change only with a new toolkit or host compiler. The compile cache fingerprints them by size
/// and mtime, and the build script does not watch them one by one (the toolkit is watched by its
/// identity files; the host compiler's headers, as the `cc` crate does, not at all).
pub fn is_system_header(cuda_home: &Path, path: &Path) -> bool {
    path.starts_with(cuda_home) || path.starts_with("/usr/include") || path.starts_with("/usr/lib")
}

fn identity_files(nvcc: &Path, cuda_home: &Path) -> Vec<PathBuf> {
    let ptxas = format!("ptxas{}", std::env::consts::EXE_SUFFIX);
    let cicc = format!("cicc{}", std::env::consts::EXE_SUFFIX);
    [
        nvcc.to_path_buf(),
        cuda_home.join("bin").join(ptxas),
        cuda_home.join("nvvm").join("bin").join(cicc),
        cuda_home.join("version.json"),
    ]
    .into_iter()
    .filter(|path| path.is_file())
    .collect()
}

fn fingerprint(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|path| {
            let metadata = std::fs::metadata(path).ok();
            let size = metadata.as_ref().map_or(0, std::fs::Metadata::len);
            let modified = metadata
                .and_then(|metadata| metadata.modified().ok())
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |duration| duration.as_nanos());
            format!("{} {size} {modified}\n", path.display())
        })
        .collect()
}

fn executable_name() -> &'static str {
    if cfg!(windows) {
        "nvcc.exe"
    } else {
        "nvcc"
    }
}

/// `13.0.88` from a `--version` text's `V13.0.88`.
fn full_version(text: &str) -> Option<String> {
    let rest = text.split(", V").nth(1)?;
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    (!version.is_empty()).then_some(version)
}

pub(crate) fn locate_nvcc(env: &TrackedEnv) -> Result<PathBuf, Error> {
    let mut looked = Vec::new();
    if let Some(nvcc) = env.get("NVCC") {
        let path = PathBuf::from(&nvcc);
        if path.is_file() {
            return Ok(path);
        }
        if let Some(found) = search_path(env, &nvcc) {
            return Ok(found);
        }
        return Err(Error::NvccNotFound {
            looked: format!("NVCC={nvcc}, which is not an executable file"),
        });
    }
    looked.push("NVCC (unset)".to_string());
    for variable in ["CUDA_HOME", "CUDA_PATH"] {
        match env.get(variable) {
            Some(home) => {
                let candidate = Path::new(&home).join("bin").join(executable_name());
                if candidate.is_file() {
                    return Ok(candidate);
                }
                looked.push(format!("{variable}={home} (no bin/{})", executable_name()));
            }
            None => looked.push(format!("{variable} (unset)")),
        }
    }
    if let Some(found) = search_path(env, executable_name()) {
        return Ok(found);
    }
    looked.push("PATH".to_string());
    let fallback = Path::new("/usr/local/cuda/bin").join(executable_name());
    if fallback.is_file() {
        return Ok(fallback);
    }
    looked.push(fallback.display().to_string());
    Err(Error::NvccNotFound {
        looked: looked.join(", "),
    })
}

fn search_path(env: &TrackedEnv, name: &str) -> Option<PathBuf> {
    let path = env.get_untracked("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The compiler-cache wrapper and host flags `cc` would use for nvcc. Outside a build script
/// (no `TARGET`), `cc` cannot answer; nvcc then runs with its own host defaults.
fn cc_host_setup(env: &TrackedEnv) -> (Option<OsString>, Vec<OsString>) {
    // Read through the tracked environment so a change reruns the build script.
    let Some(target) = env.get("TARGET") else {
        let _ = env.get("RUSTC_WRAPPER");
        return (None, Vec::new());
    };
    // What `cc` reads for the host side of an nvcc command (its own rerun lines are off, since
    // its link lines must be too): tracked here so a change reruns the build script.
    let underscored = target.replace('-', "_");
    for name in [
        "RUSTC_WRAPPER",
        "CC",
        "CXX",
        "CFLAGS",
        "CXXFLAGS",
        "CC_ENABLE_DEBUG_OUTPUT",
    ] {
        let _ = env.get(name);
    }
    for name in ["CXX", "CXXFLAGS", "CC", "CFLAGS"] {
        let _ = env.get(&format!("{name}_{target}"));
        let _ = env.get(&format!("{name}_{underscored}"));
        let _ = env.get(&format!("HOST_{name}"));
        let _ = env.get(&format!("TARGET_{name}"));
    }
    let mut build = cc::Build::new();
    // No `-G`: device debug code has different registers and spills from what ships; a crate
    // that wants it passes `.flag("-G")` and sees the checks run on that code.
    build
        .cuda(true)
        .debug(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .warnings(false);
    let tool = match build.try_get_compiler() {
        Ok(tool) => tool,
        Err(_) => return (None, Vec::new()),
    };
    let command = tool.to_command();
    let wrapper = (command.get_program() != tool.path().as_os_str())
        .then(|| command.get_program().to_os_string());
    (wrapper, tool.args().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_nvcc_says_where_it_looked() {
        let mut env = TrackedEnv::new();
        env.set("NVCC", None);
        env.set("CUDA_HOME", Some("/nonexistent/cuda"));
        env.set("CUDA_PATH", None);
        env.set("PATH", Some("/nonexistent/bin"));
        match locate_nvcc(&env) {
            Err(Error::NvccNotFound { looked })
                if !Path::new("/usr/local/cuda/bin/nvcc").exists() =>
            {
                assert!(
                    looked.contains("CUDA_HOME=/nonexistent/cuda (no bin/nvcc)"),
                    "{looked}"
                );
                assert!(looked.contains("NVCC (unset)"), "{looked}");
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(found) => assert_eq!(found, PathBuf::from("/usr/local/cuda/bin/nvcc")),
        }
        for name in ["NVCC", "CUDA_HOME", "CUDA_PATH"] {
            assert!(
                env.read_names().contains(&name.to_string()),
                "{name} read and tracked"
            );
        }
        // Searched, as `cc` searches it, but not a `rerun-if-env-changed` input (issue 12.7):
        // every shell changes PATH; the nvcc found is tracked by its identity files.
        assert!(!env.read_names().contains(&"PATH".to_string()));
    }

    #[test]
    fn the_toolkit_is_identified_by_its_compilers_and_version_file() {
        let home = std::env::temp_dir().join(format!("occupancy-toolkit-{}", std::process::id()));
        for file in ["bin/nvcc", "bin/ptxas", "nvvm/bin/cicc", "version.json"] {
            std::fs::create_dir_all(home.join(file).parent().unwrap()).unwrap();
            std::fs::write(home.join(file), "x").unwrap();
        }
        let files = identity_files(&home.join("bin/nvcc"), &home);
        assert_eq!(files.len(), 4, "{files:?}");
        let before = fingerprint(&files);
        std::fs::write(home.join("bin/ptxas"), "a newer ptxas").unwrap();
        assert_ne!(
            before,
            fingerprint(&files),
            "a new ptxas changes every cache key"
        );
        std::fs::remove_file(home.join("version.json")).unwrap();
        assert_eq!(identity_files(&home.join("bin/nvcc"), &home).len(), 3);
        let _ = std::fs::remove_dir_all(home);
    }

    #[test]
    fn nvcc_pointing_nowhere_is_named() {
        let mut env = TrackedEnv::new();
        env.set("NVCC", Some("/nonexistent/nvcc"));
        let error = locate_nvcc(&env).unwrap_err().to_string();
        assert!(error.contains("NVCC=/nonexistent/nvcc"), "{error}");
        assert!(error.contains("nvidia-cuda-nvcc"), "install hint: {error}");
        assert!(error.contains("OCCUPANCY_SKIP=1"), "opt-out hint: {error}");
    }
}
