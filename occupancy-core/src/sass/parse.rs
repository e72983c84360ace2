//! Parses `nvdisasm -c -g` (or `-gi`) output into functions of instructions with their source
//! lines.
//!
//! ```text
//! //--------------------- .text.loop_spill --------------------------
//!         .section        .text.loop_spill,"ax",@progbits
//!         .other          loop_spill,@"STO_CUDA_ENTRY STV_DEFAULT"
//! loop_spill:
//!         //## File "/src/kernels.cu", line 9
//!         /*0310*/              @!P0 BRA `(.L_x_8) ;
//! .L_x_10:
//!         /*0500*/                   LDL R13, [R21] ;
//!         .type           $loop_spill$__internal_slowpath,@function
//! $loop_spill$__internal_slowpath:
//! ```
//!
//! One `.text.NAME` section is one [`SassSection`]: the function `NAME` followed by the
//! subroutines ptxas placed in it (`$NAME$callee`, each a [`Subroutine`]). Every pass is one
//! linear walk over the text.

use std::collections::HashMap;
use std::sync::Arc;

use super::symbols::FunctionSymbols;
use super::SassError;

/// A `//## File "PATH", line N` position (the innermost one when `-gi` adds `inlined at`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[non_exhaustive]
pub struct SourceLine {
    /// The path as the line table records it (what nvcc was given, made absolute by nvcc).
    pub file: String,
    /// 1-based line.
    pub line: u32,
}

/// One SASS instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Instruction {
    /// Byte offset in the section (`/*0310*/`).
    pub offset: u64,
    /// `@P0`, `@!P0`, `@!UP1`; `None` when unpredicated (or `@PT`).
    pub predicate: Option<String>,
    /// The whole mnemonic with modifiers: `LDL.LU.64`, `CALL.REL.NOINC`.
    pub opcode: String,
    /// Everything after the mnemonic up to `;`.
    pub operands: String,
    /// Index into [`SassSection::lines`] of the source line in effect.
    pub source_line: Option<usize>,
    /// 1-based line of the disassembly it was read from.
    pub text_line: usize,
    /// The symbol whose address a relocation writes into the instruction's operand: ELF mode
    /// prints it (`MOV R2, 32@lo(fun@unified(f))`), raw mode has it from the cubin. Not for branch
    /// and call targets, which are labels.
    pub symbol: Option<String>,
    /// The scheduling control bits (`nvdisasm -hex` on sm_70 and later); `None` without them.
    pub control: Option<super::control::Control>,
}

impl Instruction {
    /// The mnemonic without modifiers: `LDL` for `LDL.LU.64`.
    pub fn base_opcode(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// The label a branch, call or `BSSY` names: `.L_x_8` for `` BRA `(.L_x_8) ``.
    pub fn label_operand(&self) -> Option<&str> {
        let start = self.operands.find("`(")? + 2;
        let end = start + self.operands[start..].find(')')?;
        Some(&self.operands[start..end])
    }
}

/// A subroutine ptxas placed after the function's own code in its section: a non-inlined callee.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Subroutine {
    /// The label: `$kernel$callee`.
    pub label: String,
    /// The callee's own name: `callee`.
    pub name: String,
    /// Index of its first instruction in [`SassSection::instructions`].
    pub first_instruction: usize,
}

/// One `.text.NAME` section of the disassembly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SassSection {
    /// The function's (mangled) name.
    pub name: String,
    /// `.target sm_90` of the disassembly, when printed.
    pub arch: Option<String>,
    /// Whether it is a kernel (`STO_CUDA_ENTRY`) rather than a device function.
    pub entry: bool,
    /// Every instruction, in address order.
    pub instructions: Vec<Instruction>,
    /// Label → index of the instruction it precedes (`instructions.len()` for a trailing one).
    pub labels: HashMap<String, usize>,
    /// The subroutines after the function's own code, in address order.
    pub subroutines: Vec<Subroutine>,
    /// The distinct source lines the instructions point at.
    pub lines: Vec<SourceLine>,
    /// What the cubin says about function symbols, which names the callee of a call through a
    /// register; `None` when the cubin was not read (such a call is then indirect).
    pub functions: Option<Arc<FunctionSymbols>>,
}

