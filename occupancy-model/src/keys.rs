//! The attribute's keys, each declared once: its name, the [`KernelSpec`] field it sets, its
//! value ([`Kind`](crate::Kind): what the grammar accepts, with its range), its unit, what its
//! absence means, its documentation (the section of `docs/declaring-kernels.md`, and the
//! field's doc) and the words people write for it by mistake.
//!
//! Everything else is derived from this list: [`Key`], [`KEYS`], [`KernelSpec`]'s key fields;
//! the grammar in `occupancy_core::spec` parses and validates each key by its kind (errors name
//! the key and link its section); the attribute's expansion writes the fields through
//! [`KernelSpec::value`]; `docs/declaring-kernels.md`'s keys are rendered from it (a test
//! fails when the file drifts). CONTRIBUTING.md, "Adding an attribute key", is the recipe.

/// The largest number of threads in one block on any architecture.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// The largest block dimensions (x, y, z) on any architecture.
pub const MAX_BLOCK_DIMS: (u32, u32, u32) = (1024, 1024, 64);
/// The largest number of resident blocks per SM on any architecture (the upper bound for
/// `min_blocks_per_sm`; the per-architecture check is the `unlaunchable` lint).
pub const MAX_BLOCKS_PER_SM_ANY_ARCH: u32 = 32;
/// The most registers a thread can have on any architecture.
pub const MAX_REGISTERS_PER_THREAD_ANY_ARCH: u32 = 255;
/// The most blocks in one thread-block cluster on any architecture (16, non-portable, on H100;
/// the per-architecture check is the `cluster_unlaunchable` lint).
pub const MAX_CLUSTER_BLOCKS_ANY_ARCH: u32 = 16;

use crate::{BlockDim, ClusterDim, Tunable};

