//! The bounds chosen for `"auto"` declarations as `occupancy_bounds.h` writes them
//! ([`HeaderChoices`]). A leaf: the header writer (`declarations`) and the tuning stage
//! (`auto_bounds`, which remembers the choices between builds) both read it.

use std::collections::BTreeMap;

use occupancy_core::tune::{Bound, Knob};
use serde::{Deserialize, Serialize};

/// One `"auto"` kernel's bounds as the header writes them: per `__CUDA_ARCH__` value, the bound
/// of the archs compiled under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KernelChoices {
    pub(crate) knob: Knob,
    /// The block the choice is for: a changed `block` chooses again.
    pub(crate) threads: u32,
    pub(crate) by_cuda_arch: BTreeMap<u32, Bound>,
}

impl KernelChoices {
    /// Whether these choices hold for a declaration that leaves `knob` to the build at a block
    /// of `threads` (what is remembered may be older than the declaration).
    pub(crate) fn holds_for(&self, knob: Knob, threads: u32) -> bool {
        self.knob == knob && self.threads == threads
    }
}

/// Every `"auto"` kernel's choices, by symbol.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeaderChoices(BTreeMap<String, KernelChoices>);

impl HeaderChoices {
    /// Sets the choices of `kernel`.
    pub(crate) fn insert(&mut self, kernel: String, choices: KernelChoices) {
        self.0.insert(kernel, choices);
    }

    /// Every kernel's choices, by symbol.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &KernelChoices)> {
        self.0.iter()
    }

    /// The choices of `kernel`, if any.
    pub(crate) fn of(&self, kernel: &str) -> Option<&KernelChoices> {
        self.0.get(kernel)
    }
}
