//! Tuning one kernel of one compiled source: the archs grouped by the PTX their code comes
//! from, the kernel without bounds assembled on each, the ladder of bounds from it, every bound
//! assembled (in parallel, within the jobserver's budget; what a memo holds is not assembled
//! again), and the objective's choice per group.
//!
//! Each candidate is the code its bound ships. nvcc's front end sees `__launch_bounds__` too and
//! may make other PTX under it (other unrolling, other registers): with a [`FrontEnd`], the
//! source is compiled once per bound with the kernel given that bound's qualifiers, and each
//! candidate is ptxas's work on that PTX. Without one (a `.ptx` input, whose shipped copy is the
//! PTX with the bound's directives written in), the candidate is the PTX without bounds with the
//! bound's directives, which is then exactly what ships.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::PathBuf;

use occupancy_core::arch::{self, ArchFacts};
use occupancy_core::calc::{Carveout, Launch};
use occupancy_core::ptxas;
use occupancy_core::tune::{
    choose, ladder, with_bound, ArchLadder, Bound, Candidate, Knob, Objective, TunedCandidate,
    Tuning,
};

use super::assemble::{Assembler, Job};
use super::memo::{memo_key, Memo};
use crate::compile::CompiledSource;
use crate::toolchain::Toolchain;
use crate::Error;

/// What to tune: one kernel, the key left to the build, the launch and the declaration's
/// limits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TuneRequest {
    /// The kernel's symbol.
    pub kernel: String,
    pub knob: Knob,
    /// Threads per block of the launch.
    pub block_threads: u32,
    /// Dynamic shared memory per block of the launch.
    pub dynamic_smem_bytes: u32,
    /// Spill bytes the declaration accepts (`max_spill_bytes`, 0 when absent).
    pub accepted_spill_bytes: u64,
    /// The archs to tune on (a declaration's `archs`); `None`: every arch the source built.
    pub archs: Option<BTreeSet<String>>,
}

/// The engine's tools and places.
#[derive(Debug, Clone)]
pub struct Engine<'a> {
    pub toolchain: &'a Toolchain,
    /// `nvdisasm`, which reads each candidate's SASS.
    pub nvdisasm: PathBuf,
    /// The build's nvcc arguments, given to every candidate's ptxas too.
    pub user_args: &'a [OsString],
    /// A scratch directory of this run's own ([`unique_dir`]), removed after.
    pub work: PathBuf,
    /// Where measurements are kept between runs ([`super::memo`]); `None`: not kept.
    pub memo_root: Option<PathBuf>,
    /// The most compiles at once (with cargo's jobserver, when there is one).
    pub max_jobs: usize,
    /// What compiles the kernel's source at a bound; `None`: the bound's directives are
    /// written into the PTX without bounds (what ships for a `.ptx` input).
    pub(crate) front_end: Option<&'a dyn FrontEnd>,
}

/// Compiles the tuned kernel's source with the kernel given one bound's qualifiers on the
/// archs compiled under each `__CUDA_ARCH__` of `cuda_archs`: the code that bound ships.
pub(crate) trait FrontEnd: std::fmt::Debug {
    fn compile_at(&self, bound: Bound, cuda_archs: &[u32]) -> Result<CompiledSource, Error>;
}

/// A path under `base` no other process and no other call of this one names: `<pid>-<n>`.
pub(crate) fn unique_dir(base: &std::path::Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    base.join(format!("{}-{n}", std::process::id()))
}

/// Bounds refused after the compile that took them, per arch: each bound with the spill bytes
/// that compile had.
pub type Refusals = BTreeMap<String, Vec<(Bound, u64)>>;

/// The choice for the archs whose code comes from one PTX compiled under one `__CUDA_ARCH__`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TunedGroup {
    /// `__CUDA_ARCH__` of the PTX: 800 for compute_80.
    pub cuda_arch: u32,
    pub chosen: Bound,
    /// Per arch of the group, the choice as its report row shows it.
    pub tunings: BTreeMap<String, Tuning>,
}

/// One kernel tuned: its choice per group, and what it cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TunedKernel {
    pub kernel: String,
    pub knob: Knob,
    pub block_threads: u32,
    pub groups: Vec<TunedGroup>,
    /// Candidates assembled by this run (the rest came from the memo).
    pub assembled: usize,
}

impl TunedKernel {
    /// The choice on `arch`, as its report row shows it.
    pub fn tuning(&self, arch: &str) -> Option<&Tuning> {
        self.groups.iter().find_map(|group| group.tunings.get(arch))
    }
}

