//! Writes `$OUT_DIR/occupancy_facts.json` (model: `occupancy_core::facts`): every declaration the
//! build saw and its kernel's compiled facts per arch, from the build's report. The
//! `#[occupancy::kernel]` expansion reads it, so a declaration the scanner missed cannot compile
//! as if it were checked, and host code gets the numbers the build checked. The crate view
//! (`crate_view.rs`) adds what it settled over every product.

use occupancy_core::facts::{
    BuildFacts, CompiledFacts, DeclarationFacts, FACTS_FILE, FACTS_SCHEMA_VERSION,
};
use occupancy_core::report::{KernelRow, Report};

use crate::context::Context;
use std::collections::BTreeMap;

use crate::declarations::{Declarations, Declared};
use crate::fsutil::write_if_changed;
use crate::Error;

/// The facts of a build from its report and the declarations it scanned (each with the
/// declarations it was read from, which know where it is).
pub fn of_declarations<'a>(
    report: &Report,
    declared: impl IntoIterator<Item = (&'a Declarations, &'a Declared)>,
) -> BuildFacts {
    let mut rows_by_declaration: BTreeMap<(&str, u32, u32), Vec<CompiledFacts>> = BTreeMap::new();
    for row in &report.kernels {
        if let Some(at) = &row.declaration {
            rows_by_declaration
                .entry((at.path.as_str(), at.line, at.column))
                .or_default()
                .push(compiled_facts(row));
        }
    }
    let declarations = declared
        .into_iter()
        .map(|(declarations, declared)| {
            let location = declarations.location(declared);
            let compiled = rows_by_declaration
                .get(&(location.path.as_str(), location.line, location.column))
                .cloned()
                .unwrap_or_default();
            DeclarationFacts {
                rust_name: declared.kernel.rust_name.clone(),
                kernel_name: declared.kernel.kernel_name.clone(),
                path: location.path,
                line: location.line,
                compiled,
                settled: Vec::new(),
                not_checked: None,
            }
        })
        .collect();
    BuildFacts {
        schema_version: FACTS_SCHEMA_VERSION,
        crate_name: report.crate_name.clone().unwrap_or_default(),
        skipped: report.skipped.clone(),
        declarations,
        settled: Vec::new(),
    }
}

fn compiled_facts(row: &KernelRow) -> CompiledFacts {
    CompiledFacts {
        arch: row.arch.clone(),
        registers: row.registers,
        spill_bytes: row.spill_store_bytes.saturating_add(row.spill_load_bytes),
        stack_frame_bytes: row.stack_frame_bytes,
        static_smem_bytes: row.static_smem_bytes,
        block_threads: row.block,
        blocks_per_sm: row.blocks_per_sm,
        warps_per_sm: row.warps_per_sm,
        occupancy: row.occupancy,
    }
}

/// Writes the facts file into OUT_DIR (only when its content changed, so an unchanged build
/// does not recompile the crate).
pub fn write(context: &Context, facts: &BuildFacts) -> Result<(), Error> {
    write_if_changed(
        &context.out_dir.join(FACTS_FILE),
        facts.to_json().as_bytes(),
    )
}
