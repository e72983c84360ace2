//! What a non-inlined callee of a kernel is, and the fix.
//!
//! The names are the internal functions of CUDA's math library and of ptxas's IEEE division and
//! square root (ptxas reports each one's frame under "Function properties for NAME"), and the
//! functions of the CUDA runtime's device library that every kernel calls through a register
//! (`__assertfail` for `assert()`, `vprintf` for `printf`, `malloc`/`free` for the device heap and
//! `new`/`delete`, `__cudaCDP2*` for a device-side launch): their addresses sit in constant bank 4,
//! and [`super::call_target`] names them from the cubin's relocations.

/// What a known callee is and how to avoid it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct KnownCallee {
    /// What the callee is, in a few words.
    pub what: &'static str,
    /// What removes it.
    pub fix: &'static str,
}

/// Whether `name` is one of ptxas's own arithmetic subroutines (`__cuda_sm20_div_u64`,
/// `__cuda_sm3x_div_rn_noftz_f32_slowpath`, `__cuda_sm20_sqrt_rn_f32_slowpath`, ...; in SASS
/// prefixed `__internal_N_$`). ptxas emits one for a single PTX instruction (IEEE `div.rn`,
/// `sqrt.rn`, `rcp.rn`, 64-bit integer `div`/`rem`), behind a branch that takes it only for
/// operands the inline fast path cannot handle, and calls it without the ABI: no frame, no
/// registers saved to local memory. It is not a call the kernel's author made, and not what the
/// `call` lint is about. (The build reads a binary's kernels only where a call it reports may
/// be: a function in the kernel's code that is not one of these.)
pub fn is_compiler_subroutine(name: &str) -> bool {
    let Some(at) = name.find("__cuda_sm") else {
        return false;
    };
    let rest = &name[at + "__cuda_sm".len()..];
    let generation: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    !generation.is_empty()
        && generation
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
        && rest[generation.len()..].starts_with('_')
}

/// What an indirect call is ([`super::CallFacts::indirect`]): a call through a register whose
/// value is not one function's address.
pub(crate) const INDIRECT_CALL: KnownCallee = KnownCallee {
    what: "an indirect call through a function pointer: the target is known only at run time",
    fix: "call the function directly, or dispatch with a `switch` over the functions so that ptxas can inline them; or `allow(call)`",
};

/// Describes `name` when it is a known math-library or compiler helper, or a function of the
/// CUDA runtime's device library.
pub(crate) fn describe_callee(name: &str) -> Option<KnownCallee> {
    describe_runtime_callee(name).or_else(|| describe_math_callee(name))
}

/// Whether `name` is a function of the CUDA runtime's device library (`__assertfail`, `vprintf`,
/// `malloc`, ...): its code is linked in by the driver, not in the kernel's cubin.
pub(crate) fn is_device_library(name: &str) -> bool {
    describe_runtime_callee(name).is_some()
}

/// The device library's functions that CUDA C++ calls for `assert`, `printf`, the device heap
/// and device-side launches.
fn describe_runtime_callee(name: &str) -> Option<KnownCallee> {
    let known = |what, fix| Some(KnownCallee { what, fix });
    match name {
        "__assertfail" => known(
            "device-side `assert()`, which calls `__assertfail` when the assertion fails",
            "compile release builds with `-DNDEBUG` (removes `assert`), or `allow(call)` where the check is wanted",
        ),
        "vprintf" => known(
            "device-side `printf`, which packs its arguments into a local-memory buffer for `vprintf`",
            "remove `printf` from kernels built for release (guard it with a debug macro), or `allow(call)`",
        ),
        "malloc" | "free" => known(
            "the device heap: `malloc`/`free`, which `new`/`delete` call",
            "allocate on the host (`cudaMalloc`) or use shared memory or a preallocated buffer; the device heap is slow and bounded by `cudaLimitMallocHeapSize`",
        ),
        _ if name.starts_with("__cudaCDP") => known(
            "a device-side kernel launch (dynamic parallelism)",
            "launch from the host, or `allow(call)` where the device-side launch is intended",
        ),
        _ => None,
    }
}

