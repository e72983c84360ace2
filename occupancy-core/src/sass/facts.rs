//! Per-kernel facts read from the SASS: local loads and stores (by width, per loop, per source
//! line, told apart as spills, local arrays, stack data and callees' frames), loops, calls,
//! double-precision instructions and `setmaxnreg`.
//!
//! A local access (`LDL`/`STL`) at a constant offset from the stack pointer (`[R1+0x18]`) is a
//! spill slot when ptxas reported spill bytes for the kernel, else stack data (a local array
//! indexed only by constants, an argument passed by address). One at a computed address
//! (`[R21]`, `[R4+0x10]`) is a local array indexed at run time. One in a subroutine is part of
//! that callee's frame.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::call_target::{CallResolver, CallTarget};
use super::callee::{describe_callee, INDIRECT_CALL};
use super::cfg::ControlFlow;
use super::parse::{Instruction, SassSection, SourceLine};
use super::SassError;

/// What a local load or store is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LocalKind {
    /// A register spill slot (constant stack offset, with spills reported by ptxas).
    Spill,
    /// A local array indexed at run time (computed address).
    LocalArray,
    /// Constant-offset stack data that is not a spill.
    StackData,
}

/// Loads and stores of one kind at one source line and loop depth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LineFacts {
    /// The source file; empty (and `line` 0) for code without a line table, whose accesses
    /// are all grouped here (`LineFacts::is_unknown`).
    pub file: String,
    pub line: u32,
    pub kind: LocalKind,
    pub loads: u32,
    pub stores: u32,
    /// The loop nesting of these accesses (0: outside loops).
    pub loop_depth: u32,
}

/// One natural loop of the kernel's own code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LoopFacts {
    /// Offset of the loop header's first instruction.
    pub header_offset: u64,
    /// 1 for an outermost loop.
    pub depth: u32,
    /// The enclosing loop (index into the kernel's loops).
    pub parent: Option<usize>,
    /// The header's source line.
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Instructions in the loop, nested loops included.
    pub instructions: u32,
    /// Every `LDL`/`STL` in the loop, whatever it is for.
    pub local_loads: u32,
    pub local_stores: u32,
    pub spill_loads: u32,
    pub spill_stores: u32,
    pub local_array_accesses: u32,
    pub calls: u32,
}

/// A non-inlined call target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallFacts {
    /// The callee's (mangled) name: a subroutine, a relocated symbol, or the one function a call
    /// through a register can reach (`__assertfail`); [`INDIRECT_CALLEE`] for indirect calls.
    pub callee: String,
    /// Calls through a register that holds no single known function (a function pointer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub indirect: bool,
    /// For indirect calls, the functions they may reach, when each was named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// Call sites in the kernel's own code.
    pub call_sites: u32,
    /// Of those, inside loops.
    pub call_sites_in_loops: u32,
    /// Local loads and stores in the callee's code (its frame).
    pub callee_local_accesses: u32,
    /// What it is, for known math-library helpers, device-library functions and indirect calls.
    pub what: Option<String>,
    /// How to avoid it.
    pub fix: Option<String>,
}

/// One `USETMAXREG` (PTX `setmaxnreg`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SetMaxRegFacts {
    /// Registers per thread the warp asks for.
    pub registers: u32,
    /// `true` for `setmaxnreg.inc` (`TRY_ALLOC`), `false` for `.dec` (`DEALLOC`).
    pub increase: bool,
}

