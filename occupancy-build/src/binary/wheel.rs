//! PLACEHOLDER until the wheel reader branch lands.
use std::path::{Path, PathBuf};

pub(crate) struct ExtractedMember {
    pub(crate) name_in_archive: String,
    pub(crate) path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
#[error("wheels are not read yet")]
pub(crate) struct WheelError;

pub(crate) fn extract_cuda_members(
    _archive: &Path,
    _dest_dir: &Path,
) -> Result<Vec<ExtractedMember>, WheelError> {
    Err(WheelError)
}
