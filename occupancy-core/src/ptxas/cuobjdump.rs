//! `cuobjdump --dump-resource-usage` of a cubin, fatbin or object file.
//!
//! ```text
//! Fatbin elf code:
//! ================
//! arch = sm_90
//! ...
//! Resource usage:
//!  Common:
//!   GLOBAL:400 CONSTANT[3]:1024
//!  Function smem:
//!   REG:40 STACK:128 SHARED:5120 LOCAL:0 CONSTANT[0]:536 TEXTURE:0 SURFACE:0 SAMPLER:0
//! ```
//!
//! cuobjdump does not say whether a function is an entry, prints no spill figures, and its
//! `STACK` is ptxas's cumulative stack size. Its `SHARED` on sm_90 and later includes the
//! 1 KiB the driver reserves per block ([`cuobjdump_reserved_shared_bytes`]).

use super::{demangle, ParseError, StackSize};
use crate::arch::Arch;
use serde::Serialize;

/// One `Function NAME:` entry of cuobjdump's resource usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct CuobjdumpFunction {
    /// Mangled name.
    pub name: String,
    /// Itanium-demangled name, when mangled.
    pub demangled: Option<String>,
    /// `arch = sm_90` of the ELF it is in; `None` for a bare cubin (cuobjdump prints no header).
    pub arch: Option<String>,
    /// `REG`.
    pub registers: u32,
    /// `STACK`: ptxas's cumulative stack size (0 in relocatable `-rdc` code, fixed at link time);
    /// `STACK:UNKNOWN` (recursion, an indirect call) is [`StackSize::Unknown`], never 0.
    pub stack: StackSize,
    /// `SHARED`: static shared memory, plus on sm_90+ the per-block reserve, see
    /// [`cuobjdump_reserved_shared_bytes`].
    pub shared_bytes: u64,
    /// `LOCAL`.
    pub local_bytes: u64,
    /// `CONSTANT[B]` as `(bank, bytes)`.
    pub cmem: Vec<(u32, u64)>,
    /// `TEXTURE`.
    pub textures: u32,
    /// `SURFACE`.
    pub surfaces: u32,
    /// `SAMPLER`.
    pub samplers: u32,
    /// `GLOBAL` of the module's `Common:` line, when printed.
    pub global_memory_bytes: Option<u64>,
    /// Module-wide `CONSTANT[B]` of the `Common:` line.
    pub module_cmem: Vec<(u32, u64)>,
    /// 1-based index of the ELF (`Resource usage:` block) in the dump.
    pub elf_index: usize,
    /// 1-based line of the `Function` header.
    pub line_number: usize,
}

/// How many bytes cuobjdump's `SHARED` adds to ptxas's static shared memory.
///
/// Measured with nvcc 13.0 + cuobjdump 13.2 (see docs/ptxas-formats.md): on sm_90 and later
/// (sm_90, sm_90a, sm_100, sm_103, sm_110, sm_120, sm_121) a linked (non-relocatable) cubin
/// records the driver's 1 KiB per-block reserve in a function's shared size whenever the
/// function uses shared memory: static shared memory above 0, or a module that declares
/// `extern __shared__` (dynamic) shared memory, which then counts for every function of the
/// module. sm_5x..sm_89 never add it; relocatable (`-rdc`) objects never add it.
pub fn cuobjdump_reserved_shared_bytes(
    arch: &str,
    static_smem_bytes: u64,
    module_declares_dynamic_smem: bool,
    relocatable: bool,
) -> u64 {
    let major = arch_major(arch);
    let uses_shared = static_smem_bytes > 0 || module_declares_dynamic_smem;
    if major.is_some_and(|major| major >= 9) && uses_shared && !relocatable {
        1024
    } else {
        0
    }
}

/// `sm_90a` → 9, `sm_120` → 12, read by the one architecture grammar ([`Arch::parse`]); a
/// well-formed name newer than the table (`sm_130`) still has its major.
fn arch_major(arch: &str) -> Option<u32> {
    match Arch::parse(arch) {
        Ok(arch) => Some(arch.facts().major),
        Err(unknown) => unknown.newer_than_table.map(|number| number / 10),
    }
}

/// Parses `cuobjdump --dump-resource-usage` output.
pub fn parse_cuobjdump_resource_usage(text: &str) -> Result<Vec<CuobjdumpFunction>, ParseError> {
    let mut reader = ResourceUsageReader::default();
    let mut lines = 0;
    for (index, raw_line) in text.lines().enumerate() {
        lines = index + 1;
        reader.read_line(raw_line, index + 1)?;
    }
    reader.finish(lines)
}