/// What the SASS of one kernel on one architecture says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SassFacts {
    /// Mangled name.
    pub kernel: String,
    pub arch: Option<String>,
    /// Instructions in the kernel's section (its subroutines included).
    pub instructions: u32,
    /// `LDL` count per access width in bits (kernel and subroutines).
    pub local_loads_by_width: BTreeMap<u32, u32>,
    /// `STL` count per access width in bits.
    pub local_stores_by_width: BTreeMap<u32, u32>,
    pub spill_loads: u32,
    pub spill_stores: u32,
    pub spill_loads_in_loops: u32,
    pub spill_stores_in_loops: u32,
    /// Bytes the spill stores write (sum of widths), to compare with ptxas's figure.
    pub spill_store_bytes: u64,
    pub local_array_accesses: u32,
    pub stack_data_accesses: u32,
    pub loops: Vec<LoopFacts>,
    /// Local accesses grouped by source line and kind, most accesses first.
    pub lines: Vec<LineFacts>,
    pub calls: Vec<CallFacts>,
    /// `DADD`, `DFMA`, `DMUL`, `DMNMX`, `DSET`, `DSETP`, `DMMA`.
    pub fp64_instructions: u32,
    pub setmaxnreg: Vec<SetMaxRegFacts>,
    /// `BRX`/`JMX`: loops through them are not seen.
    pub indirect_branches: u32,
}

/// Where a finding would name a line, in code read without a line table.
const UNKNOWN_LINE: &str =
    "an unknown line (the code has no line table: compile with `-lineinfo` for lines)";

impl LineFacts {
    /// Whether these accesses have no source line: the code was read without a line table.
    pub(crate) fn is_unknown(&self) -> bool {
        self.file.is_empty()
    }

    /// `src/k.cu:12`; for code read without a line table, a line it cannot name, said so.
    pub(crate) fn place(&self) -> String {
        match self.is_unknown() {
            true => UNKNOWN_LINE.to_owned(),
            false => format!("{}:{}", self.file, self.line),
        }
    }
}

impl SassFacts {
    /// The source line of the spill group inside the deepest loop with the most accesses: the
    /// line to look at first.
    pub fn hottest_spill(&self) -> Option<&LineFacts> {
        self.lines
            .iter()
            .filter(|group| group.kind == LocalKind::Spill)
            .max_by_key(|group| (group.loop_depth, group.loads + group.stores))
    }

    /// The hottest local-array line.
    pub fn hottest_local_array(&self) -> Option<&LineFacts> {
        self.lines
            .iter()
            .filter(|group| group.kind == LocalKind::LocalArray)
            .max_by_key(|group| (group.loop_depth, group.loads + group.stores))
    }
}

/// The `callee` of [`CallFacts`] for indirect calls: no symbol is spelt so.
pub const INDIRECT_CALLEE: &str = "(indirect)";

const FP64_OPCODES: [&str; 7] = ["DADD", "DFMA", "DMUL", "DMNMX", "DSET", "DSETP", "DMMA"];

/// `LDL.U8` → 8, `STL.128` → 128, plain → 32.
pub(crate) fn access_width_bits(opcode: &str) -> u32 {
    for modifier in opcode.split('.').skip(1) {
        match modifier {
            "U8" | "S8" => return 8,
            "U16" | "S16" => return 16,
            "64" => return 64,
            "128" => return 128,
            _ => {}
        }
    }
    32
}

