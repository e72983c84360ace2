//! The control-flow graph of one function's SASS, its dominators and its natural loops.
//!
//! Blocks start at the first instruction, at every label a branch names, and after every
//! instruction that transfers control (`BRA`, `BRX`, `JMP`, `JMX`, `EXIT`, `RET`, `BPT`). A branch
//! with a predicate (or `BRA.DIV`) also falls through; an `EXIT`/`RET` with a predicate falls
//! through; `CALL` returns, so it falls through and adds no edge (callees are separate functions).
//! The predicate is a guard (`@P0 BRA`, `@!UP1 BRA`) or, from sm_100 on, mostly the branch's own
//! first operand: `BRA.U UP0, `(.L_x_3)` (uniform) and `BRA.U !UP1, ...` are conditional;
//! `@!P0 BRA P1, ...` needs both. `PT` (always true) makes neither conditional and `!PT` (never)
//! takes no edge.
//! `BSSY`/`BSYNC` set up and wait on convergence barriers: no edge. Indirect branches (`BRX`,
//! `JMX`) have no known targets and get none; they are counted so a caller can say so.
//!
//! Loops are natural loops: a back edge `tail → header` where `header` dominates `tail`
//! (Cooper, Harvey and Kennedy's iterative dominators over the reachable blocks); loops sharing a
//! header are one loop. Unreachable code (ptxas's `BRA` to itself after the last `EXIT`) is in no
//! loop.

use std::collections::BTreeSet;

use super::parse::{Instruction, SassSection};
use super::SassError;

/// A basic block: instructions `start..end` of the function's range.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct Block {
    pub start: usize,
    pub end: usize,
    pub successors: Vec<usize>,
}

/// A natural loop.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct Loop {
    /// The header block (dominates every block of the loop).
    pub header: usize,
    /// Every block in the loop, nested loops included, ascending.
    pub blocks: BTreeSet<usize>,
    /// The innermost enclosing loop (index into the loop list).
    pub parent: Option<usize>,
    /// 1 for an outermost loop.
    pub depth: u32,
}

/// The graph of one function.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct ControlFlow {
    pub blocks: Vec<Block>,
    /// Loops, outer before inner (by depth, then header).
    pub loops: Vec<Loop>,
    /// Innermost loop of each block.
    pub block_loop: Vec<Option<usize>>,
    /// `BRX`/`JMX` instructions, whose targets are unknown.
    pub indirect_branches: u32,
}

fn ends_block(base: &str) -> bool {
    matches!(base, "BRA" | "BRX" | "JMP" | "JMX" | "EXIT" | "RET" | "BPT")
}

/// Whether a control transfer happens: always, never, or as a predicate says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    Always,
    Never,
    Sometimes,
}

/// A predicate register as SASS writes it, `PT` included: `P0`, `!P3`, `UP1`, `!UPT`; the
/// register without its `!` and whether it was negated.
fn predicate_register(word: &str) -> Option<(&str, bool)> {
    let (register, negated) = match word.strip_prefix('!') {
        Some(register) => (register, true),
        None => (word, false),
    };
    let number = register
        .strip_prefix("UP")
        .or_else(|| register.strip_prefix('P'))?;
    let valid = number == "T" || (number.len() == 1 && number.as_bytes()[0].is_ascii_digit());
    valid.then_some((register, negated))
}

/// What one predicate (a guard without its `@`, or a branch's predicate operand) makes of a
/// transfer: `PT` always, `!PT` never, any other register sometimes.
fn taken_by(word: &str) -> Taken {
    match predicate_register(word) {
        Some((register, negated)) if register.ends_with('T') => {
            if negated {
                Taken::Never
            } else {
                Taken::Always
            }
        }
        Some(_) => Taken::Sometimes,
        None => Taken::Always,
    }
}

/// Whether `instruction` (a control transfer) happens: its guard (`@!P0`), the predicate operand
/// before its target (`BRA.U !UP0, `(.L_x_3)`, sm_100 and later) and `.DIV` together.
fn taken(instruction: &Instruction) -> Taken {
    let guard = instruction
        .predicate
        .as_deref()
        .map_or(Taken::Always, |guard| {
            taken_by(guard.trim_start_matches('@'))
        });
    let operand = instruction
        .operands
        .split_once(',')
        .map_or(Taken::Always, |(first, _)| taken_by(first.trim()));
    let divergence = if instruction.opcode.contains(".DIV") {
        Taken::Sometimes
    } else {
        Taken::Always
    };
    [guard, operand, divergence]
        .into_iter()
        .fold(Taken::Always, |all, one| match (all, one) {
            (Taken::Never, _) | (_, Taken::Never) => Taken::Never,
            (Taken::Sometimes, _) | (_, Taken::Sometimes) => Taken::Sometimes,
            _ => Taken::Always,
        })
}

