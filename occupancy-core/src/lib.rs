//! `occupancy-core`: the pure engine of the occupancy toolkit.
//!
//! Data flows one way through these modules:
//! compiler output ([`ptxas`]) + declared intent ([`spec`]) → per-architecture facts ([`arch`])
//! → the exact calculator ([`calc`]) → findings ([`lint`]) → renderers ([`report`]).
//!
//! This crate performs no I/O of its own: callers hand it text and get values back. Driving
//! nvcc, reading files and printing belong to `occupancy-build` and `cargo-occupancy`.

pub mod arch;
pub mod calc;
pub mod lint;
pub mod ptxas;
pub mod report;
pub mod sass;
pub mod spec;
