//! What ptxas decided for each kernel of a cubin, read from the cubin itself: the record a
//! `ptxas -v` log would have given, for binaries whose compile printed no report (a compiler
//! cache's hit, a prebuilt library, a wheel).
//!
//! * registers: `EIATTR_REGCOUNT` (CUDA 13 on sm_90+), else the code section's `sh_info >> 24`;
//! * barriers: `EIATTR_NUM_BARRIERS` (CUDA 13), else the code section's `sh_flags >> 20`;
//! * stack frame and cumulative stack: `EIATTR_FRAME_SIZE`, `EIATTR_MIN_STACK_SIZE`;
//! * static shared memory: the size of `.nv.shared.<kernel>`, less the 1 KiB a linked sm_90+
//!   cubin adds for the driver's per-block reserve;
//! * constant banks: `.nv.constant<N>.<kernel>` (the kernel's) and `.nv.constant<N>` (module);
//! * the registers ptxas spilled to shared memory (`enable_smem_spilling`):
//!   `EIATTR_SHARED_SCRATCH`'s size, a part of the static shared memory;
//! * launch bounds: `EIATTR_MAX_THREADS`, `EIATTR_REQNTID`, `EIATTR_CTA_PER_CLUSTER`,
//!   `EIATTR_MAX_CLUSTER_RANK`; the register cap ptxas compiled under, `EIATTR_MAXREG_COUNT`;
//! * spills: the bytes of the `STL`/`LDL` instructions ptxas marked `SpillRefill` in
//!   `EIATTR_ANNOTATIONS` (ptxas 12.x and 13.x, sm_75 and later), which equal its `N bytes
//!   spill stores, M bytes spill loads`. A cubin with a stack frame and no marks (older
//!   compilers) cannot tell a spill from a local array: every local store and load is counted
//!   and the record says so ([`SpillEvidence::Unmarked`]).

use occupancy_core::ptxas::{demangle, KernelRecord, PtxEntry, RecordSource, SmemSpilling};

use super::marks::{CallingSections, CodeMarks};
use super::nv_info::{self, attribute, Value, ANNOTATION_SPILL_REFILL};
use super::{Cubin, Section, Symbol, STO_CUDA_ENTRY, STT_FUNC};

/// `EM_CUDA`.
const MACHINE_CUDA: u16 = 190;
/// `ET_REL`: a relocatable (`-rdc`) cubin.
const RELOCATABLE: u16 = 1;
/// `EI_OSABI` of CUDA 13's ELF ABI 8, whose `e_flags` hold the SM in bits 8..16.
const OS_ABI_CUDA_13: u8 = 0x41;
/// What a linked sm_90+ cubin adds to a kernel's shared size (see
/// `occupancy_core::ptxas::cuobjdump_reserved_shared_bytes`).
const RESERVED_SHARED_BYTES: u64 = 1024;
/// The first release whose ptxas marks every spill and refill instruction
/// (`EIATTR_ANNOTATIONS`; 12.5 does not, measured on sm_75/80/90 with each release's ptxas):
/// in its cubins, a kernel with a stack frame and no marks has no spills. A cubin names its
/// compiler's release only since 13.0 (`.note.nv.tkinfo`), so 12.6-12.9 cubins and older ones
/// are read as [`SpillEvidence::Unmarked`] unless their kernels carry marks.
const FIRST_MARKING_RELEASE: (u32, u32) = (12, 6);
/// The opcode bits (the low 12) of `STL` and `LDL` in sm_70+ code.
const OPCODE_STL: u64 = 0x387;
const OPCODE_LDL: u64 = 0x983;

