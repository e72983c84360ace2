//! What a `CALL` calls.
//!
//! A call to a label (`` CALL.REL.NOINC `($k$callee) ``) or to a symbol the cubin relocates
//! (`` CALL.ABS.NOINC `(vprintf) ``, in separately compiled code) names its callee. A call
//! through a register does not: in whole-program code every call to the device library
//! (`assert`'s `__assertfail`, `printf`'s `vprintf`, `malloc`, `free`) is one, its address loaded
//! from a slot of constant bank 4 that a relocation of the cubin fills:
//!
//! ```text
//! MOV R0, 0x40 ;
//! LDC.64 R2, c[0x4][R0] ;        .rela.nv.constant4: offset 0x40 → __assertfail
//! LEPC R20, `(.L_x_1) ;
//! CALL.ABS.NOINC R2 ;
//! ```
//!
//! [`CallResolver`] follows the register back to the instructions that set it (every definition
//! that reaches the call through the control-flow graph; a predicated one does not hide those
//! before it), through copies (`MOV`, `UMOV`, `IMAD.MOV`) and immediates (`MOV`, `HFMA2`'s two
//! halves), to a constant-bank slot that [`FunctionSymbols::constant_slots`](super::FunctionSymbols::constant_slots) maps to a function,
//! or to a `MOV` that a relocation fills with a function's address (`32@lo(fun@unified(f))`).
//! When every definition gives the same function, that is the callee; otherwise the call is
//! indirect (a real function pointer: loaded from memory, a kernel parameter, chosen at run time),
//! with its candidates when each definition named one. A register is never a callee's name.
//! Text read without its cubin (`SassSection::functions` is `None`) cannot name such a call: it is
//! indirect. Each search scans a block of the graph at most once.

use std::collections::BTreeSet;
use std::ops::Range;

use super::cfg::ControlFlow;
use super::parse::{Instruction, SassSection};

/// What one `CALL` calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallTarget {
    /// A named function: a subroutine, a relocated symbol, or a register's one function.
    Named(String),
    /// A call through a register that holds no single known function; `candidates` are the
    /// functions it may hold when every definition named one (else empty).
    Indirect { candidates: BTreeSet<String> },
}

/// How far copies and address registers are followed.
const MAX_DEPTH: u32 = 6;

/// The value a register is given.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Value {
    Immediate(u64),
    Function(String),
    Unknown,
}

/// The register a call goes through: `R2` of `CALL.ABS.NOINC R2` (and of
/// `` CALL.REL.NOINC R2 `(k) ``, whose label is no callee).
pub(crate) fn call_register(call: &Instruction) -> Option<&str> {
    let first = call.operands.split([' ', ',']).next()?;
    register(first).filter(|name| name.starts_with('R'))
}

/// Names the targets of one function's calls: built once per function, asked once per `CALL`.
#[derive(Debug)]
pub(crate) struct CallResolver<'a> {
    section: &'a SassSection,
    cfg: &'a ControlFlow,
    body: &'a Range<usize>,
    predecessors: Vec<Vec<usize>>,
}

impl<'a> CallResolver<'a> {
    /// For the calls in `body` of `section`, whose graph is `cfg`.
    pub fn new(
        section: &'a SassSection,
        cfg: &'a ControlFlow,
        body: &'a Range<usize>,
    ) -> CallResolver<'a> {
        CallResolver {
            section,
            cfg,
            body,
            predecessors: cfg.predecessors(),
        }
    }

    /// What the call at `index` calls.
    pub fn target(&self, index: usize) -> CallTarget {
        let call = &self.section.instructions[index];
        let Some(register) = call_register(call) else {
            return CallTarget::Named(named_callee(self.section, call));
        };
        let values: BTreeSet<Value> = self.values(index, register, 0).into_iter().collect();
        let functions: BTreeSet<String> = values
            .iter()
            .filter_map(|value| match value {
                Value::Function(name) => Some(name.clone()),
                _ => None,
            })
            .collect();
        let all_functions = functions.len() == values.len();
        match (all_functions, functions.len()) {
            (true, 1) => CallTarget::Named(functions.into_iter().next().unwrap_or_default()),
            (true, _) => CallTarget::Indirect {
                candidates: functions,
            },
            (false, _) => CallTarget::Indirect {
                candidates: BTreeSet::new(),
            },
        }
    }
}

/// The callee a call names without a register: its subroutine, or its label or symbol.
fn named_callee(section: &SassSection, call: &Instruction) -> String {
    let label = call.label_operand().unwrap_or(call.operands.as_str());
    section
        .subroutines
        .iter()
        .find(|subroutine| subroutine.label == label)
        .map_or_else(|| label.to_owned(), |subroutine| subroutine.name.clone())
}

