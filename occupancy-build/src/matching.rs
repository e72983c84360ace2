//! Matching compiled kernels to declarations: exact names, demangled names, family patterns;
//! and every `[package.metadata.occupancy.kernels.<name>]` table must name a kernel.

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::spec::{self};

use crate::declarations::Declarations;
use crate::error::FamilyDeclaration;
use crate::parse::CompiledKernel;
use crate::Error;

/// Which declaration checks which compiled kernel.
#[derive(Default)]
pub(crate) struct Matching {
    /// Kernel index -> declaration index.
    pub(crate) by_kernel: BTreeMap<usize, usize>,
    /// Declarations that matched a kernel: an exact one that took it, a family whose pattern
    /// matches one (even where an exact declaration took it). Whether a declaration matched
    /// nothing is settled over every product of the build script (`crate_view.rs`).
    pub(crate) matched: BTreeSet<usize>,
}

/// Matches declarations to compiled kernels: an exact declaration by symbol (else a unique
/// demangled base name); every kernel no exact declaration took, by the one family pattern that
/// matches it. Exact beats pattern; two patterns matching one kernel is an error naming both.
pub(crate) fn match_declarations(
    kernels: &[CompiledKernel<'_>],
    declarations: &Declarations,
) -> Result<Matching, Error> {
    let mut by_kernel: BTreeMap<usize, usize> = BTreeMap::new();
    let mut matched = BTreeSet::new();
    let mut families = Vec::new();
    for (declaration_index, declared) in declarations.kernels.iter().enumerate() {
        if declared.kernel.spec.family.is_some() {
            families.push(declaration_index);
            continue;
        }
        let wanted = &declared.kernel.kernel_name;
        let exact = kernels.iter().position(|kernel| &kernel.name == wanted);
        let by_demangled = || {
            let candidates: Vec<usize> = kernels
                .iter()
                .enumerate()
                .filter(|(_, kernel)| {
                    kernel
                        .demangled
                        .as_deref()
                        .and_then(|name| name.split('(').next())
                        .map(|base| base.rsplit("::").next() == Some(wanted) || base == wanted)
                        == Some(true)
                })
                .map(|(index, _)| index)
                .collect();
            (candidates.len() == 1).then(|| candidates[0])
        };
        if let Some(index) = exact.or_else(by_demangled) {
            by_kernel.insert(index, declaration_index);
            matched.insert(declaration_index);
        }
    }
    for &family_index in &families {
        let pattern = declarations.kernels[family_index]
            .kernel
            .kernel_name
            .as_str();
        for (kernel_index, kernel) in kernels.iter().enumerate() {
            if !spec::family_matches(pattern, &kernel.name) {
                continue;
            }
            matched.insert(family_index);
            match by_kernel.get(&kernel_index) {
                None => {
                    by_kernel.insert(kernel_index, family_index);
                }
                Some(&other) if declarations.kernels[other].kernel.spec.family.is_some() => {
                    return Err(two_families(declarations, kernel, other, family_index));
                }
                Some(_) => {} // an exact declaration beats the pattern
            }
        }
    }
    Ok(Matching { by_kernel, matched })
}

pub(crate) fn two_families(
    declarations: &Declarations,
    kernel: &CompiledKernel<'_>,
    first: usize,
    second: usize,
) -> Error {
    let family = |index: usize| {
        let declared = &declarations.kernels[index];
        FamilyDeclaration::new(
            declared.kernel.kernel_name.clone(),
            declarations.location(declared),
        )
    };
    Error::AmbiguousFamily {
        kernel: kernel.name.clone(),
        families: Box::new([family(first), family(second)]),
    }
}
