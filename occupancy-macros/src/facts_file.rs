//! Whether the crate's occupancy build checked a kernel, read at expansion time.
//!
//! `occupancy-build` writes `$OUT_DIR/occupancy_facts.json` before the crate compiles (cargo sets
//! `OUT_DIR` for the crate, and so for its proc macros, when it has a build script). A
//! declaration missing from that file was not seen by the build's scanner (made by
//! `macro_rules!`, in a `#[path]` module outside the scanned sources): it fails here rather than
//! pass unchecked. A crate without an occupancy build fails too, unless its Cargo.toml opts out
//! with `[package.metadata.occupancy] unchecked = "why"` (read through `cargo metadata`, the
//! only time the macro runs cargo: when there is no facts file).
//!
//! The expansion names the files it read with `include_bytes!`, so rustc tracks them and an edit
//! recompiles the crate.

use std::path::{Path, PathBuf};

use occupancy_core::facts::{BuildFacts, CompiledFacts, FACTS_FILE};
use occupancy_core::finding::Finding;
use occupancy_core::spec::StubKernel;

/// What the build knows about one declaration.
#[derive(Debug)]
pub(crate) enum Status {
    /// The build checked the kernel: its facts per arch, and the findings about the
    /// declaration that the whole build script settled (no kernel matched it, an unfulfilled
    /// `expect(...)`), which the expansion reports at the attribute.
    Checked {
        compiled: Vec<CompiledFacts>,
        settled: Vec<Finding>,
    },
    /// The build ran but checked nothing (`OCCUPANCY_SKIP`, docs.rs, `.check(false)`).
    Skipped { reason: String },
    /// The crate has no occupancy build and says why in Cargo.toml.
    OptedOut { reason: String },
}

/// The answer, and the file it came from (to be tracked).
#[derive(Debug)]
pub(crate) struct Lookup {
    pub checked: Status,
    pub file_read: PathBuf,
}

/// Reads what the build knows about `kernel` from the environment rustc runs the macro in.
// The macro's one read of its environment (cargo's variables for the crate it expands in);
// `lookup_in` and below take the values.
#[allow(clippy::disallowed_methods)]
pub(crate) fn lookup(kernel: &StubKernel) -> syn::Result<Lookup> {
    let out_dir = std::env::var_os("OUT_DIR").map(PathBuf::from);
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let crate_name = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "this crate".into());
    lookup_in(
        kernel,
        out_dir.as_deref(),
        manifest_dir.as_deref(),
        &crate_name,
    )
    .map_err(|message| syn::Error::new(kernel.attribute_span, message))
}

/// [`lookup`] with the build's directories given.
fn lookup_in(
    kernel: &StubKernel,
    out_dir: Option<&Path>,
    manifest_dir: Option<&Path>,
    crate_name: &str,
) -> Result<Lookup, String> {
    let facts_path = out_dir.map(|dir| dir.join(FACTS_FILE));
    match facts_path.filter(|path| path.is_file()) {
        Some(path) => from_facts(kernel, &path, crate_name),
        None => opted_out(manifest_dir)?.ok_or_else(|| no_build_message(kernel, crate_name)),
    }
}

fn from_facts(kernel: &StubKernel, path: &Path, crate_name: &str) -> Result<Lookup, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let facts = BuildFacts::from_json(&text).map_err(|error| {
        format!(
            "{} (written by occupancy-build) {error}; rebuild, and keep the occupancy and occupancy-build versions equal",
            path.display()
        )
    })?;
    let checked = match (
        &facts.skipped,
        facts.declaration(&kernel.rust_name(), &kernel.kernel_name),
    ) {
        (Some(reason), _) => Status::Skipped {
            reason: reason.clone(),
        },
        (None, Some(declared)) => match &declared.not_checked {
            Some(reason) => Status::Skipped {
                reason: reason.clone(),
            },
            None => {
                let mut settled = declared.settled.clone();
                // What the build settled about the whole crate, once: at the first declaration.
                if std::ptr::eq(declared, &facts.declarations[0]) {
                    settled.extend(facts.settled.iter().cloned());
                }
                Status::Checked {
                    compiled: declared.compiled.clone(),
                    settled,
                }
            }
        },
        (None, None) => return Err(unseen_message(kernel, crate_name, &facts)),
    };
    Ok(Lookup {
        checked,
        file_read: path.to_path_buf(),
    })
}

