//! Taking device code out of a binary: a cubin read in place, a container's cubins and PTX
//! written out by `cuobjdump`, embedded PTX assembled by `ptxas -v` for an arch it lacks.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::ptxas::{parse_log, parse_ptx_directives, PtxEntry};

use super::archive::{self, Archive};
use super::entries::EntryKind;
use super::fatbin;
use super::{BinaryKernel, BinaryKind, BinaryTools, Found, SpillEvidence};
use occupancy_build::cli::CodeMarks;
use occupancy_build::cli::Cubin;
use occupancy_build::cli::{run_bounded, ToolKind};
use occupancy_build::Error;
use std::collections::BTreeMap;

pub use occupancy_build::cli::WorkDir;

/// A PTX module a binary embeds.
#[derive(Debug, Clone)]
pub struct EmbeddedPtx {
    pub path: PathBuf,
    /// Where it came from, as a row shows it.
    pub origin: String,
    /// Its `.target` (`sm_80`, `sm_90a`): the virtual arch it was generated for.
    pub virtual_arch: String,
    /// Generated for debugging (`nvcc -G`: `.target sm_80, debug`).
    pub debug: bool,
}

impl EmbeddedPtx {
    /// Its entries' directives, read from the file (one module in memory at a time).
    pub fn entries(&self) -> Result<Vec<PtxEntry>, Error> {
        let text = std::fs::read_to_string(&self.path).map_err(|error| Error::Io {
            path: self.path.clone(),
            error,
        })?;
        Ok(parse_ptx_directives(&text))
    }

    /// Whether the driver can JIT this PTX on an `arch` GPU ([`jit_target`]).
    pub fn can_jit_to(&self, arch: &str) -> bool {
        self.jit_target_on(arch).is_some()
    }

    /// The arch the driver JITs this PTX for on an `arch` GPU ([`jit_target`]), if it can.
    pub fn jit_target_on(&self, arch: &str) -> Option<String> {
        jit_target(&self.virtual_arch, arch)
    }
}

/// The arch the driver JITs PTX whose `.target` is `virtual_arch` for on a GPU of `arch`, if it
/// can: an arch-specific target (`sm_90a`) only on its own GPU (an sm_90, asked as `sm_90` or
/// `sm_90a`), assembled for itself (ptxas refuses any other arch: "cannot be compiled to future
/// architecture"); any other target on every arch of its number or above, assembled for `arch`.
/// The one rule of JIT, for `check`'s binaries and `build`'s PTX.
pub fn jit_target(virtual_arch: &str, arch: &str) -> Option<String> {
    let (virtual_number, number) = (arch_number(virtual_arch)?, arch_number(arch)?);
    match virtual_arch.ends_with('a') {
        true => (number == virtual_number).then(|| virtual_arch.to_owned()),
        false => (number >= virtual_number).then(|| arch.to_owned()),
    }
}

/// Whether the driver can JIT PTX whose `.target` is `virtual_arch` on a GPU of `arch`
/// ([`jit_target`]).
pub fn can_jit(virtual_arch: &str, arch: &str) -> bool {
    jit_target(virtual_arch, arch).is_some()
}

