//! nvcc's arguments for one source: one step, or two (`two_step`), or one `-cubin` per arch
//! for PTX made elsewhere. Shared with the cache key, which hashes them.

use super::settings::{arch_args, device_debug, file_stem, CompileSettings, Product};
pub use crate::context::SourceKind;
use std::ffi::OsString;
use std::path::Path;

/// The nvcc arguments for one source, without the wrapper and host args (shared with the cache
/// key), in two steps or one (`two_steps`, `crate::compile::two_step`).
pub(crate) fn nvcc_args(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    work: &Path,
    two_steps: bool,
) -> Vec<Vec<OsString>> {
    let stem = file_stem(source);
    match kind {
        SourceKind::Cuda if two_steps => {
            crate::compile::two_step::two_step_args(settings, source, work)
        }
        SourceKind::Cuda => {
            let mut args: Vec<OsString> = Vec::new();
            match settings.product {
                Product::Ptx => {
                    args.push("-fatbin".into());
                    args.extend(arch_args(settings, false));
                }
                Product::Object => {
                    args.push("-c".into());
                    args.extend(arch_args(settings, true));
                }
            }
            // -lineinfo: `.file`/`.loc` in the PTX say where each kernel is defined (a macro's
            // invocation, a header's line), and the SASS stage (crate::sass_stage) maps instructions to
            // lines; it adds line tables only, not code. `-G` carries its own, and nvcc warns when
            // both are given.
            if !device_debug(settings) {
                args.push("-lineinfo".into());
            }
            args.extend([
                "-Xptxas".into(),
                "-v".into(),
                "--keep".into(),
                "--keep-dir".into(),
                work.as_os_str().to_owned(),
            ]);
            // Dependencies: for an object, nvcc's -MD comes with the host preprocessing it does
            // anyway; for PTX it would add a preprocessor pass, so the headers are read from the
            // line markers of the device preprocessor output that --keep leaves (`.cpp1.ii`).
            if settings.product == Product::Object {
                args.extend([
                    "-MD".into(),
                    "-MF".into(),
                    work.join("deps.d").into_os_string(),
                ]);
            }
            let output = match settings.product {
                Product::Ptx => work.join(format!("{stem}.fatbin")),
                Product::Object => work.join(format!("{stem}.o")),
            };
            args.extend(["-o".into(), output.into_os_string()]);
            args.extend(settings.user_args.iter().cloned());
            args.push(source.as_os_str().to_owned());
            vec![args]
        }
        SourceKind::Ptx => settings
            .archs
            .iter()
            .map(|arch| {
                let mut args: Vec<OsString> = vec!["-cubin".into(), format!("-arch={arch}").into()];
                args.extend(["-Xptxas".into(), "-v".into()]);
                args.extend([
                    "-o".into(),
                    work.join(format!("{stem}.{arch}.cubin")).into_os_string(),
                ]);
                args.extend(
                    settings
                        .user_args
                        .iter()
                        .filter(|arg| arg.to_string_lossy().starts_with("-X"))
                        .cloned(),
                );
                args.push(source.as_os_str().to_owned());
                args
            })
            .collect(),
    }
}
