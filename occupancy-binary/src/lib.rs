//! The binary front end: kernel records read from compiled CUDA code, for code whose compile
//! printed no ptxas report (a compiler cache's hit, a prebuilt `.a`/`.so`, a Python wheel, any
//! compiler's cubins). It yields the same [`KernelRecord`]s as the log and compile front ends.
//!
//! * a cubin (an ELF for `EM_CUDA`) is read as it is (`occupancy-build`'s `cubin` resource reader, the one its SASS stage reads);
//! * a fatbin, a host object, a static or shared library or an executable: `cuobjdump -xelf
//!   all` takes its cubins out (it reads archives, compressed fatbins and `.nv_fatbin`
//!   sections), and `cuobjdump -xptx all` its embedded PTX;
//! * a wheel (a zip): its members that may hold device code are written out and read as above.
//!
//! Embedded PTX is assembled, as the driver would JIT it, for each asked architecture that a
//! kernel has no cubin for, by `ptxas -v` (its report parsed like any log). Every file is
//! read from a private scratch directory that is removed afterwards. Memory holds one cubin at
//! a time, and grows with the distinct kernels, not with the binary: each kernel is handed to
//! the caller as it is read ([`Found`]), and cuobjdump reads one fatbin at a time (an archive
//! member by member, a host ELF's `.nv_fatbin` fatbin by fatbin: `fatbin.rs`, `archive.rs`).

mod archive;
mod entries;
mod extract;
pub use archive::for_each_member;
pub use extract::{can_jit, jit_target, ptx_target, PtxTarget};
mod fatbin;
mod found;
#[cfg(test)]
mod fuzz;
mod machine_code;
pub(crate) mod wheel;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use occupancy_core::ptxas::{KernelRecord, PtxEntry};
use occupancy_core::sass::SassFacts;

use found::Found;
use machine_code::MachineCode;
pub use occupancy_build::cli::MachineCodeLints;
pub use occupancy_build::cli::SpillEvidence;
use occupancy_build::cli::ToolTimeouts;
use occupancy_build::Error;

/// The tools the binary front end runs, resolved once by the caller.
#[derive(Debug, Clone, Default)]
pub struct BinaryTools {
    /// Takes cubins and PTX out of containers; not needed for bare cubins.
    pub cuobjdump: Option<PathBuf>,
    /// Assembles embedded PTX for an asked arch no cubin covers.
    pub ptxas: Option<PathBuf>,
    /// Disassembles the kernels a machine-code lint reads.
    pub nvdisasm: Option<PathBuf>,
    pub timeouts: ToolTimeouts,
}

impl BinaryTools {
    /// `OCCUPANCY_CUOBJDUMP` and `OCCUPANCY_NVDISASM`, else each where the SASS stage looks for
    /// it (beside nvcc, the toolkit's `bin/`, `PATH`); ptxas beside nvcc. A tool not found stays
    /// `None`: only a binary that needs it fails, naming it (nvdisasm: a note says the
    /// machine-code lints were not checked).
    pub fn resolve(env: &occupancy_build::TrackedEnv, timeouts: &ToolTimeouts) -> BinaryTools {
        let toolchain = occupancy_build::cli::Toolchain::find(env, false, timeouts).ok();
        let near_nvcc = |name: &str| {
            toolchain
                .as_ref()
                .and_then(|toolchain| toolchain.locate_tool(name))
        };
        let named = |variable: &str, tool: &str| {
            env.get(variable)
                .map(PathBuf::from)
                .or_else(|| near_nvcc(tool))
        };
        BinaryTools {
            cuobjdump: named("OCCUPANCY_CUOBJDUMP", "cuobjdump"),
            ptxas: near_nvcc("ptxas"),
            nvdisasm: named("OCCUPANCY_NVDISASM", "nvdisasm"),
            timeouts: *timeouts,
        }
    }
}