/// `sm_90a` → 90.
pub fn arch_number(arch: &str) -> Option<u32> {
    let digits: String = arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The kernels of the cubin `bytes` (read from `path`, shown as `origin`), each with the marks
/// of what its code may hold ([`CodeMarks`]).
pub fn cubin_kernels(
    bytes: &[u8],
    path: &Path,
    origin: &str,
) -> Result<Vec<(BinaryKernel, CodeMarks)>, Error> {
    let unreadable = |reason: String| Error::UnreadableBinary {
        path: path.to_path_buf(),
        reason,
    };
    let cubin = Cubin::parse(bytes)
        .ok_or_else(|| unreadable(format!("{origin}: not a well-formed ELF64 cubin")))?;
    let arch = cubin.arch().unwrap_or_default();
    let kernels = cubin
        .kernels()
        .map_err(|reason| unreadable(format!("{origin}: {reason}")))?;
    let (smem_spilling, compiler) = (cubin.smem_spilling_available(), cubin.compiler_version());
    let debug_code = cubin.has_debug_info();
    Ok(kernels
        .into_iter()
        .map(|kernel| {
            let found = BinaryKernel {
                record: kernel.record,
                launch: kernel.launch,
                register_cap: kernel.register_cap,
                spills: kernel.spills,
                origin: format!("{origin} {arch} cubin"),
                module: origin.to_owned(),
                sass: None,
                smem_spilling,
                compiler: compiler.clone(),
                debug_code,
            };
            (found, kernel.marks)
        })
        .collect())
}

/// The marks of each kernel of the cubin `bytes` (none when it cannot be read).
pub fn code_marks(bytes: &[u8]) -> BTreeMap<String, CodeMarks> {
    let kernels = Cubin::parse(bytes).and_then(|cubin| cubin.kernels().ok());
    (kernels.into_iter().flatten())
        .map(|kernel| (kernel.record.name, kernel.marks))
        .collect()
}

/// Reads a container (fatbin, object, library, executable): its cubins' kernels into `found`,
/// its PTX into `ptx`.
pub fn container(
    path: &Path,
    shown: &str,
    tools: &BinaryTools,
    work: &Path,
    found: &mut Found<'_, '_>,
    ptx: &mut Vec<EmbeddedPtx>,
) -> Result<(), Error> {
    let cuobjdump = tools
        .cuobjdump
        .as_deref()
        .ok_or_else(|| Error::UnreadableBinary {
            path: path.to_path_buf(),
            reason: occupancy_build::cli::CUOBJDUMP_NOT_FOUND.into(),
        })?;
    let mut reader = Reader {
        container: path,
        cuobjdump,
        tools,
        found: &mut *found,
        ptx,
        linked_archive: false,
        relocatable_passed_over: 0,
    };
    if !reader.device_code(path, shown, work)? {
        // A cubin or fatbin is device code by definition: one in which none is found is damaged
        // (a cubin whose ELF header names another machine, a fatbin cut short), never a file
        // passed over with a note beside the good ones (issue #35's third pass).
        if [".cubin", ".fatbin"]
            .iter()
            .any(|kind| shown.ends_with(kind))
        {
            return Err(Error::UnreadableBinary {
                path: path.to_path_buf(),
                reason: "named like a cubin or fatbin, it holds no device code cuobjdump can find: damaged, or not what its name says".into(),
            });
        }
        found.notes.push(format!("{shown}: holds no device code"));
    }
    Ok(())
}

/// Takes a container's device code out with cuobjdump: its cubins' kernels into `found` (the
/// cubins deleted once read), its PTX into `ptx` (kept in the work directory for [`assemble`]).
struct Reader<'a, 'b, 's> {
    /// The file given, which errors name (what is read may be a scratch copy of a part of it).
    container: &'a Path,
    cuobjdump: &'a Path,
    tools: &'a BinaryTools,
    found: &'a mut Found<'b, 's>,
    ptx: &'a mut Vec<EmbeddedPtx>,
    /// Within an archive that holds a device-linked object (cc's `<lib>_dlink.o`): the
    /// relocatable (`-rdc`) cubins of its other members are passed over, since the linked cubin
    /// holds their kernels as the driver loads them (their registers counted over the call
    /// graph nvlink resolved); how many were.
    linked_archive: bool,
    relocatable_passed_over: usize,
}