fn falls_through(instruction: &Instruction) -> bool {
    match instruction.base_opcode() {
        "BRA" | "JMP" | "EXIT" | "RET" | "BPT" | "BRX" | "JMX" => {
            taken(instruction) != Taken::Always
        }
        _ => true,
    }
}

impl ControlFlow {
    /// Builds the graph of instructions `range` of `section`.
    pub fn build(
        section: &SassSection,
        range: std::ops::Range<usize>,
    ) -> Result<ControlFlow, SassError> {
        let instructions = &section.instructions[range.clone()];
        let local = |index: usize| {
            index
                .checked_sub(range.start)
                .filter(|i| *i < instructions.len())
        };
        let mut leaders = BTreeSet::from([0usize]);
        let mut indirect_branches = 0;
        let mut targets = vec![None; instructions.len()];
        for (index, instruction) in instructions.iter().enumerate() {
            let base = instruction.base_opcode();
            if matches!(base, "BRX" | "JMX") {
                indirect_branches += 1;
            }
            if ends_block(base) {
                leaders.insert(index + 1);
            }
            if matches!(base, "BRA" | "JMP") {
                let label = instruction.label_operand().ok_or_else(|| SassError::Line {
                    text_line: instruction.text_line,
                    line: format!("{} {}", instruction.opcode, instruction.operands),
                    message: "a branch without a `(label)` target".to_owned(),
                })?;
                let target = section.labels.get(label).copied().and_then(local);
                let target = target.ok_or_else(|| SassError::UnknownLabel {
                    function: section.name.clone(),
                    label: label.to_owned(),
                    text_line: instruction.text_line,
                })?;
                if taken(instruction) != Taken::Never {
                    targets[index] = Some(target);
                }
                leaders.insert(target);
            }
        }
        leaders.retain(|leader| *leader < instructions.len());
        if instructions.is_empty() {
            return Ok(ControlFlow {
                blocks: Vec::new(),
                loops: Vec::new(),
                block_loop: Vec::new(),
                indirect_branches,
            });
        }
        let starts: Vec<usize> = leaders.into_iter().collect();
        let block_of =
            |instruction: usize| starts.partition_point(|start| *start <= instruction) - 1;
        let mut blocks = Vec::with_capacity(starts.len());
        for (block, start) in starts.iter().enumerate() {
            let end = starts.get(block + 1).copied().unwrap_or(instructions.len());
            let last = &instructions[end - 1];
            let mut successors = Vec::new();
            if let Some(target) = targets[end - 1] {
                successors.push(block_of(target));
            }
            if falls_through(last) && end < instructions.len() {
                successors.push(block + 1);
            }
            successors.dedup();
            blocks.push(Block {
                start: *start,
                end,
                successors,
            });
        }
        let (loops, block_loop) = natural_loops(&blocks);
        Ok(ControlFlow {
            blocks,
            loops,
            block_loop,
            indirect_branches,
        })
    }

    /// The block holding instruction `index` (relative to the function's range).
    pub fn block_of(&self, index: usize) -> usize {
        self.blocks.partition_point(|block| block.start <= index) - 1
    }

    /// Each block's predecessors.
    pub fn predecessors(&self) -> Vec<Vec<usize>> {
        predecessors(&self.blocks)
    }
}

fn predecessors(blocks: &[Block]) -> Vec<Vec<usize>> {
    let mut predecessors = vec![Vec::new(); blocks.len()];
    for (block, data) in blocks.iter().enumerate() {
        for successor in &data.successors {
            predecessors[*successor].push(block);
        }
    }
    predecessors
}

/// Reverse post-order of the blocks reachable from block 0.
fn reverse_post_order(blocks: &[Block]) -> Vec<usize> {
    let mut visited = vec![false; blocks.len()];
    let mut order = Vec::with_capacity(blocks.len());
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    visited[0] = true;
    while let Some((block, next_child)) = stack.pop() {
        if let Some(&child) = blocks[block].successors.get(next_child) {
            stack.push((block, next_child + 1));
            if !visited[child] {
                visited[child] = true;
                stack.push((child, 0));
            }
        } else {
            order.push(block);
        }
    }
    order.reverse();
    order
}