/// One kernel on one architecture, read from a binary.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BinaryKernel {
    pub record: KernelRecord,
    /// The launch directives the binary keeps (from the cubin), or the PTX's when assembled.
    pub launch: PtxEntry,
    /// The register cap ptxas compiled under (`EIATTR_MAXREG_COUNT` below 255).
    pub register_cap: Option<u32>,
    pub spills: SpillEvidence,
    /// Where in the binary: `libk.a(k.o) sm_90 cubin`, `k.fatbin PTX compute_80 for sm_86`.
    pub origin: String,
    /// The module it came from, without the arch: `libk.a(k.o)`, `k.fatbin`.
    pub module: String,
    /// Its machine code read by the SASS stage, when a machine-code lint reads it
    /// (`MachineCodeLints::read_binary_kernel`); source paths as the line table has them, and
    /// no line where the cubin has no line table.
    pub sass: Option<SassFacts>,
    /// Whether ptxas could spill its registers to shared memory, as a compile with its toolkit
    /// could (`spill_in_loop` may then suggest `enable_smem_spilling`).
    pub smem_spilling: bool,
    /// The version of the ptxas that compiled it (`13.0.88`), when its cubin names it (CUDA
    /// 13.0 and later), or of the one that assembled its embedded PTX here.
    pub compiler: Option<String>,
    /// Compiled for debugging (`nvcc -G`, which `cc` adds in a debug profile): the cubin holds
    /// DWARF `.debug_info` (`-lineinfo` alone writes only a line table), or the PTX it was
    /// assembled from says `.target sm_XX, debug`. Its numbers are not a release build's.
    pub debug_code: bool,
}

impl BinaryKernel {
    /// The launch directives the lints read, as a source's PTX entry gives them: the cubin's,
    /// with the register cap ptxas compiled under standing for the `.minnctapersm`/`.maxnreg`
    /// it was made from (under a cap, ptxas spills rather than grow: `occupancy_cliff`).
    pub fn compiled_directives(&self) -> PtxEntry {
        let mut directives = self.launch.clone();
        directives.maxnreg = directives.maxnreg.or(self.register_cap);
        directives
    }
}

/// Reads until `buffer` is full or the input ends; how many bytes were read (for the
/// readers of headers and streams: `sniff`, `archive`, `fatbin`).
pub(crate) fn read_full(
    reader: &mut impl std::io::Read,
    buffer: &mut [u8],
) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// What a file is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryKind {
    /// An ELF for `EM_CUDA`.
    Cubin,
    /// A fatbin, or a host ELF or `ar` archive that may embed fatbins.
    Container,
    /// A zip archive (a wheel).
    Wheel,
}

/// The kind of binary `path` is, or `None` when it is none of them (a log, a source). Only a
/// regular file (through links) is opened: a pipe (`check <(ninja 2>&1)`) would lose the bytes
/// read here to its reader, so a failed build's first lines went unread, and a FIFO would wait
/// for a writer (issue #35, class 7); neither is a binary.
pub fn sniff(path: &Path) -> std::io::Result<Option<BinaryKind>> {
    if !std::fs::metadata(path)?.is_file() {
        return Ok(None);
    }
    let mut head = [0u8; 20];
    let filled = read_full(&mut std::fs::File::open(path)?, &mut head)?;
    Ok(kind_of(&head[..filled]))
}

/// The largest binary read (16 GiB, what a wheel's member may declare): a file past it is a
/// sparse or damaged one, which cuobjdump would read to its end (a 64 GiB sparse fatbin in a
/// directory ran past any time limit).
pub const MAX_BINARY_BYTES: u64 = 16 << 30;

/// Whether the fatbin or ELF64 file at `path` holds device code by what its section table
/// says (a `.nv_fatbin` or `__nv_relfatbin` section holding a fatbin): `Some(true)` or
/// `Some(false)`; `None` for a layout not read here (an archive, ELF32, big-endian); an error
/// naming what is damaged when its header, section table or fatbin cannot be read. Reads the
/// headers and the section names only, never the whole file.
pub fn device_code_by_sections(path: &Path) -> std::io::Result<Option<bool>> {
    Ok(fatbin::blobs(path)?.map(|blobs| !blobs.is_empty()))
}

