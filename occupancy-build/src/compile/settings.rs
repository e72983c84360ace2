//! What decides how the sources of a build are compiled (`CompileSettings`: toolchain, archs,
//! user arguments, product, programs) and the small functions every compile step shares.
//! A leaf: the other compile modules read it, it reads none of them.

use crate::targets::SmArch;
use crate::toolchain::Toolchain;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What the crate ships from a CUDA source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Product {
    /// PTX text for runtime loading (plus a fatbin of SASS for every target arch).
    Ptx,
    /// An object file for a static library.
    Object,
}

/// Everything that decides what nvcc produces for one source, shared by all sources of a build.
#[derive(Debug, Clone)]
pub struct CompileSettings {
    pub toolchain: Toolchain,
    pub archs: Vec<SmArch>,
    /// Includes, defines and user flags, in the order given.
    pub user_args: Vec<OsString>,
    pub product: Product,
    /// `$OUT_DIR/occupancy/cache`.
    pub cache_root: PathBuf,
    /// One PTX per target arch (`.ptx_per_arch(true)`) instead of one for the lowest.
    pub ptx_per_arch: bool,
    /// The archs of `archs` checked only as JIT targets of the shipped PTX (`jit_archs`).
    pub jit_archs: Vec<SmArch>,
    /// Which kernels a `compile_ptx` build's ptxas makes line tables for.
    pub line_tables: LineTables,
}

#[cfg(test)]
impl CompileSettings {
    /// Settings for unit tests: nvcc under `/cuda` (`Toolchain::for_tests`), `archs`,
    /// `product`, the cache under `/cache`, no user flags.
    pub(crate) fn for_tests(archs: &[&str], product: Product) -> CompileSettings {
        CompileSettings {
            toolchain: Toolchain::for_tests("/cuda"),
            archs: (archs.iter())
                .map(|arch| SmArch::parse(arch).unwrap())
                .collect(),
            user_args: Vec::new(),
            product,
            cache_root: PathBuf::from("/cache"),
            ptx_per_arch: false,
            jit_archs: Vec::new(),
            line_tables: LineTables::OnDemand,
        }
    }
}

/// Which kernels ptxas makes line tables for in a `compile_ptx` build (`crate::compile::two_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTables {
    /// None in the build's binary (ptxas assembles the stripped PTX); the SASS stage assembles
    /// them for the kernels it reads that use local memory: few, in a build, where the SASS
    /// lints read what a declaration or a hard failure asks for.
    OnDemand,
    /// Every kernel, in the one compile (`nvcc -fatbin -lineinfo`): when the SASS stage reads
    /// the local memory of every kernel (`cargo occupancy check`, every lint on every kernel;
    /// `OCCUPANCY_SASS=all`), assembling each such kernel again would cost more than the 3.5%.
    Everywhere,
}

impl CompileSettings {
    /// The PTX programs a `.cu` source compiles to, as (virtual arch, SASS archs from it):
    /// one from the lowest target for every arch, or per arch (`ptx_per_arch`) one per target arch, each
    /// JIT arch going to the highest target not above it (the PTX the driver picks there).
    pub fn program_archs(&self) -> Vec<(SmArch, Vec<SmArch>)> {
        let targets: Vec<SmArch> = self
            .archs
            .iter()
            .filter(|arch| !self.jit_archs.contains(arch))
            .copied()
            .collect();
        if !self.ptx_per_arch {
            return targets
                .first()
                .map(|lowest| vec![(*lowest, self.archs.clone())])
                .unwrap_or_default();
        }
        let mut programs: Vec<(SmArch, Vec<SmArch>)> =
            targets.iter().map(|arch| (*arch, vec![*arch])).collect();
        for jit in &self.jit_archs {
            if let Some(program) = programs.iter_mut().rev().find(|(target, _)| target <= jit) {
                program.1.push(*jit);
            }
        }
        programs
    }
}

/// `-arch=compute_<lowest> -code=sm_<a>,...` for one program, else one `-gencode` per program
/// (`ptx_per_arch`): `arch=compute_<t>,code=[sm_<t>,<its JIT archs>(,compute_<t>)]`.
pub(crate) fn arch_args(settings: &CompileSettings, with_ptx: bool) -> Vec<OsString> {
    let programs = settings.program_archs();
    let codes = |target: &SmArch, archs: &[SmArch]| {
        let mut codes: Vec<String> = archs.iter().map(ToString::to_string).collect();
        if with_ptx {
            codes.push(target.virtual_name());
        }
        codes.join(",")
    };
    if let [(target, archs)] = programs.as_slice() {
        return vec![
            format!("-arch={}", target.virtual_name()).into(),
            format!("-code={}", codes(target, archs)).into(),
        ];
    }
    programs
        .iter()
        .flat_map(|(target, archs)| {
            [
                OsString::from("-gencode"),
                format!(
                    "arch={},code=[{}]",
                    target.virtual_name(),
                    codes(target, archs)
                )
                .into(),
            ]
        })
        .collect()
}

/// Whether the user asked for device debug code (`-G`), which carries its own line information.
pub(crate) fn device_debug(settings: &CompileSettings) -> bool {
    settings
        .user_args
        .iter()
        .any(|arg| arg == "-G" || arg == "--device-debug")
}

pub(crate) fn file_stem(source: &Path) -> String {
    source
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "source".into())
}

/// Absolute and lexically normalised (`bin/..//include` → `include`), so paths from nvcc's
/// dependency file compare with the toolkit root.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut normal = PathBuf::new();
    for component in absolute.components() {
        match component {
            std::path::Component::ParentDir => {
                normal.pop();
            }
            std::path::Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    normal
}
