//! Reading the environment the way a build script must: every variable read is remembered so
//! that `cargo:rerun-if-env-changed` can be emitted for it.
//!
//! This module only reads variables and records their names; it prints nothing itself.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// The environment as seen by one build, with a record of every variable name read.
#[derive(Debug, Default)]
pub struct TrackedEnv {
    read: Mutex<BTreeSet<String>>,
    overrides: Vec<(String, Option<String>)>,
}

impl TrackedEnv {
    /// An environment backed by the process environment.
    pub fn new() -> TrackedEnv {
        TrackedEnv::default()
    }

    /// Sets (or, with `None`, hides) a variable for this build only; used by tests and by
    /// callers like the CLI that describe a build without being one.
    pub fn set(&mut self, name: &str, value: Option<&str>) {
        self.overrides.retain(|(existing, _)| existing != name);
        self.overrides
            .push((name.to_string(), value.map(str::to_string)));
    }

    /// The variable's value when set and not empty; records the read.
    pub fn get(&self, name: &str) -> Option<String> {
        self.read
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(name.to_string());
        self.get_untracked(name)
    }

    /// The variable's value without recording the read: for `PATH`, which a build script does
    /// not watch (`cc` does not either: every shell changes it, and a tool found on it is
    /// tracked by its own identity files).
    pub fn get_untracked(&self, name: &str) -> Option<String> {
        let value = match self.overrides.iter().find(|(existing, _)| existing == name) {
            Some((_, value)) => value.clone(),
            // The one read of the process environment in occupancy-build.
            #[allow(clippy::disallowed_methods)]
            None => std::env::var(name).ok(),
        };
        value.filter(|value| !value.trim().is_empty())
    }

    /// Whether the variable is set to a true-looking value (`1`, `true`, `yes`, `on`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(
            self.get(name)
                .map(|value| value.trim().to_ascii_lowercase())
                .as_deref(),
            Some("1" | "true" | "yes" | "on")
        )
    }

    /// Every variable name read so far, sorted.
    pub fn read_names(&self) -> Vec<String> {
        self.read
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_every_read_and_honours_overrides() {
        let mut env = TrackedEnv::new();
        env.set("OCCUPANCY_TEST_A", Some("1"));
        env.set("OCCUPANCY_TEST_B", Some("  "));
        assert!(env.flag("OCCUPANCY_TEST_A"));
        assert_eq!(env.get("OCCUPANCY_TEST_B"), None);
        env.set("OCCUPANCY_TEST_A", None);
        assert_eq!(env.get("OCCUPANCY_TEST_A"), None);
        assert_eq!(
            env.read_names(),
            vec!["OCCUPANCY_TEST_A", "OCCUPANCY_TEST_B"]
        );
    }

    #[test]
    fn path_is_read_without_being_watched() {
        let mut env = TrackedEnv::new();
        env.set("PATH", Some("/opt/cuda/bin"));
        assert_eq!(env.get_untracked("PATH").as_deref(), Some("/opt/cuda/bin"));
        assert!(env.read_names().is_empty(), "{:?}", env.read_names());
    }
}