/// One arch of a group, its PTX cut to the kernel without bounds, and what is known of it.
struct Member {
    arch: &'static ArchFacts,
    ptx: String,
    /// With a front end, the PTX of each bound's compile of the source (cut to the kernel), or
    /// why there is none.
    at: BTreeMap<Bound, Result<String, String>>,
    memo: Memo,
}

impl Member {
    /// The PTX a candidate at `bound` assembles: its own compile's with a front end (the kernel
    /// without bounds is the compile tuned on), else the PTX without bounds.
    fn ptx_at(&self, bound: Bound) -> Result<&str, String> {
        match (bound, self.at.get(&bound)) {
            (Bound::None, _) | (_, None) => Ok(&self.ptx),
            (_, Some(Ok(ptx))) => Ok(ptx),
            (_, Some(Err(why))) => Err(why.clone()),
        }
    }

    /// Whether the memo holds `bound`'s candidate measured from the PTX it assembles now.
    fn measured(&self, bound: Bound) -> bool {
        match self.ptx_at(bound) {
            Ok(ptx) => self.memo.holds(bound, &memo_key(&[ptx.as_bytes()])),
            Err(_) => false,
        }
    }
}

/// One PTX program of a kernel: its text cut to the kernel and without bounds, the
/// `__CUDA_ARCH__` it was compiled under, and the archs (of the request's) assembled from it.
type KernelPtx = (String, u32, Vec<String>);

/// The PTX programs of `source` that define `request`'s kernel.
fn kernel_ptx(source: &CompiledSource, request: &TuneRequest) -> Result<Vec<KernelPtx>, String> {
    let mut found = Vec::new();
    for program in &source.programs {
        let text = std::fs::read_to_string(&program.ptx)
            .map_err(|error| format!("{}: {error}", program.ptx.display()))?;
        let wanted = BTreeSet::from([request.kernel.clone()]);
        let cut = ptxas::subset_ptx(&text, &wanted).unwrap_or(text);
        let Ok(ptx) = with_bound(
            &cut,
            &request.kernel,
            request.knob,
            Bound::None,
            request.block_threads,
        ) else {
            continue; // the kernel is not in this program
        };
        let archs: Vec<String> = program
            .archs
            .iter()
            .filter(|name| {
                request
                    .archs
                    .as_ref()
                    .is_none_or(|archs| archs.contains(*name))
            })
            .cloned()
            .collect();
        let cuda_arch = (program.ptx_target.as_deref())
            .and_then(cuda_arch_of)
            .or_else(|| archs.iter().filter_map(|name| cuda_arch_of(name)).min())
            .unwrap_or(0);
        found.push((ptx, cuda_arch, archs));
    }
    Ok(found)
}

/// `__CUDA_ARCH__` of a PTX target: `compute_80` → 800, `compute_90a` → 900, `sm_100f` → 1000.
pub(crate) fn cuda_arch_of(target: &str) -> Option<u32> {
    let number = target
        .strip_prefix("compute_")
        .or_else(|| target.strip_prefix("sm_"))?;
    let digits: String = number.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<u32>().ok().map(|value| value * 10)
}

