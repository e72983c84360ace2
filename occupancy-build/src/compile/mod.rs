//! Compiling each source once with nvcc, keeping ptxas's report, and caching by content.
//!
//! One nvcc process per source file, every target architecture in it:
//!
//! * `.compile_ptx()`: `nvcc -ptx -arch=compute_<lowest> -lineinfo --keep`, then
//!   `nvcc -fatbin -arch=compute_<lowest> -code=sm_<a>,sm_<b> -Xptxas -v` on that PTX stripped of
//!   its line information (`crate::compile::two_step`; one `nvcc -fatbin -lineinfo` under a compiler
//!   cache other than sccache). cicc runs once; ptxas assembles the PTX that ships for every target architecture,
//!   which is exactly what the driver's JIT will do with it at run time, and prints the resource
//!   report on stderr. The only work beyond a plain `nvcc -ptx` is ptxas itself, which is what
//!   measuring resources costs; no source is compiled twice.
//! * `.compile_lib()`: `nvcc -c -arch=compute_<lowest> -code=sm_<a>,...,compute_<lowest> -Xptxas -v
//!   --keep`: the object the crate links (SASS per arch plus PTX for newer GPUs), the same report,
//!   and the PTX kept for the launch-bound checks. Its sm_90 SASS is ptxas's work on the
//!   compute_80 PTX, like the JIT's, so those rows say `ptx_target = compute_80` too.
//! * `.ptx_per_arch(true)`: the same commands with one
//!   `-gencode arch=compute_<t>,code=[sm_<t>,...]` per target arch: cicc runs once per target,
//!   each arch's SASS (and each JIT arch's, from the highest target not above it) comes from its
//!   own PTX, kept (and shipped, line information included) as `<stem>.compute_<t>.ptx`, and
//!   ptxas's report is still that one compile's. `-G` compiles without `-lineinfo` (it has its
//!   own line information) and ships its PTX as it is.
//! * `.ptx_file()` (PTX made elsewhere): `nvcc -cubin -arch=sm_<a> -Xptxas -v` per architecture.
//!
//! Under sccache every command runs as nvcc's own steps, each compiler (cicc, ptxas, cudafe++,
//! the host compile) through the cache (`crate::compile::steps`): the same commands, so the same
//! products and report, and every form cached, which sccache run as one nvcc command is not.
//!
//! `-MD -MF` makes nvcc list every header it read. The cache entry of a source (in OUT_DIR) is
//! keyed by nvcc's version, the full command line, the architectures, the program mode and the
//! JIT archs, and the contents of the source and of every header of its previous compile, so
//! touching one of N files recompiles that one, and the ptxas report is replayed from the entry on a hit. This module runs nvcc and
//! reads and writes files; it does not interpret the report.

mod commands;
pub(crate) mod compiled;
mod entry;
mod key;
mod run;
pub(crate) mod settings;
mod smem_spilling;
mod steps;
pub(crate) mod two_step;

pub use compiled::{CompiledSource, Program};
pub(crate) use settings::file_stem;
pub use settings::{CompileSettings, LineTables, Product};

use crate::cache::{Lookup, Slot};
use crate::context::Context;
pub use crate::context::SourceKind;
use crate::file_facts::FileFacts;
use crate::input_watch::InputWatch;
use crate::jobs::Lender;
use crate::toolchain::Toolchain;
use crate::Error;
pub(crate) use entry::ptx_file_target;
#[cfg(test)]
pub(crate) use entry::summary_path;
use entry::{compiled_from_entry, move_products};
use key::{cache_key, config_key};
use run::{run_nvcc, SourceCompile};
use settings::absolute;
use std::path::{Path, PathBuf};

/// Compiles every source of the build (at most `context.max_jobs` at once, cached) and returns
/// them in order. A source named twice (`a.cu` and `./a.cu`, a file inside a `.source_dir`) is
/// compiled once; a missing one is an error naming it; with several failures, every one is said.
pub fn compile_all(
    context: &Context,
    toolchain: &Toolchain,
    product: Product,
    line_tables: LineTables,
) -> Result<Vec<CompiledSource>, Error> {
    compile_all_replacing(
        context,
        toolchain,
        product,
        line_tables,
        &Default::default(),
    )
}

