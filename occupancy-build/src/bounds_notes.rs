//! Notes on nvcc failures caused by an `OCCUPANCY_BOUNDS_<name>`-style macro that is not
//! defined. A `.cu` that writes `__global__ void OCCUPANCY_BOUNDS_scale scale(...)` with no
//! `#[occupancy::kernel]` declaration of `scale` gets only nvcc's `incomplete type "void" is not
//! allowed`; the note says which macro is undefined and why (no declaration names the kernel, the
//! declaration sets no such key, the header is not included, or there is no package at all).
//!
//! The pipeline, which knows the declarations, hands [`DefinedBounds`] to [`annotate`] when the
//! compile stage fails; the compile stage itself knows nothing of declarations. The macros are
//! looked for in nvcc's output (it echoes the offending source line under each error) and in the
//! source at each line an error names.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::declarations::{bounds_macros, bounds_suffix, Declarations};
use crate::Error;

/// The macro kinds of `occupancy_bounds.h`, longest first where one is a prefix of another.
const KINDS: [&str; 5] = [
    "LAUNCH_BOUNDS",
    "BLOCK_THREADS",
    "MIN_BLOCKS_PER_SM",
    "MAX_REGISTERS",
    "BOUNDS",
];

/// What `occupancy_bounds.h` defines for this build.
#[derive(Debug, Default)]
pub(crate) struct DefinedBounds {
    /// Every macro the header defines.
    macros: BTreeSet<String>,
    /// The suffixes declared (`scale`, `FAMILY_affine`).
    suffixes: BTreeSet<String>,
    /// `false` for `cargo occupancy check`: no package, no declarations, no header.
    package: bool,
}

impl DefinedBounds {
    /// What the header written from `declarations` defines (the same macros, by construction).
    pub(crate) fn of(declarations: &Declarations) -> DefinedBounds {
        let mut defined = DefinedBounds {
            package: true,
            ..DefinedBounds::default()
        };
        for declared in &declarations.kernels {
            let Some(suffix) = bounds_suffix(declared) else {
                continue;
            };
            for line in bounds_macros(&suffix, &declared.kernel.spec, None).lines() {
                if let Some(name) = line
                    .strip_prefix("#define ")
                    .and_then(|rest| rest.split(' ').next())
                {
                    defined.macros.insert(name.to_string());
                }
            }
            defined.suffixes.insert(suffix);
        }
        defined
    }

    /// A check of sources without a package (`cargo occupancy check`): nothing is declared.
    pub(crate) fn without_package() -> DefinedBounds {
        DefinedBounds::default()
    }
}

/// `error` with a note on each undefined bounds macro its nvcc failures mention.
pub(crate) fn annotate(error: Error, defined: &DefinedBounds) -> Error {
    match error {
        Error::Several(errors) => Error::Several(
            errors
                .into_iter()
                .map(|error| annotate(error, defined))
                .collect(),
        ),
        mut error => {
            if let Error::NvccFailed {
                file,
                diagnostics,
                notes,
                ..
            } = &mut error
            {
                notes.extend(notes_for(diagnostics, file, defined));
            }
            error
        }
    }
}

/// The notes for one failed compile of `source` whose output was `diagnostics`.
fn notes_for(diagnostics: &str, source: &Path, defined: &DefinedBounds) -> Vec<String> {
    let mut sources = SourceLines::new(source);
    let mut tokens: BTreeSet<&str> = macro_tokens(diagnostics).collect();
    let mut reported = Vec::new();
    for (file, line) in error_locations(diagnostics) {
        if let Some(text) = sources.line(file, line) {
            reported.push(text.to_string());
        }
    }
    tokens.extend(reported.iter().flat_map(|line| macro_tokens(line)));
    let includes_header = sources
        .text_of(source)
        .is_some_and(|text| text.contains("occupancy_bounds.h"));
    tokens
        .into_iter()
        .filter_map(|token| note_for(token, defined, includes_header, source))
        .collect()
}

/// The note on one macro token, `None` when it is defined and the header is included.
fn note_for(
    token: &str,
    defined: &DefinedBounds,
    includes_header: bool,
    source: &Path,
) -> Option<String> {
    let (kind, suffix) = split_token(token)?;
    let shown = crate::fsutil::shown_path(source);
    if !defined.package {
        return Some(format!(
            "`{token}` is not defined: `cargo occupancy check` compiles .cu files without a package, so no `#[occupancy::kernel]` declaration defines it; define it on the command line (`-- -D{token}=...`), or check the crate with `cargo build`"
        ));
    }
    if defined.macros.contains(token) {
        return (!includes_header).then(|| format!(
            "`{token}` is defined in occupancy_bounds.h, which the build writes to OUT_DIR (on nvcc's include path): add `#include \"occupancy_bounds.h\"` to {shown} before its first use"
        ));
    }
    if defined.suffixes.contains(suffix) {
        let key = match kind {
            "MIN_BLOCKS_PER_SM" => "min_blocks_per_sm",
            _ => "max_registers",
        };
        return Some(format!(
            "`{token}` is not defined: the declaration of `{}` sets no `{key}`",
            suffix.strip_prefix("FAMILY_").unwrap_or(suffix)
        ));
    }
    Some(undeclared_note(token, suffix, defined))
}