/// Whether a binary may hold device code: a cubin or fatbin does; a host object or library
/// only with a fatbin section (`.nv_fatbin`, or `__nv_relfatbin` for `-rdc`), which its ELF
/// section table says, or, where that is not read (an archive, ELF32), whose name its bytes
/// hold. Read in blocks, never whole. An error, never `false`, for a GNU thin archive (its
/// objects are elsewhere), a library whose members run past its end, or a damaged ELF file.
pub fn holds_device_code(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    const NEEDLES: [&[u8]; 3] = [b".nv_fatbin", b"__nv_relfatbin", b".nvFatBinSegment"];
    let damaged = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut file = std::fs::File::open(path)?;
    let mut head = [0u8; 20];
    let filled = read_full(&mut file, &mut head)?;
    let head = &head[..filled];
    if head.starts_with(&fatbin::MAGIC) || kind_of(head) == Some(BinaryKind::Cubin) {
        return Ok(true);
    }
    if head.starts_with(archive::THIN_MAGIC) {
        return Err(damaged("a GNU thin archive: it holds the paths of its objects, not the objects; check the objects it names".into()));
    }
    if head.starts_with(archive::MAGIC) {
        archive::members_fit(&mut file)
            .map_err(|why| damaged(format!("a damaged static library: {why}")))?;
    }
    if device_code_by_sections(path)? == Some(true) {
        return Ok(true);
    }
    let finders: Vec<memchr::memmem::Finder<'_>> =
        NEEDLES.iter().map(memchr::memmem::Finder::new).collect();
    let mut block = head.to_vec();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        if finders.iter().any(|finder| finder.find(&block).is_some()) {
            return Ok(true);
        }
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(false);
        }
        // Keep the end of the last block: a name may straddle two.
        let keep = block.len().min(32);
        block.drain(..block.len() - keep);
        block.extend_from_slice(&buffer[..read]);
    }
}

fn kind_of(head: &[u8]) -> Option<BinaryKind> {
    if head.starts_with(b"\x7fELF") {
        let machine = head.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]));
        return Some(match machine {
            Some(190) => BinaryKind::Cubin,
            _ => BinaryKind::Container,
        });
    }
    if head.starts_with(archive::MAGIC)
        || head.starts_with(archive::THIN_MAGIC)
        || head.starts_with(&fatbin::MAGIC)
    {
        return Some(BinaryKind::Container);
    }
    (head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06"))
        .then_some(BinaryKind::Wheel)
}

/// Reads binaries one after another, each kernel handed on with the number of its input (a
/// binary): at once, or, when a machine-code lint reads its SASS, when the batch that holds it is
/// read, which may be during a later binary's reading or at [`BinarySession::finish`]. A batch
/// spans binaries: one nvdisasm per architecture reads the kernels of many (`machine_code.rs`).
/// Every binary is read from a private directory under `scratch`, removed afterwards.
pub struct BinarySession<'a> {
    reading: BinaryReading<'a>,
    scratch: &'a Path,
    machine_code: Option<MachineCode<'a>>,
    /// Where the SASS stage keeps cubins aside (declared after it: removed after it is dropped).
    kept_aside: Option<extract::WorkDir>,
    /// Said with the first binary read: nvdisasm was not found.
    notes: Vec<String>,
}