fn describe_math_callee(name: &str) -> Option<KnownCallee> {
    let known = |what, fix| Some(KnownCallee { what, fix });
    if name.starts_with("__internal_trig_reduction_slowpath") {
        return known(
            "the double-precision sin/cos/tan slow path (Payne-Hanek argument reduction for large arguments)",
            "use single precision (`sinf`/`cosf`, or the `__sinf`/`__cosf` intrinsics, or `-use_fast_math`), or `sinpi`/`cospi` on arguments already in periods",
        );
    }
    if name.contains("div_rn") && name.contains("f32") {
        return known(
            "the IEEE round-to-nearest single-precision division slow path",
            "`__fdividef(a, b)` or `a * __frcp_rn(b)`, or `-prec-div=false` (implied by `-use_fast_math`)",
        );
    }
    if name.contains("div_rn") && name.contains("f64") {
        return known(
            "the IEEE double-precision division",
            "multiply by a reciprocal computed once, or divide in single precision",
        );
    }
    if name.contains("sqrt") {
        return known(
            "the IEEE square-root slow path",
            "`__fsqrt_rn` only where exactness matters, else `-prec-sqrt=false` (implied by `-use_fast_math`) or `rsqrtf`",
        );
    }
    if name.contains("rcp") {
        return known(
            "the IEEE reciprocal slow path",
            "`__frcp_rn`/`__fdividef`, or `-prec-div=false` (implied by `-use_fast_math`)",
        );
    }
    if name.starts_with("__internal_accurate_pow") {
        return known(
            "the accurate `pow` path",
            "`__powf`, or an integer power written as multiplications",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_trig_slow_path_and_its_fix() {
        let known = describe_callee("__internal_trig_reduction_slowpathd").unwrap();
        assert!(known.what.contains("double-precision sin/cos"));
        assert!(known.fix.contains("__sinf"));
        assert!(describe_callee("_ZN6corpus6frames6gatherEPKfi").is_none());
        assert!(describe_callee("__cuda_sm3x_div_rn_noftz_f32_slowpath")
            .unwrap()
            .what
            .contains("single-precision division"));
    }

    #[test]
    fn names_the_device_library_functions_and_their_fixes() {
        let assert = describe_callee("__assertfail").unwrap();
        assert!(assert.what.contains("assert()"));
        assert!(assert.fix.contains("-DNDEBUG"));
        assert!(describe_callee("vprintf").unwrap().what.contains("printf"));
        for heap in ["malloc", "free"] {
            assert!(describe_callee(heap).unwrap().what.contains("device heap"));
        }
        assert!(describe_callee("__cudaCDP2LaunchDeviceV2")
            .unwrap()
            .what
            .contains("dynamic parallelism"));
        assert!(is_device_library("__assertfail") && !is_device_library("_Z5twicef"));
        // Only the exact names: a user's function that merely contains one is not described.
        assert!(describe_callee("my_malloc").is_none());
        assert!(describe_callee("_Z6vprintfPKc").is_none());
    }

    #[test]
    fn ptxas_subroutines_are_told_from_calls_the_author_made() {
        for name in [
            "__internal_0_$__cuda_sm20_div_s64",
            "__internal_2_$__cuda_sm20_rem_u64",
            "__internal_2_$__cuda_sm20_div_rn_f64_full",
            "__internal_3_$__cuda_sm3x_div_rn_noftz_f32_slowpath",
            "__internal_1_$__cuda_sm20_sqrt_rn_f32_slowpath",
            "__cuda_sm20_rcp_rn_f32_slowpath",
        ] {
            assert!(is_compiler_subroutine(name), "{name}");
        }
        for name in [
            "__internal_trig_reduction_slowpathd",
            "_ZN6corpus6frames6gatherEPKfi",
            "vprintf",
            "__cuda_smem_helper",
            "my__cuda_sm_thing",
        ] {
            assert!(!is_compiler_subroutine(name), "{name}");
        }
    }
}
