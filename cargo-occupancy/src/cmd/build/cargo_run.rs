//! Runs the user's `cargo build` with JSON messages and takes from them what the build scripts
//! made: each package's `OUT_DIR` and the libraries it links (`build-script-executed`), and the
//! package's manifest (the build script's own `compiler-artifact`). Cargo's progress and
//! rendered diagnostics go to standard error as they come (`json-render-diagnostics`); the
//! last 256 KiB of them are kept, to name the variable a build script that wanted a GPU needs.

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::Message;

use crate::error::CliError;

/// What one package's build script made, as cargo reported it.
#[derive(Debug, Clone)]
pub struct BuiltPackage {
    /// `candle-kernels`.
    pub name: String,
    /// Cargo's package id (`registry+...#candle-kernels@0.9.1`).
    pub id: String,
    pub out_dir: PathBuf,
    /// `cargo:rustc-link-lib` names (`static=foo`, `foo`).
    pub linked_libs: Vec<String>,
    /// `cargo:rustc-link-search` directories (`native=/...`).
    pub linked_paths: Vec<PathBuf>,
    /// The package's Cargo.toml, when cargo named it.
    pub manifest_path: Option<PathBuf>,
    /// Whether cargo compiled the package itself (its library or binary, not its build script)
    /// in an optimized profile (`opt_level` other than 0: `--release`), as its
    /// `compiler-artifact` says; `None` when cargo reported no such artifact.
    pub optimized: Option<bool>,
    /// The package as a lock names it ([`lock_keys`]): `candle-kernels@0.9.1`, and its source
    /// too when another package of the build has that name and version.
    pub lock_key: String,
}

/// The build cargo ran: the packages whose build scripts ran, whether it succeeded, and the
/// end of what it printed to standard error.
#[derive(Debug)]
pub struct CargoBuild {
    pub packages: Vec<BuiltPackage>,
    pub success: bool,
    pub stderr_tail: String,
}

/// How much of cargo's standard error is kept for the hints.
const TAIL_BYTES: usize = 256 * 1024;

/// Runs `cargo build --message-format=json-render-diagnostics ARGS` with `vars` set; `set`
/// are the variables the user's environment already has (`Environment::build_vars`).
pub fn run(
    cargo: &Path,
    args: &[String],
    (vars, set): (
        &[(String, std::ffi::OsString)],
        &BTreeMap<&'static str, std::ffi::OsString>,
    ),
) -> Result<CargoBuild, CliError> {
    if let Some(flag) = args.iter().find(|arg| arg.starts_with("--message-format")) {
        return Err(CliError::usage(format!(
            "`{flag}`: `cargo occupancy build` reads cargo's JSON messages itself; leave --message-format out"
        )));
    }
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--message-format=json-render-diagnostics")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in vars {
        command.env(name, value);
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        // Cargo keeps its colours and progress bar for a terminal; standard error passes
        // through this process to one.
        for (name, value) in [
            ("CARGO_TERM_COLOR", "always"),
            ("CARGO_TERM_PROGRESS_WHEN", "always"),
            ("CARGO_TERM_PROGRESS_WIDTH", "100"),
        ] {
            if !set.contains_key(name) {
                command.env(name, value);
            }
        }
    }
    let mut child = command.spawn().map_err(|error| {
        CliError::CouldNotCheck(format!("could not run {}: {error}", cargo.display()))
    })?;
    let stderr = child.stderr.take().expect("piped");
    let tail = std::thread::spawn(move || pass_through(stderr));
    let stdout = child.stdout.take().expect("piped");
    let messages = read_messages(stdout);
    let status = child
        .wait()
        .map_err(|error| CliError::CouldNotCheck(format!("waiting for cargo build: {error}")))?;
    let stderr_tail = tail.join().unwrap_or_default();
    let (packages, finished) = messages?;
    Ok(CargoBuild {
        packages,
        success: status.success() && finished != Some(false),
        stderr_tail,
    })
}