impl std::fmt::Debug for BinarySession<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BinarySession")
            .field("asked_archs", &self.reading.asked_archs)
            .field("reads_machine_code", &self.machine_code.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> BinarySession<'a> {
    pub fn new(reading: BinaryReading<'a>, scratch: &'a Path) -> Result<BinarySession<'a>, Error> {
        let lints = reading.machine_code;
        let wanted = !lints.enabled.is_empty() || lints.everything;
        let mut session = BinarySession {
            reading,
            scratch,
            machine_code: None,
            kept_aside: None,
            notes: Vec::new(),
        };
        match &reading.tools.nvdisasm {
            Some(nvdisasm) if wanted => {
                let work = extract::WorkDir::create(scratch)?;
                let timeouts = reading.tools.timeouts;
                session.machine_code = MachineCode::new(nvdisasm, lints, timeouts, work.path())?;
                session.kept_aside = Some(work);
            }
            None if wanted => session.notes.push(format!("nvdisasm was not found (set OCCUPANCY_NVDISASM, put it beside nvcc, or `pip install nvidia-cuda-nvdisasm`): the machine-code lints ({}) were not checked", lint_names(&lints.enabled))),
            _ => {}
        }
        Ok(session)
    }

    /// Reads the binary at `path`, its kernels handed to `each` with `input`; kernels of earlier
    /// binaries whose batch is read meanwhile go to `each` with theirs. Returns how it was read,
    /// for the user (notes).
    pub fn read(
        &mut self,
        path: &Path,
        kind: BinaryKind,
        input: usize,
        each: &mut dyn FnMut(usize, BinaryKernel),
    ) -> Result<Vec<String>, Error> {
        let scratch = self.scratch;
        let notes = self
            .read_in_scratch(path, kind, input, each)
            .map_err(|error| named_by_the_input(error, Some(path), scratch))?;
        // A note quotes a tool too (cuobjdump refusing a fatbin it was given a copy of).
        Ok(notes
            .iter()
            .map(|note| {
                without_scratch_paths(note, scratch, &occupancy_build::cli::shown_path(path))
            })
            .collect())
    }

    fn read_in_scratch(
        &mut self,
        path: &Path,
        kind: BinaryKind,
        input: usize,
        each: &mut dyn FnMut(usize, BinaryKernel),
    ) -> Result<Vec<String>, Error> {
        let len = std::fs::metadata(path)
            .map_err(|error| Error::Io {
                path: path.to_path_buf(),
                error,
            })?
            .len();
        if len > MAX_BINARY_BYTES {
            return Err(Error::UnreadableBinary {
                path: path.to_path_buf(),
                reason: format!(
                    "{len} bytes, more than any binary this reads ({MAX_BINARY_BYTES} bytes: a sparse or damaged file): not read"
                ),
            });
        }
        let BinaryReading {
            tools, asked_archs, ..
        } = self.reading;
        let work = extract::WorkDir::create(self.scratch)?;
        let shown = occupancy_build::cli::shown_path(path);
        let mut found = Found::new(asked_archs, input, each, self.machine_code.as_mut());
        found.notes.append(&mut self.notes);
        let mut ptx = Vec::new();
        match kind {
            BinaryKind::Cubin => found.cubin(path, &shown)?,
            BinaryKind::Container => {
                extract::container(path, &shown, tools, work.path(), &mut found, &mut ptx)?;
            }
            BinaryKind::Wheel => {
                wheel_members(path, &shown, tools, work.path(), &mut found, &mut ptx)?;
            }
        }
        if found.compatible_are_held() {
            found.read_machine_code()?;
        }
        run_compatible_cubins(&mut found);
        jit_missing_archs(&mut found, &ptx, tools, asked_archs, work.path())?;
        let mut notes = found.notes;
        if let Some(machine_code) = self.machine_code.as_mut() {
            notes.extend(machine_code.refusal_notes());
        }
        Ok(notes)
    }

    /// Reads the SASS of every kernel still held and hands each on with its input; returns
    /// what the user should know of how (an architecture nvdisasm refused).
    pub fn finish(
        &mut self,
        each: &mut dyn FnMut(usize, BinaryKernel),
    ) -> Result<Vec<String>, Error> {
        let Some(machine_code) = self.machine_code.as_mut() else {
            return Ok(Vec::new());
        };
        let scratch = self.scratch;
        let read =
            (machine_code.read()).map_err(|error| named_by_the_input(error, None, scratch))?;
        for (input, kernel, _) in read {
            each(input, kernel);
        }
        Ok(machine_code.refusal_notes())
    }
}