/// Immediate dominators (Cooper, Harvey, Kennedy); `None` for unreachable blocks.
fn immediate_dominators(blocks: &[Block]) -> Vec<Option<usize>> {
    let order = reverse_post_order(blocks);
    let mut rank = vec![usize::MAX; blocks.len()];
    for (position, block) in order.iter().enumerate() {
        rank[*block] = position;
    }
    let predecessors = predecessors(blocks);
    let mut idom: Vec<Option<usize>> = vec![None; blocks.len()];
    idom[0] = Some(0);
    let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
        while a != b {
            while rank[a] > rank[b] {
                a = idom[a].unwrap_or(0);
            }
            while rank[b] > rank[a] {
                b = idom[b].unwrap_or(0);
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &block in order.iter().skip(1) {
            let mut new_idom: Option<usize> = None;
            for &predecessor in &predecessors[block] {
                if idom[predecessor].is_none() {
                    continue;
                }
                new_idom = Some(match new_idom {
                    None => predecessor,
                    Some(current) => intersect(&idom, predecessor, current),
                });
            }
            if new_idom.is_some() && idom[block] != new_idom {
                idom[block] = new_idom;
                changed = true;
            }
        }
    }
    idom
}

fn dominates(idom: &[Option<usize>], dominator: usize, mut block: usize) -> bool {
    loop {
        if block == dominator {
            return true;
        }
        match idom[block] {
            Some(parent) if parent != block => block = parent,
            _ => return false,
        }
    }
}

/// Natural loops by back edges, merged per header, nested, and each block's innermost loop.
fn natural_loops(blocks: &[Block]) -> (Vec<Loop>, Vec<Option<usize>>) {
    let idom = immediate_dominators(blocks);
    let predecessors = predecessors(blocks);
    let mut by_header: std::collections::BTreeMap<usize, BTreeSet<usize>> = Default::default();
    for (tail, data) in blocks.iter().enumerate() {
        if idom[tail].is_none() {
            continue;
        }
        for &header in &data.successors {
            if dominates(&idom, header, tail) {
                let body = by_header
                    .entry(header)
                    .or_insert_with(|| BTreeSet::from([header]));
                let mut work = vec![tail];
                while let Some(block) = work.pop() {
                    if body.insert(block) {
                        work.extend(predecessors[block].iter().copied());
                    }
                }
            }
        }
    }
    let mut loops: Vec<Loop> = by_header
        .into_iter()
        .map(|(header, blocks)| Loop {
            header,
            blocks,
            parent: None,
            depth: 1,
        })
        .collect();
    // Outer loops hold more blocks; sort so every loop's enclosing loops come before it.
    loops.sort_by_key(|found| (std::cmp::Reverse(found.blocks.len()), found.header));
    for inner in 0..loops.len() {
        let parent = (0..inner)
            .rev()
            .find(|outer| loops[*outer].blocks.contains(&loops[inner].header));
        loops[inner].parent = parent;
        loops[inner].depth = parent.map_or(1, |outer| loops[outer].depth + 1);
    }
    let mut block_loop = vec![None; blocks.len()];
    for (index, found) in loops.iter().enumerate() {
        for block in &found.blocks {
            block_loop[*block] = Some(index); // inner loops come later and overwrite
        }
    }
    (loops, block_loop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::parse::parse_nvdisasm;

    fn graph(body: &str) -> ControlFlow {
        let text = format!("\t.section\t.text.k,\"ax\"\nk:\n{body}");
        let sections = parse_nvdisasm(&text).unwrap();
        ControlFlow::build(&sections[0], sections[0].range_of(None)).unwrap()
    }

    #[test]
    fn nested_loops_get_depths_and_parents() {
        let cfg = graph(
            "        /*0000*/ MOV R0, RZ ;
.L_outer:
        /*0010*/ MOV R1, RZ ;
.L_inner:
        /*0020*/ LDL R2, [R1+0x4] ;
        /*0030*/ @P0 BRA `(.L_inner) ;
        /*0040*/ @P1 BRA `(.L_outer) ;
        /*0050*/ EXIT ;
.L_trap:
        /*0060*/ BRA `(.L_trap);
",
        );
        assert_eq!(cfg.loops.len(), 2, "{cfg:#?}");
        assert_eq!((cfg.loops[0].depth, cfg.loops[1].depth), (1, 2));
        assert_eq!(cfg.loops[1].parent, Some(0));
        assert_eq!(cfg.block_loop[cfg.block_of(2)], Some(1));
        assert_eq!(cfg.block_loop[cfg.block_of(5)], None);
        assert_eq!(
            cfg.block_loop[cfg.block_of(6)],
            None,
            "unreachable trap loop"
        );
    }

    #[test]
    fn a_forward_branch_is_no_loop() {
        let cfg = graph(
            "        /*0000*/ @P0 BRA `(.L_skip) ;
        /*0010*/ STL [R1], R0 ;
.L_skip:
        /*0020*/ EXIT ;
",
        );
        assert!(cfg.loops.is_empty());
        assert_eq!(cfg.blocks.len(), 3);
        assert_eq!(cfg.blocks[0].successors, vec![2, 1]);
    }

    /// sm_100's loop shape (`loop_spill` of `tests/kernels/sass_evidence.cu`, nvcc 13.0): a
    /// uniform branch skips the loop, another closes it; both predicates are operands.
    #[test]
    fn uniform_branches_with_a_predicate_operand_are_conditional() {
        let cfg = graph(
            "        /*04d0*/ BRA.U !UP0, `(.L_x_26) ;
        /*04e0*/ STL [R1+0x50], RZ ;
.L_x_27:
        /*0500*/ LDL R29, [R1+0x50] ;
        /*0510*/ STL [R1+0xa4], R12 ;
        /*0d60*/ BRA.U UP0, `(.L_x_27) ;
.L_x_26:
        /*0d70*/ STG.E desc[UR4][R2.64], R0 ;
        /*1450*/ EXIT ;
.L_x_28:
        /*1460*/ BRA `(.L_x_28);
",
        );
        assert_eq!(cfg.loops.len(), 1, "{cfg:#?}");
        assert_eq!(cfg.loops[0].header, cfg.block_of(2));
        assert_eq!(cfg.block_loop[cfg.block_of(3)], Some(0));
        assert_eq!(cfg.blocks[0].successors, vec![3, 1], "skips or enters");
        assert_eq!(cfg.blocks[2].successors, vec![2, 3], "loops or leaves");
        assert_eq!(cfg.block_loop[cfg.block_of(5)], None, "after the loop");
        assert_eq!(
            cfg.block_loop[cfg.block_of(7)],
            None,
            "unreachable trap loop"
        );
    }

    #[test]
    fn a_guard_and_a_predicate_operand_are_both_conditions() {
        // sm_80's `device_frames.cu`: `@!P0 BRA P1, ...` branches when !P0 and P1.
        let cfg = graph(
            ".L_top:
        /*0000*/ LDL R2, [R1] ;
        /*0010*/ @!P0 BRA P1, `(.L_top) ;
        /*0020*/ BRA.DIV UR4, `(.L_top) ;
        /*0030*/ EXIT ;
",
        );
        assert_eq!(cfg.loops.len(), 1, "{cfg:#?}");
        assert_eq!(cfg.blocks[0].successors, vec![0, 1]);
        assert_eq!(cfg.blocks[1].successors, vec![0, 2]);
    }

    #[test]
    fn pt_always_branches_and_not_pt_never_does() {
        let cfg = graph(
            ".L_top:
        /*0000*/ LDL R2, [R1] ;
        /*0010*/ BRA !PT, `(.L_top) ;
        /*0020*/ BRA.U UPT, `(.L_end) ;
        /*0030*/ STL [R1], R2 ;
.L_end:
        /*0040*/ EXIT ;
",
        );
        assert!(cfg.loops.is_empty(), "{cfg:#?}");
        assert_eq!(
            cfg.blocks[0].successors,
            vec![1],
            "`!PT` only falls through"
        );
        assert_eq!(cfg.blocks[1].successors, vec![3], "`UPT` always branches");
        assert!(
            cfg.blocks[2].successors == vec![3],
            "the store after an unconditional branch is unreachable, not a loop"
        );
    }

    #[test]
    fn an_unknown_label_is_an_error() {
        let text = "\t.section\t.text.k,\"ax\"\nk:\n        /*0000*/ BRA `(.L_nowhere) ;\n";
        let sections = parse_nvdisasm(text).unwrap();
        let error = ControlFlow::build(&sections[0], sections[0].range_of(None)).unwrap_err();
        assert!(error.to_string().contains(".L_nowhere"), "{error}");
    }
}