fn unseen_message(kernel: &StubKernel, crate_name: &str, facts: &BuildFacts) -> String {
    let seen: Vec<String> = facts
        .declarations
        .iter()
        .map(|declared| {
            format!(
                "`{}` ({}:{})",
                declared.rust_name, declared.path, declared.line
            )
        })
        .collect();
    format!(
        "kernel `{}` (fn `{}`) was not checked: the occupancy build of `{crate_name}` did not see this declaration, so nothing verified its launch or spills. \
         The build reads `#[occupancy::kernel]` attributes written in the files under src/ (or those given to `.declarations(...)` in build.rs); \
         a declaration made by `macro_rules!` or in a `#[path]` module outside them is not seen. \
         Write the attribute out in a scanned file, or add its file with `.declarations(\"path/to/file.rs\")`. The build saw: {}",
        kernel.kernel_name,
        kernel.rust_name(),
        match seen.len() {
            0 => "no declaration".to_string(),
            1..=4 => seen.join(", "),
            more => format!("{} and {} more", seen[..3].join(", "), more - 3),
        }
    )
}

fn no_build_message(kernel: &StubKernel, crate_name: &str) -> String {
    format!(
        "kernel `{}` is declared, but `{crate_name}` has no occupancy build, so nothing checks it: \
         add `occupancy-build` to [build-dependencies] and call it from build.rs \
         (`occupancy_build::Build::new().file(\"kernels/<file>.cu\").compile_ptx();`, see docs/build.md); \
         or, when another crate's build checks these kernels (or none should), opt out in this crate's Cargo.toml: \
         `[package.metadata.occupancy]` `unchecked = \"why\"`",
        kernel.kernel_name,
    )
}