/// An error of reading the binary at `input` as the user can act on it (issue #35, class 10):
/// it names the binary, never a file of the scratch directory (a member's copy, an extracted
/// cubin, deleted by then), and a binary's machine code that cannot be read is no "compiler's
/// output" (no compiler ran). The reason, which names the member (`libk.a(k.o)`), is kept.
fn named_by_the_input(error: Error, input: Option<&Path>, scratch: &Path) -> Error {
    // A work directory of the session: `<scratch>/occupancy-binary-<pid>-<n>/...`.
    let in_scratch = |path: &Path| {
        (path.strip_prefix(scratch).ok())
            .and_then(|inside| inside.components().next())
            .is_some_and(|first| {
                first
                    .as_os_str()
                    .to_string_lossy()
                    .starts_with("occupancy-binary-")
            })
    };
    match (error, input) {
        // The reason may quote a tool that read a copy, whoever the error names.
        (Error::UnreadableBinary { path, reason }, Some(input)) => Error::UnreadableBinary {
            path: if in_scratch(&path) {
                input.to_path_buf()
            } else {
                path
            },
            reason: without_scratch_paths(&reason, scratch, &occupancy_build::cli::shown_path(input)),
        },
        (Error::Io { path, error }, Some(input)) if in_scratch(&path) => Error::UnreadableBinary {
            path: input.to_path_buf(),
            reason: format!(
                "a file taken out of it into the temporary directory could not be read or written: {error}"
            ),
        },
        (Error::UnreadableOutput { file, message }, input) => Error::UnreadableBinary {
            reason: format!(
                "its machine code could not be read: {}",
                without_scratch_paths(
                    &message,
                    scratch,
                    &occupancy_build::cli::shown_path(input.unwrap_or(&file))
                )
            ),
            path: input.map_or(file, Path::to_path_buf),
        },
        // A tool that ran out of time on a copy (cuobjdump on a member's fatbin, nvdisasm on
        // the machine code gathered for the session) is named with what it was reading.
        (
            Error::ToolTimedOut {
                command,
                limit,
                hint,
            },
            input,
        ) => Error::ToolTimedOut {
            command: without_scratch_paths(
                &command,
                scratch,
                &input.map_or_else(
                    || "<the binaries' machine code>".to_string(),
                    occupancy_build::cli::shown_path,
                ),
            ),
            limit,
            hint,
        },
        (other, _) => other,
    }
}

/// What to read of a binary: the tools, the archs asked (empty: every cubin's), and the
/// machine-code lints whose SASS to read (none: no SASS is read).
#[derive(Debug, Clone, Copy)]
pub struct BinaryReading<'a> {
    pub tools: &'a BinaryTools,
    pub asked_archs: &'a [String],
    pub machine_code: &'a MachineCodeLints,
}

/// `spill_in_loop, call` for a note.
fn lint_names(lints: &BTreeSet<occupancy_core::lint::LintId>) -> String {
    let names: Vec<String> = lints.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// Reads every member of the wheel at `path` that holds device code, each container in a
/// directory of its own (cuobjdump names what it extracts after the file).
fn wheel_members(
    path: &Path,
    shown: &str,
    tools: &BinaryTools,
    work: &Path,
    found: &mut Found<'_, '_>,
    ptx: &mut Vec<extract::EmbeddedPtx>,
) -> Result<(), Error> {
    let members =
        wheel::extract_cuda_members(path, work).map_err(|error| Error::UnreadableBinary {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
    for (index, member) in members.into_iter().enumerate() {
        let origin = format!("{shown}({})", member.name_in_archive);
        match sniff(&member.path).ok().flatten() {
            Some(BinaryKind::Cubin) => found.cubin(&member.path, &origin)?,
            Some(_) => {
                let inner = work.join(format!("member-{index}"));
                std::fs::create_dir(&inner).map_err(|error| Error::Io {
                    path: inner.clone(),
                    error,
                })?;
                extract::container(&member.path, &origin, tools, &inner, found, ptx)?;
            }
            // The wheel reader keeps only members that start like a binary or, for `.ptx`, like
            // PTX: a PTX member's kernels are assembled as the driver would JIT them, never left
            // unread (issue #35, class 1).
            None => ptx.push(wheel_ptx(&member.path, origin)?),
        }
    }
    Ok(())
}

/// `text` (a tool's words) with each path of the session's work directories (`<scratch>/
/// occupancy-binary-...`, up to the next space, quote or punctuation) replaced by `input`, the binary it was
/// taken out of: a tool names the copy it read, which is deleted by the time anyone reads it.
fn without_scratch_paths(text: &str, scratch: &Path, shown: &str) -> String {
    let prefix = scratch.join("occupancy-binary-").display().to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&prefix) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        // Our own names follow the prefix (`7-0/member1/member`): none holds these.
        let end = tail[prefix.len()..]
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ')' | ',' | ':' | ';')
            })
            .map_or(tail.len(), |end| prefix.len() + end);
        out.push_str(shown);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A wheel's PTX member as embedded PTX, read for its `.target`.
