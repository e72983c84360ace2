//! Which `[package.metadata.occupancy.kernels.<name>]` table speaks for a compiled kernel.
//!
//! A table is named for a kernel by its symbol (`_Z13mul_mat_vec_qILi1EEvPKfS1_Pfi`), its
//! readable name (`mul_mat_vec_q<1>`) or the Rust name of its declaration, or for many kernels
//! by a pattern with `*` over the symbol or the readable name (`"mul_mat_vec_*"`), as a
//! family declaration is. A table named for the kernel beats a pattern; two patterns matching
//! one kernel is an error naming both (neither is more specific).

use std::collections::BTreeSet;

use occupancy_core::lint::evaluate::TableLaunch;
use occupancy_core::report::readable_kernel_name;
use occupancy_core::spec::family_matches;

use crate::config::OccupancySettings;
use crate::declarations::Declarations;
use crate::matching::Matching;
use crate::parse::CompiledKernel;
use crate::Error;

/// The names of every kernel table, exact ones and patterns apart.
#[derive(Debug, Clone, Default)]
pub(crate) struct KernelTables {
    exact: BTreeSet<String>,
    patterns: Vec<String>,
}

/// How a compiled kernel is named: what a table may be keyed by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelNames<'a> {
    pub(crate) symbol: &'a str,
    pub(crate) readable: &'a str,
    pub(crate) rust_name: Option<&'a str>,
}

impl<'a> KernelNames<'a> {
    /// The names of a kernel known by its symbol and demangled name.
    pub(crate) fn of(
        symbol: &'a str,
        demangled: Option<&'a str>,
        rust_name: Option<&'a str>,
    ) -> KernelNames<'a> {
        KernelNames {
            symbol,
            readable: demangled.map_or(symbol, readable_kernel_name),
            rust_name,
        }
    }
}

/// Two patterns that both match one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AmbiguousTables {
    pub(crate) kernel: String,
    pub(crate) first: String,
    pub(crate) second: String,
}

impl KernelTables {
    /// Every kernel table of the settings (levels and launches).
    pub(crate) fn of(settings: &OccupancySettings) -> KernelTables {
        let names: BTreeSet<&String> = settings
            .kernel_lints
            .keys()
            .chain(settings.kernel_launches.keys())
            .collect();
        KernelTables::of_names(names)
    }

    /// Tables by these names (exact ones and `*` patterns).
    pub(crate) fn of_names<'n>(names: impl IntoIterator<Item = &'n String>) -> KernelTables {
        let mut tables = KernelTables::default();
        for name in names {
            if name.contains('*') {
                tables.patterns.push(name.clone());
            } else {
                tables.exact.insert(name.clone());
            }
        }
        tables
    }

    /// Whether the crate has no kernel table at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.patterns.is_empty()
    }

    /// The table that speaks for the kernel: one named for it, else the one pattern that
    /// matches it; two matching patterns are [`AmbiguousTables`].
    pub(crate) fn table_for(
        &self,
        names: KernelNames<'_>,
    ) -> Result<Option<&str>, AmbiguousTables> {
        let exact = [Some(names.symbol), Some(names.readable), names.rust_name]
            .into_iter()
            .flatten()
            .find_map(|name| self.exact.get(name));
        if let Some(name) = exact {
            return Ok(Some(name));
        }
        let mut matching = self.patterns.iter().filter(|pattern| {
            family_matches(pattern, names.symbol) || family_matches(pattern, names.readable)
        });
        match (matching.next(), matching.next()) {
            (Some(first), Some(second)) => Err(AmbiguousTables {
                kernel: names.readable.to_string(),
                first: first.clone(),
                second: second.clone(),
            }),
            (first, _) => Ok(first.map(String::as_str)),
        }
    }

    /// Whether the table `name` names this kernel (by name or pattern).
    pub(crate) fn names(name: &str, names: KernelNames<'_>) -> bool {
        if name.contains('*') {
            family_matches(name, names.symbol) || family_matches(name, names.readable)
        } else {
            name == names.symbol || name == names.readable || Some(name) == names.rust_name
        }
    }
}

