//! An `"auto"` kernel's source compiled at one bound, with the kernel given that bound's
//! qualifiers through `OCCUPANCY_BOUNDS_<kernel>`: the code the bound ships. nvcc's front end
//! sees `__launch_bounds__` too (a kernel compiled with `__launch_bounds__(256)` is often
//! hundreds of PTX lines away from the one without, and `(256, B)` away from `(256)` on some
//! kernels), so a candidate measured on other PTX than its own compile's would describe code
//! that never ships.
//!
//! Each bound's header lies in a directory of its own under `OUT_DIR/occupancy/front-end/`,
//! searched before the build's include paths; its text depends only on the declarations and
//! the bound (every `"auto"` kernel of the knob gets it), so the kernels of one source that try
//! one bound share one compile, a rebuild hits the compile cache, and two processes write the
//! same bytes.

use std::path::PathBuf;

use occupancy_core::tune::{Bound, Knob};

use super::engine::FrontEnd;
use super::Compiling;
use crate::compile::{self, CompiledSource, SourceKind};
use crate::context::Context;
use crate::declarations::Declarations;
use crate::header_choices::{HeaderChoices, KernelChoices};
use crate::toolchain::Toolchain;
use crate::Error;

/// What the header of one bound holds besides the tuned kernel's macros.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Header<'a> {
    /// A declaring package's header: every declaration's macros, the tuned kernel at the bound,
    /// the other `"auto"` kernels without bounds.
    Declared(&'a Declarations),
    /// A source outside a package that names `OCCUPANCY_BOUNDS_<kernel>`: that kernel's macros
    /// alone.
    Alone,
}

/// One source and one kernel of it, compiled at any bound.
#[derive(Debug)]
pub(crate) struct SourceAtBound<'a> {
    pub(crate) context: &'a Context,
    pub(crate) toolchain: &'a Toolchain,
    pub(crate) compiling: Compiling,
    pub(crate) source: PathBuf,
    pub(crate) kernel: String,
    pub(crate) knob: Knob,
    pub(crate) threads: u32,
    pub(crate) header: Header<'a>,
}

impl SourceAtBound<'_> {
    /// The directory of `bound`'s header. In a declaring package the header gives the bound to
    /// every `"auto"` kernel of the knob (each at its own block), so it is one text for every
    /// kernel that tries the bound, and the source compiled at it serves them all from the
    /// compile cache; outside one it is the kernel's own.
    fn dir(&self, bound: Bound) -> PathBuf {
        let name = match bound {
            Bound::None => "none".to_string(),
            Bound::NoLaunchBounds => "no-launch-bounds".to_string(),
            Bound::MinBlocksPerSm(blocks) => format!("min-blocks-{blocks}"),
            Bound::MaxRegisters(registers) => format!("max-registers-{registers}"),
        };
        let base = self.context.out_dir.join("occupancy").join("front-end");
        match self.header {
            Header::Declared(_) => base.join(name),
            Header::Alone => {
                let kernel = super::memo::file_name_of(&self.kernel);
                base.join(format!("{kernel}-{}", self.threads)).join(name)
            }
        }
    }

    /// The header that gives the kernel `bound` under each of `cuda_archs` (in a declaring
    /// package, every `"auto"` kernel of the same knob too).
    fn header_text(&self, bound: Bound, cuda_archs: &[u32]) -> String {
        match self.header {
            Header::Declared(declarations) => {
                let mut choices = HeaderChoices::default();
                let by_cuda_arch: std::collections::BTreeMap<u32, Bound> =
                    cuda_archs.iter().map(|arch| (*arch, bound)).collect();
                for declared in &declarations.kernels {
                    if super::knob_of(declared) != Some(self.knob) {
                        continue;
                    }
                    let threads = match declared.kernel.kernel_name == self.kernel {
                        true => self.threads,
                        false => declared.kernel.spec.block.threads(),
                    };
                    choices.insert(
                        declared.kernel.kernel_name.clone(),
                        KernelChoices {
                            knob: self.knob,
                            threads,
                            by_cuda_arch: by_cuda_arch.clone(),
                        },
                    );
                }
                crate::declarations::bounds_header_text(declarations, &choices)
            }
            Header::Alone => {
                let others = named_bounds(&self.source);
                alone_header(&self.kernel, self.knob, self.threads, bound, &others)
            }
        }
    }

    /// Writes the header of `bound` (when it changed) and the directory to search first.
    pub(crate) fn write_header(&self, bound: Bound, cuda_archs: &[u32]) -> Result<PathBuf, Error> {
        let dir = self.dir(bound);
        std::fs::create_dir_all(&dir).map_err(|error| Error::Io {
            path: dir.clone(),
            error,
        })?;
        let text = self.header_text(bound, cuda_archs);
        crate::fsutil::write_if_changed(&dir.join("occupancy_bounds.h"), text.as_bytes())?;
        Ok(dir)
    }
}

impl FrontEnd for SourceAtBound<'_> {
    fn compile_at(&self, bound: Bound, cuda_archs: &[u32]) -> Result<CompiledSource, Error> {
        let dir = self.write_header(bound, cuda_archs)?;
        let mut context = self.context.clone();
        context.sources = vec![(self.source.clone(), SourceKind::Cuda)];
        context.nvcc_args = ["-I".into(), dir.into_os_string()]
            .into_iter()
            .chain(self.context.nvcc_args.iter().cloned())
            .collect();
        let mut compiled = compile::compile_all(
            &context,
            self.toolchain,
            self.compiling.product,
            self.compiling.line_tables,
        )?;
        Ok(compiled.remove(0))
    }
}

/// The header of one kernel outside a package: `OCCUPANCY_BLOCK_THREADS_<kernel>` and the
/// bound's macros, as a declaring package's header writes them; every other
/// `OCCUPANCY_BOUNDS_<name>` of `others` (the source's other kernels) without bounds.
pub(crate) fn alone_header(
    kernel: &str,
    knob: Knob,
    threads: u32,
    bound: Bound,
    others: &[String],
) -> String {
    let mut text = format!(
        "// @generated by cargo occupancy tune: `{kernel}` at {bound}\n#pragma once\n#define OCCUPANCY_BLOCK_THREADS_{kernel} {threads}\n{}",
        crate::declarations::bound_definitions(kernel, threads, knob, bound)
    );
    for other in others.iter().filter(|other| *other != kernel) {
        text.push_str(&format!(
            "#ifndef OCCUPANCY_BOUNDS_{other}\n#define OCCUPANCY_BOUNDS_{other}\n#endif\n"
        ));
    }
    text
}

/// The `<name>` of every `OCCUPANCY_BOUNDS_<name>` in `source`'s text (sorted, once each).
fn named_bounds(source: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(source).unwrap_or_default();
    let mut names: Vec<String> = text
        .split("OCCUPANCY_BOUNDS_")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| !name.is_empty() && name != "FAMILY")
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether `source`'s text names `OCCUPANCY_BOUNDS_<kernel>`: the kernel takes its bound from
/// the header, so a front end can compile it at each bound.
pub(crate) fn takes_bounds_macro(source: &std::path::Path, kernel: &str) -> bool {
    std::fs::read_to_string(source)
        .is_ok_and(|text| text.contains(&format!("OCCUPANCY_BOUNDS_{kernel}")))
}