fn wheel_ptx(path: &Path, origin: String) -> Result<extract::EmbeddedPtx, Error> {
    let text = std::fs::read_to_string(path).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let target = extract::ptx_target(&text).ok_or_else(|| Error::UnreadableBinary {
        path: path.to_path_buf(),
        reason: format!("{origin}: a PTX member without `.target`, so its kernels cannot be assembled as the driver would"),
    })?;
    Ok(extract::EmbeddedPtx {
        path: path.to_path_buf(),
        origin,
        virtual_arch: target.arch,
        debug: target.debug,
    })
}

/// For each asked arch a kernel has no cubin of, the cubin the driver loads instead when there
/// is one ([`Found::kernel`] kept the best): its resources are then evaluated on the asked arch.
fn run_compatible_cubins(found: &mut Found<'_, '_>) {
    for ((index, name), kernel) in std::mem::take(&mut found.compatible) {
        let asked = found.asked[index].0;
        if found.covered.contains(&(name, asked.to_owned())) {
            continue;
        }
        let mut on_target = kernel;
        on_target.origin = format!("{} (the driver runs it on {asked})", on_target.origin);
        on_target.record.arch = asked.to_owned();
        found.hand_on(on_target);
    }
}

/// Assembles embedded PTX for each asked arch that a kernel has no cubin for, from the PTX the
/// driver would pick: the highest virtual arch that can JIT to it. Each module's entries are
/// read when it is considered, one module at a time.
fn jit_missing_archs(
    found: &mut Found<'_, '_>,
    ptx_files: &[extract::EmbeddedPtx],
    tools: &BinaryTools,
    asked_archs: &[String],
    work: &Path,
) -> Result<(), Error> {
    for ptx in ptx_files
        .iter()
        .filter(|ptx| ptx.virtual_arch.ends_with('a'))
    {
        found.notes.push(arch_specific_note(ptx, asked_archs));
    }
    if asked_archs.is_empty() {
        return jit_ptx_only_kernels(found, ptx_files, tools, work);
    }
    let mut by_preference: Vec<&extract::EmbeddedPtx> = ptx_files.iter().collect();
    by_preference.sort_by_key(|ptx| std::cmp::Reverse(extract::arch_number(&ptx.virtual_arch)));
    for arch in asked_archs {
        let jits = by_preference
            .iter()
            .filter_map(|ptx| Some((ptx, ptx.jit_target_on(arch)?)));
        for (ptx, target) in jits {
            let entries = ptx.entries()?;
            let missing: Vec<&PtxEntry> = entries
                .iter()
                .filter(|entry| !found.covered.contains(&(entry.name.clone(), arch.clone())))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let (assembled, cubin) = extract::assemble(ptx, &target, &missing, tools, work)?;
            found.notes.push(format!(
                "{}: {} kernel(s) have no {arch} cubin; assembled from its embedded PTX ({}) for {target} as the driver would JIT it",
                ptx.origin,
                missing.len(),
                ptx.virtual_arch
            ));
            let taken = found.assembled(assembled, &cubin);
            let _ = std::fs::remove_file(&cubin);
            taken?;
        }
    }
    Ok(())
}

