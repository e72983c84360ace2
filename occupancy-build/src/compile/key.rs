//! The cache key of a compile: the configuration (toolkit, arguments, archs, modes) and the
//! content of every file the compile read, each remembered by size and time (`file_facts`);
//! of the generated `occupancy_bounds.h` only the macros the source uses.

use super::commands::nvcc_args;
use super::settings::{absolute, CompileSettings};
use crate::cache::hex;
pub use crate::context::SourceKind;
use crate::file_facts::FileFacts;
use crate::Error;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The `#define` lines of the generated header for exactly the macros `used`, each with the
/// `#if`/`#elif`/`#else` it sits under (a `"auto"` kernel's bounds are defined once per target
/// arch, under `__CUDA_ARCH__` conditions: every branch counts, not the last definition);
/// `None` when a used name is not one of its macros (token pasting, a typo): then the whole
/// header counts.
pub(crate) fn selected_definitions(
    header: &str,
    used: &std::collections::BTreeSet<String>,
) -> Option<String> {
    let mut definitions: std::collections::BTreeMap<&str, String> =
        std::collections::BTreeMap::new();
    let mut condition = "";
    for line in header.lines() {
        let directive = line.trim_start();
        if directive.starts_with("#if") || directive.starts_with("#el") {
            condition = line;
        } else if directive.starts_with("#endif") {
            condition = "";
        } else if let Some(rest) = line.strip_prefix("#define ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            let text = definitions.entry(name).or_default();
            if !condition.is_empty() {
                text.push_str(condition);
                text.push('\n');
            }
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut selected = String::new();
    for name in used {
        selected.push_str(definitions.get(name.as_str())?);
    }
    Some(selected)
}

/// Whether the cache fingerprints this header by size and mtime instead of content: see
/// [`crate::toolchain::is_system_header`].
pub(crate) fn is_system_header(settings: &CompileSettings, path: &Path) -> bool {
    crate::toolchain::is_system_header(&settings.toolchain.cuda_home, path)
}

/// Length-prefixed fields into one SHA-256, so no two field lists hash alike.
#[derive(Default)]
pub(crate) struct KeyHasher(Sha256);

impl KeyHasher {
    fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

/// The configuration half of the key: everything but the content of the files read. It names
/// the slot, so two configurations of one source (other `-D`, archs, toolkit) never share one.
pub(crate) fn config_key(settings: &CompileSettings, source: &Path, kind: SourceKind) -> String {
    let mut hasher = KeyHasher::default();
    // v6: `compile_ptx` assembles the stripped PTX it ships; the entry keeps the `-lineinfo`
    // PTX for the SASS stage's line tables (v5 assembled the `-lineinfo` PTX).
    // v7: a user file's part is its SHA-256 in hex (`file_facts`).
    hasher.field(b"occupancy-build cache v7");
    hasher.field(settings.toolchain.version_text.as_bytes());
    hasher.field(settings.toolchain.fingerprint.as_bytes());
    hasher.field(settings.toolchain.nvcc.as_os_str().as_encoded_bytes());
    for arg in &settings.toolchain.host_args {
        hasher.field(arg.as_encoded_bytes());
    }
    hasher.field(format!("{kind:?} {:?}", settings.product).as_bytes());
    for arch in &settings.archs {
        hasher.field(arch.to_string().as_bytes());
    }
    // The mode and the JIT archs decide which PTX each arch's SASS comes from.
    hasher.field(if settings.ptx_per_arch {
        b"ptx per arch"
    } else {
        b"one ptx"
    });
    for arch in &settings.jit_archs {
        hasher.field(arch.to_string().as_bytes());
    }
    hasher.field(absolute(source).as_os_str().as_encoded_bytes());
    // The arguments with a fixed work dir, so the key does not depend on the process id; the
    // two-step commands when the source may compile in two steps: whether it does (its previous
    // compile decides, `crate::compile::two_step::spills_are_common`) changes only the binary's line
    // tables, never what ships or what ptxas reports, so both ways share the slot.
    let two_steps = crate::compile::two_step::two_steps(settings, kind);
    for args in nvcc_args(settings, source, kind, Path::new("/work"), two_steps) {
        for arg in args {
            hasher.field(arg.as_encoded_bytes());
        }
    }
    hasher.finish()
}

/// The full key: the configuration and the content of every file the compile read.
pub(crate) fn cache_key(
    settings: &CompileSettings,
    config: &str,
    dependencies: &[PathBuf],
    files: &FileFacts,
) -> Result<String, Error> {
    let mut hasher = KeyHasher::default();
    hasher.field(config.as_bytes());
    let mut field = |bytes: &[u8]| hasher.field(bytes);
    let mut sorted: Vec<&PathBuf> = dependencies.iter().collect();
    sorted.sort();
    let generated_header = settings
        .cache_root
        .parent()
        .and_then(Path::parent)
        .map(|out_dir| out_dir.join("occupancy_bounds.h"));
    let mut used_macros: Option<std::collections::BTreeSet<String>> = Some(Default::default());
    for dependency in &sorted {
        if is_system_header(settings, dependency) || Some(*dependency) == generated_header.as_ref()
        {
            continue;
        }
        match (files.of(dependency), used_macros.as_mut()) {
            (Ok(facts), Some(used)) if facts.text => used.extend(facts.identifiers),
            _ => used_macros = None,
        }
    }
    for dependency in sorted {
        field(dependency.as_os_str().as_encoded_bytes());
        if Some(dependency) == generated_header.as_ref() {
            // occupancy_bounds.h holds every declared kernel's macros; a source depends only on
            // the ones it names, so changing one declaration recompiles only its kernel's file.
            let text = std::fs::read_to_string(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            match used_macros
                .as_ref()
                .and_then(|used| selected_definitions(&text, used))
            {
                Some(definitions) => field(definitions.as_bytes()),
                None => field(&Sha256::digest(text.as_bytes())),
            }
        } else if is_system_header(settings, dependency) {
            let metadata = std::fs::metadata(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            let modified = metadata
                .modified()
                .ok()
                .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|duration| duration.as_nanos())
                .unwrap_or(0);
            field(&metadata.len().to_le_bytes());
            field(&modified.to_le_bytes());
        } else {
            // Read once and remembered by size and time (`file_facts`): a rerun with no CUDA
            // change reads no header again.
            let facts = files.of(dependency).map_err(|error| Error::Io {
                path: dependency.clone(),
                error,
            })?;
            field(facts.digest.as_bytes());
        }
    }
    Ok(hasher.finish())
}

#[cfg(test)]
mod key_tests {
    use super::super::settings::{arch_args, LineTables, Product};
    use super::*;
    use crate::cache::Slot;
    use crate::targets::SmArch;
    use std::ffi::OsString;

    fn settings(user_args: &[&str], archs: &[&str]) -> CompileSettings {
        let mut settings = CompileSettings::for_tests(archs, Product::Ptx);
        settings.user_args = user_args.iter().map(OsString::from).collect();
        settings
    }

    #[test]
    fn every_setting_that_decides_the_output_names_its_own_slot() {
        let source = Path::new("/src/k.cu");
        let key = |settings: &CompileSettings| config_key(settings, source, SourceKind::Cuda);
        let base = key(&settings(&["-DWIDTH=1"], &["sm_80"]));
        assert_eq!(base, key(&settings(&["-DWIDTH=1"], &["sm_80"])), "stable");
        let mut other_ptxas = settings(&["-DWIDTH=1"], &["sm_80"]);
        other_ptxas.toolchain.fingerprint = "/cuda/bin/ptxas 101 2\n".into();
        let variants = [
            key(&settings(&["-DWIDTH=2"], &["sm_80"])),
            key(&settings(&["-DWIDTH=1"], &["sm_80", "sm_90"])),
            key(&other_ptxas),
            config_key(
                &settings(&["-DWIDTH=1"], &["sm_80"]),
                Path::new("/src/j.cu"),
                SourceKind::Cuda,
            ),
        ];
        for variant in variants {
            assert_ne!(base, variant);
        }
        let slot_dir = |settings: &CompileSettings| {
            format!("{:?}", Slot::new(&settings.cache_root, "k", &key(settings)))
        };
        assert_ne!(
            slot_dir(&settings(&["-DWIDTH=1"], &["sm_80"])),
            slot_dir(&settings(&["-DWIDTH=2"], &["sm_80"])),
            "two -D configurations never share a slot"
        );
        // Where the line tables are made changes neither what ships nor ptxas's report.
        let mut everywhere = settings(&["-DWIDTH=1"], &["sm_80"]);
        everywhere.line_tables = LineTables::Everywhere;
        assert_eq!(key(&everywhere), base, "line tables do not name a slot");
    }

    fn arch(name: &str) -> SmArch {
        SmArch::parse(name).unwrap()
    }

    #[test]
    fn the_program_mode_and_the_jit_archs_name_their_own_slot() {
        let source = Path::new("/src/k.cu");
        let two = settings(&[], &["sm_80", "sm_90"]);
        let per_arch = CompileSettings {
            ptx_per_arch: true,
            ..two.clone()
        };
        let jit = CompileSettings {
            jit_archs: vec![arch("sm_90")],
            ..two.clone()
        };
        let key = |settings: &CompileSettings| config_key(settings, source, SourceKind::Cuda);
        assert_ne!(key(&two), key(&per_arch));
        assert_ne!(key(&two), key(&jit));
        assert_ne!(key(&per_arch), key(&jit));
    }

    #[test]
    fn ptx_per_arch_gives_each_target_its_own_program_and_jit_archs_the_highest_below() {
        let settings = CompileSettings {
            ptx_per_arch: true,
            jit_archs: vec![arch("sm_89"), arch("sm_120")],
            ..settings(&[], &["sm_80", "sm_89", "sm_90", "sm_120"])
        };
        assert_eq!(
            settings.program_archs(),
            vec![
                (arch("sm_80"), vec![arch("sm_80"), arch("sm_89")]),
                (arch("sm_90"), vec![arch("sm_90"), arch("sm_120")]),
            ]
        );
        let args: Vec<String> = arch_args(&settings, true)
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "-gencode",
                "arch=compute_80,code=[sm_80,sm_89,compute_80]",
                "-gencode",
                "arch=compute_90,code=[sm_90,sm_120,compute_90]"
            ]
        );
        let one = CompileSettings {
            ptx_per_arch: false,
            ..settings
        };
        assert_eq!(
            one.program_archs(),
            vec![(arch("sm_80"), one.archs.clone())],
            "one program: the lowest target's PTX for every arch"
        );
    }
}
