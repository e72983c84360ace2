//! One candidate: a kernel's PTX with one bound, assembled by ptxas and read back (ptxas's
//! report, the SASS's spills and loops).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::Launch;
use occupancy_core::ptxas;
use occupancy_core::sass;
use occupancy_core::tune::{with_bound, Bound, Candidate, Knob, Measured};

use crate::process::{run_bounded, ToolKind};
use crate::toolchain::Toolchain;

/// What assembles and reads candidates: nvcc (its ptxas), the build's nvcc arguments (so ptxas
/// gets the options the build's compile got) and nvdisasm.
#[derive(Debug, Clone)]
pub(crate) struct Assembler<'a> {
    pub(crate) toolchain: &'a Toolchain,
    pub(crate) user_args: &'a [OsString],
    pub(crate) nvdisasm: &'a Path,
}

/// One compile to make: the kernel's PTX on one arch with one bound.
#[derive(Debug, Clone)]
pub(crate) struct Job<'a> {
    pub(crate) kernel: &'a str,
    pub(crate) arch: &'a ArchFacts,
    /// The PTX module cut to the kernel, its bound's directives taken out (the source's compile
    /// at the bound, or the PTX without bounds), or why there is none.
    pub(crate) ptx: Result<&'a str, String>,
    pub(crate) knob: Knob,
    pub(crate) bound: Bound,
    pub(crate) launch: Launch,
    /// A directory of this job's own, removed after.
    pub(crate) work: PathBuf,
}

impl Assembler<'_> {
    /// The candidate `job` makes: measured, or with why it failed.
    pub(crate) fn candidate(&self, job: &Job<'_>) -> Candidate {
        let result = self.measure(job);
        let _ = std::fs::remove_dir_all(&job.work);
        Candidate::new(job.bound, result)
    }

    fn measure(&self, job: &Job<'_>) -> Result<Measured, String> {
        let threads = job.launch.block_threads;
        let ptx = job.ptx.as_ref().map_err(Clone::clone)?;
        let patched = with_bound(ptx, job.kernel, job.knob, job.bound, threads)
            .map_err(|error| error.to_string())?;
        std::fs::create_dir_all(&job.work).map_err(|error| error.to_string())?;
        let ptx_path = job.work.join("candidate.ptx");
        let cubin = job.work.join("candidate.cubin");
        std::fs::write(&ptx_path, patched).map_err(|error| error.to_string())?;
        let log = self.assemble(job.arch.name, &ptx_path, &cubin)?;
        let parsed = ptxas::parse_log(&log).map_err(|error| format!("ptxas's report: {error}"))?;
        let record = parsed
            .kernels
            .iter()
            .find(|record| record.entry && record.name == job.kernel)
            .ok_or_else(|| format!("ptxas reported nothing for `{}`", job.kernel))?;
        let text = self.disassemble(&cubin)?;
        let sections = sass::parse_nvdisasm(&text).map_err(|error| error.to_string())?;
        let section = sections
            .iter()
            .find(|section| section.entry && section.name == job.kernel)
            .ok_or_else(|| format!("nvdisasm printed no code of `{}`", job.kernel))?;
        let spilled =
            record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0;
        let facts = sass::analyze_sections(std::slice::from_ref(section), |_| spilled)
            .map_err(|error| error.to_string())?
            .pop()
            .ok_or_else(|| format!("no SASS facts for `{}`", job.kernel))?;
        let loops = sass::loop_profile(section).map_err(|error| error.to_string())?;
        let max_threads = (job.knob == Knob::MinBlocksPerSm).then_some(threads);
        Ok(Measured::new(
            job.arch,
            record,
            &facts,
            loops,
            &job.launch,
            max_threads,
        ))
    }

    /// `nvcc -cubin -arch=<arch> -Xptxas -v [the build's arguments] -o <cubin> <ptx>`: ptxas's
    /// report. Not through a compiler cache: sccache refuses a `.ptx` input.
    fn assemble(&self, arch: &str, ptx: &Path, cubin: &Path) -> Result<String, String> {
        let mut command = self.toolchain.command_without_wrapper();
        command
            .args(["-cubin", &format!("-arch={arch}"), "-Xptxas", "-v", "-o"])
            .arg(cubin)
            .args(self.user_args)
            .arg(ptx);
        let output = run_bounded(&mut command, &self.toolchain.timeouts, ToolKind::Work)
            .map_err(|error| error.to_string())?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if !output.status.success() {
            let first: Vec<&str> = stderr
                .lines()
                .filter(|line| !line.trim().is_empty())
                .take(3)
                .collect();
            return Err(format!(
                "ptxas failed ({}): {}",
                output.status,
                first.join(" / ")
            ));
        }
        Ok(stderr)
    }

    /// `nvdisasm -c -ndf -hex <cubin>`: the SASS text, with each instruction's encoding (its
    /// scheduling control bits).
    fn disassemble(&self, cubin: &Path) -> Result<String, String> {
        let mut command = Command::new(self.nvdisasm);
        command.args(["-c", "-ndf", "-hex"]).arg(cubin);
        let output = run_bounded(&mut command, &self.toolchain.timeouts, ToolKind::Work)
            .map_err(|error| error.to_string())?;
        if !output.status.success() {
            return Err(format!(
                "nvdisasm failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}
