//! Where the kernels read from one binary go: each is handed on as it is read (or, when a
//! machine-code lint reads its SASS, when its batch is read), and only what the compatible-cubin
//! and JIT steps need is kept (the kernels x archs seen; per kernel and asked arch without a cubin
//! so far, the best compatible cubin's kernel), so memory grows with the distinct kernels, not
//! with the binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use occupancy_core::arch::ArchFacts;

use super::extract;
use super::machine_code::{MachineCode, Via};
use super::BinaryKernel;
use occupancy_build::cli::CodeMarks;
use occupancy_build::Error;

/// Where one binary's kernels go (module docs).
pub(crate) struct Found<'a, 's> {
    /// Takes each kernel with the number of the input it is of (a batch of the SASS stage may
    /// hold kernels of inputs read before this one).
    each: &'s mut dyn FnMut(usize, BinaryKernel),
    /// This binary's input number.
    input: usize,
    /// The SASS stage, when a machine-code lint is above `allow` and nvdisasm was found.
    machine_code: Option<&'s mut MachineCode<'a>>,
    /// The asked archs, resolved.
    pub(super) asked: Vec<(&'a str, &'static ArchFacts)>,
    /// The kernels x archs read, held ones included.
    pub(super) covered: BTreeSet<(String, String)>,
    /// (index in `asked`, kernel) -> the kernel of the highest compatible cubin seen.
    pub(super) compatible: BTreeMap<(usize, String), BinaryKernel>,
    /// How it was read, for the user (a file without device code, PTX assembled).
    pub notes: Vec<String>,
}

/// Whether the driver loads a cubin for `arch` (a kernel's) on an asked `target` it has no cubin
/// for: the same major and a lower minor (an `sm_80` cubin on an `sm_86` GPU), never an
/// arch-specific (`sm_90a`) one.
pub(super) fn runs_on(arch: &str, target: &ArchFacts) -> Option<&'static ArchFacts> {
    let facts = occupancy_core::arch::lookup(arch).ok()?;
    (!arch.ends_with('a') && facts.major == target.major && facts.minor < target.minor)
        .then_some(facts)
}

impl<'a, 's> Found<'a, 's> {
    pub(super) fn new(
        asked_archs: &'a [String],
        input: usize,
        each: &'s mut dyn FnMut(usize, BinaryKernel),
        machine_code: Option<&'s mut MachineCode<'a>>,
    ) -> Found<'a, 's> {
        Found {
            each,
            input,
            machine_code,
            asked: asked_archs
                .iter()
                .filter_map(|arch| Some((arch.as_str(), occupancy_core::arch::lookup(arch).ok()?)))
                .collect(),
            covered: BTreeSet::new(),
            compatible: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// The kernels of the cubin at `path` (shown as `origin`), each handed on: at once, or once
    /// its SASS is read when a machine-code lint reads it.
    pub fn cubin(&mut self, path: &Path, origin: &str) -> Result<(), Error> {
        let bytes = std::fs::read(path).map_err(|error| Error::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let kernels = extract::cubin_kernels(&bytes, path, origin)?;
        self.take(kernels, &bytes, origin, Via::Cubin)
    }

    /// Kernels assembled from embedded PTX into the cubin at `cubin`, each handed on as the
    /// kernels of a cubin are.
    pub(super) fn assembled(
        &mut self,
        kernels: Vec<BinaryKernel>,
        cubin: &Path,
    ) -> Result<(), Error> {
        if self.machine_code.is_none() {
            kernels.into_iter().for_each(|kernel| self.hand_on(kernel));
            return Ok(());
        }
        let bytes = std::fs::read(cubin).map_err(|error| Error::Io {
            path: cubin.to_path_buf(),
            error,
        })?;
        let marks = extract::code_marks(&bytes);
        let marked = kernels
            .into_iter()
            .map(|kernel| {
                let found = marks.get(&kernel.record.name).copied();
                (kernel, found.unwrap_or_default())
            })
            .collect();
        let origin = cubin.display().to_string();
        self.take(marked, &bytes, &origin, Via::Assembled)
    }

    /// Hands on the kernels of one cubin whose SASS no lint reads, and holds the others for the
    /// SASS stage (whose batch is read when full).
    fn take(
        &mut self,
        kernels: Vec<(BinaryKernel, CodeMarks)>,
        bytes: &[u8],
        origin: &str,
        via: Via,
    ) -> Result<(), Error> {
        for (kernel, _) in &kernels {
            let record = &kernel.record;
            self.covered
                .insert((record.name.clone(), record.arch.clone()));
        }
        let input = self.input;
        let now = match self.machine_code.as_deref_mut() {
            Some(machine_code) => machine_code.take(kernels, bytes, origin, (input, via))?,
            None => kernels.into_iter().map(|(kernel, _)| kernel).collect(),
        };
        for kernel in now {
            self.accept(kernel, via);
        }
        if self.machine_code.as_deref().is_some_and(MachineCode::full) {
            self.read_machine_code()?;
        }
        Ok(())
    }

    /// Reads the SASS of the kernels held and hands them on: this binary's as they are when read,
    /// earlier binaries' to their inputs.
    pub(super) fn read_machine_code(&mut self) -> Result<(), Error> {
        let Some(machine_code) = self.machine_code.as_deref_mut() else {
            return Ok(());
        };
        for (input, kernel, via) in machine_code.read()? {
            match input == self.input {
                true => self.accept(kernel, via),
                false => (self.each)(input, kernel),
            }
        }
        Ok(())
    }

    /// Whether a kernel of this binary held for its SASS may run on an asked arch it has no
    /// cubin for: the compatible-cubin step then needs it with its facts, so the batch is read.
    pub(super) fn compatible_are_held(&self) -> bool {
        let Some(machine_code) = self.machine_code.as_deref() else {
            return false;
        };
        machine_code.held_of(self.input).any(|kernel| {
            let name = &kernel.record.name;
            self.asked.iter().any(|(asked, target)| {
                runs_on(&kernel.record.arch, target).is_some()
                    && !self.covered.contains(&(name.clone(), (*asked).to_owned()))
            })
        })
    }

    fn accept(&mut self, kernel: BinaryKernel, via: Via) {
        match via {
            Via::Cubin => self.kernel(kernel),
            Via::Assembled => self.hand_on(kernel),
        }
    }

    /// Hands `kernel` on, keeping it where it is the best compatible cubin so far for an asked
    /// arch that has no cubin of it yet.
    pub fn kernel(&mut self, kernel: BinaryKernel) {
        let name = &kernel.record.name;
        self.covered
            .insert((name.clone(), kernel.record.arch.clone()));
        for (index, (asked, target)) in self.asked.iter().enumerate() {
            let Some(facts) = runs_on(&kernel.record.arch, target) else {
                continue;
            };
            if self.covered.contains(&(name.clone(), (*asked).to_owned())) {
                continue;
            }
            let key = (index, name.clone());
            let better = self.compatible.get(&key).is_none_or(|found| {
                occupancy_core::arch::lookup(&found.record.arch)
                    .is_ok_and(|found| found.minor < facts.minor)
            });
            if better {
                self.compatible.insert(key, kernel.clone());
            }
        }
        self.hand_on(kernel);
    }

    /// Hands `kernel` on as it is (a compatible cubin's or assembled PTX's kernel on an asked arch).
    pub(super) fn hand_on(&mut self, kernel: BinaryKernel) {
        self.covered
            .insert((kernel.record.name.clone(), kernel.record.arch.clone()));
        (self.each)(self.input, kernel);
    }
}
