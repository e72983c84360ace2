//! [`FunctionSymbols`]: what the cubin says about functions beyond nvdisasm's text, which the
//! parsed sections carry ([`super::parse::SassSection::functions`]) and
//! [`super::call_target::CallResolver`] reads. A leaf: it names nothing else of the crate.

use std::collections::{BTreeMap, BTreeSet};

/// What the cubin around a function says about functions that nvdisasm's text of its code does
/// not: which symbols are functions and which constant-bank slots hold a function's address.
/// Read by the caller from the cubin (`occupancy-build`'s `cubin.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FunctionSymbols {
    /// Every function symbol (`STT_FUNC`), defined or not (`__assertfail`, the kernels).
    pub names: BTreeSet<String>,
    /// `(bank, offset)` of a slot of a module-wide constant bank (`.nv.constant4` at 0x40) → the
    /// function whose address a relocation writes there. Slots of data symbols (`$str`) are not
    /// here.
    pub constant_slots: BTreeMap<(u32, u64), String>,
}

impl FunctionSymbols {
    pub fn new(
        names: BTreeSet<String>,
        constant_slots: BTreeMap<(u32, u64), String>,
    ) -> FunctionSymbols {
        FunctionSymbols {
            names,
            constant_slots,
        }
    }
}
