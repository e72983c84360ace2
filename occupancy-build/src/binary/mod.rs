//! Readers of compiled artifacts handed to `cargo occupancy check`: archives and binaries that
//! may hold CUDA machine code.

pub(crate) mod wheel;