/// Whether a local access addresses a constant stack offset: `[R1]`, `[R1+0x18]`.
fn is_stack_slot(instruction: &Instruction) -> bool {
    let operands = &instruction.operands;
    let Some(start) = operands.find('[') else {
        return false;
    };
    let Some(end) = operands[start..].find(']') else {
        return false;
    };
    let address = operands[start + 1..start + end].replace(' ', "");
    address == "R1"
        || address
            .strip_prefix("R1+0x")
            .is_some_and(|hex| hex.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_local_access(instruction: &Instruction) -> Option<bool> {
    match instruction.base_opcode() {
        "LDL" => Some(false),
        "STL" => Some(true),
        _ => None,
    }
}

fn setmaxreg(instruction: &Instruction) -> Option<SetMaxRegFacts> {
    if instruction.base_opcode() != "USETMAXREG" {
        return None;
    }
    let last = instruction.operands.rsplit(',').next()?.trim();
    let registers = u32::from_str_radix(last.strip_prefix("0x")?, 16).ok()?;
    Some(SetMaxRegFacts {
        registers,
        increase: !instruction.opcode.contains("DEALLOC"),
    })
}

/// Reads the facts of one section. `spills_reported`: ptxas reported spill bytes for it.
pub(crate) fn kernel_facts(
    section: &SassSection,
    spills_reported: bool,
) -> Result<SassFacts, SassError> {
    let body = section.range_of(None);
    let cfg = ControlFlow::build(section, body.clone())?;
    let mut facts = SassFacts {
        kernel: section.name.clone(),
        arch: section.arch.clone(),
        instructions: section.instructions.len() as u32,
        local_loads_by_width: BTreeMap::new(),
        local_stores_by_width: BTreeMap::new(),
        spill_loads: 0,
        spill_stores: 0,
        spill_loads_in_loops: 0,
        spill_stores_in_loops: 0,
        spill_store_bytes: 0,
        local_array_accesses: 0,
        stack_data_accesses: 0,
        loops: loop_skeletons(section, &cfg),
        lines: Vec::new(),
        calls: Vec::new(),
        fp64_instructions: 0,
        setmaxnreg: Vec::new(),
        indirect_branches: cfg.indirect_branches,
    };
    // Without spills, the constant-offset accesses of a kernel that indexes local memory at run
    // time fill or read that same array (its initialisation, unrolled).
    let has_local_array = section.instructions[body.clone()]
        .iter()
        .any(|instruction| is_local_access(instruction).is_some() && !is_stack_slot(instruction));
    let mut groups: BTreeMap<(SourceLine, LocalKind, u32), (u32, u32)> = BTreeMap::new();
    let mut calls: BTreeMap<String, CallSites> = BTreeMap::new();
    let resolver = CallResolver::new(section, &cfg, &body);
    for (index, instruction) in section.instructions.iter().enumerate() {
        count_everywhere(&mut facts, instruction);
        if index >= body.end {
            continue; // subroutines: counted per callee below
        }
        let innermost = cfg.block_loop[cfg.block_of(index)];
        let depth = innermost.map_or(0, |found| cfg.loops[found].depth);
        if instruction.base_opcode() == "CALL" && !calls_into_body(section, instruction, &body) {
            let sites = match resolver.target(index) {
                CallTarget::Named(callee) => calls.entry(callee).or_default(),
                CallTarget::Indirect { candidates } => {
                    let sites = calls.entry(INDIRECT_CALLEE.to_owned()).or_default();
                    sites.indirect = true;
                    sites.candidates.extend(candidates);
                    sites
                }
            };
            sites.sites += 1;
            sites.in_loops += u32::from(depth > 0);
            for_each_enclosing(&cfg, innermost, |found| facts.loops[found].calls += 1);
        }
        let Some(store) = is_local_access(instruction) else {
            continue;
        };
        let kind = match (is_stack_slot(instruction), spills_reported) {
            (false, _) => LocalKind::LocalArray,
            (true, true) => LocalKind::Spill,
            (true, false) if has_local_array => LocalKind::LocalArray,
            (true, false) => LocalKind::StackData,
        };
        count_kernel_access(&mut facts, &cfg, innermost, kind, store, instruction);
        // Code without a line table (built without `-lineinfo`) keeps its accesses, under one
        // line that names none, rather than losing the findings that point at a line.
        let line = match instruction.source_line {
            Some(line) => Some(section.lines[line].clone()),
            None if section.lines.is_empty() => Some(SourceLine {
                file: String::new(),
                line: 0,
            }),
            None => None,
        };
        if let Some(line) = line {
            let group = groups.entry((line, kind, depth)).or_default();
            if store {
                group.1 += 1;
            } else {
                group.0 += 1;
            }
        }
    }
    facts.lines = line_groups(groups);
    facts.calls = call_facts(section, calls);
    Ok(facts)
}

fn count_everywhere(facts: &mut SassFacts, instruction: &Instruction) {
    if FP64_OPCODES.contains(&instruction.base_opcode()) {
        facts.fp64_instructions += 1;
    }
    if let Some(found) = setmaxreg(instruction) {
        facts.setmaxnreg.push(found);
    }
    if let Some(store) = is_local_access(instruction) {
        let width = access_width_bits(&instruction.opcode);
        let by_width = if store {
            &mut facts.local_stores_by_width
        } else {
            &mut facts.local_loads_by_width
        };
        *by_width.entry(width).or_default() += 1;
    }
}

fn count_kernel_access(
    facts: &mut SassFacts,
    cfg: &ControlFlow,
    innermost: Option<usize>,
    kind: LocalKind,
    store: bool,
    instruction: &Instruction,
) {
    let in_loop = innermost.is_some();
    match (kind, store) {
        (LocalKind::Spill, true) => {
            facts.spill_stores += 1;
            facts.spill_stores_in_loops += u32::from(in_loop);
            facts.spill_store_bytes += u64::from(access_width_bits(&instruction.opcode) / 8);
        }
        (LocalKind::Spill, false) => {
            facts.spill_loads += 1;
            facts.spill_loads_in_loops += u32::from(in_loop);
        }
        (LocalKind::LocalArray, _) => facts.local_array_accesses += 1,
        (LocalKind::StackData, _) => facts.stack_data_accesses += 1,
    }
    for_each_enclosing(cfg, innermost, |found| {
        let facts_loop = &mut facts.loops[found];
        if store {
            facts_loop.local_stores += 1;
        } else {
            facts_loop.local_loads += 1;
        }
        match (kind, store) {
            (LocalKind::Spill, true) => facts_loop.spill_stores += 1,
            (LocalKind::Spill, false) => facts_loop.spill_loads += 1,
            (LocalKind::LocalArray, _) => facts_loop.local_array_accesses += 1,
            (LocalKind::StackData, _) => {}
        }
    });
}

fn for_each_enclosing(
    cfg: &ControlFlow,
    mut innermost: Option<usize>,
    mut visit: impl FnMut(usize),
) {
    while let Some(found) = innermost {
        visit(found);
        innermost = cfg.loops[found].parent;
    }
}

fn loop_skeletons(section: &SassSection, cfg: &ControlFlow) -> Vec<LoopFacts> {
    cfg.loops
        .iter()
        .map(|found| {
            let header = &cfg.blocks[found.header];
            let first = &section.instructions[header.start];
            let line = first.source_line.map(|index| &section.lines[index]);
            LoopFacts {
                header_offset: first.offset,
                depth: found.depth,
                parent: found.parent,
                file: line.map(|line| line.file.clone()),
                line: line.map(|line| line.line),
                instructions: found
                    .blocks
                    .iter()
                    .map(|block| (cfg.blocks[*block].end - cfg.blocks[*block].start) as u32)
                    .sum(),
                local_loads: 0,
                local_stores: 0,
                spill_loads: 0,
                spill_stores: 0,
                local_array_accesses: 0,
                calls: 0,
            }
        })
        .collect()
}

/// A `CALL.REL.NOINC` to a label inside the kernel's own code (ptxas emits one to the very next
/// instruction, e.g. in sgemm on sm_80) is control flow, not a call of another function. A call
/// through a register is a call whatever its label (`` CALL.REL.NOINC R2 `(k) ``).
fn calls_into_body(
    section: &SassSection,
    call: &Instruction,
    body: &std::ops::Range<usize>,
) -> bool {
    super::call_target::call_register(call).is_none()
        && call
            .label_operand()
            .and_then(|label| section.labels.get(label))
            .is_some_and(|&at| body.contains(&at))
}

/// The call sites of one callee.
#[derive(Default)]
struct CallSites {
    sites: u32,
    in_loops: u32,
    indirect: bool,
    candidates: std::collections::BTreeSet<String>,
}

fn line_groups(groups: BTreeMap<(SourceLine, LocalKind, u32), (u32, u32)>) -> Vec<LineFacts> {
    let mut lines: Vec<LineFacts> = groups
        .into_iter()
        .map(|((line, kind, loop_depth), (loads, stores))| LineFacts {
            file: line.file,
            line: line.line,
            kind,
            loads,
            stores,
            loop_depth,
        })
        .collect();
    lines.sort_by_key(|group| std::cmp::Reverse((group.loop_depth, group.loads + group.stores)));
    lines
}

fn call_facts(section: &SassSection, calls: BTreeMap<String, CallSites>) -> Vec<CallFacts> {
    calls
        .into_iter()
        .map(|(callee, sites)| {
            let callee_local_accesses = section
                .subroutines
                .iter()
                .enumerate()
                .filter(|(_, subroutine)| subroutine.name == callee)
                .flat_map(|(index, _)| &section.instructions[section.range_of(Some(index))])
                .filter(|instruction| is_local_access(instruction).is_some())
                .count() as u32;
            let known = match sites.indirect {
                true => Some(INDIRECT_CALL),
                false => describe_callee(&callee),
            };
            CallFacts {
                callee,
                indirect: sites.indirect,
                candidates: sites.candidates.into_iter().collect(),
                call_sites: sites.sites,
                call_sites_in_loops: sites.in_loops,
                callee_local_accesses,
                what: known.map(|known| known.what.to_owned()),
                fix: known.map(|known| known.fix.to_owned()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use crate::sass::{parse_nvdisasm, FunctionSymbols};

    #[test]
    fn calls_through_registers_are_named_or_indirect_never_a_register() {
        // nvcc 13.0 sm_90: `assert` and a call through a pointer from a global table
        // (``CALL.REL.NOINC R2 `(k)``, whose label is no callee and no jump into the body).
        let text =
            "\t.section\t.text.k,\"ax\",@progbits\n\t.other\tk,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:
        /*0000*/                   MOV R0, 0x40 ;
        /*0010*/                   LDC.64 R2, c[0x4][R0] ;
        /*0020*/                   CALL.ABS.NOINC R2 ;
        /*0030*/                   LDG.E R2, desc[UR36][R6.64] ;
        /*0040*/                   LDC.64 R2, c[0x2][R2] ;
        /*0050*/                   CALL.REL.NOINC R2 `(k) ;
        /*0060*/                   EXIT ;
";
        let mut section = parse_nvdisasm(text).unwrap().remove(0);
        section.functions = Some(Arc::new(FunctionSymbols::new(
            ["__assertfail".to_owned(), "k".to_owned()].into(),
            BTreeMap::from([((4, 0x40), "__assertfail".to_owned())]),
        )));
        let facts = kernel_facts(&section, false).unwrap();
        let callees: Vec<(&str, bool)> = (facts.calls.iter())
            .map(|call| (call.callee.as_str(), call.indirect))
            .collect();
        assert_eq!(callees, [(INDIRECT_CALLEE, true), ("__assertfail", false)]);
        assert!(facts.calls[1].what.as_deref().unwrap().contains("assert()"));
        assert!(facts.calls[0]
            .what
            .as_deref()
            .unwrap()
            .contains("function pointer"));
        let json = serde_json::to_string(&facts.calls[1]).unwrap();
        assert!(json.contains("\"callee\":\"__assertfail\""), "{json}");
        assert!(
            !json.contains("indirect"),
            "a direct call's JSON is as before: {json}"
        );
    }

    #[test]
    fn widths_follow_the_modifiers() {
        assert_eq!(access_width_bits("LDL"), 32);
        assert_eq!(access_width_bits("LDL.LU.64"), 64);
        assert_eq!(access_width_bits("STL.128"), 128);
        assert_eq!(access_width_bits("LDL.U8"), 8);
        assert_eq!(access_width_bits("STL.S16"), 16);
    }
}