/// `OCCUPANCY_BOUNDS_scale` with no declaration named `scale`: the declared names, the closest.
fn undeclared_note(token: &str, suffix: &str, defined: &DefinedBounds) -> String {
    let (what, name, family) = match suffix.strip_prefix("FAMILY_") {
        Some(family) => (
            format!("no `#[occupancy::kernel(family = ...)]` stub is named `{family}`"),
            family,
            true,
        ),
        None => (
            format!("no `#[occupancy::kernel]` declaration names kernel `{suffix}`"),
            suffix,
            false,
        ),
    };
    let candidates: Vec<&str> = defined
        .suffixes
        .iter()
        .filter(|declared| declared.starts_with("FAMILY_") == family)
        .map(|declared| declared.strip_prefix("FAMILY_").unwrap_or(declared))
        .collect();
    const LISTED: usize = 10;
    let mut listed: Vec<String> = candidates
        .iter()
        .take(LISTED)
        .map(|name| format!("`{name}`"))
        .collect();
    if candidates.len() > LISTED {
        listed.push(format!("and {} more", candidates.len() - LISTED));
    }
    let declared = if listed.is_empty() {
        "this package declares none".to_string()
    } else {
        format!("declared: {}", listed.join(", "))
    };
    let suggestion = occupancy_core::lint::did_you_mean(name, candidates.iter().copied())
        .map(|closest| format!("; did you mean `{closest}`?"))
        .unwrap_or_default();
    format!("`{token}` is not defined: {what} ({declared}{suggestion})")
}

/// `OCCUPANCY_<KIND>_<suffix>` → (kind, suffix); `None` for anything else (the function-like
/// `OCCUPANCY_BOUNDS_FAMILY(F)` included).
fn split_token(token: &str) -> Option<(&'static str, &str)> {
    let rest = token.strip_prefix("OCCUPANCY_")?;
    KINDS.iter().find_map(|kind| {
        let suffix = rest.strip_prefix(kind)?.strip_prefix('_')?;
        (!suffix.is_empty() && suffix != "FAMILY").then_some((*kind, suffix))
    })
}

/// Every `OCCUPANCY_...` identifier in `text`.
fn macro_tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(offset) = text[from..].find("OCCUPANCY_") {
            let start = from + offset;
            let end = start
                + text[start..]
                    .bytes()
                    .take_while(|byte| byte.is_ascii_alphanumeric() || *byte == b'_')
                    .count();
            from = end;
            let identifier_start = text[..start]
                .bytes()
                .last()
                .is_none_or(|byte| !(byte.is_ascii_alphanumeric() || byte == b'_'));
            if identifier_start && split_token(&text[start..end]).is_some() {
                return Some(&text[start..end]);
            }
        }
        None
    })
}

/// The `FILE(LINE): error` / `catastrophic error` locations of nvcc's front end.
fn error_locations(diagnostics: &str) -> impl Iterator<Item = (&str, usize)> {
    diagnostics.lines().filter_map(|line| {
        let (location, after) = line.split_once("): ")?;
        if !(after.starts_with("error") || after.starts_with("catastrophic error")) {
            return None;
        }
        let (file, number) = location.rsplit_once('(')?;
        Some((file, number.parse().ok()?))
    })
}

/// Source files read for the lines errors name: each at most once, a few files, none large.
struct SourceLines<'a> {
    source: &'a Path,
    texts: HashMap<PathBuf, Option<String>>,
}

/// Files read per failure, and the largest read: a source line is all that is wanted.
const MAX_FILES: usize = 16;
const MAX_FILE_BYTES: u64 = 16 << 20;

impl<'a> SourceLines<'a> {
    fn new(source: &'a Path) -> SourceLines<'a> {
        SourceLines {
            source,
            texts: HashMap::new(),
        }
    }

    /// Line `number` (1-based) of `file` as nvcc named it: the path itself, or the failing
    /// source when only its file name matches.
    fn line(&mut self, file: &str, number: usize) -> Option<&str> {
        let path = Path::new(file);
        let path = if path.is_file() {
            path.to_path_buf()
        } else if path.file_name() == self.source.file_name() {
            self.source.to_path_buf()
        } else {
            return None;
        };
        self.text_of(&path)?.lines().nth(number.checked_sub(1)?)
    }

    fn text_of(&mut self, path: &Path) -> Option<&str> {
        if !self.texts.contains_key(path) && self.texts.len() >= MAX_FILES {
            return None;
        }
        self.texts
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let small = std::fs::metadata(path).is_ok_and(|meta| meta.len() <= MAX_FILE_BYTES);
                small.then(|| std::fs::read_to_string(path).ok()).flatten()
            })
            .as_deref()
    }
}

#[cfg(test)]
mod tests;

/// The help of a `bounds_mismatch` on a kernel of a `.ptx` input (`shown`), which no header
/// reaches: the `.entry` `directives` that carry the declared bounds
/// (`CompiledOnArch::entry_directives`), for whatever makes the PTX.
pub(crate) fn ptx_input_help(shown: &str, directives: &str) -> String {
    format!(
        "`{shown}` is PTX, which takes no `occupancy_bounds.h`: write `{directives}` into the kernel's `.entry` where that PTX is made, or declare what it has"
    )
}