/// [`compile_all`], each input that `replaced` names compiled from the file it gives in its
/// place (a `.ptx` input with the bounds `"auto"` chose, which the pipeline writes), reported as
/// the input.
pub(crate) fn compile_all_replacing(
    context: &Context,
    toolchain: &Toolchain,
    product: Product,
    line_tables: LineTables,
    replaced: &std::collections::BTreeMap<PathBuf, PathBuf>,
) -> Result<Vec<CompiledSource>, Error> {
    let settings = CompileSettings {
        toolchain: toolchain.clone(),
        archs: context.archs.clone(),
        user_args: context.nvcc_args.clone(),
        product,
        cache_root: context.out_dir.join("occupancy").join("cache"),
        ptx_per_arch: context.ptx_per_arch,
        jit_archs: context.jit_archs.clone(),
        line_tables,
    };
    for (path, _) in &context.sources {
        if !path.is_file() {
            return Err(Error::SourceMissing { path: path.clone() });
        }
    }
    let inputs = unique_sources(context.sources.clone());
    if inputs.is_empty() {
        return Err(Error::NoSources);
    }
    crate::trust::open_cache_root(&settings.cache_root, &context.out_dir)?;
    let files = FileFacts::load(&settings.cache_root);
    let (settings, files) = (&settings, &files);
    // The biggest sources first (by size, a cheap stand-in for compile time): the last compile
    // to finish then is a small one, and the build's tail is short.
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&index| {
        std::cmp::Reverse(std::fs::metadata(&inputs[index].0).map_or(0, |meta| meta.len()))
    });
    let tasks: Vec<_> = order
        .iter()
        .map(|&index| {
            let (path, kind) = &inputs[index];
            let input = replaced.get(path).unwrap_or(path);
            move |lender: &Lender<'_>| {
                let mut compiled = compile_source(settings, input, *kind, lender, files)?;
                compiled.source.clone_from(path);
                Ok(compiled)
            }
        })
        .collect();
    let mut results: Vec<Option<Result<CompiledSource, Error>>> =
        crate::jobs::run_all(tasks, context.max_jobs)
            .into_iter()
            .map(Some)
            .collect();
    files.save();
    let in_order = (0..inputs.len()).map(|index| {
        let at = order
            .iter()
            .position(|&task| task == index)
            .unwrap_or(index);
        results[at].take().expect("one result per source")
    });
    let (compiled, mut failures): (Vec<_>, Vec<_>) = in_order.partition(Result::is_ok);
    let mut failures: Vec<Error> = failures.drain(..).filter_map(Result::err).collect();
    match failures.len() {
        0 => Ok(compiled.into_iter().filter_map(Result::ok).collect()),
        1 => Err(failures.remove(0)),
        _ => Err(Error::Several(failures)),
    }
}

/// Two sources with one stem would write one `OUT_DIR/<stem>.ptx`: an error naming the second.
pub fn check_unique_stems(sources: &[(PathBuf, SourceKind)]) -> Result<(), Error> {
    let mut stems = std::collections::BTreeSet::new();
    for (source, _) in &unique_sources(sources.to_vec()) {
        let stem = source
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !stems.insert(stem.clone()) {
            return Err(Error::DuplicateStem {
                stem,
                path: source.clone(),
            });
        }
    }
    Ok(())
}

/// The inputs without repeats of one file under another name, first mention kept.
fn unique_sources(mut inputs: Vec<(PathBuf, SourceKind)>) -> Vec<(PathBuf, SourceKind)> {
    let mut seen = std::collections::BTreeSet::new();
    inputs.retain(|(path, _)| seen.insert(canonical(path)));
    inputs
}

