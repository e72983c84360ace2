//! The build.rs helper (filled in by the build-gate work).
