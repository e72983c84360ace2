//! The kernel records of a compile's own binary (the `.fatbin` or `.o` nvcc wrote), for the
//! kernels x archs its ptxas report lacks: `cuobjdump -xelf all` takes its cubins out, as the
//! SASS stage does (`crate::disassemble::extract_cubins`), and the cubin reader (`crate::cubin`)
//! reads each one's resources, as the binary front end of `cargo occupancy check` (crate
//! `occupancy-binary`) reads a cubin. A build reads only what its own nvcc wrote: no archive, no
//! wheel, no fatbin read by hand, none of which a build script needs.

use std::path::{Path, PathBuf};

use occupancy_core::ptxas::KernelRecord;

use crate::cubin::Cubin;
use crate::fsutil::WorkDir;
use crate::process::ToolTimeouts;
use crate::Error;

/// What reads a compile's binary, resolved once by the caller (the SASS stage's tools).
#[derive(Debug, Clone, Default)]
pub(crate) struct BinaryTools {
    /// Takes the cubins out of the `.fatbin` or `.o`.
    pub(crate) cuobjdump: Option<PathBuf>,
    pub(crate) timeouts: ToolTimeouts,
}

/// Why a binary could not be read without cuobjdump: said alike by the build and the binary
/// front end.
pub const CUOBJDUMP_NOT_FOUND: &str = "cuobjdump, which takes the device code out of fatbins, objects and libraries, was not found: install the `nvidia-cuda-cuobjdump` wheel beside nvcc, or set OCCUPANCY_CUOBJDUMP";

/// Every kernel record of every cubin of `binary`, compiled from `source`; nothing when the
/// binary is not there. Read in a private directory under `scratch`, removed afterwards.
pub(crate) fn records(
    binary: &Path,
    source: &Path,
    tools: &BinaryTools,
    scratch: &Path,
) -> Result<Vec<KernelRecord>, Error> {
    if !binary.is_file() {
        return Ok(Vec::new());
    }
    let cuobjdump = tools
        .cuobjdump
        .as_deref()
        .ok_or_else(|| Error::UnreadableBinary {
            path: binary.to_path_buf(),
            reason: CUOBJDUMP_NOT_FOUND.into(),
        })?;
    let work = WorkDir::create(scratch)?;
    let cubins = crate::disassemble::extract_cubins(
        cuobjdump,
        binary,
        source,
        work.path(),
        &tools.timeouts,
    )?;
    let mut records = Vec::new();
    for (_, path) in cubins {
        let bytes = std::fs::read(&path).map_err(|error| Error::Io {
            path: path.clone(),
            error,
        })?;
        let unreadable = |reason: String| Error::UnreadableBinary {
            path: binary.to_path_buf(),
            reason,
        };
        let origin = path.file_name().unwrap_or_default().to_string_lossy();
        let cubin = Cubin::parse(&bytes)
            .ok_or_else(|| unreadable(format!("{origin}: not a well-formed ELF64 cubin")))?;
        let kernels = cubin
            .kernels()
            .map_err(|reason| unreadable(format!("{origin}: {reason}")))?;
        records.extend(kernels.into_iter().map(|kernel| kernel.record));
    }
    Ok(records)
}
