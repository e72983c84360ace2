//! The `#[occupancy::kernel]` attribute (filled in by the declaration work).