/// One kernel of a cubin: the record ptxas's report would have held, its launch directives, and
/// how its spill figures were read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CubinKernel {
    pub record: KernelRecord,
    /// The directives the binary keeps (`maxntid`, `reqntid`, cluster shape); a cubin keeps no
    /// `minnctapersm` (ptxas turns it into [`CubinKernel::register_cap`]).
    pub launch: PtxEntry,
    /// `EIATTR_MAXREG_COUNT` below 255: the register cap ptxas compiled under, from
    /// `__maxnreg__`, `-maxrregcount` or a minimum of blocks per SM.
    pub register_cap: Option<u32>,
    pub spills: SpillEvidence,
    /// What its code may hold that a SASS lint reports ([`CodeMarks`]).
    pub marks: CodeMarks,
}

/// How the spill figures of a [`CubinKernel`] were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpillEvidence {
    /// ptxas's own spill marks, or no stack frame at all: the figures are ptxas's.
    Exact,
    /// A stack frame and no spill marks: every local store and load was counted, a local
    /// array's included (an upper bound).
    Unmarked,
}

/// Why a cubin's kernels could not be read.
pub type ResourceError = String;

impl Cubin<'_> {
    /// The architecture the code is for (`sm_90`, `sm_90a`), from `e_flags` and `.nv.compat`;
    /// `None` when this is not a CUDA ELF.
    pub fn arch(&self) -> Option<String> {
        if self.header.machine != MACHINE_CUDA {
            return None;
        }
        let sm = if self.header.os_abi == OS_ABI_CUDA_13 {
            (self.header.flags >> 8) & 0xff
        } else {
            self.header.flags & 0xff
        };
        let accelerator = self
            .section_named(".nv.compat")
            .and_then(|section| nv_info::records(self.contents(section)?))
            .is_some_and(|records| {
                records.iter().any(|(key, value)| {
                    *key == attribute::COMPAT_ACCELERATOR_TARGET && value.number() == Some(1)
                })
            });
        Some(format!("sm_{sm}{}", if accelerator { "a" } else { "" }))
    }

    /// Every kernel (`STO_CUDA_ENTRY` function) with its resources, in symbol order.
    pub fn kernels(&self) -> Result<Vec<CubinKernel>, ResourceError> {
        let arch = self
            .arch()
            .ok_or("not a CUDA ELF (e_machine is not EM_CUDA)")?;
        if self.sections.is_empty() {
            return Err("the cubin has no section headers (cut off, or not a cubin)".into());
        }
        let module = ModuleInfo::read(self)?;
        let calling = CallingSections::of(self);
        let kernels =
            self.symbols.iter().enumerate().filter(|(_, symbol)| {
                symbol.kind == STT_FUNC && symbol.other & STO_CUDA_ENTRY != 0
            });
        kernels
            .map(|(index, symbol)| {
                let mut kernel = self.kernel(index, symbol, &arch, &module)?;
                kernel.marks.calls = calling.contains(symbol.section);
                Ok(kernel)
            })
            .collect()
    }

    /// Whether the cubin was compiled for debugging (`nvcc -G`): it holds DWARF `.debug_info`,
    /// which `-lineinfo` alone does not write (measured with nvcc 13.0 on sm_80).
    pub fn has_debug_info(&self) -> bool {
        self.section_named(".debug_info").is_some()
    }

    fn section_named(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|section| section.name == name)
    }

    fn kernel(
        &self,
        index: usize,
        symbol: &Symbol,
        arch: &str,
        module: &ModuleInfo,
    ) -> Result<CubinKernel, ResourceError> {
        let name = &symbol.name;
        let cannot = |what: &str| format!("kernel `{name}`: {what}");
        let text = self
            .sections
            .get(symbol.section)
            .ok_or_else(|| cannot("its code section is missing"))?;
        let own = match self.section_named(&format!(".nv.info.{name}")) {
            Some(section) => self
                .contents(section)
                .and_then(nv_info::records)
                .ok_or_else(|| cannot("its .nv.info section cannot be read"))?,
            None => Vec::new(),
        };
        let find = |key: u8| own.iter().find(|(found, _)| *found == key).map(|(_, v)| *v);
        let registers = module
            .per_function(attribute::REGISTER_COUNT, index)
            .unwrap_or((text.info >> 24) as u32);
        let barriers = match find(attribute::BARRIER_COUNT) {
            Some(value) => u32::from(value.number().unwrap_or(0)),
            None if self.header.os_abi == OS_ABI_CUDA_13 => 0,
            None => ((text.flags >> 20) & 0x7f) as u32,
        };
        let frame = u64::from(
            module
                .per_function(attribute::FRAME_SIZE, index)
                .unwrap_or(0),
        );
        // 0xffffffff is a stack the linker could not size (recursion): unknown, not 4 GiB.
        let stack = module
            .per_function(attribute::MIN_STACK_SIZE, index)
            .and_then(occupancy_core::ptxas::StackSize::from_attribute);
        let code = self.contents(text).unwrap_or_default();
        let marks: Vec<u32> = find(attribute::ANNOTATIONS)
            .map(|value| spill_marks(value))
            .unwrap_or_default();
        let marking = self.compiler_marks_spills();
        let (spills, evidence) =
            spill_bytes(code, &marks, marking, frame, arch).map_err(|e| cannot(&e))?;
        let cap = find(attribute::MAX_REGISTER_COUNT).and_then(Value::number);
        let mut record = self.record(name, arch, registers, barriers);
        record.stack_frame_bytes = Some(frame);
        record.cumulative_stack = stack;
        (record.spill_store_bytes, record.spill_load_bytes) = (Some(spills.0), Some(spills.1));
        record.cmem = self.constant_banks(Some(name));
        record.module_cmem = module.constant_banks.clone();
        record.static_smem_bytes = self.static_shared_bytes(name, arch);
        if evidence == SpillEvidence::Unmarked {
            record.warnings.push(format!(
                "{frame} bytes stack frame, and this cubin's compiler is not one known to mark spill instructions (ptxas {}.{} and later; a cubin names its compiler's release in .note.nv.tkinfo since CUDA 13.0): every local store and load was counted as a spill, a local array's included (an upper bound)",
                FIRST_MARKING_RELEASE.0, FIRST_MARKING_RELEASE.1
            ));
        }
        let mut launch = launch_directives(name, &own);
        launch.smem_spilling = shared_scratch(&own, record.static_smem_bytes);
        Ok(CubinKernel {
            record,
            launch,
            register_cap: cap.filter(|&cap| cap < 255).map(u32::from),
            spills: evidence,
            marks: CodeMarks {
                setmaxnreg: find(attribute::REGISTER_RECONFIGURATION).is_some(),
                ..CodeMarks::default()
            },
        })
    }

    fn record(&self, name: &str, arch: &str, registers: u32, barriers: u32) -> KernelRecord {
        KernelRecord {
            registers: Some(registers),
            barriers: Some(barriers),
            ..KernelRecord::new(
                name,
                demangle(name),
                arch.to_owned(),
                true,
                RecordSource::Cubin,
            )
        }
    }

    /// Whether the ptxas that made this cubin marks every spill (its `.note.nv.tkinfo` names a
    /// release from [`FIRST_MARKING_RELEASE`] on).
    fn compiler_marks_spills(&self) -> bool {
        self.compiler_release()
            .is_some_and(|release| release >= FIRST_MARKING_RELEASE)
    }

    /// The text of `.note.nv.tkinfo` (`ptxas ... Cuda compilation tools, release 13.0,
    /// V13.0.88 ...`), which cubins have since CUDA 13.0.
    fn toolkit_note(&self) -> Option<String> {
        let note = self.contents(self.section_named(".note.nv.tkinfo")?)?;
        Some(String::from_utf8_lossy(note).into_owned())
    }

    /// The release of the ptxas that made this cubin (`(13, 0)`), when it names it.
    fn compiler_release(&self) -> Option<(u32, u32)> {
        let text = self.toolkit_note()?;
        let release = text.split("release ").nth(1)?;
        let mut numbers = release
            .split(|c: char| !c.is_ascii_digit())
            .map(|part| part.parse::<u32>().ok());
        Some((numbers.next().flatten()?, numbers.next().flatten()?))
    }

    /// The version of the ptxas that made this cubin (`13.0.88` from `V13.0.88`), when it names
    /// it (CUDA 13.0 and later).
    pub fn compiler_version(&self) -> Option<String> {
        let text = self.toolkit_note()?;
        let version = text.split(", V").nth(1)?;
        let version: String = version
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!version.is_empty()).then_some(version)
    }

    /// Whether ptxas could spill this cubin's registers to shared memory, as a build with its
    /// toolkit and kind of compile could (`crate::sass_stage::smem_spilling_available`): a
    /// release from 13.0 on, whole-program (not an `-rdc` cubin, which ptxas refuses it in).
    pub fn smem_spilling_available(&self) -> bool {
        self.header.kind != RELOCATABLE
            && self
                .compiler_release()
                .is_some_and(|(major, _)| major >= 13)
    }

    /// `.nv.shared.<kernel>`'s size, less the driver's reserve a linked sm_90+ cubin counts in.
    fn static_shared_bytes(&self, kernel: &str, arch: &str) -> u64 {
        let Some(section) = self.section_named(&format!(".nv.shared.{kernel}")) else {
            return 0;
        };
        let size = section.size as u64;
        let reserve = occupancy_core::ptxas::cuobjdump_reserved_shared_bytes(
            arch,
            size,
            false,
            self.header.kind == RELOCATABLE,
        );
        size.saturating_sub(reserve.min(RESERVED_SHARED_BYTES))
    }

    /// `(bank, bytes)` of `.nv.constant<N>.<kernel>` (`Some(kernel)`) or the module's
    /// `.nv.constant<N>` (`None`), by bank.
    fn constant_banks(&self, kernel: Option<&str>) -> Vec<(u32, u64)> {
        let mut banks: Vec<(u32, u64)> = self
            .sections
            .iter()
            .filter_map(|section| {
                let rest = section.name.strip_prefix(".nv.constant")?;
                let (digits, owner) = match rest.split_once('.') {
                    Some((digits, owner)) => (digits, Some(owner)),
                    None => (rest, None),
                };
                (owner == kernel).then_some(())?;
                Some((digits.parse().ok()?, section.size as u64))
            })
            .collect();
        banks.sort_unstable();
        banks
    }
}