/// The path with symlinks and `.`/`..` resolved: one name per file.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Compiles (or replays) one source.
pub fn compile_source(
    settings: &CompileSettings,
    source: &Path,
    kind: SourceKind,
    lender: &Lender<'_>,
    files: &FileFacts,
) -> Result<CompiledSource, Error> {
    let config = config_key(settings, source, kind);
    let slot = Slot::new(&settings.cache_root, &file_stem(source), &config);
    let current_key =
        |dependencies: &[PathBuf]| cache_key(settings, &config, dependencies, files).ok();
    let mut notes = Vec::new();
    match slot.find(current_key) {
        Lookup::Hit(entry) => {
            return Ok(compiled_from_entry(
                settings, source, kind, entry, true, None,
            ))
        }
        Lookup::Miss => {}
        Lookup::Untrusted(reason) => notes.push(format!(
            "the cached compile of {} is not used: {reason}, and another user could have written it; compiled again",
            source.display()
        )),
    }
    let staging = slot.staging()?;
    let work = staging.dir.join("keep");
    std::fs::create_dir_all(&work).map_err(|error| Error::Io {
        path: work.clone(),
        error,
    })?;
    let two_steps = compiles_in_two_steps(settings, kind, &slot);
    let mut watched = slot.previous_dependencies();
    watched.push(absolute(source));
    let watch = InputWatch::before(&settings.toolchain.cuda_home, watched);
    let fresh = run_nvcc(&SourceCompile {
        settings,
        source,
        kind,
        work: &work,
        two_steps,
        lender,
    })?;
    let products = move_products(settings, source, kind, &fresh, &staging, two_steps)?;
    let key = cache_key(settings, &config, &fresh.dependencies, files)?;
    let named: Vec<(&str, &str)> = products
        .iter()
        .map(|(role, name)| (role.as_str(), name.as_str()))
        .collect();
    // After the key: a file changed while the key was taken is caught too.
    let changed = watch.changed(&fresh.dependencies);
    let entry = match changed.is_none() && slot.accepts_entries() {
        true => slot.publish(staging, key, fresh.dependencies, &named)?,
        false => slot.keep_unpublished(staging, key, fresh.dependencies, &named)?,
    };
    let mut compiled =
        compiled_from_entry(settings, source, kind, entry, false, fresh.wrapper_failure);
    compiled.notes = notes;
    compiled.notes.extend(changed.map(|changed| {
        format!(
            "{} changed while nvcc compiled {}: this run checks what nvcc read, which may not be the file as it is now, and does not cache it (the next run compiles it again)",
            changed.display(),
            source.display()
        )
    }));
    Ok(compiled)
}

/// Whether this compile runs in two steps (`crate::compile::two_step`): when the source may and line
/// tables are made on demand, unless its previous compile in `slot` (the source before its last
/// change) spilled in many kernels.
fn compiles_in_two_steps(settings: &CompileSettings, kind: SourceKind, slot: &Slot) -> bool {
    crate::compile::two_step::two_steps(settings, kind)
        && settings.line_tables == LineTables::OnDemand
        && !slot
            .previous_product("log")
            .and_then(|log| std::fs::read_to_string(log).ok())
            .is_some_and(|log| crate::compile::two_step::spills_are_common(&log))
}

#[cfg(test)]
mod tests {
    use super::key::selected_definitions;
    use super::*;

    /// A toolchain whose nvcc cannot be started.
    fn absent_toolchain() -> Toolchain {
        Toolchain::for_tests("/nonexistent/occupancy")
    }