/// `Some` when the package's Cargo.toml says `[package.metadata.occupancy] unchecked = "..."`,
/// as `cargo metadata --no-deps --offline` (run as `$CARGO`, the cargo building this crate)
/// reports it.
fn opted_out(manifest_dir: Option<&Path>) -> Result<Option<Lookup>, String> {
    let Some(manifest) = manifest_dir.map(|dir| dir.join("Cargo.toml")) else {
        return Ok(None);
    };
    if !manifest.is_file() {
        return Ok(None);
    }
    let metadata = cargo_metadata::MetadataCommand::new()
        .manifest_path(&manifest)
        .no_deps()
        .other_options(vec!["--offline".to_string()])
        .exec()
        .map_err(|error| {
            format!(
                "could not read [package.metadata.occupancy] in {} with `cargo metadata`: {error}",
                manifest.display()
            )
        })?;
    let wanted = canonical(&manifest);
    let setting = metadata
        .packages
        .iter()
        .find(|package| canonical(package.manifest_path.as_std_path()) == wanted)
        .and_then(|package| package.metadata.get("occupancy"))
        .and_then(|occupancy| occupancy.get("unchecked"));
    match setting.map(|value| value.as_str()) {
        None => Ok(None),
        Some(Some(reason)) if !reason.trim().is_empty() => Ok(Some(Lookup {
            checked: Status::OptedOut {
                reason: reason.to_string(),
            },
            file_read: manifest,
        })),
        Some(_) => Err(format!(
            "{}: `unchecked` under [package.metadata.occupancy] must be a non-empty string saying why this crate's kernels are not checked",
            manifest.display()
        )),
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::facts::{DeclarationFacts, FACTS_SCHEMA_VERSION};
    use occupancy_core::spec::KernelStub;

    fn kernel(tokens: &str) -> StubKernel {
        let stub = KernelStub::parse(tokens.parse().unwrap()).unwrap();
        let (_, kernels) = stub.declare("block = 256".parse().unwrap()).unwrap();
        kernels.into_iter().next().unwrap()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("occupancy-macro-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn facts(skipped: Option<&str>, seen: &[&str]) -> BuildFacts {
        BuildFacts {
            schema_version: FACTS_SCHEMA_VERSION,
            crate_name: "k".into(),
            skipped: skipped.map(str::to_string),
            declarations: seen
                .iter()
                .map(|name| DeclarationFacts {
                    rust_name: name.to_string(),
                    kernel_name: name.to_string(),
                    path: "src/lib.rs".into(),
                    line: 3,
                    compiled: Vec::new(),
                    settled: Vec::new(),
                    not_checked: None,
                })
                .collect(),
            settled: Vec::new(),
        }
    }

    #[test]
    fn a_declaration_the_build_did_not_see_is_refused() {
        let dir = temp_dir("unseen");
        std::fs::write(dir.join(FACTS_FILE), facts(None, &["saxpy"]).to_json()).unwrap();
        let seen = lookup_in(&kernel("fn saxpy();"), Some(&dir), None, "k").unwrap();
        assert!(matches!(seen.checked, Status::Checked { .. }), "{seen:?}");
        let error = lookup_in(&kernel("fn hidden();"), Some(&dir), None, "k").unwrap_err();
        assert!(
            error.starts_with("kernel `hidden` (fn `hidden`) was not checked"),
            "{error}"
        );
        assert!(error.contains("`saxpy` (src/lib.rs:3)"), "{error}");
        // A build that skipped its checks says so; nothing is refused.
        std::fs::write(
            dir.join(FACTS_FILE),
            facts(Some("OCCUPANCY_SKIP is set"), &[]).to_json(),
        )
        .unwrap();
        let skipped = lookup_in(&kernel("fn hidden();"), Some(&dir), None, "k").unwrap();
        assert!(
            matches!(skipped.checked, Status::Skipped { .. }),
            "{skipped:?}"
        );
        std::fs::write(dir.join(FACTS_FILE), "{").unwrap();
        let error = lookup_in(&kernel("fn saxpy();"), Some(&dir), None, "k").unwrap_err();
        assert!(
            error.contains("occupancy_facts.json (written by occupancy-build)"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_crate_without_an_occupancy_build_fails_unless_it_opts_out() {
        let dir = temp_dir("no-build");
        // A package cargo accepts: a manifest and a target.
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
        let error = lookup_in(&kernel("fn saxpy();"), None, Some(&dir), "k").unwrap_err();
        assert!(error.contains("`k` has no occupancy build"), "{error}");
        assert!(error.contains("unchecked = \"why\""), "{error}");
        // An OUT_DIR without a facts file: a build script that is not an occupancy build.
        let error = lookup_in(&kernel("fn saxpy();"), Some(&dir), Some(&dir), "k").unwrap_err();
        assert!(error.contains("has no occupancy build"), "{error}");
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"k\"\n[package.metadata.occupancy]\nunchecked = \"checked by the host crate\"\n",
        )
        .unwrap();
        let opted = lookup_in(&kernel("fn saxpy();"), None, Some(&dir), "k").unwrap();
        assert!(
            matches!(opted.checked, Status::OptedOut { ref reason } if reason == "checked by the host crate")
        );
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"k\"\n[package.metadata.occupancy]\nunchecked = \"\"\n",
        )
        .unwrap();
        let error = lookup_in(&kernel("fn saxpy();"), None, Some(&dir), "k").unwrap_err();
        assert!(error.contains("must be a non-empty string"), "{error}");
        // A manifest cargo refuses: its words, and the file.
        std::fs::write(dir.join("Cargo.toml"), "[package\n").unwrap();
        let error = lookup_in(&kernel("fn saxpy();"), None, Some(&dir), "k").unwrap_err();
        assert!(error.contains("unclosed table"), "{error}");
        assert!(
            error.contains(&dir.join("Cargo.toml").display().to_string()),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