/// What a module of arch-specific PTX (`sm_90a`) means: its kernels run only on its own GPU
/// (assembled for it there, as the driver would JIT them), and an asked arch of another number
/// cannot load them: the file is not empty, it is unloadable there.
fn arch_specific_note(ptx: &extract::EmbeddedPtx, asked_archs: &[String]) -> String {
    let target = &ptx.virtual_arch;
    let refused: Vec<&str> = (asked_archs.iter())
        .filter(|arch| !ptx.can_jit_to(arch))
        .map(String::as_str)
        .collect();
    let refused = match refused.as_slice() {
        [] => String::new(),
        archs => format!(
            "; asked for {}: no row there, as a GPU of that arch cannot load it",
            archs.join(", ")
        ),
    };
    format!(
        "{}: arch-specific PTX ({target}, arch_specific_ptx): the driver JITs it only on its own GPU, for {target}; a GPU of any other compute capability, a newer one too, cannot JIT it{refused}",
        ptx.origin
    )
}

/// With no arch asked, every cubin's arch is checked; a kernel no cubin holds (a binary that
/// ships only PTX, `code=compute_80`) runs only as its PTX JIT-compiled, so each module that
/// holds such kernels is assembled for its own target, the least GPU the driver would JIT it
/// for. Without this a PTX-only object yielded no kernel and no word.
fn jit_ptx_only_kernels(
    found: &mut Found<'_, '_>,
    ptx_files: &[extract::EmbeddedPtx],
    tools: &BinaryTools,
    work: &Path,
) -> Result<(), Error> {
    let in_cubins: BTreeSet<String> = found.covered.iter().map(|(name, _)| name.clone()).collect();
    for ptx in ptx_files {
        let arch = ptx.virtual_arch.clone();
        let entries = ptx.entries()?;
        let missing: Vec<&PtxEntry> = entries
            .iter()
            .filter(|entry| !in_cubins.contains(&entry.name))
            .filter(|entry| !found.covered.contains(&(entry.name.clone(), arch.clone())))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let (assembled, cubin) = extract::assemble(ptx, &arch, &missing, tools, work)?;
        found.notes.push(format!(
            "{}: {} kernel(s) ship only as PTX ({arch}); assembled for {arch} as the driver would JIT it (pass --arch for the GPUs it runs on)",
            ptx.origin,
            missing.len(),
        ));
        let taken = found.assembled(assembled, &cubin);
        let _ = std::fs::remove_file(&cubin);
        taken?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::ptxas::RecordSource;

    fn kernel(name: &str, arch: &str, registers: u32) -> BinaryKernel {
        let mut record = KernelRecord::new(name, None, arch.into(), true, RecordSource::Cubin);
        record.registers = Some(registers);
        BinaryKernel {
            record,
            launch: PtxEntry::default(),
            register_cap: None,
            spills: SpillEvidence::Exact,
            origin: format!("lib.a(k.o) {arch} cubin"),
            module: "lib.a(k.o)".to_owned(),
            sass: None,
            smem_spilling: false,
            compiler: None,
            debug_code: false,
        }
    }

    /// Issue #35, class 10: a tool's words name the binary given, not the copy it read.
    #[test]
    fn scratch_paths_in_a_tool_s_words_become_the_binary() {
        let scratch = Path::new("/tmp");
        let said = "cuobjdump fatal   : Invalid ELF in '/tmp/occupancy-binary-7-0/member1/member' (see /tmp/occupancy-binary-7-0/x.cubin)";
        assert_eq!(
            without_scratch_paths(said, scratch, "libk.a"),
            "cuobjdump fatal   : Invalid ELF in 'libk.a' (see libk.a)"
        );
        // A file that could not be opened, at `path`, while `input` was read.
        let missing_while_reading = |path: &str, input: &str| {
            named_by_the_input(
                Error::Io {
                    path: PathBuf::from(path),
                    error: std::io::ErrorKind::NotFound.into(),
                },
                Some(Path::new(input)),
                scratch,
            )
        };
        let error = missing_while_reading("/tmp/occupancy-binary-7-0/member1/member", "libk.a");
        assert!(
            matches!(&error, Error::UnreadableBinary { path, .. } if path == Path::new("libk.a")),
            "{error}"
        );
        let own = missing_while_reading("/tmp/mine.a", "/tmp/mine.a");
        assert!(
            matches!(own, Error::Io { .. }),
            "a user's file is not scratch"
        );
        // Issue #35's third pass: a tool that ran out of time on a copy, and a reason that quotes
        // one about the user's own file, named the copy.
        let timed_out = named_by_the_input(
            Error::ToolTimedOut {
                command: "cuobjdump -xelf all /tmp/occupancy-binary-7-1/member1/fatbin0/fatbin"
                    .into(),
                limit: std::time::Duration::from_secs(5),
                hint: "raise it".into(),
            },
            Some(Path::new("libk.a")),
            scratch,
        );
        assert!(
            timed_out
                .to_string()
                .contains("`cuobjdump -xelf all libk.a`"),
            "{timed_out}"
        );
        let machine_code = named_by_the_input(
            Error::ToolTimedOut {
                command: "nvdisasm -c -b SM90 /tmp/occupancy-binary-7-0/sass/sm_90.sass.bin".into(),
                limit: std::time::Duration::from_secs(5),
                hint: "raise it".into(),
            },
            None,
            scratch,
        );
        assert!(
            !machine_code.to_string().contains("occupancy-binary-"),
            "{machine_code}"
        );
        let quoted = named_by_the_input(
            Error::UnreadableBinary {
                path: PathBuf::from("libk.a"),
                reason: "Invalid ELF in '/tmp/occupancy-binary-7-1/member2/fatbin0/fatbin'".into(),
            },
            Some(Path::new("libk.a")),
            scratch,
        );
        assert!(
            !quoted.to_string().contains("occupancy-binary-"),
            "{quoted}"
        );
    }

    /// Kernels are handed on as they are read, every copy of one; the compatible cubin of an
    /// asked arch without a cubin comes once per kernel, the highest minor's, and not for a
    /// kernel whose own cubin of that arch comes after the compatible one.
    #[test]
    fn kernels_are_handed_on_as_read_and_a_compatible_cubin_once_per_kernel() {
        let asked = ["sm_86".to_owned(), "sm_90".to_owned()];
        let mut handed = Vec::new();
        let mut each = |_: usize, kernel: BinaryKernel| {
            handed.push((
                kernel.record.name,
                kernel.record.arch,
                kernel.record.registers,
                kernel.origin,
            ));
        };
        let mut found = Found::new(&asked, 0, &mut each, None);
        for copy in 0..2 {
            found.kernel(kernel("only_80", "sm_80", 30 + copy));
            found.kernel(kernel("only_80", "sm_90a", 40));
        }
        found.kernel(kernel("later_86", "sm_80", 20));
        found.kernel(kernel("later_86", "sm_86", 21));
        found.kernel(kernel("minors", "sm_80", 10));
        found.kernel(kernel("minors", "sm_70", 9));
        run_compatible_cubins(&mut found);
        assert!(found.compatible.is_empty() && found.notes.is_empty());
        let on_86: Vec<_> = handed
            .iter()
            .filter(|(_, arch, _, _)| arch == "sm_86")
            .map(|(name, _, registers, origin)| (name.as_str(), *registers, origin.as_str()))
            .collect();
        assert_eq!(
            on_86,
            [
                ("later_86", Some(21), "lib.a(k.o) sm_86 cubin"),
                (
                    "minors",
                    Some(10),
                    "lib.a(k.o) sm_80 cubin (the driver runs it on sm_86)"
                ),
                (
                    "only_80",
                    Some(30),
                    "lib.a(k.o) sm_80 cubin (the driver runs it on sm_86)"
                ),
            ]
        );
        assert_eq!(
            handed.len(),
            10,
            "the eight kernels read, then the two compatible ones"
        );
        assert!(
            !handed.iter().any(|(_, arch, _, _)| arch == "sm_90"),
            "sm_90a never runs on sm_90"
        );
    }
}