/// The state of one pass over the dump: the current ELF's arch and module-wide resources, and
/// a `Function NAME:` header waiting for its resource line.
#[derive(Default)]
struct ResourceUsageReader {
    functions: Vec<CuobjdumpFunction>,
    arch: Option<String>,
    elf_index: usize,
    global_memory_bytes: Option<u64>,
    module_cmem: Vec<(u32, u64)>,
    /// The header's name and line.
    pending_function: Option<(String, usize)>,
    expect_common_values: bool,
    /// A function appears once per ELF (arch); each name is demangled once.
    demangled_names: std::collections::HashMap<String, Option<String>>,
}

/// An error about `raw_line`, line `line_number` of the dump.
type LineError<'a> = &'a dyn Fn(&str) -> ParseError;

impl ResourceUsageReader {
    fn read_line(&mut self, raw_line: &str, line_number: usize) -> Result<(), ParseError> {
        let line = raw_line.trim();
        let error = |message: &str| ParseError::CuobjdumpLine {
            line_number,
            line: raw_line.to_string(),
            message: message.to_string(),
        };
        if let Some((name, start)) = self.pending_function.take() {
            let function = self.function(name, start, line, &error)?;
            self.functions.push(function);
            return Ok(());
        }
        if self.expect_common_values {
            self.expect_common_values = false;
            if !line.starts_with("Function ") {
                return self.common_values(line, &error);
            }
        }
        self.header(line, line_number, &error)
    }

    /// `arch = `, `Resource usage:`, `Common:`, `Function NAME:` and `Fatbin ` lines.
    fn header(
        &mut self,
        line: &str,
        line_number: usize,
        error: LineError<'_>,
    ) -> Result<(), ParseError> {
        if let Some(rest) = line.strip_prefix("arch = ") {
            self.arch = Some(rest.trim().to_string());
        } else if line == "Resource usage:" {
            self.elf_index += 1;
            self.global_memory_bytes = None;
            self.module_cmem.clear();
        } else if line == "Common:" {
            self.expect_common_values = true;
        } else if let Some(rest) = line.strip_prefix("Function ") {
            let name = rest
                .strip_suffix(':')
                .ok_or_else(|| error("expected `Function NAME:`"))?;
            self.pending_function = Some((name.to_string(), line_number));
        } else if line.starts_with("Fatbin ") {
            self.arch = None;
        }
        Ok(())
    }

    /// The values under `Common:`: `GLOBAL:400 CONSTANT[3]:1024`.
    fn common_values(&mut self, line: &str, error: LineError<'_>) -> Result<(), ParseError> {
        for field in line.split_whitespace() {
            let (key, value) = key_value(field, error)?;
            match key {
                "GLOBAL" => self.global_memory_bytes = Some(value),
                _ => match parse_constant_key(key) {
                    Some(bank) => self.module_cmem.push((bank, value)),
                    None => return Err(error("unknown Common field")),
                },
            }
        }
        Ok(())
    }

    /// The resource line of function `name` (header at line `start`).
    fn function(
        &mut self,
        name: String,
        start: usize,
        line: &str,
        error: LineError<'_>,
    ) -> Result<CuobjdumpFunction, ParseError> {
        let demangled = match self.demangled_names.get(&name) {
            Some(demangled) => demangled.clone(),
            None => {
                let demangled = demangle(&name);
                self.demangled_names.insert(name.clone(), demangled.clone());
                demangled
            }
        };
        let mut function = CuobjdumpFunction {
            demangled,
            name,
            arch: self.arch.clone(),
            registers: 0,
            stack: StackSize::Bytes(0),
            shared_bytes: 0,
            local_bytes: 0,
            cmem: Vec::new(),
            textures: 0,
            surfaces: 0,
            samplers: 0,
            global_memory_bytes: self.global_memory_bytes,
            module_cmem: self.module_cmem.clone(),
            elf_index: self.elf_index,
            line_number: start,
        };
        let mut seen_registers = false;
        for field in line.split_whitespace() {
            if field == "STACK:UNKNOWN" {
                function.stack = StackSize::Unknown;
                continue;
            }
            let (key, value) = key_value(field, error)?;
            let small = || u32::try_from(value).map_err(|_| error("count out of range"));
            match key {
                "REG" => {
                    function.registers = small()?;
                    seen_registers = true;
                }
                "STACK" => function.stack = StackSize::Bytes(value),
                "SHARED" => function.shared_bytes = value,
                "LOCAL" => function.local_bytes = value,
                "TEXTURE" => function.textures = small()?,
                "SURFACE" => function.surfaces = small()?,
                "SAMPLER" => function.samplers = small()?,
                _ => match parse_constant_key(key) {
                    Some(bank) => function.cmem.push((bank, value)),
                    None => return Err(error("unknown resource field")),
                },
            }
        }
        if !seen_registers {
            return Err(error("function resource line without REG"));
        }
        Ok(function)
    }

