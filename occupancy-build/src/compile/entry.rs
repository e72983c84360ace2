//! A compile's cache entry and the compiled source: moving a fresh compile's products into
//! the entry under fixed names, and reading a [`CompiledSource`] back from an entry.

use super::compiled::{CompiledSource, Program};
use super::run::FreshOutput;
use super::settings::{file_stem, CompileSettings};
use crate::cache::{Entry, Staging};
pub use crate::context::SourceKind;
use crate::Error;
use std::path::{Path, PathBuf};

/// Moves a fresh compile's products from nvcc's work dir to the staging root under fixed names
/// (nvcc's intermediates go) and writes its log; returns each product's (role, name).
pub(crate) fn move_products(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    fresh: &FreshOutput,
    staging: &Staging,
    two_steps: bool,
) -> Result<Vec<(String, String)>, Error> {
    let work = staging.dir.join("keep");
    let stem = file_stem(source);
    let mut products: Vec<(String, String)> = Vec::new();
    if crate::compile::two_step::strips(settings, kind) {
        products.extend(crate::compile::two_step::products(
            &work,
            &staging.dir,
            &stem,
            two_steps,
        )?);
    }
    if kind == SourceKind::Cuda {
        for (target, ptx) in &fresh.ptx {
            let name = format!("{stem}.{target}.ptx");
            rename(ptx, &staging.dir.join(&name))?;
            products.push((ptx_role(target), name));
        }
    }
    if let Some(binary) = &fresh.binary {
        let name = binary
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{stem}.bin"));
        rename(binary, &staging.dir.join(&name))?;
        products.push(("binary".into(), name));
    }
    crate::fsutil::write_atomic(&staging.dir.join("nvcc.log"), fresh.compiler_log.as_bytes())?;
    products.push(("log".into(), "nvcc.log".into()));
    let _ = std::fs::remove_dir_all(&work);
    Ok(products)
}

/// `compute_80` from a PTX file's `.target sm_80[, ...]` directive (read from its header only).
pub(crate) fn ptx_file_target(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let line = std::io::BufReader::new(file)
        .lines()
        .take(200)
        .map_while(Result::ok)
        .find(|line| line.trim_start().starts_with(".target"))?;
    let target = line.trim_start().strip_prefix(".target")?.trim();
    let first = target
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()?;
    Some(first.replacen("sm_", "compute_", 1))
}

pub(crate) fn compiled_from_entry(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    entry: Entry,
    from_cache: bool,
    wrapper_failure: Option<String>,
) -> CompiledSource {
    let programs: Vec<Program> = match kind {
        SourceKind::Cuda => settings
            .program_archs()
            .into_iter()
            .map(|(target, archs)| {
                let role = ptx_role(&target.virtual_name());
                Program {
                    ptx_target: Some(target.virtual_name()),
                    ptx: entry.path(&role).unwrap_or_default(),
                    archs: archs.iter().map(ToString::to_string).collect(),
                    summary: Some(summary_path(&entry.dir, &role)),
                }
            })
            .collect(),
        SourceKind::Ptx => vec![Program {
            ptx_target: ptx_file_target(source),
            ptx: source.to_path_buf(),
            archs: settings.archs.iter().map(ToString::to_string).collect(),
            // In the entry (keyed by the source's content), not beside the user's file.
            summary: Some(summary_path(&entry.dir, "ptx")),
        }],
    };
    let shipped = programs.first().cloned();
    CompiledSource {
        ptx_target: shipped
            .as_ref()
            .and_then(|program| program.ptx_target.clone()),
        source: source.to_path_buf(),
        kind,
        ptx: shipped.map(|program| program.ptx).unwrap_or_default(),
        programs,
        binary: entry.path("binary"),
        lineinfo_ptx: entry.path(crate::compile::two_step::LINEINFO_ROLE),
        kernel_lines: entry.path(crate::compile::two_step::KERNEL_LINES_ROLE),
        compiler_log: entry.log,
        dependencies: entry.manifest.dependencies,
        from_cache,
        wrapper_failure,
        notes: Vec::new(),
    }
}

/// The cache role of the PTX for one virtual arch (`ptx.compute_90`).
pub(crate) fn ptx_role(target: &str) -> String {
    format!("ptx.{target}")
}

pub(crate) fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|error| Error::Io {
        path: to.to_path_buf(),
        error,
    })
}

/// Where the summary of the PTX with cache role `role` goes in a cache entry (read and written
/// by `crate::ptx_summary`).
pub(crate) fn summary_path(entry_dir: &Path, role: &str) -> PathBuf {
    entry_dir.join(format!("{role}.summary.json"))
}
