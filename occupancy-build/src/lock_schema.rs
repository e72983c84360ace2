//! The baseline's (`occupancy.lock`'s) schema: the version this occupancy-build writes, and what to do with a lock of
//! a schema it does not read. A leaf: `error.rs` words its error with it, and the baseline
//! (which returns that error) is not imported back.

/// The schema this version writes (it reads 1 too).
pub const SCHEMA_VERSION: u32 = 2;

/// What to do with a lock of another schema: a newer one is read by the occupancy-build that
/// wrote it; regenerating it forgets its numbers.
pub(crate) fn unsupported_hint(schema_version: u32) -> &'static str {
    if schema_version > SCHEMA_VERSION {
        "A newer occupancy-build wrote it: build with that version (update `occupancy-build` in Cargo.toml), or, to stay on this one, remove the file and regenerate it with `OCCUPANCY_BLESS=1 cargo build` (its numbers are then forgotten)"
    } else {
        "No occupancy-build writes that schema: restore the committed file, or remove it and regenerate it with `OCCUPANCY_BLESS=1 cargo build` (its numbers are then forgotten)"
    }
}
