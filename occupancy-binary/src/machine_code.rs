//! The SASS stage for a binary's kernels: the machine-code lints (`spill_in_loop`, `call`,
//! `local_array`, `fp64`, `setmaxnreg_budget`) read a kernel's SASS as they do for a source
//! build, with the build's own disassembly (`occupancy-build`'s `disassemble`: each kernel's code cut out of
//! its cubin, one raw-mode nvdisasm per architecture for many cubins, a cubin nvdisasm's raw mode
//! cannot read read whole) and reader (`occupancy_core::sass`).
//!
//! Which kernels: a binary has no PTX to say which operations a kernel has, so the choice is made
//! from the cubin ([`MachineCodeLints::read_binary_kernel`]): local memory as ptxas reported it
//! (spills, a stack frame), the calls and `setmaxnreg` its symbols, call graph, relocations and
//! attributes show (`occupancy-build`'s `cubin::CodeMarks`), every kernel for `fp64` when it is enabled. The
//! others are handed on at once; a kernel to read is held, its cubin copied aside, until its
//! batch is read.
//!
//! One stage serves every binary of a check (`crate::BinarySession`): a batch holds kernels of
//! several binaries, so that a check of eleven fatbins runs one nvdisasm per architecture, not
//! one per architecture and binary (nvdisasm costs about 0.17 s of CPU and 50 MB to start, which
//! made reading eleven fatbins 20 times dearer). Bounded: a batch is read when it holds
//! [`CODE_BYTES`] of code, [`CUBIN_BYTES`] of cubins kept aside or [`HELD_KERNELS`] kernels, and
//! at the end of the check, so memory (the code, nvdisasm's text of it and the sections read from
//! it) and disk stay bounded whatever the binaries' size.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{BinaryKernel, MachineCodeLints};
use occupancy_build::cli::CodeMarks;
use occupancy_build::cli::ToolTimeouts;
use occupancy_build::cli::{Batch, Nvdisasm};
use occupancy_build::Error;

/// The code a batch holds before it is read: reading it (nvdisasm's text, the sections read from
/// it, both archs at once) took check about 70 bytes per byte of it, measured on the generated
/// crate's 508 MB library: 39, 52 and 70 MB at 256 KiB, 512 KiB and 1 MiB, against 15 MB without
/// SASS; each batch costs one nvdisasm per arch (0.17 s of CPU to start): 7.4, 6.1 and 4.9 s.
const CODE_BYTES: usize = 512 << 10;
/// The cubins kept aside for a batch (each whole: nvdisasm's ELF mode may read it).
const CUBIN_BYTES: u64 = 256 << 20;
/// The kernels a batch holds before it is read.
const HELD_KERNELS: usize = 20_000;

/// How a kernel goes on once read: as a cubin's kernel (the compatible-cubin step sees it), or as
/// one assembled from embedded PTX for an asked arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    Cubin,
    Assembled,
}

/// The binary front end's SASS stage: what it holds, and where.
pub(super) struct MachineCode<'a> {
    nvdisasm: &'a Path,
    lints: &'a MachineCodeLints,
    timeouts: ToolTimeouts,
    /// A directory of the binary's private work directory: the cubins kept aside.
    dir: PathBuf,
    batch: Batch,
    /// Per owner (a cubin of the batch): where it came from, which errors name.
    origins: Vec<PathBuf>,
    kept_bytes: u64,
    held: Vec<Held>,
    /// What nvdisasm refused to read (an architecture it no longer knows), each once.
    refused: std::sync::Mutex<BTreeSet<String>>,
    /// Of `refused`, what notes have said already.
    said: BTreeSet<String>,
}

/// A kernel waiting for its batch to be read.
struct Held {
    kernel: BinaryKernel,
    owner: usize,
    /// The input (binary) it is of, and how it goes on.
    input: usize,
    via: Via,
}