impl Engine<'_> {
    /// Tunes `request` on the archs `source` built it for; a bound of `refused` (per arch, with
    /// the spill bytes of the compile that refused it) is not taken.
    pub fn tune(
        &self,
        source: &CompiledSource,
        request: &TuneRequest,
        refused: &Refusals,
    ) -> Result<TunedKernel, Error> {
        let fail = |message: String| Error::AutoBounds {
            kernel: request.kernel.clone(),
            knob: request.knob.key(),
            message,
        };
        let mut groups = self.groups(source, request).map_err(fail)?;
        let launch = Launch {
            block_threads: request.block_threads,
            dynamic_smem_bytes: request.dynamic_smem_bytes,
            carveout: Carveout::Default,
        };
        let assembler = Assembler {
            toolchain: self.toolchain,
            user_args: self.user_args,
            nvdisasm: &self.nvdisasm,
        };
        let _ = std::fs::remove_dir_all(&self.work);
        let mut assembled = 0;
        // The kernel without bounds on every arch first: its registers and shared memory decide
        // the ladder.
        let baselines: Vec<(usize, usize, Bound)> = (groups.iter().enumerate())
            .flat_map(|(group, members)| {
                (0..members.1.len()).map(move |member| (group, member, Bound::None))
            })
            .collect();
        assembled += self
            .assemble_missing(&assembler, request, &launch, &mut groups, &baselines)
            .map_err(fail)?;
        let mut rungs = Vec::new();
        let mut ladders = Vec::new();
        for (group, (_, members)) in groups.iter().enumerate() {
            let mut bounds = self.union_ladder(request, members).map_err(fail)?;
            if self.front_end.is_some() && request.knob == Knob::MinBlocksPerSm {
                // The source without `__launch_bounds__` at all: nvcc's front end compiles some
                // kernels differently without the block (issue #34's `depthwise`).
                bounds.insert(0, Bound::NoLaunchBounds);
            }
            for bound in &bounds {
                rungs.extend((0..members.len()).map(|member| (group, member, *bound)));
            }
            ladders.push(bounds);
        }
        if let Some(front_end) = self.front_end {
            let bounds: BTreeSet<Bound> = ladders.iter().flatten().copied().collect();
            compile_front_end(front_end, request, &mut groups, &bounds)?;
        }
        assembled += self
            .assemble_missing(&assembler, request, &launch, &mut groups, &rungs)
            .map_err(fail)?;
        let _ = std::fs::remove_dir_all(&self.work);
        let objective = Objective::new(request.accepted_spill_bytes);
        let tuned = groups
            .iter()
            .zip(&ladders)
            .map(|((cuda_arch, members), bounds)| {
                choose_group(&objective, request, (*cuda_arch, members), bounds, refused)
            })
            .collect();
        for (_, members) in &groups {
            for member in members {
                member.memo.save();
            }
        }
        Ok(TunedKernel {
            kernel: request.kernel.clone(),
            knob: request.knob,
            block_threads: request.block_threads,
            groups: tuned,
            assembled,
        })
    }

    /// Per arch `source` built `request`'s kernel for, a digest of its PTX cut to the kernel and
    /// without bounds: what the tuning of that compile was made from.
    pub(crate) fn kernel_digests(
        source: &CompiledSource,
        request: &TuneRequest,
    ) -> BTreeMap<String, String> {
        let mut digests = BTreeMap::new();
        for (ptx, _, archs) in kernel_ptx(source, request).unwrap_or_default() {
            let digest = memo_key(&[ptx.as_bytes()]);
            for arch in archs {
                digests.insert(arch, digest.clone());
            }
        }
        digests
    }

    /// The archs of `source` to tune on, grouped by the `__CUDA_ARCH__` of the PTX their code
    /// comes from, each with its PTX cut to the kernel and without bounds.
    fn groups(
        &self,
        source: &CompiledSource,
        request: &TuneRequest,
    ) -> Result<Vec<(u32, Vec<Member>)>, String> {
        let mut groups: BTreeMap<u32, Vec<Member>> = BTreeMap::new();
        for (ptx, cuda_arch, archs) in kernel_ptx(source, request)? {
            for name in archs {
                let Ok(facts) = arch::lookup(&name) else {
                    continue;
                };
                let key = self.key(&ptx, &name, request);
                let memo = Memo::open(self.memo_root.as_deref(), &request.kernel, &name, key);
                groups.entry(cuda_arch).or_default().push(Member {
                    arch: facts,
                    ptx: ptx.clone(),
                    at: BTreeMap::new(),
                    memo,
                });
            }
        }
        if groups.is_empty() {
            return Err(format!(
                "no compiled PTX of {} defines it",
                source.source.display()
            ));
        }
        Ok(groups.into_iter().collect())
    }

    /// The memo key of one arch's candidates (module docs of `memo`).
    fn key(&self, ptx: &str, arch: &str, request: &TuneRequest) -> String {
        let args: Vec<u8> = self
            .user_args
            .iter()
            .flat_map(|arg| {
                arg.to_string_lossy()
                    .into_owned()
                    .into_bytes()
                    .into_iter()
                    .chain([0])
            })
            .collect();
        memo_key(&[
            ptx.as_bytes(),
            arch.as_bytes(),
            request.knob.key().as_bytes(),
            &request.block_threads.to_le_bytes(),
            &request.dynamic_smem_bytes.to_le_bytes(),
            &args,
            self.toolchain.fingerprint.as_bytes(),
            self.toolchain.version_text.as_bytes(),
        ])
    }

    /// Every bound of the members' ladders, in ladder order (fewest blocks, largest cap first).
    fn union_ladder(
        &self,
        request: &TuneRequest,
        members: &[Member],
    ) -> Result<Vec<Bound>, String> {
        let mut bounds = BTreeSet::new();
        for member in members {
            let baseline = member.memo.candidates.get(&Bound::None);
            let Some(measured) = baseline.and_then(|found| found.measured.as_ref()) else {
                let why = baseline
                    .and_then(|found| found.failure.clone())
                    .unwrap_or_default();
                return Err(format!(
                    "the kernel without bounds could not be assembled for {}: {why}",
                    member.arch.name
                ));
            };
            let input = measured.ladder_input(
                request.knob,
                request.block_threads,
                request.dynamic_smem_bytes,
            );
            bounds.extend(
                ladder(member.arch, &input)
                    .into_iter()
                    .map(|rung| rung.bound),
            );
        }
        let mut bounds: Vec<Bound> = bounds.into_iter().collect();
        if request.knob == Knob::MaxRegisters {
            bounds.reverse();
        }
        Ok(bounds)
    }

    /// Assembles every `(group, member, bound)` the members' memos lack, in parallel; how many.
    /// A compile that failed on a candidate fails the choice, naming the candidate, and nothing
    /// of it is kept: a crash, a kill, a timeout or ptxas's refusal is never that bound's
    /// verdict (issues #35, class 4, and #42, class 14). The candidates measured meanwhile are
    /// kept.
    fn assemble_missing(
        &self,
        assembler: &Assembler<'_>,
        request: &TuneRequest,
        launch: &Launch,
        groups: &mut [(u32, Vec<Member>)],
        wanted: &[(usize, usize, Bound)],
    ) -> Result<usize, String> {
        let missing: Vec<(usize, usize, Job<'_>)> = wanted
            .iter()
            .filter(|(group, member, bound)| !groups[*group].1[*member].measured(*bound))
            .enumerate()
            .map(|(index, &(group, member, bound))| {
                let of = &groups[group].1[member];
                let job = Job {
                    kernel: &request.kernel,
                    arch: of.arch,
                    ptx: of.ptx_at(bound),
                    knob: request.knob,
                    bound,
                    launch: *launch,
                    work: self.work.join(format!("{index}")),
                };
                (group, member, job)
            })
            .collect();
        let count = missing.len();
        let tasks: Vec<_> = missing
            .iter()
            .map(|(_, _, job)| move |_: &crate::jobs::Lender<'_>| assembler.candidate(job))
            .collect();
        let found: Vec<Result<Candidate, String>> = crate::jobs::run_all(tasks, self.max_jobs);
        let places: Vec<(usize, usize, Option<String>)> = missing
            .iter()
            .map(|(group, member, job)| {
                let digest = job.ptx.as_ref().ok().map(|ptx| memo_key(&[ptx.as_bytes()]));
                (*group, *member, digest)
            })
            .collect();
        drop(missing);
        let mut failed = None;
        for ((group, member, digest), candidate) in places.into_iter().zip(found) {
            let member = &mut groups[group].1[member];
            match candidate {
                Ok(candidate) => member.memo.insert(candidate, digest),
                Err(why) => {
                    failed.get_or_insert(why);
                }
            }
        }
        if let Some(message) = failed {
            groups
                .iter()
                .flat_map(|(_, members)| members)
                .for_each(|member| member.memo.save());
            return Err(message);
        }
        Ok(count)
    }
}

/// The source compiled at each of `bounds` by `front_end`: each member's PTX at the bound (its
/// group's `__CUDA_ARCH__`), or why there is none. One compile per bound, every group at once.
fn compile_front_end(
    front_end: &dyn FrontEnd,
    request: &TuneRequest,
    groups: &mut [(u32, Vec<Member>)],
    bounds: &BTreeSet<Bound>,
) -> Result<(), Error> {
    let cuda_archs: Vec<u32> = groups.iter().map(|(cuda_arch, _)| *cuda_arch).collect();
    for bound in bounds {
        let compiled = front_end.compile_at(*bound, &cuda_archs)?;
        let programs = kernel_ptx(&compiled, request).map_err(|message| Error::AutoBounds {
            kernel: request.kernel.clone(),
            knob: request.knob.key(),
            message,
        })?;
        let not_taken = not_taken(&compiled, request, *bound);
        for (cuda_arch, members) in groups.iter_mut() {
            for member in members.iter_mut() {
                let found = programs.iter().find(|(_, program_arch, archs)| {
                    program_arch == cuda_arch && archs.iter().any(|arch| arch == member.arch.name)
                });
                let ptx = found
                    .ok_or_else(|| {
                        format!(
                            "the source compiled with {bound} has no PTX of the kernel for {}",
                            member.arch.name
                        )
                    })
                    .and_then(|(ptx, _, _)| match &not_taken {
                        Some(why) => Err(why.clone()),
                        None => Ok(ptx.clone()),
                    });
                member.at.insert(*bound, ptx);
            }
        }
    }
    Ok(())
}

/// Why the kernel of `compiled` (the source at `bound`) did not take the bound, if it did not:
/// at [`Bound::NoLaunchBounds`] its entry must have no `.maxntid`, else its source writes
/// `__launch_bounds__` of its own (not `OCCUPANCY_BOUNDS_<kernel>`) and no compile of it ships
/// without one.
fn not_taken(compiled: &CompiledSource, request: &TuneRequest, bound: Bound) -> Option<String> {
    if bound != Bound::NoLaunchBounds {
        return None;
    }
    let wanted = BTreeSet::from([request.kernel.clone()]);
    let declares_block = compiled.programs.iter().any(|program| {
        let text = std::fs::read_to_string(&program.ptx).unwrap_or_default();
        let cut = ptxas::subset_ptx(&text, &wanted).unwrap_or(text);
        entry_directives(&cut, &request.kernel).is_some_and(|found| found.contains(".maxntid"))
    });
    declares_block.then(|| {
        format!(
            "compiled without `OCCUPANCY_BOUNDS_{}`'s launch bounds, the kernel still has a `.maxntid`: its source gives it `__launch_bounds__` of its own",
            request.kernel
        )
    })
}

/// The directives of kernel `name`'s entry in `ptx`: the text between its parameter list and
/// its body.
fn entry_directives<'a>(ptx: &'a str, name: &str) -> Option<&'a str> {
    let entry = ptx.find(&format!(".entry {name}("))?;
    let parameters_end = entry + ptx[entry..].find(')')? + 1;
    let body = parameters_end + ptx[parameters_end..].find('{')?;
    Some(&ptx[parameters_end..body])
}