declare_keys! {
    /// `block = 256` (1-D), `block = (32, 8)` (2-D), `block = (8, 8, 4)` (3-D): threads per
    /// block of the launch the crate makes. Each dimension is at least 1; at most 1024 along x
    /// and y and 64 along z, and at most 1024 threads in all (every GPU's limits). This is
    /// `__launch_bounds__`'s first argument (max threads per block) and the block every check
    /// assumes. A block that is not a multiple of 32 is accepted but reported by the
    /// `partial_warp` lint.
    Block {
        key: "block",
        field: block: BlockDim,
        value: Block,
        unit: "threads per block",
        when_absent: "required",
        summary: "Threads per block of the launch the crate makes; `__launch_bounds__`'s first argument.",
        example: "256",
        aliases: ["threads", "block_size", "block_dim", "threads_per_block", "launch_bounds"],
    }
    /// `min_blocks_per_sm = 4`: blocks of `block` threads that must be resident on one SM at
    /// once; `__launch_bounds__`'s second argument. ptxas caps registers per thread so that this
    /// many blocks fit, spilling if it must (see the `spills` lint). 1 to 32 (32 is the most
    /// blocks any GPU keeps on an SM; above a given arch's limit is the `unlaunchable` lint).
    /// `min_blocks_per_sm = "auto"`: the build chooses it on each target architecture, from
    /// the same PTX assembled at every minimum that changes the resident blocks, by the
    /// objective of [Choosing bounds automatically](#choosing-bounds-automatically) (no
    /// minimum when none beats the kernel without one); `OCCUPANCY_BOUNDS_<kernel>` carries
    /// each architecture's choice. Not with `max_registers` or `family`.
    MinBlocksPerSm {
        key: "min_blocks_per_sm",
        field: min_blocks_per_sm: Option<Tunable>,
        value: IntegerOrAuto {
            min: 1,
            max: MAX_BLOCKS_PER_SM_ANY_ARCH,
            why_max: "no GPU keeps more than 32 blocks on one SM; remove the key if you do not need a minimum",
        },
        unit: "blocks per SM",
        when_absent: "no minimum",
        summary: "Blocks of `block` threads that must be resident on one SM at once; `__launch_bounds__`'s second argument; `\"auto\"`: the build chooses per arch.",
        example: "4",
        aliases: ["min_blocks", "blocks_per_sm", "min_ctas_per_sm"],
    }
    /// `max_registers = 64`: registers per thread the compiler may use for this kernel
    /// (`__maxnreg__`; like `-maxrregcount` for one kernel). 1 to 255. nvcc refuses
    /// `__maxnreg__` beside `__launch_bounds__`, so `OCCUPANCY_BOUNDS_<kernel>` is
    /// `__maxnreg__(64)` alone. `max_registers = "auto"`: the build chooses the cap on each
    /// target architecture, as `min_blocks_per_sm = "auto"` chooses a minimum (the caps tried
    /// are the ones that change the resident blocks of `block` threads). Not with
    /// `min_blocks_per_sm` or `family`.
    MaxRegisters {
        key: "max_registers",
        field: max_registers: Option<Tunable>,
        value: IntegerOrAuto {
            min: 1,
            max: MAX_REGISTERS_PER_THREAD_ANY_ARCH,
            why_max: "a thread has at most 255 registers on every GPU",
        },
        unit: "registers per thread",
        when_absent: "no cap",
        summary: "Caps the registers per thread ptxas may use for this kernel (`__maxnreg__`); `\"auto\"`: the build chooses per arch.",
        example: "64",
        aliases: ["maxnreg", "maxrregcount", "registers"],
    }
    /// `dynamic_smem = 16384`: bytes of dynamic shared memory per block the launch requests
    /// (the `extern __shared__` array; cudarc's `shared_mem_bytes`). Default 0. Counted in the
    /// occupancy calculation with the kernel's static shared memory; above an arch's per-block
    /// limit is the `unlaunchable` lint.
    DynamicSmem {
        key: "dynamic_smem",
        field: dynamic_smem_bytes: u32,
        value: Integer { min: 0, max: u32::MAX, why_max: "bytes" },
        default: 0,
        unit: "bytes per block",
        when_absent: "0",
        summary: "Dynamic shared memory per block the launch requests (the `extern __shared__` array).",
        example: "16384",
        aliases: ["smem", "shared_mem", "shared_mem_bytes", "dynamic_smem_bytes", "dynamic_shared_memory"],
    }
    /// `launch = "cooperative"` or `launch = "persistent"`: every block of the grid the host
    /// launches must be resident at once. `"cooperative"`: launched with
    /// `cudaLaunchCooperativeKernel` (for a grid-wide `this_grid().sync()`), which fails with
    /// `cudaErrorCooperativeLaunchTooLarge` when the grid is larger than what fits; `"persistent"`:
    /// an ordinary launch whose blocks stay resident and loop over the work or wait on each other
    /// (a spin barrier, a work queue), which deadlocks or runs a second wave when it does not fit.
    /// The grid the launcher assumes is `grid_blocks_per_sm` or `grid_blocks`, checked by the
    /// `grid_exceeds_resident` lint; `occupancy_facts.h` gives C++ launchers the numbers.
    Launch {
        key: "launch",
        field: launch: Option<S::Text>,
        value: Choice { choices: &["cooperative", "persistent"] },
        unit: "kind of launch",
        when_absent: "an ordinary launch (a grid larger than what is resident runs in waves)",
        summary: "Every block of the grid is resident at once: a cooperative launch, or a persistent kernel whose blocks wait on each other.",
        example: "\"cooperative\"",
        aliases: ["cooperative", "persistent", "grid_sync", "launch_kind"],
    }
    /// `grid_blocks_per_sm = 2`: the blocks per SM the host's grid assumes resident, as a
    /// persistent launcher that sizes its grid as this number times the GPU's SM count
    /// (`multiProcessorCount`) does. On every target arch, the blocks of `block` threads an SM
    /// holds at the compiled registers and shared memory (with `dynamic_smem`) must be at least
    /// this; fewer is the `grid_exceeds_resident` lint. 1 to 32. Needs `launch`.
    GridBlocksPerSm {
        key: "grid_blocks_per_sm",
        field: grid_blocks_per_sm: Option<u32>,
        value: Integer {
            min: 1,
            max: MAX_BLOCKS_PER_SM_ANY_ARCH,
            why_max: "no GPU keeps more than 32 blocks on one SM",
        },
        unit: "blocks per SM",
        when_absent: "no assumption per SM",
        summary: "The blocks per SM the launcher's grid assumes resident (grid = this x the GPU's SMs); more than fit is `grid_exceeds_resident`.",
        example: "2",
        aliases: ["assumed_blocks_per_sm", "persistent_blocks_per_sm", "ctas_per_sm", "blocks_per_sm_assumed"],
        needs: [Launch],
    }
    /// `grid_blocks = 132`: the grid the host launches, in blocks (x * y * z), as a launcher that
    /// holds a number written for one GPU (its SM count, or that count times a blocks per SM)
    /// does. On each GPU of `gpus`, the blocks resident at once (the blocks per SM on its
    /// architecture times its SMs) must be at least this; fewer is the `grid_exceeds_resident`
    /// lint. Needs `launch` and `gpus`.
    GridBlocks {
        key: "grid_blocks",
        field: grid_blocks: Option<u32>,
        value: Integer {
            min: 1,
            max: 2_147_483_647,
            why_max: "a grid has at most 2^31 - 1 blocks",
        },
        unit: "blocks",
        when_absent: "no fixed grid",
        summary: "The grid the launcher launches, checked on each GPU of `gpus`; more blocks than are resident is `grid_exceeds_resident`.",
        example: "132",
        aliases: ["grid", "grid_size", "num_blocks", "grid_dim"],
        needs: [Launch, Gpus],
    }
    /// `gpus = ["h100", "h20"]`: the GPUs the crate launches this kernel on, by the names of
    /// `cargo occupancy arch --gpus` (a product, its architecture and its SM count, with where the
    /// count comes from; case, `-` and `_` are ignored). `grid_blocks` is checked on each, and
    /// `occupancy_facts.h` gives each its resident blocks. With `grid_blocks`, each GPU's
    /// architecture must be one the kernel is compiled for: the numbers of another come from code
    /// the build never saw, and `grid_exceeds_resident` says the grid could not be checked there
    /// (the header gives such a GPU `compiled = false`). No repeats.
    Gpus {
        key: "gpus",
        field: gpus: Option<S::Archs>,
        value: Gpus,
        unit: "GPU products",
        when_absent: "no GPU checked",
        summary: "The GPUs the crate launches this kernel on (`cargo occupancy arch --gpus`), each checked at its SM count.",
        example: "[\"h100\", \"h20\"]",
        aliases: ["gpu", "target_gpus", "devices"],
    }
    /// `cluster = 2`, `cluster = (2, 2)`, `cluster = (2, 2, 2)`: blocks per thread-block cluster
    /// of the launch (`cudaLaunchAttributeClusterDimension`, or `__cluster_dims__` compiled into
    /// the kernel, which the build reads from the PTX or the binary when the key is absent).
    /// Each dimension at least 1, at most 16 blocks in all. Clusters exist from sm_90; the
    /// build counts how many clusters are resident at once on each GPU of a target architecture
    /// (`cargo occupancy arch --gpus`: exact where the GPU's GPC layout is recorded, else an
    /// upper bound). A cluster that cannot launch (an architecture before sm_90, above 8 blocks
    /// without `non_portable_cluster = true`, above 16, or larger than every GPC of a GPU) is the
    /// `cluster_unlaunchable` lint.
    Cluster {
        key: "cluster",
        field: cluster: Option<ClusterDim>,
        value: Cluster,
        unit: "blocks per cluster",
        when_absent: "the compiled `__cluster_dims__`, else no cluster",
        summary: "Blocks per thread-block cluster of the launch; `__cluster_dims__`.",
        example: "(2, 2)",
        aliases: ["cluster_dims", "cluster_dim", "cluster_size", "cluster_shape", "blocks_per_cluster"],
    }
    /// `non_portable_cluster = true`: the host sets
    /// `cudaFuncAttributeNonPortableClusterSizeAllowed` on the kernel before launching, so
    /// clusters above the portable 8 blocks (up to 16 on H100) are allowed. Without it the
    /// driver refuses such a launch (`cudaErrorInvalidClusterSize`), the `cluster_unlaunchable`
    /// lint.
    NonPortableCluster {
        key: "non_portable_cluster",
        field: non_portable_cluster: bool,
        value: Flag,
        unit: "opt-in",
        when_absent: "`false`: at most 8 blocks per cluster",
        summary: "The host opts into cluster sizes above 8 (`cudaFuncAttributeNonPortableClusterSizeAllowed`).",
        example: "true",
        aliases: ["non_portable", "nonportable_cluster", "non_portable_cluster_size"],
    }
    /// `min_active_clusters = 64`: the fewest clusters of the declared `cluster` that must be
    /// resident at once on each GPU of a target architecture (`cudaOccupancyMaxActiveClusters`,
    /// for a persistent kernel that launches one cluster per resident slot). Fewer is the
    /// `low_cluster_occupancy` lint; on a GPU whose GPC layout is not recorded only an upper
    /// bound is known, and the lint fires when even that is below.
    MinActiveClusters {
        key: "min_active_clusters",
        field: min_active_clusters: Option<u32>,
        value: Integer { min: 1, max: u32::MAX, why_max: "clusters" },
        unit: "clusters per GPU",
        when_absent: "no minimum",
        summary: "The fewest clusters resident at once on each GPU of a target arch; below it is `low_cluster_occupancy`.",
        example: "64",
        aliases: ["min_clusters", "active_clusters", "max_active_clusters"],
    }
    /// `min_occupancy = 0.5` or `min_occupancy = "50%"`: the least theoretical occupancy
    /// accepted on every target arch, as a fraction in (0, 1] of the SM's maximum resident warps
    /// (active warps at the declared block, registers and shared memory / max warps per SM).
    /// Below it is the `low_occupancy` lint.
    MinOccupancy {
        key: "min_occupancy",
        field: min_occupancy: Option<f64>,
        value: Fraction,
        unit: "fraction of the SM's warps",
        when_absent: "no minimum",
        summary: "The least theoretical occupancy accepted on every target arch; below it is `low_occupancy`.",
        example: "0.5",
        aliases: ["occupancy"],
    }
    /// `max_spill_bytes = 0`: the most spill bytes accepted, per thread, as ptxas reports them
    /// (`bytes spill stores` + `bytes spill loads`). When absent the `spills` lint uses 0.
    MaxSpillBytes {
        key: "max_spill_bytes",
        field: max_spill_bytes: Option<u32>,
        value: Integer { min: 0, max: u32::MAX, why_max: "bytes" },
        unit: "bytes per thread",
        when_absent: "0 (`spills`)",
        summary: "The most spill bytes (stores + loads) accepted; above it is `spills`.",
        example: "0",
        aliases: ["max_spills", "spill_bytes"],
    }
    /// `max_stack_bytes = 256`: the largest stack frame per thread accepted, in bytes (ptxas's
    /// `bytes stack frame`). Above it is the `stack_frame` lint (when absent, any stack frame
    /// warns).
    MaxStackBytes {
        key: "max_stack_bytes",
        field: max_stack_bytes: Option<u32>,
        value: Integer { min: 0, max: u32::MAX, why_max: "bytes" },
        unit: "bytes per thread",
        when_absent: "0 (`stack_frame`, a warning)",
        summary: "The largest stack frame accepted; above it is `stack_frame`.",
        example: "0",
        aliases: ["max_stack", "stack_bytes"],
    }
    /// `max_registers_per_thread = 96`: the most registers per thread accepted in the compiled
    /// kernel, 1 to 255. A check, not a constraint: unlike `max_registers` it does not change
    /// what ptxas does. Above it is the `too_many_registers` lint.
    MaxRegistersPerThread {
        key: "max_registers_per_thread",
        field: max_registers_per_thread: Option<u32>,
        value: Integer {
            min: 1,
            max: MAX_REGISTERS_PER_THREAD_ANY_ARCH,
            why_max: "a thread has at most 255 registers on every GPU",
        },
        unit: "registers per thread",
        when_absent: "no limit",
        summary: "The most registers per thread accepted in the compiled kernel (a check, not a cap); above it is `too_many_registers`.",
        example: "64",
        aliases: ["max_regs"],
    }
    /// `max_const_bytes = 4096`: the most constant memory accepted for the kernel, in bytes:
    /// its parameter bank (ptxas's `cmem[0]`: the parameters and the block the driver reserves
    /// in it, about 350 bytes, which a launch fills in too) plus its module's `__constant__`
    /// variables (`cmem[3]`; ptxas reports the module's total, which every kernel of the module
    /// can read, so each kernel of the module is charged all of it). These are what the source
    /// decides and what a launch and the SM's constant cache (8 KB per SM) hold; the banks of
    /// constants ptxas makes up itself (`cmem[2]`, `cmem[4]`, a few literals) are not counted.
    /// Above it is the `const_memory` lint. ptxas prints constant banks only for architectures
    /// before sm_90: on sm_90 and later the build reads them from the compiled cubin (the same
    /// sizes ptxas prints where it does); where the cubin cannot be read, `const_memory` says the
    /// budget was not checked.
    MaxConstBytes {
        key: "max_const_bytes",
        field: max_const_bytes: Option<u32>,
        value: Integer { min: 0, max: u32::MAX, why_max: "bytes" },
        unit: "bytes per kernel",
        when_absent: "no limit",
        summary: "The most constant memory accepted (parameters and the module's `__constant__` data); above it is `const_memory`.",
        example: "4096",
        aliases: ["max_constant_bytes", "max_cmem", "const_bytes", "constant_bytes", "max_const"],
    }
    /// `name = "_Z6kernelPf"`: the compiled kernel's symbol when it differs from the Rust name:
    /// a C++ (mangled) name, a template instance, or the kernel an `extern "C"` launcher
    /// launches. Without it, the symbol is `#[link_name]`/`#[export_name]` when present, else
    /// the Rust name. Non-empty, no leading/trailing whitespace.
    Name {
        key: "name",
        field: name: Option<S::Text>,
        value: Symbol,
        unit: "symbol",
        when_absent: "the item's `#[link_name]`, else its Rust name",
        summary: "The compiled kernel's symbol when it differs from the Rust name.",
        example: "\"kernel_symbol\"",
        aliases: ["symbol", "link_name", "kernel"],
    }
    /// `archs = ["sm_80", "sm_90a"]`: this kernel's target architectures, replacing the crate's
    /// list for it. The one architecture grammar of the whole tool (the same as
    /// `OCCUPANCY_ARCHS`, `CUDA_COMPUTE_CAP`, `.arch(...)` and `--arch`): `sm_90`, `compute_90`,
    /// the variants nvcc has (`sm_90a`, `sm_100f`), and the numbers `90` / `9.0`; only
    /// architectures nvcc accepts (`sm_999`, `sm_89a`, `sm_90f`, `sm90`, `sm_090` are errors
    /// with a did-you-mean; the list is `cargo occupancy arch`). At least one, no repeats
    /// (`"90"` and `"sm_90"` are the same).
    Archs {
        key: "archs",
        field: archs: Option<S::Archs>,
        value: Archs,
        unit: "architectures",
        when_absent: "the crate's architectures",
        summary: "This kernel's target architectures, replacing the crate's list for it.",
        example: "[\"sm_80\", \"sm_90\"]",
        aliases: ["arch", "targets", "gpu_archs"],
    }
    /// `family = "uneg_*"`: one declaration for every compiled kernel whose symbol matches the
    /// pattern, as C macros generate them. `*` stands for any run of characters (the only
    /// wildcard); the rest matches the symbol exactly. The pattern needs a `*` (for one kernel
    /// write `name`), may not be `*` alone (set the crate's `block` for undeclared kernels
    /// instead, see [configuration.md](configuration.md)), and cannot be combined with `name`.
    /// Every kernel it matches is checked with its keys on every target arch, each under its own
    /// name in the report. A pattern that matches no compiled kernel is a `missing_kernel` error
    /// at the attribute; a kernel matched by two patterns is an error naming both; an exact
    /// declaration of a kernel beats every pattern. The Rust stub's name names the family on the
    /// C side:
    ///
    /// ```rust,ignore
    /// #[occupancy::kernel(family = "uneg_*", block = 256, min_blocks_per_sm = 4)]
    /// fn uneg();   // generates UNEG_OCCUPANCY; kernel_name is the pattern
    /// ```
    ///
    /// ```cuda
    /// // kernels/unary.cu
    /// #include "occupancy_bounds.h"
    /// #define UNARY_OP(TYPENAME, FN_NAME, FUNC) \
    /// extern "C" __global__ void OCCUPANCY_BOUNDS_FAMILY(uneg) FN_NAME(const TYPENAME* in, TYPENAME* out, int n) { \
    ///     int i = blockIdx.x * blockDim.x + threadIdx.x; \
    ///     if (i < n) { TYPENAME x = in[i]; out[i] = FUNC; } \
    /// }
    /// UNARY_OP(float, uneg_f32, -x)     // checked as `uneg_f32`, reported at this line
    /// UNARY_OP(double, uneg_f64, -x)    // checked as `uneg_f64`, reported at this line
    /// ```
    ///
    /// `OCCUPANCY_BOUNDS_FAMILY(uneg)` expands to `OCCUPANCY_BOUNDS_FAMILY_uneg`, the family's
    /// `__launch_bounds__(256, 4)` in the generated `occupancy_bounds.h` (beside it:
    /// `OCCUPANCY_BLOCK_THREADS_FAMILY_uneg`, `OCCUPANCY_LAUNCH_BOUNDS_FAMILY_uneg`, ...). Every
    /// instance the macro generates compiles, declared on its own or not; with per-kernel
    /// `OCCUPANCY_BOUNDS_##FN_NAME` an undeclared instance would be an nvcc error. Reports point
    /// at the line of each `UNARY_OP(...)` invocation (and at a header's line for kernels defined
    /// in headers): sources are compiled with `-lineinfo`, and the PTX's `.loc` of each kernel
    /// says where it is.
    Family {
        key: "family",
        field: family: Option<S::Text>,
        value: Pattern,
        unit: "symbol pattern",
        when_absent: "one kernel",
        summary: "One declaration for every compiled kernel whose symbol matches the pattern (`*` is any run of characters).",
        example: "\"affine_*\"",
        aliases: [],
    }
}
