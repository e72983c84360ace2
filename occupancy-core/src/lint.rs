//! Lints: every check the build gate can report, each declared once below, clippy-style.
//!
//! A declaration holds the lint's id, its default level, its documentation (summary, why it is
//! bad, an example, the fix) and names its check, the function that finds it ([`Check`]). The
//! id's spelling in attributes, config keys, JSON and the environment, `docs/lints.md`
//! ([`render_lints_markdown`], a test fails when the committed file drifts), the SARIF rules
//! and which checks [`evaluate`] runs where are all read from the declaration (`LINTS`).
//!
//! Users set levels in clippy's words, most specific wins:
//!
//! 1. per kernel, in the attribute: `#[occupancy::kernel(block = 256, warn(spills))]`;
//! 2. by environment: `OCCUPANCY_LINT_SPILLS=warn` ([`LintId::env_var`]);
//! 3. per crate: `[package.metadata.occupancy.lints]` then `[workspace.metadata.occupancy.lints]`
//!    with `spills = "warn"` ([`LintId::as_str`] is the key);
//! 4. the default ([`LintId::default_level`]).
//!
//! The checks live beside this file: [`evaluate`] runs them and levels their findings;
//! `launch`, `bounds`, `cliff` and `clusters` check a launch on an architecture, `kernels`, `baseline` and
//! `expectation` make the findings the build decides on, and `sass` checks the machine code
//! ([`crate::sass`]'s facts).

#[macro_use]
mod registry;

mod baseline;
mod bounds;
mod checked_launch;
mod cliff;
mod clusters;
mod docs;
pub mod evaluate;
mod expectation;
mod finding;
mod grid;
use crate::lint_id as id;
mod kernels;
mod launch;
mod level;
mod minimum;
mod register_cap;
use crate::names;
mod sass;
mod smem_spill;
mod summary;

pub use docs::render_lints_markdown;
pub use id::{LintId, UnknownLint};
pub use level::{Level, UnknownLevel};
pub use names::{closest_names, did_you_mean};
pub use registry::{Check, Lint};

