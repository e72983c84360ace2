//! The model `occupancy`'s parts share: one type per concept, used by the build
//! (`occupancy-build`, through `occupancy-core`), by the `#[occupancy::kernel]` expansion
//! (`occupancy-macros`) and by the facade crate users depend on (`occupancy`).
//!
//! - [`KernelSpec`]: one declaration's keys and lint settings. Its key fields, [`Key`] and the
//!   registry [`KEYS`] (name, value, unit, documentation, range, default) are generated from
//!   one list, in `keys.rs`: the grammar (`occupancy_core::spec`) parses and validates by it, the
//!   expansion writes the const's fields from it ([`KernelSpec::value`]) and
//!   `docs/declaring-kernels.md`'s keys are rendered from it.
//! - [`CompiledFacts`]: one compiled kernel on one architecture, as the build checked it.
//! - [`BlockDim`], [`ClusterDim`], [`Tunable`] (a launch bound written or left to the build) and
//!   [`Level`].
//!
//! The types are generic over a [`Storage`]: [`Static`] (`&'static str`, `&'static [T]`) builds
//! them in a `const`, as the attribute's expansion does, with no allocation; the build's owned
//! form (`String`, `Vec`, typed lint ids) is `occupancy_core::spec::Owned`. The same struct,
//! the same fields and docs, in both.
//!
//! `no_std` and without dependencies (serde with the `serde` feature), so the facade stays
//! `no_std` and builds for GPU targets.

#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;

#[macro_use]
mod declare;

mod block;
mod compiled;
mod keys;
mod level;
mod spec;
mod storage;
mod tunable;

pub use block::{BlockDim, ClusterDim};
pub use compiled::CompiledFacts;
pub use keys::{
    KernelSpec, Key, KEYS, MAX_BLOCKS_PER_SM_ANY_ARCH, MAX_BLOCK_DIMS, MAX_CLUSTER_BLOCKS_ANY_ARCH,
    MAX_REGISTERS_PER_THREAD_ANY_ARCH, MAX_THREADS_PER_BLOCK,
};
pub use level::Level;
#[cfg(feature = "alloc")]
pub use level::UnknownLevel;
pub use spec::{ExampleArguments, KeyInfo, Kind, Value, ValueMut};
pub use storage::{Static, Storage};
pub use tunable::Tunable;
