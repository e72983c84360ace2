//! Notes on a compile ptxas refused because of `.pragma "enable_smem_spilling"` (CUDA 13's
//! shared-memory register spilling). ptxas's fatal error names no kernel
//! (docs/ptxas-formats.md, "Shared-memory register spilling"); the PTX of the failed compile,
//! kept in its work directory, does: the kernels with the pragma that name dynamic shared memory
//! (`extern __shared__`), or every kernel with the pragma when the compile is relocatable.

use std::path::{Path, PathBuf};

use occupancy_core::ptxas::{parse_ptx_directives, PtxEntry};

use crate::Error;

/// ptxas's refusal of the pragma in a kernel with dynamic shared memory.
pub(crate) const DYNAMIC_REFUSAL: &str =
    "Pragma 'enable_smem_spilling' is not allowed for dynamic SMEM";
/// ptxas's refusal of the pragma in relocatable device code (`-rdc=true`, `-dc`).
pub(crate) const RELOCATABLE_REFUSAL: &str =
    "Pragma 'enable_smem_spilling' is not allowed for per-function compilation modes";

/// `error` with notes naming the kernels and the fix when it is ptxas refusing the pragma; the
/// PTX is read from `work` (the compile's kept files) and from `source` when it is PTX itself.
pub(crate) fn annotate(mut error: Error, work: &Path, source: &Path) -> Error {
    let Error::NvccFailed {
        diagnostics, notes, ..
    } = &mut error
    else {
        return error;
    };
    let dynamic = diagnostics.contains(DYNAMIC_REFUSAL);
    if dynamic || diagnostics.contains(RELOCATABLE_REFUSAL) {
        let entries = entries_with_pragma(&ptx_files(work, source));
        notes.extend(match dynamic {
            true => dynamic_notes(&entries),
            false => vec![relocatable_note(&entries)],
        });
    }
    error
}

/// The PTX files a failed compile left: every `.ptx` in `work`, and `source` if it is one.
fn ptx_files(work: &Path, source: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(work)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "ptx"))
        .collect();
    files.sort();
    if source
        .extension()
        .is_some_and(|extension| extension == "ptx")
    {
        files.push(source.to_path_buf());
    }
    files
}

/// Every entry with the pragma in `files`, each kernel once.
fn entries_with_pragma(files: &[PathBuf]) -> Vec<PtxEntry> {
    let mut entries: Vec<PtxEntry> = Vec::new();
    for text in files
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
    {
        for entry in parse_ptx_directives(&text) {
            let known = entries.iter().any(|seen| seen.name == entry.name);
            if entry.smem_spilling.is_some() && !known {
                entries.push(entry);
            }
        }
    }
    entries
}

fn shown(entry: &PtxEntry) -> &str {
    entry.demangled.as_deref().unwrap_or(&entry.name)
}

/// A note per kernel with the pragma and dynamic shared memory; one naming the kernels with the
/// pragma when none names it itself (a function it calls may).
fn dynamic_notes(entries: &[PtxEntry]) -> Vec<String> {
    let refused: Vec<String> = entries
        .iter()
        .filter(|entry| !entry.dynamic_shared.is_empty())
        .map(|entry| {
            format!(
                "kernel `{}` asks ptxas to spill registers to shared memory (`.pragma \"enable_smem_spilling\"`) and uses dynamic shared memory (`{}`, `extern __shared__`): ptxas refuses the pragma in such a kernel; remove the pragma from `{}`, or give it static shared memory (`__shared__ T name[N]`) in place of the dynamic",
                shown(entry),
                entry.dynamic_shared.join("`, `"),
                shown(entry)
            )
        })
        .collect();
    if !refused.is_empty() {
        return refused;
    }
    vec![format!(
        "ptxas refuses `.pragma \"enable_smem_spilling\"` in a kernel that uses dynamic shared memory (`extern __shared__`), here through a function it calls; the kernels with the pragma: {}",
        names(entries)
    )]
}

fn relocatable_note(entries: &[PtxEntry]) -> String {
    format!(
        "ptxas refuses `.pragma \"enable_smem_spilling\"` in relocatable device code (`-rdc=true`, `-dc`): it spills to shared memory only in whole-program compiles; remove the pragma from {}, or compile without `-rdc=true`",
        names(entries)
    )
}

/// `` `a`, `b` `` or `the kernels that have it` when the PTX could not be read.
fn names(entries: &[PtxEntry]) -> String {
    match entries.is_empty() {
        true => "the kernels that have it".to_string(),
        false => entries
            .iter()
            .map(|entry| format!("`{}`", shown(entry)))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 9.0
.target sm_90
.extern .shared .align 16 .b8 dyn[];
.visible .entry dyn_spill()
{
\t.pragma \"enable_smem_spilling\";
\tmov.u32 %r1, dyn;
\tret;
}
.visible .entry _Z11plain_spillv()
{
\t.pragma \"enable_smem_spilling\";
\tret;
}
";

    fn failed(diagnostics: &str) -> Error {
        Error::NvccFailed {
            file: PathBuf::from("k.cu"),
            status: "exit status: 255".into(),
            diagnostics: diagnostics.into(),
            command: "nvcc ...".into(),
            notes: Vec::new(),
        }
    }

    fn notes(error: Error) -> Vec<String> {
        match error {
            Error::NvccFailed { notes, .. } => notes,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_refused_kernel_and_the_fix_are_named_from_the_kept_ptx() {
        let work =
            std::env::temp_dir().join(format!("occupancy-smem-notes-{}", std::process::id()));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("k.ptx"), PTX).unwrap();
        let source = Path::new("k.cu");
        let dynamic = notes(annotate(
            failed(&format!("ptxas fatal   : {DYNAMIC_REFUSAL}\n")),
            &work,
            source,
        ));
        assert_eq!(dynamic.len(), 1, "{dynamic:?}");
        assert!(dynamic[0].starts_with("kernel `dyn_spill` asks ptxas to spill registers to shared memory (`.pragma \"enable_smem_spilling\"`) and uses dynamic shared memory (`dyn`, `extern __shared__`)"), "{}", dynamic[0]);
        let relocatable = notes(annotate(
            failed(&format!("ptxas fatal   : {RELOCATABLE_REFUSAL}\n")),
            &work,
            source,
        ));
        assert_eq!(relocatable.len(), 1);
        assert!(relocatable[0].contains("remove the pragma from `dyn_spill`, `plain_spill()`, or compile without `-rdc=true`"), "{}", relocatable[0]);
        assert!(notes(annotate(failed("ptxas fatal   : other\n"), &work, source)).is_empty());
        let _ = std::fs::remove_dir_all(work);
    }
}
