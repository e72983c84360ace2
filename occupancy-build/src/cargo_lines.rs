//! The cargo protocol of a build script: `cargo:` lines collected (each once) while the build
//! runs and printed together at its end, or not at all outside cargo.

use std::collections::BTreeSet;
use std::path::Path;

/// Collects `cargo:` lines (deduplicated) and prints them at the end, or nothing outside cargo.
#[derive(Debug)]
pub struct CargoLines {
    enabled: bool,
    seen: BTreeSet<String>,
    lines: Vec<String>,
}

impl CargoLines {
    /// Lines printed by [`flush`](CargoLines::flush) when `enabled` (a build script).
    pub fn new(enabled: bool) -> CargoLines {
        CargoLines {
            enabled,
            seen: BTreeSet::new(),
            lines: Vec::new(),
        }
    }

    /// Adds a line once.
    pub fn line(&mut self, line: &str) {
        if self.seen.insert(line.to_string()) {
            self.lines.push(line.to_string());
        }
    }

    /// `cargo:rerun-if-changed=<path>`.
    pub fn rerun_if_changed(&mut self, path: &Path) {
        self.line(&format!("cargo:rerun-if-changed={}", path.display()));
    }

    /// One `cargo:warning=` per line of `message`.
    pub fn warning(&mut self, message: &str) {
        for line in message.lines() {
            self.line(&format!("cargo:warning={line}"));
        }
    }

    /// The warnings collected so far, each line without its `cargo:warning=` (for a check
    /// outside a build script, which prints them itself).
    pub fn warnings(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|line| line.strip_prefix("cargo:warning="))
            .map(str::to_string)
            .collect()
    }

    /// Prints the lines collected so far (when enabled) and forgets them.
    pub fn flush(&mut self) {
        if self.enabled {
            for line in self.lines.drain(..) {
                println!("{line}");
            }
        }
    }
}
