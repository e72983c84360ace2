//! A kernel's PTX with one bound in its `.entry` directives, for ptxas to assemble.

use super::{Bound, Knob};

/// Why a kernel's PTX could not be given a bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BoundPatchError {
    /// No `.entry NAME(` in the PTX.
    #[error("the PTX defines no kernel `{0}` (no `.entry {0}(`)")]
    NoEntry(String),
    /// The entry's parameter list or body was not found.
    #[error("the PTX of kernel `{0}` has no parameter list closed by `)` before its body `{{`")]
    Malformed(String),
}

/// Directives `with_bound` replaces: the bound of any earlier choice.
const BOUND_DIRECTIVES: [&str; 2] = [".minnctapersm", ".maxnreg"];

/// `ptx` with the directives of kernel `name` set to `bound`, as nvcc writes them for the
/// qualifiers [`Bound::qualifiers`] names: any `.minnctapersm` and `.maxnreg` removed, then, for
/// [`Knob::MinBlocksPerSm`], `.maxntid threads, 1, 1` (replacing the entry's own unless it has
/// `.reqntid`) and `.minnctapersm B`; for [`Knob::MaxRegisters`], `.maxnreg R`. Everything else
/// is kept byte for byte, so the compile differs from the kernel's own only in the bound.
pub fn with_bound(
    ptx: &str,
    name: &str,
    knob: Knob,
    bound: Bound,
    threads: u32,
) -> Result<String, BoundPatchError> {
    let entry = ptx
        .find(&format!(".entry {name}("))
        .ok_or_else(|| BoundPatchError::NoEntry(name.to_string()))?;
    let malformed = || BoundPatchError::Malformed(name.to_string());
    let parameters_end = entry + ptx[entry..].find(')').ok_or_else(malformed)? + 1;
    let body = parameters_end + ptx[parameters_end..].find('{').ok_or_else(malformed)?;
    let directives = &ptx[parameters_end..body];
    let has_reqntid = directives
        .lines()
        .any(|line| line.trim_start().starts_with(".reqntid"));
    let mut kept: Vec<String> = directives
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .filter(|line| !BOUND_DIRECTIVES.iter().any(|word| line.starts_with(word)))
        .filter(|line| knob == Knob::MaxRegisters || !line.starts_with(".maxntid"))
        .map(str::to_string)
        .collect();
    if knob == Knob::MinBlocksPerSm && !has_reqntid {
        kept.push(format!(".maxntid {threads}, 1, 1"));
    }
    match bound {
        Bound::None => {}
        Bound::MinBlocksPerSm(blocks) => kept.push(format!(".minnctapersm {blocks}")),
        Bound::MaxRegisters(registers) => kept.push(format!(".maxnreg {registers}")),
    }
    let mut patched = String::with_capacity(ptx.len() + 64);
    patched.push_str(&ptx[..parameters_end]);
    patched.push('\n');
    for line in kept {
        patched.push_str(&line);
        patched.push('\n');
    }
    patched.push_str(&ptx[body..]);
    Ok(patched)
}
