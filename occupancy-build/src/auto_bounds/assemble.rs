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

/// Why a candidate has no measurement: the PTX cannot take the bound (no compile was made),
/// which the memo keeps as the bound's verdict; or a compile that failed, which is never a
/// verdict: it fails the whole choice and nothing of it is kept, so the next build measures
/// again. A compile fails in the tool (crashed, was killed, timed out, printed what cannot be
/// read, a file that could not be written: issue #35, class 4) or because ptxas refused the
/// candidate (`ptxas error`, `ptxas fatal`: issue #42, class 14; no bound is known that ptxas
/// refuses as impossible, it clamps or warns instead, so a refusal is of the setup and a choice
/// made from the other candidates would be a partial one).
#[derive(Debug)]
pub(crate) enum Unmeasured {
    Verdict(String),
    ToolFailed(String),
    Refused(String),
}

impl Assembler<'_> {
    /// The candidate `job` makes: measured, or with its PTX's verdict on the bound; `Err`, one
    /// line naming the bound, the kernel, the arch and what failed, when its compile failed,
    /// which measures nothing (issues #35, class 4, and #42, class 14).
    pub(crate) fn candidate(&self, job: &Job<'_>) -> Result<Candidate, String> {
        let result = self.measure(job);
        let _ = std::fs::remove_dir_all(&job.work);
        let (bound, kernel, arch) = (job.bound, job.kernel, job.arch.name);
        let failed = |how: &str, why: String| {
            format!(
                "assembling the candidate `{bound}` on {arch} failed {how} (kernel `{kernel}`): \
                 {why}; a failed compile measures nothing, so no bound was chosen and nothing \
                 of this candidate was kept: build again (a tool that ran out of time: raise \
                 OCCUPANCY_TOOL_TIMEOUT)"
            )
        };
        match result {
            Ok(measured) => Ok(Candidate::new(job.bound, Ok(measured))),
            Err(Unmeasured::Verdict(why)) => Ok(Candidate::new(job.bound, Err(why))),
            Err(Unmeasured::ToolFailed(why)) => Err(failed("in the tool, not on the bound", why)),
            Err(Unmeasured::Refused(why)) => Err(failed("in ptxas, which refused it", why)),
        }
    }

    fn measure(&self, job: &Job<'_>) -> Result<Measured, Unmeasured> {
        let tool = |error: String| Unmeasured::ToolFailed(error);
        let io = |error: std::io::Error| Unmeasured::ToolFailed(error.to_string());
        let threads = job.launch.block_threads;
        let ptx = (job.ptx.as_ref()).map_err(|why| Unmeasured::Verdict(why.clone()))?;
        let patched = with_bound(ptx, job.kernel, job.knob, job.bound, threads)
            .map_err(|error| Unmeasured::Verdict(error.to_string()))?;
        std::fs::create_dir_all(&job.work).map_err(io)?;
        let ptx_path = job.work.join("candidate.ptx");
        let cubin = job.work.join("candidate.cubin");
        std::fs::write(&ptx_path, patched).map_err(io)?;
        let log = self.assemble(job.arch.name, &ptx_path, &cubin)?;
        let parsed =
            ptxas::parse_log(&log).map_err(|error| tool(format!("ptxas's report: {error}")))?;
        let record = parsed
            .kernels
            .iter()
            .find(|record| record.entry && record.name == job.kernel)
            .ok_or_else(|| tool(format!("ptxas reported nothing for `{}`", job.kernel)))?;
        let text = self.disassemble(&cubin).map_err(tool)?;
        let sections = sass::parse_nvdisasm(&text).map_err(|error| tool(error.to_string()))?;
        let section = sections
            .iter()
            .find(|section| section.entry && section.name == job.kernel)
            .ok_or_else(|| tool(format!("nvdisasm printed no code of `{}`", job.kernel)))?;
        let spilled =
            record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0;
        let facts = sass::analyze_sections(std::slice::from_ref(section), |_| spilled)
            .map_err(|error| tool(error.to_string()))?
            .pop()
            .ok_or_else(|| tool(format!("no SASS facts for `{}`", job.kernel)))?;
        let loops = sass::loop_profile(section).map_err(|error| tool(error.to_string()))?;
        let max_threads = (job.knob == Knob::MinBlocksPerSm && job.bound != Bound::NoLaunchBounds)
            .then_some(threads);
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
    /// report. Not through a compiler cache: sccache refuses a `.ptx` input. A compile that
    /// failed is never the bound's verdict ([`Unmeasured`]): ptxas refused it when ptxas itself
    /// said why (`ptxas error`, `ptxas fatal`; its first such line is named), else the tool
    /// failed (timed out, was killed, died of a signal).
    fn assemble(&self, arch: &str, ptx: &Path, cubin: &Path) -> Result<String, Unmeasured> {
        let mut command = self.toolchain.command_without_wrapper();
        command
            .args(["-cubin", &format!("-arch={arch}"), "-Xptxas", "-v", "-o"])
            .arg(cubin)
            .args(self.user_args)
            .arg(ptx);
        let output = run_bounded(&mut command, &self.toolchain.timeouts, ToolKind::Work)
            .map_err(|error| Unmeasured::ToolFailed(error.to_string()))?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if output.status.success() {
            return Ok(stderr);
        }
        if ptxas_refused_the_input(output.status, &stderr) {
            let said = stderr
                .lines()
                .map(str::trim)
                .find(|line| line.starts_with("ptxas error") || line.starts_with("ptxas fatal"))
                .unwrap_or_default();
            return Err(Unmeasured::Refused(format!("{said} ({})", output.status)));
        }
        let first: Vec<&str> = stderr
            .lines()
            .filter(|line| !line.trim().is_empty())
            .take(3)
            .collect();
        let why = format!("ptxas failed ({}): {}", output.status, first.join(" / "));
        Err(Unmeasured::ToolFailed(why))
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

/// Whether ptxas refused its input (a failed compile either way, [`Unmeasured`]): it exited (no signal) and said
/// `ptxas error` or `ptxas fatal`, and nvcc does not report it died (`died due to signal`,
/// `core dumped`: a crash is no verdict).
fn ptxas_refused_the_input(status: std::process::ExitStatus, stderr: &str) -> bool {
    let died = stderr.contains("died due to signal") || stderr.contains("core dumped");
    let said = stderr.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("ptxas error") || line.starts_with("ptxas fatal")
    });
    status.code().is_some() && said && !died
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// Issue #35, class 4: only ptxas's own word on its input is a refusal; a crash, a kill or
    /// a failure without ptxas's diagnosis is a tool failure.
    #[test]
    fn only_ptxas_refusing_its_input_is_a_refusal() {
        let exited = std::process::ExitStatus::from_raw(255 << 8);
        let killed = std::process::ExitStatus::from_raw(9);
        let refused = "ptxas error   : Entry function 'k' uses too much shared data\n";
        assert!(ptxas_refused_the_input(exited, refused));
        assert!(!ptxas_refused_the_input(killed, refused));
        assert!(!ptxas_refused_the_input(
            exited,
            "nvcc error   : 'ptxas' died due to signal 11 (Invalid memory reference)\n"
        ));
        assert!(!ptxas_refused_the_input(
            exited,
            "ptxas fatal   : x\nnvcc error   : 'ptxas' core dumped\n"
        ));
        assert!(!ptxas_refused_the_input(exited, "Segmentation fault\n"));
    }
}
