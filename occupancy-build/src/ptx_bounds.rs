//! The bounds `"auto"` chose, carried into the kernels of `.ptx` inputs. A `.cu` takes them from
//! `occupancy_bounds.h`; a PTX file includes nothing, so the build writes a copy of it into
//! `OUT_DIR/occupancy/ptx-bounds/` with each chosen kernel's `.entry` directives set
//! (`occupancy_core::tune::with_bound_in_place`: every line where it was, so the report's line
//! numbers stay the input's), compiles the copy in its place and ships it. The input is never
//! written. A kernel whose choice is no bound keeps its PTX as written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_core::tune::{with_bound_in_place, Bound};

use crate::context::{Context, SourceKind};
use crate::declarations::Declarations;
use crate::header_choices::HeaderChoices;
use crate::Error;

/// For each `.ptx` input whose kernels got a bound, the copy that carries it.
pub(crate) type PtxBounds = BTreeMap<PathBuf, PathBuf>;

/// Writes the copies the `choices` call for (only those that change) and says which input each
/// replaces. A choice counts only for a kernel `declarations` still declare `"auto"` for its
/// knob and block (what a build remembers may be older than the declaration).
pub(crate) fn write_ptx_bounds(
    context: &Context,
    declarations: &Declarations,
    choices: &HeaderChoices,
) -> Result<PtxBounds, Error> {
    let mut current = HeaderChoices::default();
    for declared in &declarations.kernels {
        let name = &declared.kernel.kernel_name;
        let threads = declared.kernel.spec.block.threads();
        let still = crate::auto_bounds::knob_of(declared).and_then(|knob| {
            choices
                .of(name)
                .filter(|chosen| chosen.holds_for(knob, threads))
        });
        if let Some(chosen) = still {
            current.insert(name.clone(), chosen.clone());
        }
    }
    if current.iter().next().is_none() {
        // No kernel has a choice to carry: no PTX input is read (a crate of large PTX files
        // and no "auto" pays nothing here).
        return Ok(PtxBounds::new());
    }
    let choices = &current;
    let mut bounds = PtxBounds::new();
    for (source, kind) in &context.sources {
        if *kind != SourceKind::Ptx {
            continue;
        }
        let text = crate::fsutil::read(source)?;
        let text = String::from_utf8_lossy(&text);
        let Some(patched) = with_choices(source, &text, choices)? else {
            continue;
        };
        let name = source.file_name().unwrap_or_default();
        let copy = context.out_dir.join("occupancy/ptx-bounds").join(name);
        if let Some(dir) = copy.parent() {
            std::fs::create_dir_all(dir).map_err(|error| Error::Io {
                path: dir.to_path_buf(),
                error,
            })?;
        }
        crate::fsutil::write_if_changed(&copy, patched.as_bytes())?;
        bounds.insert(source.clone(), copy);
    }
    Ok(bounds)
}

/// `text` (the PTX of `source`) with the bound chosen for each of its kernels under its
/// `.target`'s `__CUDA_ARCH__`; `None` when no kernel of it has one.
fn with_choices(
    source: &Path,
    text: &str,
    choices: &HeaderChoices,
) -> Result<Option<String>, Error> {
    let Some(cuda_arch) = crate::compile::ptx_file_target(source).and_then(|target| {
        let digits: String = (target.strip_prefix("compute_")?.chars())
            .take_while(char::is_ascii_digit)
            .collect();
        Some(digits.parse::<u32>().ok()? * 10)
    }) else {
        return Ok(None);
    };
    let mut patched: Option<String> = None;
    for (kernel, chosen) in choices.iter() {
        let bound = chosen.by_cuda_arch.get(&cuda_arch).copied();
        let current = patched.as_deref().unwrap_or(text);
        if bound.is_none_or(|bound| bound == Bound::None)
            || !current.contains(&format!(".entry {kernel}("))
        {
            continue;
        }
        let bound = bound.unwrap_or(Bound::None);
        let with = with_bound_in_place(current, kernel, chosen.knob, bound, chosen.threads)
            .map_err(|error| Error::AutoBounds {
                kernel: kernel.clone(),
                knob: chosen.knob.key(),
                message: format!(
                    "its chosen bound could not be written into {}: {error}",
                    source.display()
                ),
            })?;
        patched = Some(with);
    }
    Ok(patched)
}
