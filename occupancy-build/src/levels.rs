//! Lint levels and leveled findings: where a kernel's levels come from (its attribute, its
//! kernel table, `OCCUPANCY_LINT_*`, the crate's table) and a finding gathered with its level
//! and the declaration it is shown at. Resolution itself is `occupancy_core::lint::evaluate`.

use std::collections::BTreeMap;

use occupancy_core::lint::evaluate::{self, LevelSources};
use occupancy_core::lint::{Level, LintId};

use crate::context::Context;
use crate::declarations::Declared;
use crate::kernel_tables::{KernelNames, KernelTables};
use crate::Error;

pub(crate) fn parse_levels(
    entries: &BTreeMap<String, String>,
    what: &str,
) -> Result<BTreeMap<LintId, Level>, Error> {
    let mut levels = BTreeMap::new();
    for (lint, level) in entries {
        let id: LintId = lint.parse().map_err(|unknown| Error::UnknownLint {
            table: what.to_string(),
            unknown,
        })?;
        let level: Level = level.parse().map_err(|error| Error::BadLintLevel {
            setting: format!("{what} `{lint}`"),
            error,
        })?;
        levels.insert(id, level);
    }
    Ok(levels)
}

/// The crate's lint levels: Cargo.toml (crate-wide and per kernel) and the environment.
pub(crate) struct Levels {
    pub(crate) crate_levels: BTreeMap<LintId, Level>,
    /// By kernel table name (a kernel's name or a pattern).
    pub(crate) kernel_levels: BTreeMap<String, BTreeMap<LintId, Level>>,
    pub(crate) environment_levels: BTreeMap<LintId, Level>,
    /// Which table speaks for a kernel.
    pub(crate) tables: KernelTables,
}

impl Levels {
    /// Levels set for every kernel alike (a command line's `--deny`/`--warn`/`--allow`), over
    /// the lints' defaults; no environment, no per-kernel configuration.
    pub(crate) fn uniform(levels: BTreeMap<LintId, Level>) -> Levels {
        Levels {
            crate_levels: levels,
            kernel_levels: BTreeMap::new(),
            environment_levels: BTreeMap::new(),
            tables: KernelTables::default(),
        }
    }

    pub(crate) fn read(context: &Context) -> Result<Levels, Error> {
        let crate_levels = parse_levels(
            &context.settings.lints,
            "[package.metadata.occupancy.lints]",
        )?;
        let mut kernel_levels = BTreeMap::new();
        for (kernel, entries) in &context.settings.kernel_lints {
            kernel_levels.insert(
                kernel.clone(),
                parse_levels(
                    entries,
                    &format!("[package.metadata.occupancy.kernels.{kernel}.lints]"),
                )?,
            );
        }
        Ok(Levels {
            crate_levels,
            kernel_levels,
            environment_levels: context.env_lint_levels.clone(),
            tables: KernelTables::of(&context.settings),
        })
    }

    /// Where the levels of `kernel_name`'s findings come from, most specific first.
    pub(crate) fn sources<'a>(
        &'a self,
        declared: Option<&'a Declared>,
        kernel_name: &str,
    ) -> LevelSources<'a> {
        // Demangling costs a build script at opt-level 0: only when some table could name it.
        let demangled = (!self.tables.is_empty())
            .then(|| occupancy_core::ptxas::demangle(kernel_name))
            .flatten();
        let names = KernelNames::of(
            kernel_name,
            demangled.as_deref(),
            declared.map(|declared| declared.kernel.rust_name.as_str()),
        );
        // Two patterns for one kernel were refused before any level was asked for.
        let kernel_config = match self.tables.table_for(names) {
            Ok(Some(table)) => self.kernel_levels.get(table),
            _ => None,
        };
        LevelSources {
            attribute: declared.map(|declared| &declared.kernel.spec.lint_levels),
            kernel_config,
            environment: Some(&self.environment_levels),
            crate_config: Some(&self.crate_levels),
        }
    }
}

/// A finding of this build with its level, and what it concerns.
pub(crate) struct Gathered {
    /// The finding, at its level.
    pub(crate) finding: evaluate::Finding,
    /// The declaration it is shown at.
    pub(crate) declaration: Option<usize>,
    /// The compiled kernel (or the declared name, for `missing_kernel`).
    pub(crate) kernel: String,
    /// About an undeclared kernel: summarized with the others of its lint, not shown one by one.
    pub(crate) undeclared: bool,
    /// Why the declaration allowed or expects this finding (`reason = "..."`).
    pub(crate) reason: Option<String>,
    /// For an undeclared kernel: the launch it was checked at and where that comes from.
    pub(crate) launch: Option<String>,
}

impl Gathered {
    /// A finding made outside `check_kernel` (regression, missing or undeclared kernel), given
    /// its level from the same sources; `None` when it is allowed.
    pub(crate) fn leveled(
        finding: evaluate::Finding,
        sources: &LevelSources<'_>,
        declaration: Option<usize>,
        kernel: &str,
        undeclared: bool,
    ) -> Option<Gathered> {
        let level = if undeclared {
            evaluate::resolve_undeclared_level(finding.lint, sources)
        } else {
            evaluate::resolve_level(finding.lint, sources)
        };
        (level != Level::Allow).then(|| Gathered {
            finding: evaluate::Finding { level, ..finding },
            declaration,
            kernel: kernel.to_string(),
            undeclared,
            reason: None,
            launch: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lints_table_names_the_table_and_key_to_fix() {
        let table = "[package.metadata.occupancy.lints]";
        let entries = |lint: &str, level: &str| BTreeMap::from([(lint.into(), level.into())]);
        let levels = parse_levels(&entries("spills", "warn"), table).unwrap();
        assert_eq!(levels[&LintId::Spills], Level::Warn);
        let error = parse_levels(&entries("spils", "warn"), table).unwrap_err();
        assert!(
            matches!(&error, Error::UnknownLint { table: named, unknown }
                if named == table && unknown.suggestion == Some(LintId::Spills)),
            "{error:?}"
        );
        let error = parse_levels(&entries("spills", "loud"), table).unwrap_err();
        assert!(
            matches!(&error, Error::BadLintLevel { setting, .. }
                if setting == "[package.metadata.occupancy.lints] `spills`"),
            "{error:?}"
        );
    }
}
