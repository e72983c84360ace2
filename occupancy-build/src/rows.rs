//! The calculate stage: one report row per kernel and target arch, at the launch
//! [`build_launch`] decides (the declared one, or the crate's for an undeclared kernel), located
//! at the kernel's definition. The
//! computed columns come from `occupancy_core::kernel::KernelOnArch::new` (the calculator, once).

use std::collections::BTreeSet;
use std::path::Path;

use occupancy_core::kernel::KernelOnArch;
use occupancy_core::lint::evaluate::{
    checked_launch, CheckedLaunch, LaunchOrigin, LaunchSettings, TableLaunch,
};
use occupancy_core::spec::KernelSpec;

use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::fsutil::display_path;
use crate::kernel_tables::{KernelNames, KernelTables};
use crate::parse::CompiledKernel;
use crate::Error;
use occupancy_core::report::{Location, LocationKind, RowLaunch};

/// Where a compiled kernel is defined: the PTX's line information (`-lineinfo`) for a `.cu`
/// source, so a kernel made by a C macro points at the macro's invocation and one in a header
/// at the header's line; else the source file (line 0).
pub(crate) fn kernel_location(context: &Context, kernel: &CompiledKernel<'_>) -> Location {
    let kind = match kernel.source.kind {
        crate::context::SourceKind::Ptx => LocationKind::PtxEntry,
        _ => LocationKind::CudaKernel,
    };
    match (&kernel.defined_at, kind) {
        (Some(defined_at), LocationKind::CudaKernel) => Location {
            kind,
            path: display_path(&context.manifest_dir, Path::new(&defined_at.file)),
            line: defined_at.line,
            column: 1,
        },
        _ => {
            let line = kernel.entry_line.unwrap_or(0);
            Location {
                kind,
                path: display_path(&context.manifest_dir, &kernel.source.source),
                line,
                column: u32::from(line > 0),
            }
        }
    }
}

/// The launch a kernel of a build is checked at: its declaration's (`spec`), else the one
/// `occupancy_core`'s [`checked_launch`] decides from its kernel table (`block`,
/// `dynamic_smem` under `[package.metadata.occupancy.kernels."<name or pattern>"]`), the
/// crate's `block` and its compiled `__launch_bounds__`.
pub(crate) fn build_launch(
    context: &Context,
    kernel: &CompiledKernel<'_>,
    spec: Option<&KernelSpec>,
    tables: &KernelTables,
) -> CheckedLaunch {
    let names = KernelNames::of(&kernel.name, kernel.demangled.as_deref(), None);
    // Two patterns for one kernel were refused before the rows were made.
    let table = tables.table_for(names).ok().flatten();
    let table = table.and_then(|name| context.settings.kernel_launches.get_key_value(name));
    checked_launch(&LaunchSettings {
        origin: LaunchOrigin::CrateDefault,
        declared: spec,
        table: table.map(|(name, launch)| TableLaunch {
            name,
            block: launch.block,
            dynamic_smem_bytes: launch.dynamic_smem_bytes,
        }),
        given_block: None,
        given_dynamic_smem_bytes: 0,
        crate_block: context.settings.block,
        compiled_max_threads: kernel.compiled_max_threads(),
        at_compiled_max: false,
    })
}

/// One report row per target arch of `kernel` (those its declaration keeps), computed by the
/// report model (the one place the computed columns come from); the lints read the same rows.
pub(crate) fn kernel_rows(
    context: &Context,
    kernel: &CompiledKernel<'_>,
    declared: Option<(&Declared, usize)>,
    launch: &CheckedLaunch,
    declarations: &Declarations,
) -> Result<Vec<KernelOnArch>, Error> {
    let spec = declared.map(|(declared, _)| &declared.kernel.spec);
    let arch_filter: Option<BTreeSet<String>> =
        spec.and_then(|spec| spec.archs.as_ref()).map(|archs| {
            archs
                .iter()
                .filter_map(|name| crate::targets::SmArch::parse(name).ok())
                .map(|arch| arch.to_string())
                .collect()
        });
    if let (Some(filter), Some((declared, _))) = (&arch_filter, declared) {
        let not_built: Vec<&String> = filter
            .iter()
            .filter(|arch| !kernel.records.contains_key(*arch))
            .collect();
        if !not_built.is_empty() {
            return Err(Error::DeclaredArchNotBuilt {
                declaration: declarations.location(declared),
                kernel: kernel.name.clone(),
                declared: filter.clone(),
                built: kernel.records.keys().cloned().collect(),
            });
        }
    }
    let source_location = kernel_location(context, kernel);
    let compiled_from = display_path(&context.manifest_dir, &kernel.source.source);
    let launch = RowLaunch {
        block: launch.block_threads(),
        dynamic_smem_bytes: launch.dynamic_smem_bytes,
        carveout_percent: None,
    };
    let mut rows = Vec::new();
    for (arch_name, record) in &kernel.records {
        if arch_filter
            .as_ref()
            .is_some_and(|filter| !filter.contains(arch_name))
        {
            continue;
        }
        let no_facts = |unknown| Error::NoArchFacts {
            arch: arch_name.clone(),
            unknown,
        };
        let ptx = kernel.ptx_on(arch_name).cloned();
        let mut on = KernelOnArch::new(record.clone(), ptx, launch).map_err(no_facts)?;
        let row = &mut on.row;
        row.crate_name = Some(context.crate_name.clone());
        row.ptx_target = match kernel.programs.get(arch_name) {
            Some((program, _)) => program.ptx_target.clone(),
            None => kernel.source.ptx_target.clone(),
        };
        row.source = Some(source_location.clone());
        row.compiled_from = Some(compiled_from.clone());
        if let Some((declared, _)) = declared {
            row.declaration = Some(declarations.location(declared));
            row.rust_name = Some(declared.kernel.rust_name.clone());
        }
        if let Some(spec) = spec {
            if let Some(cluster) = spec.cluster {
                row.cluster = Some([cluster.x, cluster.y, cluster.z]);
            }
            row.non_portable_cluster = spec.non_portable_cluster;
            row.compute_clusters(on.arch);
        }
        rows.push(on);
    }
    Ok(rows)
}