/// Copies cargo's standard error to ours as it comes, keeping its last [`TAIL_BYTES`].
fn pass_through(mut from: impl Read) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    let mut out = std::io::stderr();
    loop {
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                let _ = out.write_all(&buffer[..read]);
                let _ = out.flush();
                tail.extend_from_slice(&buffer[..read]);
                if tail.len() > 2 * TAIL_BYTES {
                    tail.drain(..tail.len() - TAIL_BYTES);
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// The packages of cargo's messages, and `build-finished`'s verdict when it came.
fn read_messages(stdout: impl Read) -> Result<(Vec<BuiltPackage>, Option<bool>), CliError> {
    let mut manifests: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut optimized: BTreeMap<String, bool> = BTreeMap::new();
    let mut packages: Vec<BuiltPackage> = Vec::new();
    let mut finished = None;
    for message in Message::parse_stream(BufReader::new(stdout)) {
        let message = message.map_err(|error| {
            CliError::CouldNotCheck(format!("reading cargo's messages: {error}"))
        })?;
        match message {
            Message::CompilerArtifact(artifact) => {
                let build_script = (artifact.target.kind.iter())
                    .any(|kind| matches!(kind, cargo_metadata::TargetKind::CustomBuild));
                if !build_script {
                    let opt_level = artifact.profile.opt_level.as_str();
                    optimized.insert(artifact.package_id.repr.clone(), opt_level != "0");
                }
                let path = artifact.manifest_path.into_std_path_buf();
                manifests.insert(artifact.package_id.repr, path);
            }
            Message::BuildScriptExecuted(script) => {
                let id = script.package_id.repr;
                packages.push(BuiltPackage {
                    name: package_name(&id),
                    lock_key: String::new(),
                    manifest_path: manifests.get(&id).cloned(),
                    optimized: None,
                    id,
                    out_dir: script.out_dir.into_std_path_buf(),
                    linked_libs: script.linked_libs.iter().map(|l| l.to_string()).collect(),
                    linked_paths: script
                        .linked_paths
                        .iter()
                        .map(|p| native_path(p.as_str()))
                        .collect(),
                });
            }
            Message::BuildFinished(done) => finished = Some(done.success),
            Message::TextLine(line) if !line.trim().is_empty() => eprintln!("{line}"),
            _ => {}
        }
    }
    for package in &mut packages {
        if package.manifest_path.is_none() {
            package.manifest_path = manifests.get(&package.id).cloned();
        }
        package.optimized = optimized.get(&package.id).copied();
    }
    lock_keys(&mut packages);
    Ok((packages, finished))
}

/// `native=/x/lib` → `/x/lib` (a search path's kind prefix dropped).
fn native_path(path: &str) -> PathBuf {
    let path = ["native=", "dependency=", "crate=", "framework=", "all="]
        .iter()
        .find_map(|kind| path.strip_prefix(kind))
        .unwrap_or(path);
    PathBuf::from(path)
}

/// The package name of a cargo package id: `registry+https://...#candle-kernels@0.9.1` and
/// `path+file:///x/k#0.1.0` (the name is the directory's when the fragment has none); the
/// old form `candle-kernels 0.9.1 (registry+...)` too.
pub fn package_name(id: &str) -> String {
    if let Some((url, fragment)) = id.rsplit_once('#') {
        return match fragment.split_once('@') {
            Some((name, _)) => name.to_owned(),
            None => url
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(url)
                .to_owned(),
        };
    }
    id.split(' ').next().unwrap_or(id).to_owned()
}

/// A package id's readable form and its source: `registry+https://...#candle-kernels@0.9.1`
/// and `candle-kernels 0.9.1 (registry+...)` are `candle-kernels@0.9.1` from `registry+...`;
/// `path+file:///x/k#0.1.0` is `k@0.1.0` from `path+file:///x/k`.
pub fn package_version(id: &str) -> (String, String) {
    let name = package_name(id);
    if let Some((url, fragment)) = id.rsplit_once('#') {
        let version = fragment
            .rsplit_once('@')
            .map_or(fragment, |(_, version)| version);
        return (format!("{name}@{version}"), url.to_owned());
    }
    let mut words = id.splitn(3, ' ');
    let version = words.nth(1).unwrap_or_default();
    let source = words.next().unwrap_or_default();
    let source = source.trim_start_matches('(').trim_end_matches(')');
    (format!("{name}@{version}"), source.to_owned())
}

/// Each package's key in a lock: its name and version, the rule of one row per package id;
/// with the source (`k@0.1.0 from git+https://...`) where two packages of the build share the
/// name and version, so neither row reports the other's state.
fn lock_keys(packages: &mut [BuiltPackage]) {
    let mut sources: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for package in packages.iter() {
        let (readable, source) = package_version(&package.id);
        sources.entry(readable).or_default().insert(source);
    }
    for package in packages.iter_mut() {
        let (readable, source) = package_version(&package.id);
        package.lock_key = match sources[&readable].len() {
            1 => readable,
            _ => format!("{readable} from {source}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_of_every_id_form() {
        for (id, name) in [
            (
                "registry+https://github.com/rust-lang/crates.io-index#candle-kernels@0.9.1",
                "candle-kernels",
            ),
            ("path+file:///work/k#0.1.0", "k"),
            ("path+file:///work/dir#my-kernels@0.1.0", "my-kernels"),
            (
                "candle-kernels 0.9.1 (registry+https://github.com/rust-lang/crates.io-index)",
                "candle-kernels",
            ),
        ] {
            assert_eq!(package_name(id), name, "{id}");
        }
    }

    #[test]
    fn lock_keys_are_name_and_version_and_the_source_where_two_share_them() {
        let package = |id: &str| BuiltPackage {
            name: package_name(id),
            id: id.to_owned(),
            out_dir: PathBuf::new(),
            linked_libs: Vec::new(),
            linked_paths: Vec::new(),
            manifest_path: None,
            lock_key: String::new(),
            optimized: None,
        };
        let crates_io = "registry+https://github.com/rust-lang/crates.io-index";
        let mut packages = [
            package(&format!("{crates_io}#k@0.1.0")),
            package("git+https://example.com/k#k@0.1.0"),
            package(&format!("{crates_io}#k@0.2.0")),
            package("path+file:///w/dir#0.3.0"),
            package(&format!("old 1.0.0 ({crates_io})")),
        ];
        lock_keys(&mut packages);
        let keys: Vec<&str> = packages.iter().map(|p| p.lock_key.as_str()).collect();
        assert_eq!(
            keys,
            [
                format!("k@0.1.0 from {crates_io}").as_str(),
                "k@0.1.0 from git+https://example.com/k",
                "k@0.2.0",
                "dir@0.3.0",
                "old@1.0.0",
            ]
        );
    }

    #[test]
    fn messages_give_out_dirs_links_and_manifests() {
        let lines = [
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/k#0.1.0","manifest_path":"/w/k/Cargo.toml","target":{"kind":["custom-build"],"crate_types":["bin"],"name":"build-script-build","src_path":"/w/k/build.rs","edition":"2021","doc":false,"doctest":false,"test":false},"profile":{"opt_level":"0","debuginfo":0,"debug_assertions":true,"overflow_checks":true,"test":false},"features":[],"filenames":[],"executable":null,"fresh":false}"#,
            r#"{"reason":"build-script-executed","package_id":"path+file:///w/k#0.1.0","linked_libs":["static=kernels"],"linked_paths":["native=/w/target/debug/build/k-1/out"],"cfgs":[],"env":[],"out_dir":"/w/target/debug/build/k-1/out"}"#,
            "not json",
            r#"{"reason":"build-finished","success":true}"#,
        ];
        let (packages, finished) = read_messages(lines.join("\n").as_bytes()).unwrap();
        assert_eq!(finished, Some(true));
        assert_eq!(packages.len(), 1);
        let package = &packages[0];
        assert_eq!(package.name, "k");
        assert_eq!(package.out_dir, Path::new("/w/target/debug/build/k-1/out"));
        assert_eq!(package.linked_libs, ["static=kernels"]);
        assert_eq!(
            package.linked_paths,
            [PathBuf::from("/w/target/debug/build/k-1/out")]
        );
        assert_eq!(
            package.manifest_path.as_deref(),
            Some(Path::new("/w/k/Cargo.toml"))
        );
    }
}