/// `R2`, `UR4`, `RZ` (with `.reuse` dropped); `None` for anything else.
fn register(token: &str) -> Option<&str> {
    let name = token.trim().split('.').next()?;
    let digits = name.strip_prefix("UR").or_else(|| name.strip_prefix('R'))?;
    let numbered = !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit());
    (numbered || digits == "Z").then_some(name)
}

fn is_zero_register(name: &str) -> bool {
    name == "RZ" || name == "URZ"
}

/// Opcodes whose first operand is a register they read, not one they write.
const READS_FIRST: [&str; 9] = [
    "CALL",
    "RET",
    "BRX",
    "JMX",
    "JMP",
    "BRA",
    "WARPSYNC",
    "NANOSLEEP",
    "BPT",
];

/// Whether `instruction` writes `register` as its destination.
fn writes(instruction: &Instruction, register_name: &str) -> bool {
    if READS_FIRST.contains(&instruction.base_opcode()) {
        return false;
    }
    let first = instruction.operands.split(',').next().unwrap_or("");
    register(first) == Some(register_name)
}

/// The operands after the destination, trimmed.
fn sources(instruction: &Instruction) -> Vec<&str> {
    instruction
        .operands
        .split(',')
        .skip(1)
        .map(str::trim)
        .collect()
}

impl CallResolver<'_> {
    /// The values `register` may hold when instruction `before` runs.
    fn values(&self, before: usize, register: &str, depth: u32) -> Vec<Value> {
        if is_zero_register(register) {
            return vec![Value::Immediate(0)];
        }
        if depth > MAX_DEPTH || !self.body.contains(&before) {
            return vec![Value::Unknown];
        }
        self.definitions(before, register)
            .into_iter()
            .flat_map(|definition| match definition {
                Some(at) => self.value_of(at, depth + 1),
                None => vec![Value::Unknown],
            })
            .collect()
    }

    /// The instructions whose write of `register` reaches instruction `before` (`None`: the
    /// function's entry, or code no branch reaches, with the register unset). Each block is
    /// scanned backward once.
    fn definitions(&self, before: usize, register: &str) -> Vec<Option<usize>> {
        let mut found = Vec::new();
        let first_block = self.cfg.block_of(before);
        let mut visited = vec![false; self.cfg.blocks.len()];
        let mut work: Vec<(usize, usize)> = vec![(first_block, before)];
        while let Some((block, end)) = work.pop() {
            if self.scan_block(block, end, register, &mut found) {
                continue;
            }
            let predecessors = &self.predecessors[block];
            if predecessors.is_empty() {
                found.push(None);
            }
            for &predecessor in predecessors {
                if !std::mem::replace(&mut visited[predecessor], true) {
                    work.push((predecessor, self.cfg.blocks[predecessor].end));
                }
            }
        }
        found
    }

    /// Scans `block`'s instructions before `end` backward for writes of `register`; `true`
    /// when an unpredicated one ends the search on this path.
    fn scan_block(
        &self,
        block: usize,
        end: usize,
        register: &str,
        found: &mut Vec<Option<usize>>,
    ) -> bool {
        let start = self.cfg.blocks[block].start;
        for at in (start..end).rev() {
            let instruction = &self.section.instructions[at];
            if writes(instruction, register) {
                found.push(Some(at));
                if instruction.predicate.is_none() {
                    return true;
                }
            }
        }
        false
    }

    /// The value instruction `at` writes to its destination.
    fn value_of(&self, at: usize, depth: u32) -> Vec<Value> {
        let instruction = &self.section.instructions[at];
        let sources = sources(instruction);
        match instruction.base_opcode() {
            "LDC" | "ULDC" | "LDCU" => sources
                .first()
                .map_or_else(|| vec![Value::Unknown], |slot| self.slot(at, slot, depth)),
            "MOV" | "UMOV" | "MOV32I" | "R2UR" => match sources.first() {
                Some(source) => self.copied(at, instruction, source, depth),
                None => vec![Value::Unknown],
            },
            "IMAD" if instruction.opcode.starts_with("IMAD.MOV") || copies_third(&sources) => {
                match sources.get(2) {
                    Some(source) => self.copied(at, instruction, source, depth),
                    None => vec![Value::Unknown],
                }
            }
            "HFMA2" => vec![halves(&sources).map_or(Value::Unknown, Value::Immediate)],
            _ => vec![Value::Unknown],
        }
    }

    /// The value a copy (`MOV R2, src`) writes: a relocated function, an immediate, a constant
    /// slot, or another register's values.
    fn copied(&self, at: usize, instruction: &Instruction, source: &str, depth: u32) -> Vec<Value> {
        if let Some(symbol) = &instruction.symbol {
            let function = self
                .section
                .functions
                .as_ref()
                .is_some_and(|functions| functions.names.contains(symbol));
            return vec![match function {
                true => Value::Function(symbol.clone()),
                false => Value::Unknown,
            }];
        }
        if let Some(value) = immediate(source) {
            return vec![Value::Immediate(value)];
        }
        if source.starts_with("c[") {
            return self.slot(at, source, depth);
        }
        match register(source) {
            Some(from) => self.values(at, from, depth),
            None => vec![Value::Unknown],
        }
    }

    /// The function a constant-bank slot `c[0x4][R0+0x8]` holds, for every value of its address
    /// register.
    fn slot(&self, at: usize, operand: &str, depth: u32) -> Vec<Value> {
        let Some((bank, base, displacement)) = constant_operand(operand) else {
            return vec![Value::Unknown];
        };
        let offsets = match base {
            None => vec![Value::Immediate(0)],
            Some(register) => self.values(at, register, depth),
        };
        let slots = self.section.functions.as_ref().map(|f| &f.constant_slots);
        offsets
            .into_iter()
            .map(|offset| match (offset, slots) {
                (Value::Immediate(offset), Some(slots)) => slots
                    .get(&(bank, offset.wrapping_add(displacement)))
                    .map_or(Value::Unknown, |name| Value::Function(name.clone())),
                _ => Value::Unknown,
            })
            .collect()
    }
}

