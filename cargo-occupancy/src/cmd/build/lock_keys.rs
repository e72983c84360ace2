//! A build's packages in its lock: each package's products under one key per package id
//! (`OUT_DIR(candle-kernels@0.9.1)`, `cargo_run::lock_keys`), a lock keyed by package name
//! (`OUT_DIR(candle-kernels)`, before issue #42) read as the package's, and the packages whose
//! vanished products the lock judges: those cargo reported a build script for in this run.

use std::collections::{BTreeMap, BTreeSet};

use super::cargo_run::BuiltPackage;
use crate::cmd::lock::Lock;

/// The name a lock records a package's `OUT_DIR` under: `OUT_DIR(k@0.1.0)`.
pub fn package_prefix(package: &BuiltPackage) -> String {
    format!("OUT_DIR({})", package.lock_key)
}

/// Scopes the lock's vanished judgement to `packages` (those this run ran or found fresh a build
/// script of) and reads entries under a package's old key (its name alone) as its own, with one
/// warning; a bless writes them under the new key. A name two built packages share is not
/// read as either's (its entries are kept, unjudged: the warning says so).
pub fn judge_packages(lock: &mut Lock, packages: &[BuiltPackage]) {
    let mut by_name: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for package in packages {
        by_name
            .entry(package.name.as_str())
            .or_default()
            .insert(package_prefix(package));
    }
    let mut renamed = 0;
    let mut shared = Vec::new();
    for (name, prefixes) in &by_name {
        let old = format!("OUT_DIR({name})");
        match prefixes.iter().collect::<Vec<_>>().as_slice() {
            [only] => renamed += lock.rekey(&old, only),
            _ => shared.push(old),
        }
    }
    if renamed > 0 {
        eprintln!(
            "warning: the lock keys {renamed} product(s) by package name (`OUT_DIR(NAME)`): read as the package's (`OUT_DIR(NAME@VERSION)`); the next `--bless` rewrites them"
        );
    }
    if !shared.is_empty() && lock.has_sources_under(&shared) {
        eprintln!(
            "warning: the lock has entries under {} a name two packages built here share: kept, not judged (a `--bless` writes each package's under its own key; remove these by hand)",
            shared.join(", ")
        );
    }
    lock.judge_vanished_under(by_name.into_values().flatten().collect());
}