impl Reader<'_, '_, '_> {
    /// The device code of the container at `path`: an archive member by member
    /// ([`Reader::archive_members`]), a fatbin or host ELF fatbin by fatbin, each copied out to
    /// a directory of its own under `work` ([`fatbin::blobs`]), anything else in one cuobjdump
    /// run. So cuobjdump reads one fatbin at a time (it reads its input whole), and writes each
    /// one's cubins to a directory of their own (it names them after their module, so modules
    /// of one source name would overwrite each other's). Whether it held any.
    fn device_code(&mut self, path: &Path, origin: &str, work: &Path) -> Result<bool, Error> {
        let unreadable = |error: std::io::Error| Error::UnreadableBinary {
            path: path.to_path_buf(),
            reason: format!("{origin}: {error}"),
        };
        if starts_with(path, archive::MAGIC)? {
            return self.archive_members(path, origin, work);
        }
        if starts_with(path, archive::THIN_MAGIC)? {
            return Err(Error::UnreadableBinary {
                path: path.to_path_buf(),
                reason: format!("{origin}: a GNU thin archive (`ar --thin`) holds only the paths of its objects, not their device code: check the objects it names, or an archive made with `ar rcs`"),
            });
        }
        let Some(blobs) = fatbin::blobs(path).map_err(unreadable)? else {
            let whole = Holds {
                elf: true,
                ptx: true,
                known: false,
            };
            return self.extract(path, origin, work, whole);
        };
        let file_len = std::fs::metadata(path).map_err(unreadable)?.len();
        let mut any = false;
        for (index, blob) in blobs.iter().enumerate() {
            let dir = work.join(format!("fatbin{index}"));
            create_dir(&dir)?;
            let whole = blob.offset == 0 && blob.len == file_len;
            let input = if whole {
                path.to_path_buf()
            } else {
                let copy = dir.join("fatbin");
                let mut file = std::fs::File::open(path).map_err(unreadable)?;
                file.seek(std::io::SeekFrom::Start(blob.offset))
                    .map_err(unreadable)?;
                write_new(&copy, &mut file.take(blob.len))?;
                copy
            };
            if blob.lto && !blob.elf && !blob.ptx {
                self.found.notes.push(format!("{origin}: a fatbin that holds only LTO IR (`code=lto_...`), which runs only once `nvcc -dlink` links it: check the linked binary"));
                any = true;
            }
            let holds = Holds {
                elf: blob.elf,
                ptx: blob.ptx,
                known: true,
            };
            any |= match self.extract(&input, origin, &dir, holds) {
                Err(Error::UnreadableBinary { reason, .. }) if reason.starts_with("cuobjdump ") => {
                    self.own_entries(&input, origin, &dir, &reason)?
                }
                read => read?,
            };
            if !whole {
                let _ = std::fs::remove_file(&input);
            }
        }
        Ok(any)
    }

    /// A static library, member by member: each copied (streaming) into a directory of its own
    /// under `work`, read there as a container of its own, then deleted, so that the disk used
    /// is one member's. Whether any member held device code.
    fn archive_members(&mut self, path: &Path, origin: &str, work: &Path) -> Result<bool, Error> {
        let unreadable = |error: std::io::Error| Error::UnreadableBinary {
            path: path.to_path_buf(),
            reason: format!("{origin}: {error}"),
        };
        let file = std::fs::File::open(path).map_err(|error| Error::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let device_link = device_link_member(path).map_err(unreadable)?;
        let outer = (self.linked_archive, self.relocatable_passed_over);
        (self.linked_archive, self.relocatable_passed_over) = (device_link.is_some(), 0);
        let mut archive = Archive::new(std::io::BufReader::new(file)).map_err(unreadable)?;
        let (mut any, mut index) = (false, 0usize);
        while let Some(name) = archive.next_member().map_err(unreadable)? {
            index += 1;
            let dir = work.join(format!("member{index}"));
            create_dir(&dir)?;
            let copy = dir.join("member");
            write_new(&copy, &mut archive)?;
            let origin = format!("{origin}({name})");
            let kind = super::sniff(&copy).map_err(|error| Error::Io {
                path: copy.clone(),
                error,
            })?;
            any |= match kind {
                Some(BinaryKind::Cubin) => {
                    self.cubin(&copy, &origin)?;
                    true
                }
                Some(BinaryKind::Container) => self.device_code(&copy, &origin, &dir)?,
                Some(BinaryKind::Wheel) | None => false,
            };
            let _ = std::fs::remove_file(&copy);
        }
        if let (Some(link), passed @ 1..) = (device_link, self.relocatable_passed_over) {
            self.found.notes.push(format!("{origin}: {passed} relocatable (-rdc) cubin(s) passed over: the device-linked {link} holds their kernels as the driver loads them"));
        }
        (self.linked_archive, self.relocatable_passed_over) = outer;
        Ok(any)
    }

    /// The cubin at `path`, read unless it is a relocatable one an archive's device-linked
    /// object supersedes.
    fn cubin(&mut self, path: &Path, origin: &str) -> Result<(), Error> {
        if self.linked_archive && is_relocatable(path)? {
            self.relocatable_passed_over += 1;
            return Ok(());
        }
        self.found.cubin(path, origin)
    }

    /// Runs cuobjdump on `input` in `work`: `-xelf all` and `-xptx all`, as `holds` asks.
    /// Whether it found device code (an input whose `-xelf` finds none is not asked for PTX).
    /// A fatbin whose entries say it holds cubins or PTX must give them: cuobjdump exiting 0
    /// with nothing extracted is an error, never a container without kernels; so is a file read
    /// whole from which it extracts nothing without saying that it holds no device code.
    fn extract(
        &mut self,
        input: &Path,
        origin: &str,
        work: &Path,
        holds: Holds,
    ) -> Result<bool, Error> {
        let absolute = std::fs::canonicalize(input).unwrap_or_else(|_| input.to_path_buf());
        let (mut cubins, mut modules) = (0usize, 0usize);
        if holds.elf {
            match cuobjdump_extract(self.cuobjdump, "-xelf", &absolute, self.tools, work)? {
                None if holds.known => {
                    return Err(nothing_extracted(self.container, origin, "-xelf"))
                }
                None => return Ok(false),
                Some(listing) => cubins = self.cubins(&listing, origin, work)?,
            }
            if holds.known && cubins == 0 {
                return Err(nothing_extracted(self.container, origin, "-xelf"));
            }
        }
        if holds.ptx {
            match cuobjdump_extract(self.cuobjdump, "-xptx", &absolute, self.tools, work)? {
                None if holds.known => {
                    return Err(nothing_extracted(self.container, origin, "-xptx"))
                }
                None => {}
                Some(listing) => modules = self.embedded_ptx(&listing, origin, work)?,
            }
            if holds.known && modules == 0 {
                return Err(nothing_extracted(self.container, origin, "-xptx"));
            }
        }
        if !holds.known && cubins + modules == 0 {
            return Err(nothing_extracted(self.container, origin, "-xelf and -xptx"));
        }
        Ok(cubins + modules > 0)
    }

    /// The container's error: `why` its device code (of `origin`) was not read.
    fn unread(&self, origin: &str, why: String) -> Error {
        Error::UnreadableBinary {
            path: self.container.to_path_buf(),
            reason: format!("{origin}: {why}"),
        }
    }

    /// A fatbin cuobjdump refused (`refusal`, its words) read here, entry by entry
    /// (`super::entries`): each uncompressed cubin by the cubin reader, each uncompressed PTX
    /// module kept for [`assemble`]. A compressed entry only cuobjdump could read is the error,
    /// naming its arch. Whether it held device code.
    fn own_entries(
        &mut self,
        fatbin: &Path,
        origin: &str,
        work: &Path,
        refusal: &str,
    ) -> Result<bool, Error> {
        let bytes = std::fs::read(fatbin).map_err(|error| Error::Io {
            path: fatbin.to_path_buf(),
            error,
        })?;
        let entries = super::entries::entries(&bytes).map_err(|why| {
            self.unread(
                origin,
                format!("{refusal}; and its entries cannot be read here either: {why}"),
            )
        })?;
        let compressed: Vec<String> = (entries.iter())
            .filter(|entry| entry.compressed && entry.kind != EntryKind::Other(8))
            .map(super::entries::Entry::arch)
            .collect();
        if !compressed.is_empty() {
            return Err(self.unread(origin, format!("{refusal}; its entries for {} are compressed, which only cuobjdump reads, so their kernels were not read", compressed.join(", "))));
        }
        let mut read = 0;
        for (index, entry) in entries.iter().enumerate() {
            let payload = &mut &bytes[entry.payload.clone()];
            let origin = format!("{origin} entry {index}");
            match entry.kind {
                EntryKind::Cubin => {
                    let path = work.join(format!("entry{index}.sm_{}.cubin", entry.sm));
                    write_new(&path, payload)?;
                    self.cubin(&path, &origin)?;
                    let _ = std::fs::remove_file(&path);
                }
                EntryKind::Ptx => {
                    let path = work.join(format!("entry{index}.compute_{}.ptx", entry.sm));
                    write_new(&path, payload)?;
                    let text = String::from_utf8_lossy(&bytes[entry.payload.clone()]);
                    let target = ptx_target(&text)
                        .ok_or_else(|| self.unread(&origin, "its PTX has no `.target`".into()))?;
                    let (virtual_arch, debug) = (target.arch, target.debug);
                    self.ptx.push(EmbeddedPtx {
                        path,
                        origin,
                        virtual_arch,
                        debug,
                    });
                }
                EntryKind::Other(_) => continue,
            }
            read += 1;
        }
        let refused = refusal.lines().last().unwrap_or(refusal).trim();
        self.found.notes.push(format!("{origin}: cuobjdump refused it ({refused}); its {read} entries were read from the fatbin itself"));
        Ok(read > 0)
    }

    /// Reads the cubins cuobjdump's `listing` names in `work`, each deleted once read; how many.
    fn cubins(&mut self, listing: &str, origin: &str, work: &Path) -> Result<usize, Error> {
        let files = extracted_files(listing).map_err(|why| self.unread(origin, why))?;
        for (file, member) in &files {
            let origin = member
                .as_ref()
                .map_or_else(|| origin.to_owned(), |m| format!("{origin}({m})"));
            self.cubin(&work.join(file), &origin)?;
            let _ = std::fs::remove_file(work.join(file));
        }
        Ok(files.len())
    }

    /// Keeps the PTX modules cuobjdump's `listing` names in `work` for [`assemble`]; how many.
    /// A module without a `.target` is an error: its kernels could not be assembled.
    fn embedded_ptx(&mut self, listing: &str, origin: &str, work: &Path) -> Result<usize, Error> {
        let files = extracted_files(listing).map_err(|why| self.unread(origin, why))?;
        for (file, member) in &files {
            let origin = member
                .as_ref()
                .map_or_else(|| origin.to_owned(), |m| format!("{origin}({m})"));
            let path = work.join(file);
            let text = std::fs::read_to_string(&path).map_err(|error| Error::Io {
                path: path.clone(),
                error,
            })?;
            let target = ptx_target(&text).ok_or_else(|| Error::UnreadableBinary {
                path: path.clone(),
                reason: format!("{origin}: its embedded PTX has no `.target`, so its kernels cannot be assembled as the driver would"),
            })?;
            self.ptx.push(EmbeddedPtx {
                path,
                origin,
                virtual_arch: target.arch,
                debug: target.debug,
            });
        }
        Ok(files.len())
    }
}