/// `IMAD R4, RZ, RZ, UR4` (and `IMAD.U32`): a copy of the third source.
fn copies_third(sources: &[&str]) -> bool {
    sources.len() == 3 && sources[..2].iter().all(|source| is_zero_register(source))
}

/// `0x40` → 64.
fn immediate(token: &str) -> Option<u64> {
    u64::from_str_radix(token.trim().strip_prefix("0x")?, 16).ok()
}

/// `c[0x4][R0+0x8]` → (4, Some("R0"), 8); `c[0x4][0x40]` → (4, None, 0x40).
fn constant_operand(operand: &str) -> Option<(u32, Option<&str>, u64)> {
    let rest = operand.trim().strip_prefix("c[")?;
    let (bank, rest) = rest.split_once("][")?;
    let bank = u32::from_str_radix(bank.strip_prefix("0x")?, 16).ok()?;
    let address = rest.strip_suffix(']')?.trim();
    let (base, displacement) = match address.split_once('+') {
        Some((base, displacement)) => (Some(base.trim()), immediate(displacement)?),
        None => match immediate(address) {
            Some(offset) => (None, offset),
            None => (Some(address), 0),
        },
    };
    match base {
        None => Some((bank, None, displacement)),
        Some(base) => Some((bank, Some(register(base)?), displacement)),
    }
}

/// `HFMA2 R0, -RZ, RZ, 0, 3.814697265625e-06`: `R0 = 0 * x + (a, b)`, the two halves' bits
/// (`0x40` here); ptxas writes small constants this way.
fn halves(sources: &[&str]) -> Option<u64> {
    let [multiplicand, multiplier, high, low] = sources else {
        return None;
    };
    let zero = |token: &str| is_zero_register(token.trim_start_matches('-'));
    if !zero(multiplicand) || !zero(multiplier) {
        return None;
    }
    Some((u64::from(half_bits(high)?) << 16) | u64::from(half_bits(low)?))
}