/// The module-wide `.nv.info`: per-function attributes, and the module's constant banks.
struct ModuleInfo {
    /// `(attribute, symbol index, value)`.
    per_function: Vec<(u8, u32, u32)>,
    constant_banks: Vec<(u32, u64)>,
}

impl ModuleInfo {
    fn read(cubin: &Cubin<'_>) -> Result<ModuleInfo, ResourceError> {
        let records = match cubin.section_named(".nv.info") {
            Some(section) => cubin
                .contents(section)
                .and_then(nv_info::records)
                .ok_or("its .nv.info section cannot be read")?,
            None => Vec::new(),
        };
        let per_function = records
            .into_iter()
            .filter_map(|(key, value)| {
                let mut words = value.words();
                Some((key, words.next()?, words.next()?))
            })
            .collect();
        Ok(ModuleInfo {
            per_function,
            constant_banks: cubin.constant_banks(None),
        })
    }

    fn per_function(&self, key: u8, symbol: usize) -> Option<u32> {
        self.per_function
            .iter()
            .find(|(found, function, _)| *found == key && *function as usize == symbol)
            .map(|(_, _, value)| *value)
    }
}

/// The offsets of the instructions ptxas marked as spills and refills.
fn spill_marks(value: Value<'_>) -> Vec<u32> {
    let words: Vec<u32> = value.words().collect();
    words
        .chunks_exact(2)
        .filter(|pair| pair[0] == ANNOTATION_SPILL_REFILL)
        .map(|pair| pair[1])
        .collect()
}