/// The member of the archive at `path` that is a device-link object (cc's `<lib>_dlink.o`,
/// CMake's `cmake_device_link.o`), read from the member names alone.
fn device_link_member(path: &Path) -> std::io::Result<Option<String>> {
    let file = std::fs::File::open(path)?;
    let mut archive = Archive::new(std::io::BufReader::new(file))?;
    while let Some(name) = archive.next_member()? {
        if name.ends_with("_dlink.o") || name.contains("device_link") {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Whether the cubin at `path` is relocatable (`ET_REL`: compiled with `-rdc`, not linked).
fn is_relocatable(path: &Path) -> Result<bool, Error> {
    let mut head = [0u8; 18];
    let mut file = std::fs::File::open(path).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let filled = super::read_full(&mut file, &mut head).map_err(|error| Error::Io {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(filled == 18 && u16::from_le_bytes([head[16], head[17]]) == 1)
}

/// What a fatbin's entries say it holds, or, not `known`, a file cuobjdump reads whole.
#[derive(Debug, Clone, Copy)]
struct Holds {
    elf: bool,
    ptx: bool,
    known: bool,
}

/// cuobjdump `mode` gave nothing from `input`, which holds device code.
fn nothing_extracted(input: &Path, origin: &str, mode: &str) -> Error {
    Error::UnreadableBinary {
        path: input.to_path_buf(),
        reason: format!("{origin}: cuobjdump {mode} extracted nothing from a binary that holds device code, so its kernels would go unread (a cuobjdump too old for this binary, or a damaged fatbin)"),
    }
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })
}

/// Writes `data` to `path`, created new (never through an existing file or link).
fn write_new(path: &Path, data: &mut impl Read) -> Result<(), Error> {
    let io_error = |error| Error::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_error)?;
    std::io::copy(data, &mut file).map_err(io_error)?;
    Ok(())
}

/// Whether the file at `path` starts with `magic`.
fn starts_with(path: &Path, magic: &[u8]) -> Result<bool, Error> {
    let mut head = vec![0u8; magic.len()];
    let read = std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .map(|()| head == magic);
    match read {
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        read => read.map_err(|error| Error::Io {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Runs `cuobjdump <mode> all <binary>` in `work`; its listing, or `None` when the binary holds
/// no device code.
fn cuobjdump_extract(
    cuobjdump: &Path,
    mode: &str,
    binary: &Path,
    tools: &BinaryTools,
    work: &Path,
) -> Result<Option<String>, Error> {
    let mut command = Command::new(cuobjdump);
    command.args([mode, "all"]).arg(binary).current_dir(work);
    let output = run_bounded(&mut command, &tools.timeouts, ToolKind::Work)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("does not contain device code") {
        return Ok(None);
    }
    if !output.status.success() {
        return Err(Error::UnreadableBinary {
            path: binary.to_path_buf(),
            reason: format!(
                "cuobjdump {mode} failed ({}): {}",
                output.status,
                stderr.trim()
            ),
        });
    }
    Ok(Some(String::from_utf8_lossy(&output.stdout).into_owned()))
}

/// The files cuobjdump's listing names, each with the archive member it came from:
/// `member /x/libk.a:k.o:` then `Extracting ELF file    1: libk.1.sm_80.cubin`. A name that
/// would lie outside the work directory (`../x`, `/x`, `.x`) is never opened: it is the error,
/// naming it, since the device code it holds would go unread (issue #35, class 1).
fn extracted_files(listing: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut member = None;
    let mut files = Vec::new();
    for line in listing.lines() {
        if let Some(rest) = line.strip_prefix("member ") {
            let rest = rest.trim_end().trim_end_matches(':');
            member = rest.rsplit(':').next().map(str::to_owned);
        } else if let Some((_, file)) = line
            .strip_prefix("Extracting ")
            .and_then(|rest| rest.split_once(": "))
        {
            // `Extracting PTX file and ptxas options    1: k.1.sm_90.ptx -arch=sm_90`
            let file = file.split_whitespace().next().unwrap_or_default();
            if file.contains('/') || file.starts_with('.') {
                return Err(format!("cuobjdump named a file it extracted `{file}`, outside the directory it was run in, so its device code was not read"));
            }
            files.push((file.to_owned(), member.clone()));
        }
    }
    Ok(files)
}

/// The `.target` of a PTX module (`sm_80`), without the options after a comma.
pub fn ptx_target(text: &str) -> Option<PtxTarget> {
    let line = text
        .lines()
        .find_map(|line| line.trim().strip_prefix(".target"))?;
    let line = line.split("//").next().unwrap_or_default();
    let mut words = line.split([',', ' ', '\t']).filter(|word| !word.is_empty());
    let arch = words.next()?.to_owned();
    Some(PtxTarget {
        arch,
        debug: words.any(|word| word == "debug"),
    })
}

/// A PTX module's `.target` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxTarget {
    /// The virtual arch it was generated for (`sm_80`, `sm_90a`).
    pub arch: String,
    /// Generated for debugging (`nvcc -G` writes `.target sm_80, debug`): unoptimized code,
    /// whose registers and spills are not a release build's.
    pub debug: bool,
}

/// Assembles `ptx` for `arch` with `ptxas -v` and returns the records of `kernels`, and the
/// cubin it wrote (the caller removes it).
pub fn assemble(
    ptx: &EmbeddedPtx,
    arch: &str,
    kernels: &[&PtxEntry],
    tools: &BinaryTools,
    work: &Path,
) -> Result<(Vec<BinaryKernel>, PathBuf), Error> {
    let unreadable = |reason: String| Error::UnreadableBinary {
        path: ptx.path.clone(),
        reason: format!("{}: {reason}", ptx.origin),
    };
    let ptxas = tools.ptxas.as_deref().ok_or_else(|| {
        unreadable(format!("ptxas, which assembles the embedded PTX for {arch} (no cubin for it), was not found beside nvcc"))
    })?;
    let output_cubin = work.join(format!("jit-{arch}.cubin"));
    let mut command = Command::new(ptxas);
    command
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&ptx.path)
        .arg("-o")
        .arg(&output_cubin);
    let output = run_bounded(&mut command, &tools.timeouts, ToolKind::Work)?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        let _ = std::fs::remove_file(&output_cubin);
        return Err(unreadable(format!(
            "ptxas -arch={arch} failed: {}",
            log.trim()
        )));
    }
    let parsed = parse_log(&log).map_err(|error| unreadable(error.to_string()))?;
    let bytes = std::fs::read(&output_cubin).map_err(|error| Error::Io {
        path: output_cubin.clone(),
        error,
    })?;
    let cubin = Cubin::parse(&bytes);
    let smem_spilling = cubin.as_ref().is_some_and(Cubin::smem_spilling_available);
    let compiler = cubin.as_ref().and_then(Cubin::compiler_version);
    let found: Vec<BinaryKernel> = parsed
        .kernels
        .into_iter()
        .filter_map(|record| {
            let entry = kernels.iter().find(|entry| entry.name == record.name)?;
            Some(BinaryKernel {
                launch: (*entry).clone(),
                register_cap: None,
                spills: SpillEvidence::Exact,
                origin: format!(
                    "{} PTX {} assembled for {arch}",
                    ptx.origin, ptx.virtual_arch
                ),
                module: ptx.origin.clone(),
                sass: None,
                smem_spilling,
                compiler: compiler.clone(),
                debug_code: ptx.debug,
                record,
            })
        })
        .collect();
    let unreported: Vec<&str> = (kernels.iter())
        .filter(|entry| !found.iter().any(|kernel| kernel.record.name == entry.name))
        .map(|entry| entry.name.as_str())
        .collect();
    if !unreported.is_empty() {
        let _ = std::fs::remove_file(&output_cubin);
        return Err(unreadable(format!(
            "ptxas -arch={arch} -v reported no resources for {}, so they would go unchecked",
            unreported.join(", ")
        )));
    }
    Ok((found, output_cubin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_names_files_and_members() {
        let listing = "\nmember /x/libk.a:k.o:\nExtracting ELF file    1: libk.1.sm_80.cubin\nExtracting ELF file    2: libk.2.sm_90.cubin\n\nmember /x/libk.a:bar.o:\nExtracting ELF file    3: libk.3.sm_80.cubin\nExtracting PTX file and ptxas options    4: libk.4.sm_90.ptx -arch=sm_90 \n";
        // A name outside the work directory is never opened, and is an error, not skipped.
        let evil = format!("{listing}Extracting PTX file and ptxas options    5: ../evil.ptx\n");
        assert!(extracted_files(&evil)
            .unwrap_err()
            .contains("`../evil.ptx`"));
        assert_eq!(
            extracted_files(listing).unwrap(),
            [
                ("libk.1.sm_80.cubin".into(), Some("k.o".into())),
                ("libk.2.sm_90.cubin".into(), Some("k.o".into())),
                ("libk.3.sm_80.cubin".into(), Some("bar.o".into())),
                ("libk.4.sm_90.ptx".into(), Some("bar.o".into())),
            ]
        );
        assert_eq!(
            extracted_files("Extracting ELF file    1: k.1.sm_80.cubin\n").unwrap(),
            [("k.1.sm_80.cubin".into(), None)]
        );
    }

    #[test]
    fn ptx_jits_to_its_arch_and_above_and_arch_specific_ptx_to_itself() {
        let ptx = |target: &str| EmbeddedPtx {
            path: PathBuf::new(),
            origin: String::new(),
            virtual_arch: target.into(),
            debug: false,
        };
        assert!(ptx("sm_80").can_jit_to("sm_86"));
        assert!(ptx("sm_80").can_jit_to("sm_90a"));
        assert!(!ptx("sm_90").can_jit_to("sm_89"));
        assert!(ptx("sm_90a").can_jit_to("sm_90a"));
        assert!(!ptx("sm_90a").can_jit_to("sm_100"));
        assert_eq!(
            ptx("sm_90a").jit_target_on("sm_90").as_deref(),
            Some("sm_90a")
        );
        assert_eq!(
            ptx("sm_80").jit_target_on("sm_86").as_deref(),
            Some("sm_86")
        );
        assert_eq!(ptx("sm_90a").jit_target_on("sm_100"), None);
        assert_eq!(
            ptx_target(".version 9.0\n.target sm_90a, texmode_independent\n"),
            Some(PtxTarget {
                arch: "sm_90a".into(),
                debug: false
            })
        );
        // nvcc -G, as nvcc 13.0 writes it.
        assert_eq!(
            ptx_target(".version 9.0\n.target sm_80, debug\n.address_size 64\n"),
            Some(PtxTarget {
                arch: "sm_80".into(),
                debug: true
            })
        );
    }
}