    #[test]
    fn source_errors_name_the_source_and_every_failed_compile_is_kept() {
        let dir = std::env::temp_dir().join(format!("occupancy-sources-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        let mut context = crate::context::Context::for_tests(&dir, &["sm_90"]);
        let compile = |context: &crate::context::Context| {
            compile_all(
                context,
                &absent_toolchain(),
                Product::Ptx,
                LineTables::OnDemand,
            )
            .unwrap_err()
        };
        let error = compile(&context);
        assert!(matches!(error, Error::NoSources), "{error:?}");
        context.sources = vec![(dir.join("gone.cu"), SourceKind::Cuda)];
        let error = compile(&context);
        assert!(
            matches!(&error, Error::SourceMissing { path } if *path == dir.join("gone.cu")),
            "{error:?}"
        );
        for file in ["a/scale.cu", "b/scale.cu"] {
            std::fs::write(dir.join(file), "__global__ void scale() {}\n").unwrap();
        }
        context.sources = ["a/scale.cu", "b/scale.cu"]
            .iter()
            .map(|file| (dir.join(file), SourceKind::Cuda))
            .collect();
        let error = check_unique_stems(&context.sources).unwrap_err();
        assert!(
            matches!(&error, Error::DuplicateStem { stem, path }
                if stem == "scale" && *path == dir.join("b/scale.cu")),
            "{error:?}"
        );
        let Error::Several(failures) = compile(&context) else {
            panic!("two failed compiles are one error each");
        };
        assert_eq!(failures.len(), 2, "{failures:?}");
        for failure in &failures {
            let Error::ToolNotStarted { command, error } = failure else {
                panic!("{failure:?}");
            };
            assert!(
                command.starts_with("/nonexistent/occupancy/bin/nvcc "),
                "{command}"
            );
            assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn one_file_under_several_names_is_one_source() {
        let dir = std::env::temp_dir().join(format!("occupancy-unique-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.cu"), "").unwrap();
        std::fs::write(dir.join("b.cu"), "").unwrap();
        let inputs = vec![
            (dir.join("a.cu"), SourceKind::Cuda),
            (dir.join("./a.cu"), SourceKind::Cuda),
            (dir.join("sub/../a.cu"), SourceKind::Cuda),
            (dir.join("b.cu"), SourceKind::Cuda),
        ];
        let unique: Vec<PathBuf> = unique_sources(inputs)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        assert_eq!(unique, [dir.join("a.cu"), dir.join("b.cu")]);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_source_depends_only_on_the_bounds_it_names() {
        let header = "#pragma once\n#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(256, 4)\n#define OCCUPANCY_BOUNDS_scale __launch_bounds__(128)\n";
        let source = "#include \"occupancy_bounds.h\"\n__global__ void OCCUPANCY_BOUNDS_saxpy saxpy() {} // MY_OCCUPANCY_X is not ours";
        let used: std::collections::BTreeSet<String> =
            crate::file_facts::occupancy_identifiers(source)
                .into_iter()
                .collect();
        assert_eq!(used.iter().collect::<Vec<_>>(), ["OCCUPANCY_BOUNDS_saxpy"]);
        assert_eq!(
            selected_definitions(header, &used).unwrap(),
            "#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(256, 4)\n"
        );
        let pasted: std::collections::BTreeSet<String> =
            crate::file_facts::occupancy_identifiers("#define B(k) OCCUPANCY_BOUNDS_ ## k")
                .into_iter()
                .collect();
        assert!(
            selected_definitions(header, &pasted).is_none(),
            "token pasting: the whole header counts"
        );
    }

    #[test]
    fn every_arch_branch_of_a_chosen_bound_is_part_of_the_key() {
        let header = |sm_80: u32, sm_90: u32| {
            format!(
                "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256, {sm_90})\n#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 800\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256, {sm_80})\n#else\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256)\n#endif\n"
            )
        };
        let used: std::collections::BTreeSet<String> = ["OCCUPANCY_BOUNDS_k".to_string()].into();
        let key = |sm_80, sm_90| selected_definitions(&header(sm_80, sm_90), &used).unwrap();
        assert!(key(3, 4).contains(
            "__CUDA_ARCH__ == 800\n#define OCCUPANCY_BOUNDS_k __launch_bounds__(256, 3)"
        ));
        assert_ne!(key(3, 4), key(4, 3), "swapped choices compile differently");
        assert_ne!(key(3, 4), key(3, 5));
        assert_eq!(key(3, 4), key(3, 4));
    }
}