/// The launch of the table in `launches` (keyed by kernel name or `*` pattern, as
/// `[package.metadata.occupancy.kernels.<name>]` is) that speaks for the kernel `symbol`
/// (demangled `demangled`): a table named for it, else the one pattern that matches; two
/// matching patterns are an error naming both.
pub fn table_launch<'a>(
    launches: &'a std::collections::BTreeMap<String, crate::config::KernelLaunch>,
    symbol: &str,
    demangled: Option<&str>,
) -> Result<Option<TableLaunch<'a>>, Error> {
    let tables = KernelTables::of_names(launches.keys());
    let names = KernelNames::of(symbol, demangled, None);
    match tables.table_for(names) {
        Ok(found) => {
            Ok(found
                .and_then(|name| launches.get_key_value(name))
                .map(|(name, launch)| TableLaunch {
                    name,
                    block: launch.block,
                    dynamic_smem_bytes: launch.dynamic_smem_bytes,
                }))
        }
        Err(ambiguous) => Err(Error::AmbiguousKernelTables {
            kernel: ambiguous.kernel,
            tables: [ambiguous.first, ambiguous.second],
        }),
    }
}

/// Two kernel-table patterns that both name one kernel: neither is more specific, so the
/// build refuses to pick (as for two family declarations).
pub(crate) fn check_table_ambiguity(
    tables: &KernelTables,
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
) -> Result<(), Error> {
    for (index, kernel) in kernels.iter().enumerate() {
        let rust_name = matching
            .by_kernel
            .get(&index)
            .map(|&at| declarations.kernels[at].kernel.rust_name.as_str());
        let names = KernelNames::of(&kernel.name, kernel.demangled.as_deref(), rust_name);
        if let Err(ambiguous) = tables.table_for(names) {
            return Err(Error::AmbiguousKernelTables {
                kernel: ambiguous.kernel,
                tables: [ambiguous.first, ambiguous.second],
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(names: &[&str]) -> KernelTables {
        let mut settings = OccupancySettings::default();
        for name in names {
            settings
                .kernel_launches
                .insert(name.to_string(), Default::default());
        }
        KernelTables::of(&settings)
    }

    const MMVQ: &str = "_Z13mul_mat_vec_qILi1EEvPKfS1_Pfi";

    #[test]
    fn a_table_is_found_by_symbol_readable_name_rust_name_or_pattern() {
        let names = KernelNames::of(
            MMVQ,
            Some("void mul_mat_vec_q<1>(float const*, float const*, float*, int)"),
            None,
        );
        assert_eq!(
            tables(&["mul_mat_vec_*"]).table_for(names),
            Ok(Some("mul_mat_vec_*"))
        );
        assert_eq!(
            tables(&["mul_mat_vec_q<1>", "mul_mat_*"]).table_for(names),
            Ok(Some("mul_mat_vec_q<1>")),
            "a table named for the kernel beats a pattern"
        );
        assert_eq!(tables(&[MMVQ]).table_for(names), Ok(Some(MMVQ)));
        let declared = KernelNames::of("saxpy", None, Some("launch_saxpy"));
        assert_eq!(
            tables(&["launch_saxpy"]).table_for(declared),
            Ok(Some("launch_saxpy"))
        );
        assert_eq!(tables(&["copy_*"]).table_for(declared), Ok(None));
    }

    #[test]
    fn two_patterns_for_one_kernel_are_ambiguous() {
        let names = KernelNames::of("affine_f32", None, None);
        assert_eq!(
            tables(&["affine_*", "*_f32"]).table_for(names),
            Err(AmbiguousTables {
                kernel: "affine_f32".into(),
                first: "*_f32".into(),
                second: "affine_*".into(),
            })
        );
    }
}
