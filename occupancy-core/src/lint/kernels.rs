//! `missing_kernel` and `undeclared_kernel`: declarations matched against the compiled kernels'
//! names. The build matches them; these functions make the findings.

use super::finding::Finding;
use super::id::LintId;
use super::names::closest_names;

/// Names a "did you mean" or a note lists at most.
pub const NAMES_SHOWN: usize = 5;

/// `name1, name2, name3 (+595 more)`: at most [`NAMES_SHOWN`] names of a list.
pub(crate) fn few_names(names: &[&str]) -> String {
    let mut text = names
        .iter()
        .take(NAMES_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_SHOWN {
        text.push_str(&format!(" (+{} more)", names.len() - NAMES_SHOWN));
    }
    text
}

/// `3 kernels compiled: a, b, c` (or `no kernel was compiled`): the note of a `missing_kernel`
/// finding with no close names to offer. A declared kernel and a family that match nothing list
/// what was compiled in the same words.
fn compiled_kernels_note(compiled_names: &[&str]) -> String {
    match compiled_names.len() {
        0 => "no kernel was compiled".to_string(),
        1 => format!("1 kernel compiled: {}", few_names(compiled_names)),
        count => format!("{count} kernels compiled: {}", few_names(compiled_names)),
    }
}

/// `missing_kernel`: declared, but no compiled entry has its name; suggests the closest one (by
/// edit distance) and lists a few close names, never all of them.
pub fn missing_kernel(kernel_name: &str, compiled_names: &[&str]) -> Finding {
    let close = closest_names(kernel_name, compiled_names.iter().copied(), NAMES_SHOWN);
    // No compiled names give no close ones, so the count note speaks for an empty build.
    let note = if close.len() > 1 {
        format!(
            "close compiled names: {} ({} kernels compiled)",
            close.join(", "),
            compiled_names.len()
        )
    } else {
        compiled_kernels_note(compiled_names)
    };
    Finding {
        arch: None,
        message: format!("declared kernel `{kernel_name}` is not in any compiled output"),
        notes: vec![note],
        help: Some(match close.first() {
            Some(name) => format!("did you mean `name = \"{name}\"`?"),
            None => "set `name = \"...\"` to the compiled symbol (mangled for C++ kernels), declare the kernel `extern \"C\"`, or add its file to the builder".into(),
        }),
        ..Finding::new(LintId::MissingKernel)
    }
}

/// `missing_kernel` for a family: its pattern matches no compiled kernel.
pub fn family_matches_nothing(pattern: &str, compiled_names: &[&str]) -> Finding {
    Finding {
        arch: None,
        message: format!("kernel family `{pattern}` matches no compiled kernel"),
        notes: vec![compiled_kernels_note(compiled_names)],
        help: Some("fix the pattern (`*` stands for any run of characters; the rest must match the compiled symbol exactly), or remove the declaration".into()),
        ..Finding::new(LintId::MissingKernel)
    }
}

/// `arch_specific_ptx`: the PTX module `module` targets `target` (`sm_90a`), for the kernels
/// it holds.
pub fn arch_specific_ptx(module: &str, target: &str, kernels: &[&str]) -> Finding {
    let portable = target.trim_end_matches('a').replace("sm_", "compute_");
    let shown = match kernels {
        [] => "no kernel".to_owned(),
        [one] => format!("kernel `{one}`"),
        [first, rest @ ..] => format!("kernel `{first}` and {} more", rest.len()),
    };
    Finding {
        arch: None,
        message: format!(
            "{module} is PTX for {target} only ({shown}): the driver cannot JIT-compile arch-specific PTX for any newer GPU"
        ),
        notes: vec![format!(
            "ptxas refuses it for any other architecture (\"cannot be compiled to future architecture\"); a GPU of a newer compute capability cannot load these kernels"
        )],
        help: Some(format!(
            "ship portable PTX beside it ({portable}), or build for the plain architecture when the kernels use no `a` feature (wgmma, setmaxnreg)"
        )),
        ..Finding::new(LintId::ArchSpecificPtx)
    }
}

/// `undeclared_kernel`: compiled, with no declaration.
pub fn undeclared_kernel(kernel_name: &str, source: &str) -> Finding {
    Finding {
        arch: None,
        message: format!(
            "kernel `{kernel_name}` from {source} has no `#[occupancy::kernel]` declaration"
        ),
        notes: Vec::new(),
        help: Some(
            "declare it next to its Rust stub with `#[occupancy::kernel(block = ...)]`".into(),
        ),
        ..Finding::new(LintId::UndeclaredKernel)
    }
}
