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
/// `.reqntid`) and `.minnctapersm B`, or no `.maxntid` at all for [`Bound::NoLaunchBounds`];
/// for [`Knob::MaxRegisters`], `.maxnreg R`. Everything else
/// is kept byte for byte, so the compile differs from the kernel's own only in the bound.
pub fn with_bound(
    ptx: &str,
    name: &str,
    knob: Knob,
    bound: Bound,
    threads: u32,
) -> Result<String, BoundPatchError> {
    let (parameters_end, body, kept) = directives_with_bound(ptx, name, knob, bound, threads)?;
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

/// [`with_bound`], keeping every line where it was: the entry's directives on one line (or on
/// the line of its `)` when they shared it), the lines they took before kept empty. For a PTX
/// the build ships in place of a `.ptx` input, whose kernels' line numbers the report gives.
pub fn with_bound_in_place(
    ptx: &str,
    name: &str,
    knob: Knob,
    bound: Bound,
    threads: u32,
) -> Result<String, BoundPatchError> {
    let (parameters_end, body, kept) = directives_with_bound(ptx, name, knob, bound, threads)?;
    let newlines = ptx[parameters_end..body].matches('\n').count();
    let mut patched = String::with_capacity(ptx.len() + 64);
    patched.push_str(&ptx[..parameters_end]);
    if newlines == 0 {
        patched.push(' ');
        patched.push_str(&kept.join(" "));
        patched.push(' ');
    } else {
        patched.push('\n');
        patched.push_str(&kept.join(" "));
        match newlines {
            1 => patched.push(' '),
            _ => patched.push_str(&"\n".repeat(newlines - 1)),
        }
    }
    patched.push_str(&ptx[body..]);
    Ok(patched)
}

/// Where kernel `name`'s directives are in `ptx` (after its parameter list, before its body)
/// and what they become with `bound`, one directive per item.
fn directives_with_bound(
    ptx: &str,
    name: &str,
    knob: Knob,
    bound: Bound,
    threads: u32,
) -> Result<(usize, usize, Vec<String>), BoundPatchError> {
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
    if knob == Knob::MinBlocksPerSm && !has_reqntid && bound != Bound::NoLaunchBounds {
        kept.push(format!(".maxntid {threads}, 1, 1"));
    }
    match bound {
        Bound::None | Bound::NoLaunchBounds => {}
        Bound::MinBlocksPerSm(blocks) => kept.push(format!(".minnctapersm {blocks}")),
        Bound::MaxRegisters(registers) => kept.push(format!(".maxnreg {registers}")),
    }
    Ok((parameters_end, body, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = ".visible .entry k(\n\t.param .u64 k_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{\n\tret;\n}\n.visible .entry j(\n\t.param .u64 j_param_0\n) {\n\tret;\n}\n.visible .entry i(\n\t.param .u64 i_param_0\n)\n{\n\tret;\n}\n";

    #[test]
    fn in_place_keeps_every_line_where_it_was() {
        // Kernel `k` at 5 blocks per SM of 128 threads, by either patcher.
        type Patcher = fn(&str, &str, Knob, Bound, u32) -> Result<String, BoundPatchError>;
        let five_blocks_of_128 = |patch: Patcher| {
            patch(
                PTX,
                "k",
                Knob::MinBlocksPerSm,
                Bound::MinBlocksPerSm(5),
                128,
            )
            .unwrap()
        };
        let patched = five_blocks_of_128(with_bound_in_place);
        assert_eq!(patched.lines().count(), PTX.lines().count());
        assert!(
            patched.contains(")\n.maxntid 128, 1, 1 .minnctapersm 5\n\n{"),
            "{patched}"
        );
        let line_of = |text: &str, what: &str| text.lines().position(|line| line.contains(what));
        assert_eq!(line_of(&patched, ".entry j("), line_of(PTX, ".entry j("));
        // An entry whose directives shared the line of its `)`: they stay on it.
        let tight =
            with_bound_in_place(PTX, "j", Knob::MaxRegisters, Bound::MaxRegisters(64), 0).unwrap();
        assert_eq!(tight.lines().count(), PTX.lines().count());
        assert!(tight.contains(") .maxnreg 64 {"), "{tight}");
        let next =
            with_bound_in_place(PTX, "i", Knob::MaxRegisters, Bound::MaxRegisters(64), 0).unwrap();
        assert_eq!(next.lines().count(), PTX.lines().count());
        assert!(next.contains(")\n.maxnreg 64 {"), "{next}");
        // The same directives as with_bound writes.
        let moved = five_blocks_of_128(with_bound);
        assert!(
            moved.contains(")\n.maxntid 128, 1, 1\n.minnctapersm 5\n{"),
            "{moved}"
        );
    }

    #[test]
    fn no_launch_bounds_drops_the_block_and_every_bound() {
        let bare = with_bound(PTX, "k", Knob::MinBlocksPerSm, Bound::NoLaunchBounds, 256).unwrap();
        let entry = &bare[bare.find(".entry k(").unwrap()..bare.find(".entry j(").unwrap()];
        assert!(!entry.contains(".maxntid"), "{entry}");
        assert!(!entry.contains(".minnctapersm"), "{entry}");
        assert_eq!(
            Bound::NoLaunchBounds.qualifiers(Knob::MinBlocksPerSm, 256),
            ""
        );
        // The other kernels keep their directives.
        assert_eq!(
            bare[bare.find(".entry j(").unwrap()..],
            PTX[PTX.find(".entry j(").unwrap()..]
        );
    }
}
