//! How messages word what they name: a path as shown, a duration, the wheels that install
//! nvcc. A leaf (it names nothing of this crate), so that the error type, which every stage
//! imports, can use it without importing a stage back.

use std::path::Path;
use std::time::Duration;

/// A path as a message shows it: as written, or, when it holds a control character (a newline,
/// a tab, an escape), quoted with escapes (`"a\nb.cu"`), so that the user sees the character
/// instead of a message broken across lines that names no file they have.
pub fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.chars().any(char::is_control) {
        format!("{text:?}")
    } else {
        path.display().to_string()
    }
}

/// A duration as the messages write it: `60 s`, `0.5 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    let text = format!("{:.3}", duration.as_secs_f64());
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// The wheels that make a complete nvcc on any Linux machine with Python (no root needed).
pub const NVCC_WHEELS: &str =
    "nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime nvidia-cuda-cccl";