impl SassSection {
    /// The instruction range of the function body (`None`) or of one subroutine.
    pub fn range_of(&self, subroutine: Option<usize>) -> std::ops::Range<usize> {
        let end_of = |index: usize| {
            self.subroutines
                .get(index)
                .map_or(self.instructions.len(), |next| next.first_instruction)
        };
        match subroutine {
            None => 0..end_of(0),
            Some(index) => self.subroutines[index].first_instruction..end_of(index + 1),
        }
    }
}

/// Parses the disassembly of one cubin (`nvdisasm -c -g[i] FILE.cubin`).
pub fn parse_nvdisasm(text: &str) -> Result<Vec<SassSection>, SassError> {
    let mut state = ParseState::default();
    for (index, raw_line) in text.lines().enumerate() {
        state.line(raw_line, index + 1)?;
    }
    state.finish()
}

#[derive(Default)]
struct ParseState {
    arch: Option<String>,
    sections: Vec<SassSection>,
    line_index: HashMap<SourceLine, usize>,
    current_line: Option<usize>,
    pending_function_label: Option<String>,
    /// The last instruction line ended with its low encoding word (`-hex`) on an arch whose
    /// next line is the high word, with the control bits.
    high_word_next: bool,
}

impl ParseState {
    fn line(&mut self, raw_line: &str, text_line: usize) -> Result<(), SassError> {
        let line = raw_line.trim();
        if line.is_empty() {
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix(".target") {
            self.arch = rest.split_whitespace().next().map(str::to_owned);
        } else if let Some(rest) = line
            .strip_prefix(".section")
            .filter(|rest| rest.starts_with([' ', '\t']))
        {
            // `.section .text.k,...`, not `.sectioninfo @"SHI_REGISTERS=32"`.
            self.start_section(rest);
        } else if let Some(location) = line.strip_prefix("//##") {
            self.current_line = self.source_line(location);
        } else if let Some(word) = super::control::encoding_word(line) {
            self.encoding_word(word);
        } else if line.starts_with("/*") {
            self.instruction(line, text_line)?;
        } else if let Some(rest) = line.strip_prefix(".other") {
            if rest.contains("STO_CUDA_ENTRY") {
                if let Some(section) = self.sections.last_mut() {
                    section.entry = true;
                }
            }
        } else if let Some(rest) = line.strip_prefix(".type") {
            if rest.contains("@function") {
                self.pending_function_label =
                    rest.split(',').next().map(|name| name.trim().to_owned());
            }
        } else if let Some(label) = line.strip_suffix(':') {
            self.label(label);
        }
        Ok(())
    }

    fn start_section(&mut self, rest: &str) {
        self.current_line = None;
        self.line_index.clear();
        self.pending_function_label = None;
        let name = rest.trim().split(',').next().unwrap_or("");
        if let Some(function) = name.strip_prefix(".text.") {
            self.sections.push(SassSection {
                name: function.to_owned(),
                arch: self.arch.clone(),
                ..SassSection::default()
            });
        } else {
            // A data section (.nv.constant0, .debug_line): nothing in it is code.
            self.sections.push(SassSection::default());
        }
    }

    fn label(&mut self, label: &str) {
        let pending = self.pending_function_label.take();
        let Some(section) = self.sections.last_mut() else {
            return;
        };
        let at = section.instructions.len();
        section.labels.insert(label.to_owned(), at);
        let is_subroutine = pending.as_deref() == Some(label) && label != section.name;
        if is_subroutine && label.starts_with('$') {
            section.subroutines.push(Subroutine {
                label: label.to_owned(),
                name: subroutine_name(label).to_owned(),
                first_instruction: at,
            });
        }
    }

    fn source_line(&mut self, location: &str) -> Option<usize> {
        // ` File "/path/x.cu", line 37` or `... line 1 inlined at "/path/x.cu", line 8`.
        let after_file = location.trim().strip_prefix("File \"")?;
        let end = crate::ptxas::closing_quote(after_file)?;
        // Kept as printed, escapes and all (`\303`, `\"`): nvdisasm also reads the name's last
        // backslash as a directory separator, which only a look at the files can undo (the
        // build's `sass_stage::relative_facts`).
        let (file, rest) = (after_file[..end].to_owned(), &after_file[end + 1..]);
        let digits: String = rest
            .trim_start_matches([',', ' '])
            .strip_prefix("line")?
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let line = SourceLine {
            file,
            line: digits.parse().ok()?,
        };
        let section = self.sections.last_mut()?;
        let next = section.lines.len();
        let index = *self.line_index.entry(line.clone()).or_insert(next);
        if index == next {
            section.lines.push(line);
        }
        Some(index)
    }

    /// A bare `/* 0x... */` line: the high word of the instruction before it, when one is due.
    fn encoding_word(&mut self, word: u64) {
        if std::mem::take(&mut self.high_word_next) {
            if let Some(last) = self
                .sections
                .last_mut()
                .and_then(|section| section.instructions.last_mut())
            {
                last.control = Some(super::control::Control::from_high_word(word));
            }
        }
    }

    fn instruction(&mut self, line: &str, text_line: usize) -> Result<(), SassError> {
        self.high_word_next = false;
        let Some(mut instruction) = parse_instruction(line, text_line)? else {
            return Ok(());
        };
        self.high_word_next = line.trim_end().ends_with("*/")
            && line.matches("/*").count() == 2
            && (self.arch.as_deref()).is_some_and(super::control::has_control_words);
        instruction.source_line = self.current_line;
        let section = self
            .sections
            .last_mut()
            .filter(|section| !section.name.is_empty())
            .ok_or_else(|| SassError::Line {
                text_line,
                line: line.to_owned(),
                message: "an instruction outside any `.text.` section".to_owned(),
            })?;
        section.instructions.push(instruction);
        Ok(())
    }

    fn finish(self) -> Result<Vec<SassSection>, SassError> {
        let sections: Vec<SassSection> = self
            .sections
            .into_iter()
            .filter(|section| !section.name.is_empty())
            .collect();
        if sections.is_empty() {
            return Err(SassError::NoCode);
        }
        Ok(sections)
    }
}

/// One `/*0310*/ @!P0 BRA ... ;` line (trimmed) as an instruction without its source line;
/// `None` for `.byte` data or a bare encoding comment.
pub(crate) fn parse_instruction(
    line: &str,
    text_line: usize,
) -> Result<Option<Instruction>, SassError> {
    let malformed = |message: &str| SassError::Line {
        text_line,
        line: line.to_owned(),
        message: message.to_owned(),
    };
    let (offset_text, rest) = line[2..]
        .split_once("*/")
        .ok_or_else(|| malformed("an address comment `/*0000*/` without its `*/`"))?;
    let offset = u64::from_str_radix(offset_text.trim(), 16)
        .map_err(|_| malformed("the address is not hexadecimal"))?;
    let body = rest.split(';').next().unwrap_or("").trim();
    if body.is_empty() || body.starts_with('.') {
        return Ok(None);
    }
    let mut words = body.splitn(2, char::is_whitespace);
    let mut first = words.next().unwrap_or("");
    let mut remainder = words.next().unwrap_or("").trim_start();
    let mut predicate = None;
    if first.starts_with('@') {
        if first != "@PT" {
            predicate = Some(first.to_owned());
        }
        let mut split = remainder.splitn(2, char::is_whitespace);
        first = split.next().unwrap_or("");
        remainder = split.next().unwrap_or("").trim_start();
    }
    if first.is_empty() || !first.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(malformed("no mnemonic after the address"));
    }
    Ok(Some(Instruction {
        offset,
        predicate,
        opcode: first.to_owned(),
        operands: remainder.trim_end().to_owned(),
        source_line: None,
        text_line,
        symbol: relocated_symbol(remainder),
        control: None,
    }))
}