impl<'a> MachineCode<'a> {
    /// The stage for the binaries of a check, keeping cubins aside in `work` (a private
    /// directory); `None` when no machine-code lint is above `allow`.
    pub(super) fn new(
        nvdisasm: &'a Path,
        lints: &'a MachineCodeLints,
        timeouts: ToolTimeouts,
        work: &Path,
    ) -> Result<Option<MachineCode<'a>>, Error> {
        if lints.enabled.is_empty() && !lints.everything {
            return Ok(None);
        }
        let dir = work.join("sass");
        std::fs::create_dir(&dir).map_err(|error| Error::Io {
            path: dir.clone(),
            error,
        })?;
        Ok(Some(MachineCode {
            nvdisasm,
            lints,
            timeouts,
            dir,
            batch: Batch::default(),
            origins: Vec::new(),
            kept_bytes: 0,
            held: Vec::new(),
            refused: std::sync::Mutex::default(),
            said: BTreeSet::new(),
        }))
    }

    /// Splits one cubin's kernels (the cubin `bytes`, for `arch`) into those to hand on now and
    /// those whose SASS is read first, which it holds (copying the cubin aside).
    pub(super) fn take(
        &mut self,
        kernels: Vec<(BinaryKernel, CodeMarks)>,
        bytes: &[u8],
        origin: &str,
        (input, via): (usize, Via),
    ) -> Result<Vec<BinaryKernel>, Error> {
        let (wanted, now): (Vec<_>, Vec<_>) = kernels
            .into_iter()
            .partition(|(kernel, marks)| self.lints.read_binary_kernel(&kernel.record, *marks));
        let Some((first, _)) = wanted.first() else {
            return Ok(now.into_iter().map(|(kernel, _)| kernel).collect());
        };
        let arch = first.record.arch.clone();
        let owner = self.origins.len();
        let copy = self.dir.join(format!("{owner}.cubin"));
        std::fs::write(&copy, bytes).map_err(|error| Error::Io {
            path: copy.clone(),
            error,
        })?;
        self.kept_bytes += bytes.len() as u64;
        self.origins.push(PathBuf::from(origin));
        let names: BTreeSet<String> = wanted
            .iter()
            .map(|(kernel, _)| kernel.record.name.clone())
            .collect();
        self.batch.add(owner, &arch, copy, bytes, Some(&names));
        self.held.extend(wanted.into_iter().map(|(kernel, _)| Held {
            kernel,
            owner,
            input,
            via,
        }));
        Ok(now.into_iter().map(|(kernel, _)| kernel).collect())
    }

    /// Whether the batch is as large as it may grow.
    pub(super) fn full(&self) -> bool {
        self.batch.code_bytes() >= CODE_BYTES
            || self.kept_bytes >= CUBIN_BYTES
            || self.held.len() >= HELD_KERNELS
    }

    /// The kernels of `input` held.
    pub(super) fn held_of(&self, input: usize) -> impl Iterator<Item = &BinaryKernel> {
        (self.held.iter())
            .filter(move |held| held.input == input)
            .map(|held| &held.kernel)
    }

    /// A note for each architecture nvdisasm refused since the last call: its kernels keep the
    /// rows their cubins give, without machine code.
    pub(super) fn refusal_notes(&mut self) -> Vec<String> {
        let refused = self.refused.lock().expect("not poisoned").clone();
        let new: Vec<String> = refused.difference(&self.said).cloned().collect();
        self.said.extend(new.iter().cloned());
        let lints: Vec<String> = self.lints.enabled.iter().map(ToString::to_string).collect();
        new.into_iter()
            .map(|why| format!("{} refused code of this binary ({why}): its kernels there keep the rows their cubins give, but the machine-code lints ({}) were not checked on them", self.nvdisasm.display(), lints.join(", ")))
            .collect()
    }

    /// Reads the batch: the kernels held, each with its facts and input, in the order they came;
    /// the cubins kept aside are removed.
    pub(super) fn read(&mut self) -> Result<Vec<(usize, BinaryKernel, Via)>, Error> {
        let held = std::mem::take(&mut self.held);
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let spilled: BTreeSet<(String, String)> = held
            .iter()
            .filter(|held| occupancy_build::cli::spills(&held.kernel.record))
            .map(|held| {
                (
                    held.kernel.record.name.clone(),
                    held.kernel.record.arch.clone(),
                )
            })
            .collect();
        let spills_reported =
            |kernel: &str, arch: &str| spilled.contains(&(kernel.to_owned(), arch.to_owned()));
        let nvdisasm = Nvdisasm {
            path: self.nvdisasm,
            spills_reported: &spills_reported,
            timeouts: self.timeouts,
            refused: Some(&self.refused),
        };
        let origins: Vec<&Path> = self.origins.iter().map(PathBuf::as_path).collect();
        let batch = std::mem::take(&mut self.batch);
        let refused_before = self.refused.lock().expect("not poisoned").len();
        let read = nvdisasm.read(&batch, &self.dir, &origins);
        let refused = self.refused.lock().expect("not poisoned").len() > refused_before;
        let owners = self.origins.clone();
        for owner in 0..self.origins.len() {
            let _ = std::fs::remove_file(self.dir.join(format!("{owner}.cubin")));
        }
        self.origins.clear();
        self.kept_bytes = 0;
        let mut facts: BTreeMap<(usize, String), _> = BTreeMap::new();
        for (owner, found) in read? {
            for kernel_facts in found {
                facts.insert((owner, kernel_facts.kernel.clone()), kernel_facts);
            }
        }
        let read_archs: BTreeSet<String> = (held.iter())
            .filter(|held| {
                (facts.get(&(held.owner, held.kernel.record.name.clone())))
                    .is_some_and(|facts| facts.instructions > 0)
            })
            .map(|held| held.kernel.record.arch.clone())
            .collect();
        held.into_iter()
            .map(|mut held| {
                let key = (held.owner, held.kernel.record.name.clone());
                held.kernel.sass = facts.remove(&key);
                // nvdisasm exiting 0 without a kernel's code (or with text that is no SASS)
                // left its machine-code lints unchecked and the check passing: an error,
                // unless nvdisasm refused the kernel's architecture, which a note says.
                // Every kernel has an instruction (its `EXIT`): none read is no SASS read.
                let read = (held.kernel.sass.as_ref()).is_some_and(|facts| facts.instructions > 0);
                let arch_refused = refused && !read_archs.contains(&held.kernel.record.arch);
                if !read && !arch_refused {
                    return Err(Error::UnreadableBinary {
                        path: owners.get(held.owner).cloned().unwrap_or_default(),
                        reason: format!(
                            "{} printed no machine code for kernel `{}` ({}): its machine-code lints could not be checked",
                            self.nvdisasm.display(),
                            held.kernel.record.name,
                            held.kernel.record.arch
                        ),
                    });
                }
                Ok((held.input, held.kernel, held.via))
            })
            .collect()
    }
}
