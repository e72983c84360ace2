//! The binary front end: kernel records read from compiled CUDA code, for code whose compile
//! printed no ptxas report (a compiler cache's hit, a prebuilt `.a`/`.so`, a Python wheel, any
//! compiler's cubins). It yields the same [`KernelRecord`]s as the log and compile front ends.
//!
//! * a cubin (an ELF for `EM_CUDA`) is read as it is (`crate::cubin`'s resource reader);
//! * a fatbin, a host object, a static or shared library or an executable: `cuobjdump -xelf
//!   all` takes its cubins out (it reads archives, compressed fatbins and `.nv_fatbin`
//!   sections), and `cuobjdump -xptx all` its embedded PTX;
//! * a wheel (a zip): its members that may hold device code are written out and read as above.
//!
//! Embedded PTX is assembled, as the driver would JIT it, for each asked architecture that a
//! kernel has no cubin for, by `ptxas -v` (its report parsed like any log). Every file is
//! read from a private scratch directory that is removed afterwards; memory holds one cubin at
//! a time, and cuobjdump reads one fatbin at a time (an archive member by member, a host ELF's
//! `.nv_fatbin` fatbin by fatbin: `archive.rs`, `fatbin.rs`).

mod archive;
mod extract;
mod fatbin;
pub(crate) mod wheel;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_core::ptxas::{KernelRecord, PtxEntry};

pub use crate::cubin::SpillEvidence;
use crate::process::ToolTimeouts;
use crate::Error;

/// The tools the binary front end runs, resolved once by the caller.
#[derive(Debug, Clone, Default)]
pub struct BinaryTools {
    /// Takes cubins and PTX out of containers; not needed for bare cubins.
    pub cuobjdump: Option<PathBuf>,
    /// Assembles embedded PTX for an asked arch no cubin covers.
    pub ptxas: Option<PathBuf>,
    pub timeouts: ToolTimeouts,
}

impl BinaryTools {
    /// `OCCUPANCY_CUOBJDUMP`, else cuobjdump where the SASS stage looks for it (beside nvcc, the
    /// toolkit's `bin/`, `PATH`); ptxas beside nvcc. A tool not found stays `None`: only a
    /// binary that needs it fails, naming it.
    pub fn resolve(env: &crate::TrackedEnv, timeouts: &ToolTimeouts) -> BinaryTools {
        let toolchain = crate::toolchain::Toolchain::find(env, false, timeouts).ok();
        let near_nvcc = |name: &str| {
            toolchain
                .as_ref()
                .and_then(|toolchain| toolchain.locate_tool(name))
        };
        BinaryTools {
            cuobjdump: env
                .get("OCCUPANCY_CUOBJDUMP")
                .map(PathBuf::from)
                .or_else(|| near_nvcc("cuobjdump")),
            ptxas: near_nvcc("ptxas"),
            timeouts: *timeouts,
        }
    }
}

/// One kernel on one architecture, read from a binary.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BinaryKernel {
    pub record: KernelRecord,
    /// The launch directives the binary keeps (from the cubin), or the PTX's when assembled.
    pub launch: PtxEntry,
    /// The register cap ptxas compiled under (`EIATTR_MAXREG_COUNT` below 255).
    pub register_cap: Option<u32>,
    pub spills: SpillEvidence,
    /// Where in the binary: `libk.a(k.o) sm_90 cubin`, `k.fatbin PTX compute_80 for sm_86`.
    pub origin: String,
}

/// What one binary held.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct BinaryRead {
    pub kernels: Vec<BinaryKernel>,
    /// How it was read, for the user (a member without device code, PTX assembled).
    pub notes: Vec<String>,
}

/// What a file is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryKind {
    /// An ELF for `EM_CUDA`.
    Cubin,
    /// A fatbin, or a host ELF or `ar` archive that may embed fatbins.
    Container,
    /// A zip archive (a wheel).
    Wheel,
}

/// The kind of binary `path` is, or `None` when it is none of them (a log, a source).
pub fn sniff(path: &Path) -> std::io::Result<Option<BinaryKind>> {
    use std::io::Read;
    let mut head = [0u8; 20];
    let mut file = std::fs::File::open(path)?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..])? {
            0 => break,
            read => filled += read,
        }
    }
    Ok(kind_of(&head[..filled]))
}

fn kind_of(head: &[u8]) -> Option<BinaryKind> {
    const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
    if head.starts_with(b"\x7fELF") {
        let machine = head.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]));
        return Some(match machine {
            Some(190) => BinaryKind::Cubin,
            _ => BinaryKind::Container,
        });
    }
    if head.starts_with(b"!<arch>\n") || head.starts_with(&FATBIN_MAGIC) {
        return Some(BinaryKind::Container);
    }
    (head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06"))
        .then_some(BinaryKind::Wheel)
}

