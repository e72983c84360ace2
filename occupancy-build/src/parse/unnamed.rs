//! ptxas warnings that change a kernel's resources but name a PTX line, not the kernel:
//! `ptxas FILE, line N; warning : .minnctapersm is ignored when neither .maxntid nor .reqntid is
//! specified.` (ptxas 12.9 and 13.0; `N` is the line of the entry's closing brace). The parser
//! keeps them as the log's; here, with the PTX at hand, each joins the kernel it concerns (the
//! lint quotes it, `occupancy_core::lint`'s `unreachable_bound`).

use std::collections::BTreeMap;

use occupancy_core::ptxas::ignores_minimum_without_block;

use super::CompiledKernel;

/// `N` of `ptxas FILE, line N; warning : ...`.
fn ptx_line(warning: &str) -> Option<u32> {
    let (_, rest) = warning.split_once(", line ")?;
    rest.split(';').next()?.trim().parse().ok()
}

/// The kernel a PTX line lies in: the last whose `.entry` line is at or before it.
fn kernel_at(entry_lines: &BTreeMap<String, u32>, line: u32) -> Option<&str> {
    entry_lines
        .iter()
        .filter(|(_, entry)| **entry <= line)
        .max_by_key(|(_, entry)| **entry)
        .map(|(name, _)| name.as_str())
}

/// Gives each of the source's unnamed `warnings` to the records of the kernel it concerns: the
/// kernel whose PTX has the shape the warning is about and, for a `.ptx` source (whose lines
/// ptxas names, `entry_lines`), whose text holds the line; for a compiled `.cu` the one kernel
/// of that shape, when only one has it.
pub(super) fn attach(
    warnings: &[String],
    kernels: &mut BTreeMap<String, CompiledKernel<'_>>,
    entry_lines: &BTreeMap<String, u32>,
) {
    for warning in warnings {
        let concerned: Vec<String> = kernels
            .values()
            .filter(|kernel| {
                kernel.records.keys().any(|arch| {
                    kernel
                        .ptx_on(arch)
                        .is_some_and(|entry| ignores_minimum_without_block(entry, warning))
                })
            })
            .map(|kernel| kernel.name.clone())
            .collect();
        let owner = match ptx_line(warning).and_then(|line| kernel_at(entry_lines, line)) {
            Some(owner) => concerned.iter().find(|name| *name == owner),
            None if concerned.len() == 1 => concerned.first(),
            None => None,
        };
        let Some(kernel) = owner.and_then(|name| kernels.get_mut(name)) else {
            continue;
        };
        let archs: Vec<String> = kernel.records.keys().cloned().collect();
        for arch in archs {
            let shaped = kernel
                .ptx_on(&arch)
                .is_some_and(|entry| ignores_minimum_without_block(entry, warning));
            if let Some(record) = kernel.records.get_mut(&arch).filter(|_| shaped) {
                if !record.warnings.contains(warning) {
                    record.warnings.push(warning.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_kernel_whose_text_holds_it() {
        let lines = BTreeMap::from([("a".to_string(), 15), ("b".to_string(), 40)]);
        assert_eq!(ptx_line("ptxas /x/k.ptx, line 38; warning : .minnctapersm is ignored when neither .maxntid nor .reqntid is specified."), Some(38));
        assert_eq!(kernel_at(&lines, 38), Some("a"));
        assert_eq!(kernel_at(&lines, 40), Some("b"));
        assert_eq!(kernel_at(&lines, 3), None);
    }
}