/// The IEEE half-precision bits of a value nvdisasm printed exactly (`5.9604644775390625e-08`
/// → 1); `None` when the text is not a half.
fn half_bits(text: &str) -> Option<u16> {
    let value: f64 = text.trim().parse().ok()?;
    let sign: u16 = if value.is_sign_negative() { 0x8000 } else { 0 };
    let magnitude = value.abs();
    if magnitude == 0.0 {
        return Some(sign);
    }
    let subnormal_step = 2f64.powi(-24);
    let (exponent, mantissa) = if magnitude < 2f64.powi(-14) {
        (0, magnitude / subnormal_step)
    } else {
        let exponent = magnitude.log2().floor() as i32;
        let biased = exponent + 15;
        if !(1..=30).contains(&biased) {
            return None;
        }
        let mantissa = (magnitude / 2f64.powi(exponent) - 1.0) * 1024.0;
        (biased as u16, mantissa)
    };
    let exact = mantissa.fract() == 0.0 && (0.0..1024.0).contains(&mantissa);
    exact.then_some(sign | (exponent << 10) | mantissa as u16)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sass::parse::parse_nvdisasm;
    use crate::sass::FunctionSymbols;
    use std::collections::BTreeMap;

    fn section(code: &str, functions: Option<FunctionSymbols>) -> SassSection {
        let text = format!(
            "\t.section\t.text.k,\"ax\",@progbits\n\t.other\tk,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n{code}"
        );
        let mut sections = parse_nvdisasm(&text).unwrap();
        let mut section = sections.remove(0);
        section.functions = functions.map(Arc::new);
        section
    }

    fn library() -> FunctionSymbols {
        FunctionSymbols::new(
            ["__assertfail", "vprintf", "k", "_Z5twicef", "_Z6thricef"]
                .into_iter()
                .map(str::to_owned)
                .collect(),
            BTreeMap::from([
                ((4, 0x28), "vprintf".to_owned()),
                ((4, 0x40), "__assertfail".to_owned()),
            ]),
        )
    }

    /// The targets of every `CALL` of the section's body.
    fn targets(section: &SassSection) -> Vec<CallTarget> {
        let body = section.range_of(None);
        let cfg = ControlFlow::build(section, body.clone()).unwrap();
        let resolver = CallResolver::new(section, &cfg, &body);
        body.clone()
            .filter(|&at| section.instructions[at].base_opcode() == "CALL")
            .map(|at| resolver.target(at))
            .collect()
    }

    fn named(name: &str) -> CallTarget {
        CallTarget::Named(name.to_owned())
    }

    fn indirect(candidates: &[&str]) -> CallTarget {
        CallTarget::Indirect {
            candidates: candidates.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    #[test]
    fn an_assert_on_sm_90_names_assertfail_through_its_constant_slot() {
        // nvcc 13.0, sm_90: `assert(i < n)`.
        let code = "
        /*0060*/              @!P0 BRA `(.L_x_12) ;
        /*0070*/                   MOV R0, 0x40 ;
        /*0080*/                   ULDC.64 UR4, c[0x4][0x10] ;
        /*00b0*/                   LDC.64 R2, c[0x4][R0] ;
        /*0150*/                   LEPC R20, `(.L_x_12) ;
        /*0160*/                   CALL.ABS.NOINC R2 ;
.L_x_12:
        /*0170*/                   EXIT ;
";
        assert_eq!(
            targets(&section(code, Some(library()))),
            [named("__assertfail")]
        );
        // Without the cubin's slots the register is still no name.
        assert_eq!(targets(&section(code, None)), [indirect(&[])]);
    }

    #[test]
    fn the_address_register_is_read_where_the_load_reads_it() {
        // nvcc 13.0, sm_80: the slot's offset and the loaded address share R2; sm_75 (ptxas
        // 12.9): R0 is set again between the load and the call.
        let sm_80 = "
        /*0060*/                   MOV R2, 0x40 ;
        /*00c0*/                   LDC.64 R2, c[0x4][R2] ;
        /*0180*/                   CALL.ABS.NOINC R2 ;
        /*0190*/                   EXIT ;
";
        assert_eq!(
            targets(&section(sm_80, Some(library()))),
            [named("__assertfail")]
        );
        let sm_75 = "
        /*0060*/                   MOV R0, 0x28 ;
        /*00b0*/                   LDC.64 R10, c[0x4][R0] ;
        /*0130*/                   MOV R0, 0x0 ;
        /*0160*/                   CALL.ABS.NOINC R10 ;
        /*0170*/                   EXIT ;
";
        assert_eq!(
            targets(&section(sm_75, Some(library()))),
            [named("vprintf")]
        );
    }

    #[test]
    fn an_offset_set_before_a_loop_reaches_the_calls_in_it() {
        let code = "
        /*0000*/                   HFMA2.MMA R18, -RZ, RZ, 0, 2.384185791015625e-06 ;
.L_x_1:
        /*0010*/                   LDC.64 R2, c[0x4][R18] ;
        /*0020*/                   CALL.ABS.NOINC R2 ;
        /*0030*/                   IMAD.MOV.U32 R4, RZ, RZ, R2 ;
        /*0040*/               @P0 BRA `(.L_x_1) ;
        /*0050*/                   EXIT ;
";
        // 2.384185791015625e-06 is the half 0x0028.
        assert_eq!(targets(&section(code, Some(library()))), [named("vprintf")]);
    }

    #[test]
    fn a_pointer_from_memory_or_chosen_at_run_time_is_an_indirect_call() {
        // Whole-program sm_90: an index loaded from a global table into ptxas's jump table.
        let table = "
        /*00c0*/                   LDG.E R2, desc[UR36][R6.64] ;
        /*0110*/                   LDC.64 R2, c[0x2][R2] ;
        /*0120*/                   CALL.REL.NOINC R2 `(k) ;
        /*0130*/                   EXIT ;
";
        assert_eq!(targets(&section(table, Some(library()))), [indirect(&[])]);
        // Separate compilation, sm_90: one of two functions, by a predicate.
        let chosen = "
        /*0080*/                   UMOV UR5, 32@hi(fun@unified(_Z5twicef)) ;
        /*0090*/                   UMOV UR4, 32@lo(fun@unified(_Z5twicef)) ;
        /*00a0*/                   @!UP0 UMOV UR4, 32@lo(fun@unified(_Z6thricef)) ;
        /*00b0*/                   MOV R2, UR4 ;
        /*0100*/                   CALL.ABS.NOINC R2 `(__UFT_OFFSET) ;
        /*0110*/                   EXIT ;
";
        assert_eq!(
            targets(&section(chosen, Some(library()))),
            [indirect(&["_Z5twicef", "_Z6thricef"])]
        );
        // A kernel parameter: set at no instruction of the kernel.
        let parameter = "
        /*0010*/                   LDC.64 R2, c[0x0][0x218] ;
        /*0020*/                   CALL.ABS.NOINC R2 ;
        /*0030*/                   EXIT ;
";
        assert_eq!(
            targets(&section(parameter, Some(library()))),
            [indirect(&[])]
        );
    }

    #[test]
    fn a_relocated_function_in_a_mov_or_a_label_is_named() {
        let code = "
        /*0010*/                   MOV R2, 32@lo(_Z5twicef) ;
        /*0020*/                   MOV R3, 32@hi(_Z5twicef) ;
        /*0030*/                   CALL.ABS.NOINC R2 ;
        /*0040*/                   CALL.ABS.NOINC `(vprintf) ;
        /*0050*/                   EXIT ;
";
        assert_eq!(
            targets(&section(code, Some(library()))),
            [named("_Z5twicef"), named("vprintf")]
        );
        let data = "
        /*0010*/                   MOV R2, 32@lo($str) ;
        /*0030*/                   CALL.ABS.NOINC R2 ;
        /*0050*/                   EXIT ;
";
        assert_eq!(targets(&section(data, Some(library()))), [indirect(&[])]);
    }

    #[test]
    fn operands_are_read_exactly() {
        assert_eq!(register("R2.reuse"), Some("R2"));
        assert_eq!(register("UR14"), Some("UR14"));
        assert_eq!(register("RZ"), Some("RZ"));
        assert_eq!(register("P0"), None);
        assert_eq!(register("R"), None);
        assert_eq!(register("desc[UR4][R2.64]"), None);
        assert_eq!(constant_operand("c[0x4][R0]"), Some((4, Some("R0"), 0)));
        assert_eq!(constant_operand("c[0x4][0x40]"), Some((4, None, 0x40)));
        assert_eq!(
            constant_operand("c[0x2][UR4+0x8]"),
            Some((2, Some("UR4"), 8))
        );
        assert_eq!(constant_operand("c[0x4][URZ]"), Some((4, Some("URZ"), 0)));
        assert_eq!(half_bits("5.9604644775390625e-08"), Some(1));
        assert_eq!(half_bits("3.814697265625e-06"), Some(0x40));
        assert_eq!(half_bits("0"), Some(0));
        assert_eq!(half_bits("1"), Some(0x3c00));
        assert_eq!(half_bits("-2"), Some(0xc000));
        assert_eq!(half_bits("0.1"), None, "not exactly a half");
        assert_eq!(half_bits("1e9"), None);
        assert_eq!(
            halves(&["-RZ", "RZ", "0", "3.5762786865234375e-07"]),
            Some(6)
        );
        let call = |operands: &str| Instruction {
            offset: 0,
            predicate: None,
            opcode: "CALL.ABS.NOINC".into(),
            operands: operands.into(),
            source_line: None,
            text_line: 1,
            symbol: None,
            control: None,
        };
        assert_eq!(call_register(&call("R2")), Some("R2"));
        assert_eq!(call_register(&call("R2 `(__UFT_OFFSET)")), Some("R2"));
        assert_eq!(call_register(&call("`(vprintf)")), None);
    }
}