/// The symbol of `32@lo(NAME)`, `32@hi(fun@unified(NAME))` in ELF mode's operands; `None` for
/// an expression (`32@lo((k + .L_x_2@srel))`, a return address).
fn relocated_symbol(operands: &str) -> Option<String> {
    let at = operands.find("32@")?;
    let inner = operands[at + 3..]
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .strip_prefix('(')?;
    let inner = inner.strip_prefix("fun@unified(").unwrap_or(inner);
    let end = inner.find(')')?;
    let name = &inner[..end];
    let plain = !name.is_empty() && !name.contains(['(', ' ', '+']);
    plain.then(|| name.to_owned())
}

/// The callee's own name in a subroutine label: `callee` for `$kernel$callee`.
pub(crate) fn subroutine_name(label: &str) -> &str {
    label
        .trim_start_matches('$')
        .split_once('$')
        .map_or(label, |(_, callee)| callee)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"	.target	sm_90
//--------------------- .text.k --------------------------
	.section	.text.k,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=32"
        .other          k,@"STO_CUDA_ENTRY STV_DEFAULT"
k:
.text.k:
	//## File "/src/k.cu", line 7
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
	//## File "/src/k.cu", line 9 inlined at "/src/k.cu", line 20
        /*0010*/                   LDL.LU.64 R2, [R1+0x8] ;
        /*0020*/              @!P0 BRA `(.L_x_1) ;
        /*0030*/                   CALL.REL.NOINC `($k$callee) ;
        /*0040*/                   EXIT ;
        .type           $k$callee,@function
$k$callee:
        /*0050*/                   RET.REL.NODEC R20 `(k) ;
"#;

    #[test]
    fn reads_sections_labels_lines_and_subroutines() {
        let sections = parse_nvdisasm(SAMPLE).unwrap();
        assert_eq!(sections.len(), 1);
        let k = &sections[0];
        assert_eq!((k.name.as_str(), k.entry), ("k", true));
        assert_eq!(k.arch.as_deref(), Some("sm_90"));
        assert_eq!(k.instructions.len(), 6);
        assert_eq!(k.labels[".L_x_1"], 1);
        assert_eq!(k.subroutines.len(), 1);
        assert_eq!(k.subroutines[0].name, "callee");
        assert_eq!(k.range_of(None), 0..5);
        assert_eq!(k.range_of(Some(0)), 5..6);
        let load = &k.instructions[1];
        assert_eq!(
            (load.opcode.as_str(), load.base_opcode()),
            ("LDL.LU.64", "LDL")
        );
        assert_eq!(k.lines[load.source_line.unwrap()].line, 9);
        let branch = &k.instructions[2];
        assert_eq!(branch.predicate.as_deref(), Some("@!P0"));
        assert_eq!(branch.label_operand(), Some(".L_x_1"));
    }

    /// Issue #35, class 9: a file name nvdisasm printed with escapes (`\303`, an escaped quote)
    /// is kept whole, as printed, for the build to resolve; the quote does not end it.
    #[test]
    fn a_file_name_with_escapes_is_kept_as_printed() {
        let text = SAMPLE.replace(
            "\"/src/k.cu\", line 7",
            "\"/src/\\303/251\\\"q.cu\", line 7",
        );
        let sections = parse_nvdisasm(&text).unwrap();
        let first = &sections[0].lines[sections[0].instructions[0].source_line.unwrap()];
        assert_eq!(
            (first.file.as_str(), first.line),
            ("/src/\\303/251\\\"q.cu", 7)
        );
    }

    #[test]
    fn relocated_symbols_are_read_from_the_operands() {
        assert_eq!(
            relocated_symbol("R2, 32@lo(_Z5twicef)").as_deref(),
            Some("_Z5twicef")
        );
        assert_eq!(
            relocated_symbol("UR5, 32@hi(fun@unified(_Z15external_helperf))").as_deref(),
            Some("_Z15external_helperf")
        );
        assert_eq!(relocated_symbol("R20, 32@lo((k + .L_x_0@srel))"), None);
        assert_eq!(relocated_symbol("R2, 0x40"), None);
    }

    #[test]
    fn no_code_is_an_error() {
        assert!(matches!(
            parse_nvdisasm("\t.target sm_90\n"),
            Err(SassError::NoCode)
        ));
    }

    #[test]
    fn a_garbled_address_names_the_line() {
        let text = "\t.section\t.text.k,\"ax\"\n        /*00zz*/ NOP ;\n";
        let error = parse_nvdisasm(text).unwrap_err();
        assert!(error.to_string().contains("line 2"), "{error}");
    }
}