/// The objective's choice for one group among `bounds` (its ladder), and each member's report
/// of it.
fn choose_group(
    objective: &Objective,
    request: &TuneRequest,
    (cuda_arch, members): (u32, &[Member]),
    bounds: &[Bound],
    refused: &Refusals,
) -> TunedGroup {
    let ladders: Vec<ArchLadder> = members
        .iter()
        .map(|member| ArchLadder {
            arch: member.arch.name.to_string(),
            candidates: std::iter::once(Bound::None)
                .chain(bounds.iter().copied())
                .map(|bound| {
                    member
                        .memo
                        .candidates
                        .get(&bound)
                        .cloned()
                        .map(|mut candidate| {
                            candidate.refused_spill_bytes = (refused.get(member.arch.name))
                                .and_then(|bounds| {
                                    bounds.iter().find(|(refused, _)| *refused == bound)
                                })
                                .map(|(_, spill_bytes)| *spill_bytes);
                            candidate
                        })
                        .unwrap_or_else(|| Candidate::new(bound, Err("not assembled".into())))
                })
                .collect(),
        })
        .collect();
    let choice = choose(objective, request.knob, &ladders);
    let archs: Vec<String> = ladders.iter().map(|ladder| ladder.arch.clone()).collect();
    let tunings = ladders
        .into_iter()
        .zip(choice.verdicts)
        .map(|(ladder, verdicts)| {
            let tuning = Tuning {
                knob: request.knob,
                chosen: choice.chosen,
                reason: choice.reason.clone(),
                decided_by: choice.decided_by,
                loop_growth_percent: objective.loop_growth_percent,
                shared_with: archs
                    .iter()
                    .filter(|arch| **arch != ladder.arch)
                    .cloned()
                    .collect(),
                candidates: ladder
                    .candidates
                    .into_iter()
                    .zip(verdicts)
                    .map(|(candidate, verdict)| TunedCandidate { candidate, verdict })
                    .collect(),
            };
            (ladder.arch, tuning)
        })
        .collect();
    TunedGroup {
        cuda_arch,
        chosen: choice.chosen,
        tunings,
    }
}

#[cfg(test)]
mod tests {
    use super::entry_directives;

    /// What tells a compile without `OCCUPANCY_BOUNDS_<kernel>`'s bounds that the source gave
    /// the kernel `__launch_bounds__` of its own: its entry's directives, and only its.
    #[test]
    fn an_entrys_directives_lie_between_its_parameters_and_its_body() {
        let ptx = ".visible .entry k(\n\t.param .u64 p\n)\n.maxntid 256, 1, 1\n{\n\tret;\n}\n.visible .entry j(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";
        assert_eq!(
            entry_directives(ptx, "k").map(str::trim),
            Some(".maxntid 256, 1, 1")
        );
        assert_eq!(entry_directives(ptx, "j").map(str::trim), Some(""));
        assert_eq!(entry_directives(ptx, "i"), None);
    }
}