/// `((store bytes, load bytes), evidence)` of a kernel's code with spill `marks`, made by a
/// compiler that marks every spill (`compiler_marks`) or not.
fn spill_bytes(
    code: &[u8],
    marks: &[u32],
    compiler_marks: bool,
    frame_bytes: u64,
    arch: &str,
) -> Result<((u64, u64), SpillEvidence), String> {
    if marks.is_empty() && (frame_bytes == 0 || compiler_marks) {
        return Ok(((0, 0), SpillEvidence::Exact));
    }
    let major = occupancy_core::arch::lookup(arch).map(|facts| facts.major);
    if !major.is_ok_and(|major| major >= 7) {
        return Err(format!(
            "{frame_bytes} bytes stack frame, and the spills of {arch} code cannot be read from the binary (only sm_70 and later code is decoded); check the ptxas -v log of its compile instead"
        ));
    }
    if marks.is_empty() {
        let every = (0..code.len() / 16).map(|index| index * 16);
        return Ok((local_bytes(code, every)?, SpillEvidence::Unmarked));
    }
    let marked = marks.iter().map(|&offset| offset as usize);
    Ok((local_bytes(code, marked)?, SpillEvidence::Exact))
}

/// The bytes the `STL`s and `LDL`s at `offsets` store and load. A marked offset outside the code
/// is an error; a marked instruction of another kind is not counted.
fn local_bytes(code: &[u8], offsets: impl Iterator<Item = usize>) -> Result<(u64, u64), String> {
    let (mut stores, mut loads) = (0u64, 0u64);
    for offset in offsets {
        let bytes = offset
            .checked_add(16)
            .and_then(|end| code.get(offset..end))
            .ok_or_else(|| format!("a spill mark at 0x{offset:x} is outside its code"))?;
        let low = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        let high = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes"));
        let width = access_bytes(high);
        match low & 0xfff {
            OPCODE_STL => stores += width,
            OPCODE_LDL => loads += width,
            _ => {}
        }
    }
    Ok((stores, loads))
}