    /// The functions read, or why the dump was cut off or empty.
    fn finish(self, lines: usize) -> Result<Vec<CuobjdumpFunction>, ParseError> {
        if let Some((name, start)) = self.pending_function {
            return Err(ParseError::CuobjdumpLine {
                line_number: start,
                line: format!(" Function {name}:"),
                message: "function header without its resource line (output cut off)".to_string(),
            });
        }
        if self.functions.is_empty() {
            return Err(ParseError::NoCuobjdumpFunctions { lines });
        }
        Ok(self.functions)
    }
}

/// `KEY:VALUE` with a number for a value.
fn key_value<'a>(field: &'a str, error: LineError<'_>) -> Result<(&'a str, u64), ParseError> {
    let (key, value) = field
        .split_once(':')
        .ok_or_else(|| error("expected KEY:VALUE fields"))?;
    let value = value
        .parse()
        .map_err(|_| error("field value is not a number"))?;
    Ok((key, value))
}

fn parse_constant_key(key: &str) -> Option<u32> {
    key.strip_prefix("CONSTANT[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "\nFatbin elf code:\n================\narch = sm_90\ncode version = [1,8]\nhost = linux\ncompile_size = 64bit\n\nResource usage:\n Common:\n  GLOBAL:400 CONSTANT[3]:1024 CONSTANT[4]:8\n Function _ZN2ns5spillILi3EEEvPfPKf:\n  REG:64 STACK:1480 SHARED:0 LOCAL:0 CONSTANT[0]:544 TEXTURE:0 SURFACE:0 SAMPLER:0\n Function smem:\n  REG:40 STACK:128 SHARED:5120 LOCAL:0 CONSTANT[0]:536 TEXTURE:0 SURFACE:0 SAMPLER:0\n\nFatbin ptx code:\n================\narch = sm_90\n";

    /// Issue #42, class 9: cuobjdump 13.0's `-res-usage` of a recursive kernel compiled with
    /// `-G` (sm_90): `STACK:UNKNOWN` was "field value is not a number".
    #[test]
    fn an_unknown_stack_is_read_as_unknown() {
        let dump = "\nResource usage:\n Common:\n  GLOBAL:0\n Function _Z3recfi:\n  REG:0 STACK:0 SHARED:0 LOCAL:0 TEXTURE:0 SURFACE:0 SAMPLER:0\n Function recursive_rec:\n  REG:24 STACK:UNKNOWN SHARED:0 LOCAL:0 CONSTANT[0]:540 TEXTURE:0 SURFACE:0 SAMPLER:0\n";
        let functions = parse_cuobjdump_resource_usage(dump).unwrap();
        assert_eq!(functions[1].name, "recursive_rec");
        assert_eq!(functions[1].stack, StackSize::Unknown);
        assert_eq!(functions[0].stack, StackSize::Bytes(0));
    }

    #[test]
    fn reads_functions_with_their_module() {
        let functions = parse_cuobjdump_resource_usage(DUMP).unwrap();
        assert_eq!(functions.len(), 2);
        assert_eq!(functions[1].name, "smem");
        assert_eq!(
            (
                functions[1].registers,
                functions[1].stack,
                functions[1].shared_bytes
            ),
            (40, StackSize::Bytes(128), 5120)
        );
        assert_eq!(functions[1].arch.as_deref(), Some("sm_90"));
        assert_eq!(functions[0].global_memory_bytes, Some(400));
        assert_eq!(functions[0].module_cmem, vec![(3, 1024), (4, 8)]);
        assert_eq!(functions[0].cmem, vec![(0, 544)]);
    }

    #[test]
    fn cut_off_and_empty_dumps_are_errors() {
        let cut = DUMP.split("  REG:40").next().unwrap();
        assert!(parse_cuobjdump_resource_usage(cut)
            .unwrap_err()
            .to_string()
            .contains("cut off"));
        assert!(matches!(
            parse_cuobjdump_resource_usage("nothing"),
            Err(ParseError::NoCuobjdumpFunctions { .. })
        ));
        let bad = DUMP.replace("REG:40", "REG:forty");
        assert!(parse_cuobjdump_resource_usage(&bad).is_err());
    }

    #[test]
    fn reserve_is_added_from_sm_90_on() {
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_90", 4096, false, false),
            1024
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_120", 0, true, false),
            1024
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_120", 0, false, false),
            0
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_89", 4096, true, false),
            0
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_90a", 4096, false, true),
            0
        );
        // The table's grammar: an alias is its row, a newer name keeps its major.
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_101a", 4096, false, false),
            1024
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("sm_130", 4096, false, false),
            1024
        );
        assert_eq!(
            cuobjdump_reserved_shared_bytes("bogus", 4096, false, false),
            0
        );
    }
}