declare_lints! {
    Spills {
        default_level: Deny,
        summary: "ptxas spilled registers to local memory: spill bytes above the declared `max_spill_bytes` (default 0).",
        phrase: ("spills registers to local memory", "spill registers to local memory"),
        why_bad: "Spilled values live in local memory, which is cached device memory: every spill store and load is a memory round trip in the kernel's hot path, often costing more than the occupancy the register cap bought.",
        example: "`#[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]` on a kernel that needs 96 registers per thread: 8 blocks of 256 threads leave ptxas 32 registers, so it spills.",
        fix: "Lower `min_blocks_per_sm` (the diagnostic names the largest value that keeps the kernel spill-free), raise `max_registers`, reduce live values in the kernel, or accept the spills with `max_spill_bytes = N`.",
        check: Check::OnArch { run: launch::spills, undeclared: true },
    }
    LowOccupancy {
        default_level: Deny,
        summary: "Theoretical occupancy on some target architecture is below the declared `min_occupancy`.",
        phrase: ("is below its declared occupancy", "are below their declared occupancy"),
        why_bad: "Too few resident warps leave the SM idle while warps wait on memory; the kernel runs at a fraction of the bandwidth or throughput the crate expects.",
        example: "`#[occupancy::kernel(block = 256, min_occupancy = 0.5)]` on a kernel using 128 registers per thread: on sm_90 only 2 blocks (512 of 2048 threads, 25%) fit.",
        fix: "Reduce registers (`min_blocks_per_sm` or `max_registers`), shared memory or block size; or lower `min_occupancy`, or `expect(low_occupancy, reason = \"...\")` when low occupancy is deliberate (register tiling).",
        check: Check::OnArch { run: launch::low_occupancy, undeclared: false },
    }
    TooManyRegisters {
        default_level: Deny,
        summary: "The kernel uses more registers per thread than the declared `max_registers_per_thread`.",
        phrase: ("uses more registers than declared", "use more registers than declared"),
        why_bad: "Registers per thread decide how many warps fit on an SM; a kernel that grows past the budget its authors set loses occupancy (or spills once capped) without anyone deciding it.",
        example: "`#[occupancy::kernel(block = 256, max_registers_per_thread = 64)]` on a kernel that ptxas compiles to 72 registers per thread.",
        fix: "Reduce live values, cap registers at compile time with `max_registers = N` (ptxas may spill), raise `max_registers_per_thread`, or `allow(too_many_registers)`.",
        check: Check::OnArch { run: launch::too_many_registers, undeclared: false },
    }
    Unlaunchable {
        default_level: Deny,
        summary: "The declared launch cannot start on some target architecture.",
        phrase: ("cannot start at its launch", "cannot start at their launch"),
        why_bad: "The launch fails at run time (too many resources requested for launch, or invalid argument), on exactly the GPUs named, usually far from where the kernel was changed.",
        example: "`#[occupancy::kernel(block = 1024)]` on a kernel using 72 registers per thread: 1024 x 72 = 73728 registers, above the 65536 per block.",
        fix: "Make the block smaller, cap registers with `min_blocks_per_sm` or `max_registers`, or lower `dynamic_smem`; or drop the architecture from `archs`.",
        check: Check::OnArch { run: bounds::unlaunchable, undeclared: true },
    }
    BoundsMismatch {
        default_level: Deny,
        summary: "The compiled kernel's launch bounds (`.maxntid`, `.minnctapersm`, `.maxnreg`) differ from the declaration.",
        phrase: ("was not compiled with its declared bounds", "were not compiled with their declared bounds"),
        why_bad: "The declaration is what the crate launches with; a kernel compiled for other bounds either spends registers the launch cannot use or cannot be launched with the declared block.",
        example: "`#[occupancy::kernel(block = 256, min_blocks_per_sm = 4)]` while the .cu kernel says `__launch_bounds__(128)`.",
        fix: "Take the bounds from the declaration: `__launch_bounds__(OCCUPANCY_BOUNDS_<kernel>)` from the generated `occupancy_bounds.h`, or edit one side to match the other.",
        check: Check::OnArch { run: bounds::bounds_mismatch, undeclared: false },
    }
    MissingKernel {
        default_level: Deny,
        summary: "A declared kernel was not found in any compiled output.",
        phrase: ("is not compiled", "are not compiled"),
        why_bad: "Nothing about the kernel could be checked: a renamed or removed kernel, a C++ name without `extern \"C\"`, or a file not handed to the builder would otherwise pass silently.",
        example: "`#[occupancy::kernel(block = 256)] fn saxpy();` while the .cu file defines `saxpy_f32`.",
        fix: "Set `name = \"...\"` to the compiled symbol (the mangled name for C++ kernels), declare the kernel `extern \"C\"`, or add its file to the builder.",
        check: Check::Matching { kernel: kernels::missing_kernel, family: kernels::family_matches_nothing },
    }
    StackFrame {
        default_level: Warn,
        summary: "The kernel's stack frame is above the declared `max_stack_bytes` (any stack when none is declared).",
        phrase: ("has a stack frame", "have a stack frame"),
        why_bad: "Stack lives in local memory: each thread's frame costs memory traffic and, for deep call chains or recursion, device memory reserved per resident thread.",
        example: "A kernel calling a non-inlined device function with a 64-byte local array: ptxas reports `64 bytes stack frame`.",
        fix: "Inline the callee (`__forceinline__`), keep arrays indexed by constants so they stay in registers, or declare `max_stack_bytes = N`.",
        check: Check::OnArch { run: launch::stack_frame, undeclared: true },
    }
    StackUnknown {
        default_level: Warn,
        summary: "The compiler could not size the kernel's stack: its call graph has recursion or an indirect call.",
        phrase: ("has a stack of unknown size", "have a stack of unknown size"),
        why_bad: "No stack figure is a checked one: the driver sizes the stack at launch from `cudaLimitStackSize` (1 KiB a thread by default), so a deep recursion overflows it at run time, and a larger limit reserves device memory for every resident thread. Reported as unknown, never as 0 bytes.",
        example: "A recursive `__noinline__` device function called from a kernel compiled with `-G`: ptxas warns `Stack size for entry function 'k' cannot be statically determined`, cuobjdump prints `STACK:UNKNOWN`.",
        fix: "Bound the recursion by a loop with an explicit stack, call through no function pointer, or set `cudaLimitStackSize` for the depth the kernel reaches and `allow(stack_unknown)`.",
        check: Check::OnArch { run: launch::stack_unknown, undeclared: true },
    }
    LocalMemory {
        default_level: Warn,
        summary: "The kernel uses local memory (`ld.local`/`st.local`) beyond register spills.",
        phrase: ("uses local memory", "use local memory"),
        why_bad: "Local memory is device memory behind the L1 cache; arrays indexed at run time and large structs placed there turn register reads into memory traffic.",
        example: "`float acc[16]; acc[threadIdx.x % 16] += x;`: the run-time index forces `acc` into local memory.",
        fix: "Index local arrays with compile-time constants (unrolled loops), use shared memory for per-block scratch, or `allow(local_memory)`.",
        check: Check::OnArch { run: launch::local_memory, undeclared: false },
    }
    OccupancyCliff {
        default_level: Warn,
        summary: "A few more registers or bytes of shared memory would cost a resident block on some architecture.",
        phrase: ("is a few registers from losing a block", "are a few registers from losing a block"),
        why_bad: "The next small change to the kernel (one more live variable) silently drops occupancy by a whole block; knowing the margin keeps that drop a decision, not an accident.",
        example: "A 256-thread kernel at 64 registers on sm_90: 4 blocks fit; at 65 registers (allocated as 72) only 3 do.",
        fix: "Leave it as a warning to watch, cap registers at the current value (`max_registers = 64`), or `allow(occupancy_cliff)`.",
        check: Check::OnArch { run: cliff::occupancy_cliff, undeclared: false },
    }
    PartialWarp {
        default_level: Warn,
        summary: "The declared block is not a multiple of the warp size (32 threads).",
        phrase: ("is launched with a partial warp", "are launched with a partial warp"),
        why_bad: "Threads are scheduled in warps of 32: the last warp of each block runs partly empty, and the idle lanes still take registers and issue slots.",
        example: "`#[occupancy::kernel(block = 100)]`: 4 warps are allocated, 28 lanes idle in every block.",
        fix: "Round the block up to a multiple of 32 and guard the extra threads with a bounds check, or `allow(partial_warp)`.",
        check: Check::Launch { run: launch::partial_warp, undeclared: false },
    }
    UndeclaredKernel {
        default_level: Allow,
        summary: "A compiled kernel has no `#[occupancy::kernel]` declaration.",
        phrase: ("is compiled without a declaration", "are compiled without a declaration"),
        why_bad: "An undeclared kernel is only checked for the hard failures (spills, in loops and to shared memory too, unlaunchable launches, stack frames, a dropped `setmaxnreg`, a minimum blocks per SM that cannot take effect), at the crate's default launch (`block` under `[package.metadata.occupancy]`, 256 threads when unset, or the kernel's smaller `__launch_bounds__`), not against the crate's intent; findings of many undeclared kernels are shown as one summary per lint, the full list in the report.",
        example: "A .cu file defines `__global__ void transpose(...)` but no Rust stub declares it.",
        fix: "Declare it next to its Rust stub with `#[occupancy::kernel(...)]` (one `family = \"prefix_*\"` declaration covers a macro-generated family), or leave this lint at its default `allow`.",
        check: Check::Undeclared(kernels::undeclared_kernel),
    }
    Regression {
        default_level: Deny,
        summary: "A kernel is worse than the committed baseline (`occupancy.lock`): more registers, spills or stack, or lower occupancy.",
        phrase: ("is worse than the baseline", "are worse than the baseline"),
        why_bad: "Regressions in resource use are invisible in review and show up as slowdowns much later; the baseline makes every one a visible diff.",
        example: "The baseline records 40 registers and 50% occupancy on sm_80; a change makes it 48 registers and 37.5%.",
        fix: "Fix the kernel, or accept the new numbers with `OCCUPANCY_BLESS=1 cargo build` (or `cargo occupancy bless`) and commit the updated baseline.",
        check: Check::Worse(baseline::regression),
    }
    BaselineStale {
        default_level: Warn,
        summary: "The committed baseline (`occupancy.lock`) no longer equals what the code compiles to: a kernel got better, is new or gone, or the toolchain changed.",
        phrase: ("differs from the baseline", "differ from the baseline"),
        why_bad: "A one-way baseline lets improvements rot: the next regression back to the old numbers passes unnoticed, and the file stops reading like the history of the kernels.",
        example: "The baseline records 48 registers on sm_90; a change makes it 40 (occupancy 50% -> 62.5%), and the file still says 48.",
        fix: "Run `OCCUPANCY_BLESS=1 cargo build` and commit the baseline with the change; in CI set `baseline_stale = \"deny\"` (or `OCCUPANCY_LINT_BASELINE_STALE=deny`) so the committed file always matches.",
        check: Check::Stale(baseline::baseline_stale),
    }
    UnfulfilledExpectation {
        default_level: Deny,
        summary: "A declaration expects a finding (`expect(spills, reason = \"...\")`) that no longer occurs.",
        phrase: ("has an unfulfilled expectation", "have an unfulfilled expectation"),
        why_bad: "An exception that outlives its cause hides the next real finding of the same lint; like Rust's `#[expect]`, it must be removed when it is no longer needed.",
        example: "`#[occupancy::kernel(block = 256, expect(spills, reason = \"tracked in #12\"))]` on a kernel that no longer spills on any target arch.",
        fix: "Remove the `expect(...)` from the declaration (the finding is gone), or keep it as `allow(...)` if the exception should stay without being checked.",
        check: Check::Expectation(expectation::unfulfilled_expectation),
    }
    SpillInLoop {
        default_level: Deny,
        summary: "Spill loads or stores sit inside a loop of the kernel's machine code (SASS), at the source lines named.",
        phrase: ("spills inside a loop", "spill inside a loop"),
        why_bad: "A spill inside a loop is a local-memory round trip on every iteration, which is where spills cost time; a spill outside loops runs once and stays with `spills` at its own level.",
        example: "A loop that updates 48 accumulators under `__launch_bounds__(256, 8)` (32 registers): ptxas spills some of them and reloads them in the loop body on every iteration.",
        fix: "Give the loop more registers (lower `min_blocks_per_sm`, raise `max_registers`, move `setmaxnreg` budget to the warps that run the loop), keep fewer values live across the loop at the line named, or `allow(spill_in_loop)` when the loop is cold.",
        check: Check::Sass { run: sass::spill_in_loop, undeclared: true },
    }
    LocalArray {
        default_level: Warn,
        summary: "A local array is indexed at run time: the SASS reads or writes local memory at a computed address, at the line named.",
        phrase: ("indexes a local array at run time", "index a local array at run time"),
        why_bad: "An array indexed by a value the compiler cannot resolve cannot live in registers; every access is a local-memory access, often inside the loop that computes the index.",
        example: "`float table[32]; ... sum += table[index[i] & 31];`: ptxas places `table` in local memory and each lookup is an `LDL`.",
        fix: "Index with compile-time constants (unroll the loop), use shared memory for tables, select with a switch or shuffles, or `allow(local_array)`.",
        check: Check::Sass { run: sass::local_array, undeclared: false },
    }
    SetmaxnregIgnored {
        default_level: Deny,
        summary: "ptxas dropped a `setmaxnreg`: the PTX has it and the SASS has no `USETMAXREG`; the finding quotes ptxas's reason (C7508: no register count at entry, C7504: separate compilation, C7505: `-G`) and the fix for it.",
        phrase: ("has a `setmaxnreg` ptxas ignored", "have a `setmaxnreg` ptxas ignored"),
        why_bad: "Warp-specialised kernels rely on `setmaxnreg` to give consumer warps more registers; ignored, every warp keeps the entry count, and the consumers spill or the budget plan silently does nothing.",
        example: "`setmaxnreg.inc.sync.aligned.u32 240;` in a kernel without `__launch_bounds__`: ptxas prints `(C7508) ... 'setmaxnreg' ignored` and emits no `USETMAXREG`.",
        fix: "Give the kernel launch bounds with a maximum block size (`__launch_bounds__(OCCUPANCY_BOUNDS_<kernel>)` from the declaration, or `__launch_bounds__(384, 1)`), so ptxas knows the register count at entry.",
        check: Check::Sass { run: sass::setmaxnreg_ignored, undeclared: true },
    }
    SetmaxnregBudget {
        default_level: Deny,
        summary: "The kernel's warp-specialised `setmaxnreg` budgets need more registers than the declared block is allocated.",
        phrase: ("asks `setmaxnreg` for more registers than the block has", "ask `setmaxnreg` for more registers than the block has"),
        why_bad: "`setmaxnreg.inc` waits until the block's pool has the registers; if the roles' budgets add up to more than the block got at launch, the increasing warps wait forever or the plan cannot hold.",
        example: "384 threads at 168 registers (64512 per block): one producer warpgroup at 40 and two consumers at 240 need 128 x (40 + 2 x 240) = 66560.",
        fix: "Lower the consumers' `setmaxnreg.inc` value or raise the producer's `.dec` release so that 128 x (producer + consumers x warpgroups) fits the block's allocation, or change the block size.",
        check: Check::Sass { run: sass::setmaxnreg_budget, undeclared: false },
    }
    Fp64 {
        default_level: Allow,
        summary: "The kernel runs double-precision instructions (`DFMA`, `DADD`, `DMUL`, ...); the finding counts them.",
        phrase: ("runs double-precision instructions", "run double-precision instructions"),
        why_bad: "FP64 throughput is 1/2 of FP32 on data-centre GPUs but 1/64 on consumer ones; a stray `double` literal or `sin` instead of `sinf` can make a float kernel FP64-bound.",
        example: "`out[i] = sin(x[i]);` on a `float` array promotes to double: DFMA/DMUL in the SASS and a call to the double-precision sin/cos slow path.",
        fix: "Use `float` literals (`1.0f`) and functions (`sinf`, `expf`), `-use_fast_math` where acceptable; or leave this lint at its default `allow` when FP64 is intended.",
        check: Check::Sass { run: sass::fp64, undeclared: false },
    }
    Call {
        default_level: Warn,
        summary: "The kernel makes non-inlined calls (`CALL`) in its SASS; the finding names each callee and, for math-library helpers and the device library's functions, what it is. A call through a register is named by the function the register holds, read from the cubin's relocations (`assert` calls `__assertfail`, `printf` `vprintf`, `new`/`delete` `malloc`/`free`); one through a function pointer is reported as an indirect call. ptxas's own arithmetic subroutines (the IEEE division, square root and reciprocal slow paths, 64-bit integer division) are not counted: ptxas branches to them only for operands its inline fast path cannot handle, and calls them without a frame.",
        phrase: ("makes non-inlined calls", "make non-inlined calls"),
        why_bad: "A call spills live registers around it to the callee's frame in local memory and blocks optimisation across it; in a loop, that cost is paid every iteration.",
        example: "`sin(x)` on a double: ptxas calls `__internal_trig_reduction_slowpathd`, the double-precision sin/cos slow path, with a local-memory frame.",
        fix: "The fix the finding names: for math helpers `sinf`/`__sinf`/`-use_fast_math`, for `assert` `-DNDEBUG` in release builds, for `printf` none in release builds; for your own functions, `__forceinline__`; for a function pointer, a direct call or a `switch` over the functions; or `allow(call)`.",
        check: Check::Sass { run: sass::calls, undeclared: false },
    }
    ConstMemory {
        default_level: Deny,
        summary: "The kernel's constant memory (its parameter bank `cmem[0]` and its module's `__constant__` data `cmem[3]`, as ptxas reports them before sm_90 and the cubin holds them on every arch) is above the declared `max_const_bytes`.",
        phrase: ("uses more constant memory than declared", "use more constant memory than declared"),
        why_bad: "Constant memory is read through a small per-SM cache (8 KB): tables and parameter blocks that outgrow it turn every constant read into a memory round trip, and a lookup table that grows unnoticed (generated coefficients, a bigger by-value parameter struct) slows every kernel of the module.",
        example: "`#[occupancy::kernel(block = 256, max_const_bytes = 4096)]` on a kernel whose module declares `__constant__ float table[2048]` (8192 bytes): ptxas reports `8192 bytes cmem[3]` on sm_80.",
        fix: "Shrink the `__constant__` data or move large tables to global memory (read through `__ldg`/`const __restrict__`), pass large parameters by pointer, split modules so each kernel carries its own tables, or raise `max_const_bytes`.",
        check: Check::OnArch { run: launch::const_memory, undeclared: false },
    }
    UnreachableBound {
        default_level: Warn,
        summary: "A minimum blocks per SM the kernel was compiled with (`__launch_bounds__(T, B)`, `min_blocks_per_sm`) cannot take effect on some architecture: ptxas ignored it (an SM holds fewer than `B` blocks of `T` threads), or shared memory or barriers let fewer blocks reside; the finding names the limit and the largest minimum that can take effect.",
        phrase: ("has a minimum blocks per SM that cannot take effect", "have a minimum blocks per SM that cannot take effect"),
        why_bad: "A minimum ptxas ignores (it warns once, `.minnctapersm will be ignored`) leaves the kernel compiled as if none were given: the same source gets a register cap and spills on one architecture and none on another, while the code and its notes assume the cap. A minimum shared memory or barriers keep out of reach still caps registers, squeezing (or spilling) the kernel for blocks that never run.",
        example: "`__launch_bounds__(1024, 4)` asks for 4096 threads per SM; sm_80 and sm_90 hold 2048, sm_86, sm_89 and sm_120 1536: ptxas ignores the minimum everywhere. `__launch_bounds__(256, 5)` with 48 KiB of static shared memory: ptxas caps registers at 48 per thread for 5 blocks, but only 3 fit the shared memory of sm_80.",
        fix: "Ask for at most the largest minimum the finding names for each architecture (`min_blocks_per_sm`, or the second argument of `__launch_bounds__`), use less shared memory per block, or drop the minimum; `allow(unreachable_bound)` when the bound is meant for other architectures.",
        check: Check::OnArch { run: bounds::unreachable_bound, undeclared: true },
    }
    RegisterCapIgnored {
        default_level: Warn,
        summary: "ptxas compiled the kernel under another register cap than the one asked for, and warned: a `__maxnreg__`/`.maxnreg` or `-maxrregcount` below the fewest registers ptxas compiles a kernel for (24 from sm_70 on, 16 before, with ptxas 12.9 and 13.0) is raised to that bound, and `-maxntid`/`-minnctapersm` beside `-maxrregcount` are dropped; the finding quotes the warning.",
        phrase: ("was compiled under another register cap than asked", "were compiled under another register cap than asked"),
        why_bad: "The cap is how the author sized the kernel's occupancy: raised, the kernel holds more registers than planned and fewer blocks fit than the cap promised; an option ptxas dropped leaves `-maxrregcount` alone to cap it. ptxas says so once, in a warning a build log buries.",
        example: "`__global__ void __maxnreg__(8) tiny(float* out)`: ptxas 13.0 warns `For entry tiny adjusting per thread register count of 8 to lower bound of 24` and compiles under a cap of 24.",
        fix: "Ask for a cap ptxas applies (the lower bound the finding names, or more), or drop it; pass `-maxrregcount` or `-maxntid`/`-minnctapersm` to ptxas, not both.",
        check: Check::OnArch { run: register_cap::register_cap_ignored, undeclared: true },
    }
    SmemSpill {
        default_level: Warn,
        summary: "ptxas spilled registers to shared memory (`.pragma \"enable_smem_spilling\"`, CUDA 13): part of the kernel's static shared memory is ptxas's spill area, told apart from the shared memory the kernel declares; the finding gives its bytes and whether it costs a resident block.",
        phrase: ("spills registers to shared memory", "spill registers to shared memory"),
        why_bad: "A spill is still a spill: the spilled values make shared-memory round trips instead of local-memory ones, and the area is sized for the compiled block (`__launch_bounds__`, or 1024 threads without it) whatever the launch uses, so it can cost resident blocks no line of the kernel asks for. ptxas prints it only inside `N bytes smem`.",
        example: "`__launch_bounds__(256, 8)` with `asm volatile(\".pragma \\\"enable_smem_spilling\\\";\");` on a loop of 48 accumulators: ptxas reports 20480 bytes of static shared memory on sm_80, all of it spill area; with the driver's 1 KiB per block, 7 blocks fit where the registers allow 8.",
        fix: "Keep it where the spilled values are hot and the area costs no block; otherwise give ptxas more registers (a lower minimum blocks per SM, a higher `max_registers`), give the kernel `__launch_bounds__` of the block it is launched with, or remove the pragma; `allow(smem_spill)` accepts it.",
        check: Check::OnArch { run: smem_spill::smem_spill, undeclared: true },
    }
    GridExceedsResident {
        default_level: Deny,
        summary: "A kernel declared `launch = \"cooperative\"` or `\"persistent\"` is launched with more blocks than are resident at once: the blocks per SM its grid assumes (`grid_blocks_per_sm`) exceed what fits on some architecture, or its fixed grid (`grid_blocks`) exceeds blocks per SM x SMs on a GPU of `gpus`, where a GPU whose architecture was not compiled is a finding too (its grid was not checked).",
        phrase: ("is launched with more blocks than are resident", "are launched with more blocks than are resident"),
        why_bad: "A cooperative launch of a grid larger than what is resident fails (`cudaErrorCooperativeLaunchTooLarge`); a persistent kernel whose blocks wait on each other deadlocks, because the blocks it waits for never get an SM, and one that loops over a work queue runs a second wave. The assumption is usually a constant in the launcher, right on the GPU it was written for and wrong on the next: 10 blocks per SM where registers allow 7, 132 SMs on an H20 that has 78.",
        example: "`#[occupancy::kernel(block = 256, launch = \"persistent\", grid_blocks = 132, gpus = [\"h100\", \"h20\"])]` on a kernel with 1 block per SM: 132 blocks fit an H100 SXM (132 SMs) but only 78 an H20.",
        fix: "Size the grid from the compiled facts and the device (`persistent_grid_on(&ctx)` on the kernel's const, `occupancy::facts::<kernel>::persistent_grid(arch, sms)` from `occupancy_facts.h`, or `cudaOccupancyMaxActiveBlocksPerMultiprocessor` x `multiProcessorCount`); lower `grid_blocks_per_sm` or `grid_blocks` to the number the finding names; or make more blocks fit (fewer registers, less shared memory).",
        check: Check::Kernel { run: grid::grid_exceeds_resident, undeclared: false },
    }
    ClusterUnlaunchable {
        default_level: Deny,
        summary: "The launch's thread-block cluster (the declared `cluster`, else the compiled `__cluster_dims__`) cannot start: clusters do not exist on the architecture (before sm_90), it has more than 8 blocks without `non_portable_cluster = true`, more than 16, a declared shape other than the compiled one, or more blocks than SMs in every GPC of a GPU whose GPC layout is recorded.",
        phrase: ("has a cluster that cannot launch", "have clusters that cannot launch"),
        why_bad: "No occupancy header covers clusters, so these launches compile and fail at run time: `cudaErrorInvalidClusterSize` for a size above 8 without `cudaFuncAttributeNonPortableClusterSizeAllowed` (cupy#8778) or a shape other than the compiled `__cluster_dims__`, and no cluster can be placed when a GPU has no GPC with enough SMs.",
        example: "`#[occupancy::kernel(block = 128, cluster = (16, 1, 1))]` on sm_90: 16 blocks per cluster need the non-portable opt-in; the driver refuses the launch until the host sets it.",
        fix: "Set `cudaFuncAttributeNonPortableClusterSizeAllowed` on the kernel and declare `non_portable_cluster = true`, use at most 8 blocks per cluster (at most the GPU's largest GPC), declare the compiled `__cluster_dims__`, or drop architectures before sm_90 from `archs`.",
        check: Check::OnArch { run: clusters::cluster_unlaunchable, undeclared: false },
    }
    LowClusterOccupancy {
        default_level: Warn,
        summary: "Fewer clusters of the declared `cluster` are resident at once on a GPU of a target architecture (`cudaOccupancyMaxActiveClusters`) than the declared `min_active_clusters`: exactly where the GPU's GPC layout is recorded (`cargo occupancy arch --gpus`), else when even the upper bound is below.",
        phrase: ("keeps fewer clusters resident than declared", "keep fewer clusters resident than declared"),
        why_bad: "A persistent kernel sized for one cluster per resident slot deadlocks or runs a second wave when fewer fit, and the count depends on the GPU's uneven GPCs, not only on its SM count (cutlass#1921, #2108): a cluster of 16 blocks fits 7 times on an H100 SXM's 132 SMs at one block per SM, not 8.",
        example: "`#[occupancy::kernel(block = 256, cluster = (16, 1, 1), non_portable_cluster = true, min_active_clusters = 8)]` on a kernel with one block per SM on sm_90: the H100 SXM holds 7 such clusters at once (two GPCs of 18 SMs and five of 16 hold one each; the rest are smaller).",
        fix: "Fit more blocks per SM (fewer registers or less shared memory per block), use a smaller cluster, size the grid from the count the finding names, or lower `min_active_clusters`.",
        check: Check::OnArch { run: clusters::low_cluster_occupancy, undeclared: false },
    }
    ArchSpecificPtx {
        default_level: Warn,
        summary: "A PTX module the build ships targets an arch-specific variant (`.target sm_90a`, `sm_100a`): the driver JIT-compiles it for that one compute capability and no other.",
        phrase: ("ships only arch-specific PTX", "ship only arch-specific PTX"),
        why_bad: "PTX is what lets a library run on GPUs newer than it was built for; arch-specific PTX gives that up (ptxas: \"cannot be compiled to future architecture\"), so a crate that loads it fails to load its kernels on the next GPU (an sm_90a module on a B200 or an RTX 50), however it runs on the one it was built on.",
        example: "A cudaforge build with `CUDA_COMPUTE_CAP=90` writes `.target sm_90a` PTX for every kernel; loaded on an sm_100 GPU, `cuModuleLoadData` fails.",
        fix: "Ship portable PTX too (`compute_90` beside `sm_90a` SASS: `-gencode arch=compute_90,code=compute_90`), or build for the plain architecture unless the kernel needs the `a` features (wgmma, setmaxnreg); `allow(arch_specific_ptx)` when the crate runs only on that GPU.",
        check: Check::Product(kernels::arch_specific_ptx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::edit_distance;

    #[test]
    fn ids_round_trip_through_from_str_display_and_serde() {
        for id in LintId::ALL {
            assert_eq!(id.as_str().parse::<LintId>(), Ok(id));
            assert_eq!(id.to_string(), id.as_str());
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                format!("\"{}\"", id.as_str())
            );
            assert_eq!(
                serde_json::from_str::<LintId>(&format!("\"{id}\"")).unwrap(),
                id
            );
        }
    }

    #[test]
    fn all_lists_every_variant_once() {
        let mut ids: Vec<&str> = LintId::ALL.iter().map(|id| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), LintId::ALL.len());
    }

    #[test]
    fn default_levels_are_the_documented_ones() {
        let defaults: Vec<(&str, Level)> = LintId::ALL
            .iter()
            .map(|id| (id.as_str(), id.default_level()))
            .collect();
        assert_eq!(
            defaults,
            [
                ("spills", Level::Deny),
                ("low_occupancy", Level::Deny),
                ("too_many_registers", Level::Deny),
                ("unlaunchable", Level::Deny),
                ("bounds_mismatch", Level::Deny),
                ("missing_kernel", Level::Deny),
                ("stack_frame", Level::Warn),
                ("stack_unknown", Level::Warn),
                ("local_memory", Level::Warn),
                ("occupancy_cliff", Level::Warn),
                ("partial_warp", Level::Warn),
                ("undeclared_kernel", Level::Allow),
                ("regression", Level::Deny),
                ("baseline_stale", Level::Warn),
                ("unfulfilled_expectation", Level::Deny),
                ("spill_in_loop", Level::Deny),
                ("local_array", Level::Warn),
                ("setmaxnreg_ignored", Level::Deny),
                ("setmaxnreg_budget", Level::Deny),
                ("fp64", Level::Allow),
                ("call", Level::Warn),
                ("const_memory", Level::Deny),
                ("unreachable_bound", Level::Warn),
                ("register_cap_ignored", Level::Warn),
                ("smem_spill", Level::Warn),
                ("grid_exceeds_resident", Level::Deny),
                ("cluster_unlaunchable", Level::Deny),
                ("low_cluster_occupancy", Level::Warn),
                ("arch_specific_ptx", Level::Warn),
            ]
        );
    }

    #[test]
    fn unknown_lint_suggests_the_closest_id() {
        let error = "spill".parse::<LintId>().unwrap_err();
        assert_eq!(error.suggestion, Some(LintId::Spills));
        assert_eq!(
            error.to_string(),
            "unknown lint `spill`: did you mean `spills`?"
        );
        assert_eq!(
            "low-occupancy".parse::<LintId>().unwrap_err().suggestion,
            Some(LintId::LowOccupancy)
        );
        assert_eq!(
            "occupancy_clif".parse::<LintId>().unwrap_err().suggestion,
            Some(LintId::OccupancyCliff)
        );
        let far = "banana".parse::<LintId>().unwrap_err();
        assert_eq!(far.suggestion, None);
        assert!(
            far.to_string()
                .contains("the lints are: spills, low_occupancy"),
            "{far}"
        );
    }

    #[test]
    fn levels_parse_and_suggest() {
        for level in Level::ALL {
            assert_eq!(level.as_str().parse::<Level>(), Ok(level));
        }
        assert_eq!(
            "forbid".parse::<Level>().unwrap_err().to_string(),
            "unknown lint level `forbid`: write `allow`, `warn` or `deny` (`forbid` is not supported; `deny` fails the build)"
        );
        assert!("wran"
            .parse::<Level>()
            .unwrap_err()
            .to_string()
            .ends_with("(did you mean `warn`?)"));
        assert!("error"
            .parse::<Level>()
            .unwrap_err()
            .to_string()
            .ends_with("(did you mean `deny`?)"));
    }

    #[test]
    fn env_var_and_config_line() {
        assert_eq!(LintId::Spills.env_var(), "OCCUPANCY_LINT_SPILLS");
        assert_eq!(
            LintId::OccupancyCliff.env_var(),
            "OCCUPANCY_LINT_OCCUPANCY_CLIFF"
        );
        assert_eq!(LintId::Spills.config_line(Level::Warn), "spills = \"warn\"");
    }

    #[test]
    fn every_lint_is_documented() {
        for id in LintId::ALL {
            let info = id.lint();
            assert_eq!(info.id, id);
            for text in [info.summary, info.why_bad, info.example, info.fix] {
                assert!(text.len() > 20 && !text.contains('\n'), "{id}: {text:?}");
            }
        }
    }

    #[test]
    fn the_registry_is_indexed_by_id_and_spelled_by_its_declaration() {
        assert_eq!(LINTS.len(), LintId::ALL.len());
        for (lint, id) in LINTS.iter().zip(LintId::ALL) {
            assert_eq!(lint.id, id);
            assert_eq!(id.lint().id, id);
            assert_eq!(lint.name, id.as_str());
            assert_eq!(lint.default_level, id.default_level());
        }
    }

    /// The checks the build calls with what it found make findings of their own lint (a
    /// finding under another lint's id is silenced by that lint's `allow`). The launch and SASS
    /// checks are tested beside them, in `evaluate` and `lint::sass`.
    #[test]
    fn every_build_check_makes_findings_of_its_own_lint() {
        let before = evaluate::BaselineNumbers {
            registers: 40,
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            stack_frame_bytes: 0,
            static_smem_bytes: 0,
            occupancy: 0.5,
            chosen_bounds: None,
        };
        let worse = evaluate::BaselineNumbers {
            registers: 48,
            ..before
        };
        let mut checked = Vec::new();
        for lint in &LINTS {
            let made: Vec<evaluate::Finding> = match lint.check {
                Check::Matching { kernel, family } => {
                    vec![kernel("saxpi", &["saxpy"]), family("uneg_*", &[])]
                }
                Check::Undeclared(make) => vec![make("transpose", "src/t.cu")],
                Check::Worse(make) => make("k", "sm_90", &before, &worse).into_iter().collect(),
                Check::Stale(make) => vec![make("sm_90", "changed".into(), Vec::new())],
                Check::Expectation(make) => vec![make("k", LintId::Spills, Some("tracked"))],
                Check::Product(make) => vec![make("out/k.ptx", "sm_90a", &["k"])],
                Check::Launch { .. }
                | Check::Kernel { .. }
                | Check::OnArch { .. }
                | Check::Sass { .. } => continue,
            };
            assert!(!made.is_empty(), "{}", lint.id);
            for finding in made {
                assert_eq!(finding.lint, lint.id, "{finding:#?}");
            }
            checked.push(lint.id);
        }
        assert_eq!(
            checked,
            [
                LintId::MissingKernel,
                LintId::UndeclaredKernel,
                LintId::Regression,
                LintId::BaselineStale,
                LintId::UnfulfilledExpectation,
                LintId::ArchSpecificPtx
            ]
        );
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("block", "block"), 0);
        assert_eq!(did_you_mean("blok", ["block", "name"]), Some("block"));
        assert_eq!(did_you_mean("zzzzzz", ["block", "name"]), None);
    }

    #[test]
    fn transpositions_are_one_edit_so_the_typo_picks_its_kernel() {
        assert_eq!(edit_distance("f23", "f32"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        // `where_u32_f16` is listed first and two substitutions away; the transposition wins.
        let names = ["where_u32_f16", "where_u32_f32", "where_u8_f32"];
        assert_eq!(did_you_mean("where_u32_f23", names), Some("where_u32_f32"));
    }

    #[test]
    fn closest_names_lists_a_few_closest_first() {
        let many: Vec<String> = (0..600).map(|index| format!("kernel_{index}")).collect();
        let close = closest_names("kernel_1O", many.iter().map(String::as_str), 3);
        assert_eq!(close.len(), 3, "{close:?}");
        assert!(close.contains(&"kernel_10"), "{close:?}");
        assert!(
            close
                .iter()
                .all(|name| edit_distance("kernel_1O", name) == 1),
            "{close:?}"
        );
        assert!(closest_names("zzzzzzzz", many.iter().map(String::as_str), 3).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn edit_distance_is_a_symmetric_bounded_metric(left in "[a-c_]{0,8}", right in "[a-c_]{0,8}") {
            let distance = edit_distance(&left, &right);
            proptest::prop_assert_eq!(distance, edit_distance(&right, &left));
            proptest::prop_assert!(distance <= left.chars().count().max(right.chars().count()));
            proptest::prop_assert_eq!(distance == 0, left == right);
        }
    }
}