/// Reads every kernel of the binary at `path`: its cubins, and for each arch in `asked_archs`
/// that a kernel has no cubin for, its embedded PTX assembled for that arch. `scratch` is a
/// private directory the caller owns; what is written there is removed before returning.
pub fn read_binary(
    path: &Path,
    kind: BinaryKind,
    tools: &BinaryTools,
    asked_archs: &[String],
    scratch: &Path,
) -> Result<BinaryRead, Error> {
    let work = extract::WorkDir::create(scratch)?;
    let shown = crate::fsutil::shown_path(path);
    let mut read = BinaryRead::default();
    let mut ptx = Vec::new();
    match kind {
        BinaryKind::Cubin => read.kernels = extract::cubin_kernels(path, &shown)?,
        BinaryKind::Container => {
            extract::container(path, &shown, tools, work.path(), &mut read, &mut ptx)?;
        }
        BinaryKind::Wheel => wheel_members(path, &shown, tools, work.path(), &mut read, &mut ptx)?,
    }
    run_compatible_cubins(&mut read, asked_archs);
    jit_missing_archs(&mut read, &ptx, tools, asked_archs, work.path())?;
    Ok(read)
}

/// Reads every member of the wheel at `path` that holds device code, each container in a
/// directory of its own (cuobjdump names what it extracts after the file).
fn wheel_members(
    path: &Path,
    shown: &str,
    tools: &BinaryTools,
    work: &Path,
    read: &mut BinaryRead,
    ptx: &mut Vec<extract::EmbeddedPtx>,
) -> Result<(), Error> {
    let members =
        wheel::extract_cuda_members(path, work).map_err(|error| Error::UnreadableBinary {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
    for (index, member) in members.into_iter().enumerate() {
        let origin = format!("{shown}({})", member.name_in_archive);
        match sniff(&member.path).ok().flatten() {
            Some(BinaryKind::Cubin) => read
                .kernels
                .extend(extract::cubin_kernels(&member.path, &origin)?),
            Some(_) => {
                let inner = work.join(format!("member-{index}"));
                std::fs::create_dir(&inner).map_err(|error| Error::Io {
                    path: inner.clone(),
                    error,
                })?;
                extract::container(&member.path, &origin, tools, &inner, read, ptx)?;
            }
            None => {}
        }
    }
    Ok(())
}

/// For each asked arch a kernel has no cubin of, the cubin the driver loads instead when there
/// is one: of the same major, the highest minor below (an `sm_80` cubin on an `sm_86` GPU);
/// never an arch-specific (`sm_90a`) one. Its resources are then evaluated on the asked arch.
fn run_compatible_cubins(read: &mut BinaryRead, asked_archs: &[String]) {
    let present: BTreeSet<(String, String)> = read
        .kernels
        .iter()
        .map(|kernel| (kernel.record.name.clone(), kernel.record.arch.clone()))
        .collect();
    let mut added = Vec::new();
    for asked in asked_archs {
        let Ok(target) = occupancy_core::arch::lookup(asked) else {
            continue;
        };
        let mut best: BTreeMap<&str, &BinaryKernel> = BTreeMap::new();
        for kernel in &read.kernels {
            let name = kernel.record.name.as_str();
            if present.contains(&(name.to_owned(), asked.clone())) {
                continue;
            }
            let Ok(facts) = occupancy_core::arch::lookup(&kernel.record.arch) else {
                continue;
            };
            let runs_there = !kernel.record.arch.ends_with('a')
                && facts.major == target.major
                && facts.minor < target.minor;
            let better = best.get(name).is_none_or(|found| {
                occupancy_core::arch::lookup(&found.record.arch)
                    .is_ok_and(|found| found.minor < facts.minor)
            });
            if runs_there && better {
                best.insert(name, kernel);
            }
        }
        for kernel in best.into_values() {
            let mut on_target = kernel.clone();
            on_target.origin = format!("{} (the driver runs it on {asked})", kernel.origin);
            on_target.record.arch.clone_from(asked);
            added.push(on_target);
        }
    }
    read.kernels.extend(added);
}

/// Assembles embedded PTX for each asked arch that a kernel has no cubin for, from the PTX the
/// driver would pick: the highest virtual arch that can JIT to it.
fn jit_missing_archs(
    read: &mut BinaryRead,
    ptx_files: &[extract::EmbeddedPtx],
    tools: &BinaryTools,
    asked_archs: &[String],
    work: &Path,
) -> Result<(), Error> {
    let mut covered: BTreeSet<(String, String)> = read
        .kernels
        .iter()
        .map(|kernel| (kernel.record.name.clone(), kernel.record.arch.clone()))
        .collect();
    let mut by_preference: Vec<&extract::EmbeddedPtx> = ptx_files.iter().collect();
    by_preference.sort_by_key(|ptx| std::cmp::Reverse(extract::arch_number(&ptx.virtual_arch)));
    for arch in asked_archs {
        for ptx in by_preference.iter().filter(|ptx| ptx.can_jit_to(arch)) {
            let missing: Vec<&PtxEntry> = ptx
                .entries
                .iter()
                .filter(|entry| !covered.contains(&(entry.name.clone(), arch.clone())))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let assembled = extract::assemble(ptx, arch, &missing, tools, work)?;
            read.notes.push(format!(
                "{}: {} kernel(s) have no {arch} cubin; assembled from its embedded PTX ({}) as the driver would JIT it",
                ptx.origin,
                missing.len(),
                ptx.virtual_arch
            ));
            for kernel in assembled {
                covered.insert((kernel.record.name.clone(), arch.clone()));
                read.kernels.push(kernel);
            }
        }
    }
    Ok(())
}
