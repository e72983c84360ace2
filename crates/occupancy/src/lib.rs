//! `#[occupancy::kernel(...)]` and the types its expansion uses (filled in by the declaration work).
pub use occupancy_macros::*;
