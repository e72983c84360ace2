//! What a build checked, for the `#[occupancy::kernel]` expansion: the facts file
//! (`$OUT_DIR/occupancy_facts.json`) that `occupancy-build` writes before the crate compiles.
//!
//! It lists every declaration the build's scanner saw and, for each, what ptxas and the
//! calculator made of its kernel on every target architecture. The attribute reads it to know
//! whether its kernel was checked (a declaration the scanner missed fails to compile) and to put
//! the compiled facts into the generated const. One model, written by the build and read by the
//! macro, so the two cannot disagree about the format.

use serde::{Deserialize, Serialize};

use crate::finding::Finding;

/// The file's name in `OUT_DIR`.
pub const FACTS_FILE: &str = "occupancy_facts.json";

/// The version of the format this crate writes and reads.
///
/// History: 1: first version; 2: `settled` findings and `not_checked` per declaration.
pub const FACTS_SCHEMA_VERSION: u32 = 2;

/// The facts of one build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildFacts {
    /// [`FACTS_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The package.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// Why nothing was checked (`OCCUPANCY_SKIP`, docs.rs, `.check(false)`); absent when the
    /// checks ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Every declaration the build saw.
    pub declarations: Vec<DeclarationFacts>,
    /// Findings about the crate as a whole that only the whole build script can make (a
    /// `[package.metadata.occupancy.kernels.<name>]` table that names no kernel of any
    /// product): the expansion of the first declaration listed renders them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<Finding>,
}

/// One declaration the build saw, and its kernel's compiled facts per architecture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclarationFacts {
    /// The Rust item's name.
    pub rust_name: String,
    /// The compiled symbol it declares.
    pub kernel_name: String,
    /// Where the attribute is, relative to the package root.
    pub path: String,
    /// 1-based line of the attribute.
    pub line: u32,
    /// The kernel on each architecture it was checked on (empty when not compiled or skipped).
    pub compiled: Vec<CompiledFacts>,
    /// The findings about the declaration that only the whole build script can make, settled
    /// over every product its `Build`s compiled: no kernel matched the declaration
    /// (`missing_kernel`), an `expect(...)` no finding fulfilled (`unfulfilled_expectation`).
    /// A `Build` cannot know whether a later one compiles the kernel, so the expansion, which
    /// runs after the build script, renders these at the attribute (warn and deny only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<Finding>,
    /// Why the declaration's kernel may be unchecked although the build ran (a product built
    /// with `.check(false)` could hold it); absent when every product was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_checked: Option<String>,
}

/// One kernel on one architecture at its declared launch, as the build's report has it: the
/// model's [`occupancy_model::CompiledFacts`], owned. The attribute's expansion writes the same
/// type into the kernel's const (`occupancy::CompiledFacts`).
pub type CompiledFacts = occupancy_model::CompiledFacts<crate::spec::Owned>;

/// A facts file that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FactsError {
    /// Not JSON of this format.
    #[error("not a facts file of this occupancy version: {0}")]
    Format(#[source] serde_json::Error),
    /// Written by another version of occupancy-build.
    #[error("written with schema_version {found}, this occupancy reads {FACTS_SCHEMA_VERSION}: use the same version of occupancy and occupancy-build")]
    Version {
        /// The version in the file.
        found: u32,
    },
}

impl BuildFacts {
    /// Parses a facts file's text.
    pub fn from_json(text: &str) -> Result<BuildFacts, FactsError> {
        let facts: BuildFacts = serde_json::from_str(text).map_err(FactsError::Format)?;
        if facts.schema_version != FACTS_SCHEMA_VERSION {
            return Err(FactsError::Version {
                found: facts.schema_version,
            });
        }
        Ok(facts)
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("facts are plain data");
        text.push('\n');
        text
    }

    /// The declaration of `rust_name` for kernel `kernel_name`, if the build saw it.
    pub fn declaration(&self, rust_name: &str, kernel_name: &str) -> Option<&DeclarationFacts> {
        self.declarations
            .iter()
            .find(|declared| declared.rust_name == rust_name && declared.kernel_name == kernel_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::{Level, LintId};

    #[test]
    fn round_trips_and_refuses_other_versions() {
        let facts = BuildFacts {
            schema_version: FACTS_SCHEMA_VERSION,
            crate_name: "k".into(),
            skipped: None,
            declarations: vec![DeclarationFacts {
                rust_name: "saxpy".into(),
                kernel_name: "saxpy".into(),
                path: "src/main.rs".into(),
                line: 12,
                compiled: vec![CompiledFacts {
                    arch: "sm_90".into(),
                    registers: 16,
                    spill_bytes: 0,
                    stack_frame_bytes: 0,
                    static_smem_bytes: 0,
                    block_threads: 256,
                    blocks_per_sm: 8,
                    warps_per_sm: 64,
                    occupancy: 1.0,
                }],
                settled: vec![Finding {
                    level: Level::Deny,
                    message: "`expect(spills)` on kernel `saxpy` is unfulfilled".into(),
                    help: Some("remove it".into()),
                    ..Finding::new(LintId::UnfulfilledExpectation)
                }],
                not_checked: None,
            }],
            settled: Vec::new(),
        };
        // A settled finding is written with the keys the attribute has always read: no crate,
        // kernel, arch, location or reason.
        assert!(facts.to_json().contains("\"settled\": [\n        {\n          \"lint\": \"unfulfilled_expectation\",\n          \"level\": \"deny\",\n          \"message\""), "{}", facts.to_json());
        let parsed = BuildFacts::from_json(&facts.to_json()).unwrap();
        assert_eq!(parsed, facts);
        assert!(parsed.declaration("saxpy", "saxpy").is_some());
        assert!(parsed.declaration("saxpy", "other").is_none());
        let newer = facts
            .to_json()
            .replace("\"schema_version\": 2", "\"schema_version\": 3");
        let error = BuildFacts::from_json(&newer).unwrap_err().to_string();
        assert!(error.contains("schema_version 3"), "{error}");
        assert!(BuildFacts::from_json("{").is_err());
    }
}