/// The access width of an sm_70+ `LDL`/`STL` from its size field (bits 73..76): `.U8`, `.S8`,
/// `.U16`, `.S16`, 32-bit, `.64`, `.128`, `.U.128`.
fn access_bytes(high_word: u64) -> u64 {
    [1, 1, 2, 2, 4, 8, 16, 16][((high_word >> 9) & 7) as usize]
}

/// The spill area ptxas put in shared memory (`EIATTR_SHARED_SCRATCH`, `enable_smem_spilling`) as
/// the PTX reader tells it: the kernel's own shared memory is its `static_smem_bytes` less the
/// area. `None` without one.
fn shared_scratch(own: &[(u8, Value<'_>)], static_smem_bytes: u64) -> Option<SmemSpilling> {
    let (_, value) = own
        .iter()
        .find(|(found, _)| *found == attribute::SHARED_SCRATCH)?;
    let bytes = u64::from(value.words().nth(1).filter(|&bytes| bytes > 0)?);
    Some(SmemSpilling::declaring(Some(
        static_smem_bytes.saturating_sub(bytes),
    )))
}

/// The launch directives a kernel's `.nv.info.<kernel>` keeps.
fn launch_directives(name: &str, own: &[(u8, Value<'_>)]) -> PtxEntry {
    let dims = |key: u8| {
        own.iter()
            .find(|(found, _)| *found == key)
            .map(|(_, value)| value.words().collect::<Vec<u32>>())
    };
    let mut entry = PtxEntry::default();
    entry.name = name.to_owned();
    entry.demangled = demangle(name);
    entry.maxntid = dims(attribute::MAX_THREADS);
    entry.reqntid = dims(attribute::REQUIRED_THREADS);
    entry.reqnctapercluster = dims(attribute::BLOCKS_PER_CLUSTER);
    entry.maxclusterrank = own
        .iter()
        .find(|(found, _)| *found == attribute::MAX_CLUSTER_RANK)
        .and_then(|(_, value)| match value {
            Value::Number(rank) => Some(u32::from(*rank)),
            _ => value.words().next(),
        });
    entry
}
