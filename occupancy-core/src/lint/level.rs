//! [`Level`]: allow, warn or deny, in clippy's words, and how a level word is read. One type
//! for the whole toolkit, `occupancy-model`'s: the attribute's const holds it too
//! (`occupancy::LintLevel`).

pub use occupancy_model::{Level, UnknownLevel};
