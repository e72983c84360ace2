//! The bounds chosen for `"auto"` declarations as `occupancy_bounds.h` writes them
//! ([`HeaderChoices`]), and where a build remembers them for the next one
//! (`OUT_DIR/occupancy/auto_bounds.json`). A leaf: the header writer (`declarations`) and the
//! tuning stage (`auto_bounds`) both read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use occupancy_core::tune::{Bound, Knob};
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::Error;

/// One `"auto"` kernel's bounds as the header writes them: per `__CUDA_ARCH__` value, the bound
/// of the archs compiled under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KernelChoices {
    pub(crate) knob: Knob,
    /// The block the choice is for: a changed `block` chooses again.
    pub(crate) threads: u32,
    pub(crate) by_cuda_arch: BTreeMap<u32, Bound>,
}

/// Every `"auto"` kernel's choices, by symbol.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeaderChoices(BTreeMap<String, KernelChoices>);

impl HeaderChoices {
    /// Sets the choices of `kernel`.
    pub(crate) fn insert(&mut self, kernel: String, choices: KernelChoices) {
        self.0.insert(kernel, choices);
    }

    /// The choices of `kernel`, if any.
    pub(crate) fn of(&self, kernel: &str) -> Option<&KernelChoices> {
        self.0.get(kernel)
    }

    fn path(context: &Context) -> PathBuf {
        context.out_dir.join("occupancy").join("auto_bounds.json")
    }

    /// The choices the last build wrote (none when there are none, or the file is not ours
    /// alone: then the first compile is without bounds and the tuning decides).
    pub(crate) fn remembered(context: &Context) -> HeaderChoices {
        let path = Self::path(context);
        let trusted = std::fs::symlink_metadata(&path)
            .is_ok_and(|metadata| crate::trust::distrust(&metadata).is_none());
        trusted
            .then(|| std::fs::read(&path).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// Writes the choices for the next build.
    pub(crate) fn remember(&self, context: &Context) -> Result<(), Error> {
        let path = Self::path(context);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| Error::Io {
                path: parent.to_path_buf(),
                error,
            })?;
        }
        let text = serde_json::to_vec_pretty(self).expect("choices serialize");
        crate::fsutil::write_atomic(&path, &text)
    }
}
