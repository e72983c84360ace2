//! Kernel symbols as their authors wrote them: Itanium C++ names (nvcc, clang, NVRTC) as
//! signatures, Rust symbols (Rust-CUDA's libNVVM PTX, rustc's `nvptx64-nvidia-cuda` target) as
//! the path of the Rust `fn`.

use std::borrow::Cow;

/// Whether `name` can be a mangled symbol at all (`_Z`: Itanium or Rust legacy; `_R`: Rust v0):
/// the cheap test for callers that skip [`demangle`] on plain names.
pub fn may_be_mangled(name: &str) -> bool {
    name.starts_with("_Z") || name.starts_with("_R")
}

/// The readable name of a mangled symbol; `None` when `name` is not one (an `extern "C"` or
/// `#[no_mangle]` kernel).
///
/// * A Rust symbol becomes the `fn`'s path without rustc's hash: the legacy
///   `_ZN10my_kernels4gemm17h0123456789abcdefE` and the v0 `_RNvCs..._10my_kernels4gemm` are
///   both `my_kernels::gemm`. A legacy symbol is valid Itanium too (it would read
///   `my_kernels::gemm::h0123456789abcdef`); it is taken for Rust only when it ends in rustc's
///   hash (`17h` and 16 hex digits), which no C++ name has.
/// * An Itanium C++ name becomes its signature. ptxas appends clone suffixes such as `$1`
///   (`_Z3devPfi$1`) to function copies; those are demangled without the suffix and shown as
///   `[clone $1]`.
pub fn demangle(name: &str) -> Option<String> {
    if !may_be_mangled(name) {
        return None;
    }
    rust_path(name).or_else(|| itanium(name))
}

/// The Rust path of a legacy symbol with its hash or of a v0 symbol, without hashes.
fn rust_path(name: &str) -> Option<String> {
    let symbol = restore_legacy_dots(name);
    let demangled = rustc_demangle::try_demangle(&symbol).ok()?;
    // `{:#}` leaves out the legacy hash and v0's crate disambiguators.
    let path = format!("{demangled:#}");
    if name.starts_with("_R") {
        return Some(path);
    }
    // A legacy symbol without a hash is left to the C++ demangler.
    (demangled.to_string() != path).then_some(path)
}

/// rustc writes the `..` of a legacy symbol (`core..ops..Add`) as `$$` on nvptx targets, whose
/// names allow no `.`; put back, rustc-demangle reads them as `::` again. An escape (`$LT$`,
/// `$u20$`) is copied whole, so the `$` that closes one never starts a pair (`$LT$$RF$` is `<&`).
fn restore_legacy_dots(name: &str) -> Cow<'_, str> {
    if !name.starts_with("_ZN") || !name.contains("$$") {
        return Cow::Borrowed(name);
    }
    let mut restored = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('$') {
        restored.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            restored.push_str("..");
            rest = after;
        } else {
            let end = rest[1..].find('$').map_or(rest.len(), |end| end + 2);
            restored.push_str(&rest[..end]);
            rest = &rest[end..];
        }
    }
    restored.push_str(rest);
    Cow::Owned(restored)
}

/// The Itanium C++ demangling, a ptxas clone suffix (`$1`) shown as `[clone $1]`.
fn itanium(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let options = cpp_demangle::DemangleOptions::default();
    let full = |mangled: &str| {
        cpp_demangle::Symbol::new(mangled.as_bytes())
            .ok()
            .and_then(|symbol| symbol.demangle(&options).ok())
    };
    if let Some(text) = full(name) {
        return Some(text);
    }
    let cut = name.find(['$', '.'])?;
    let (base, suffix) = name.split_at(cut);
    full(base).map(|text| format!("{text} [clone {suffix}]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_templates_namespaces_and_clones() {
        assert_eq!(
            demangle("_ZN2ns5spillILi3EEEvPfPKf").as_deref(),
            Some("void ns::spill<3>(float*, float const*)")
        );
        assert_eq!(
            demangle("_Z3devPfi$1").as_deref(),
            Some("dev(float*, int) [clone $1]")
        );
        assert_eq!(demangle("smem"), None);
        assert_eq!(demangle("_Znot a name"), None);
    }

    #[test]
    fn rust_symbols_are_the_path_of_the_fn_without_the_hash() {
        for (symbol, path) in [
            // Legacy (rustc's default on stable), as Rust-CUDA and nvptx64 emit it.
            (
                "_ZN10my_kernels4gemm17h0123456789abcdefE",
                "my_kernels::gemm",
            ),
            (
                "_ZN10nvptx_demo7kernels4tile17hfedcba9876543210E",
                "nvptx_demo::kernels::tile",
            ),
            // v0 (`-C symbol-mangling-version=v0`): crate disambiguators left out.
            (
                "_RNvCs4fqI2P2rA04_10my_kernels6reduce",
                "my_kernels::reduce",
            ),
            (
                "_RNvNtCs9xYz01AbCdE_10nvptx_demo7kernels4tile",
                "nvptx_demo::kernels::tile",
            ),
            // A generic v0 kernel keeps its type arguments.
            (
                "_RINvCs4fqI2P2rA04_10my_kernels5scalefEB2_",
                "my_kernels::scale::<f32>",
            ),
        ] {
            assert_eq!(demangle(symbol).as_deref(), Some(path), "{symbol}");
        }
    }

    #[test]
    fn nvptx_legacy_symbols_get_their_dots_back() {
        // `<nvptx_demo::Pixel as core::ops::arith::Add>::add`, `..` written `$$` for PTX.
        assert_eq!(
            demangle(
                "_ZN59_$LT$nvptx_demo$$Pixel$u20$as$u20$core$$ops$$arith$$Add$GT$3add17h5a1d0c3b7e9f2468E"
            )
            .as_deref(),
            Some("<nvptx_demo::Pixel as core::ops::arith::Add>::add")
        );
        // An escape next to another keeps both: `<&mut T>` and `<core::fmt::Arguments>`.
        assert_eq!(
            restore_legacy_dots("_ZN4core3ptr38drop_in_place$LT$$RF$mut$u20$T$GT$17h0E"),
            "_ZN4core3ptr38drop_in_place$LT$$RF$mut$u20$T$GT$17h0E"
        );
        assert_eq!(
            restore_legacy_dots("_ZN4core3ptr42drop_in_place$LT$core$$fmt$$Arguments$GT$17h0E"),
            "_ZN4core3ptr42drop_in_place$LT$core..fmt..Arguments$GT$17h0E"
        );
        assert_eq!(restore_legacy_dots("_ZN1a$GT$$$u20$"), "_ZN1a$GT$..u20$");
        assert_eq!(restore_legacy_dots("_Z3devPfi$1"), "_Z3devPfi$1");
    }

    #[test]
    fn cpp_names_are_not_taken_for_rust() {
        // Valid legacy Rust too, but without rustc's hash: read as C++.
        assert_eq!(demangle("_ZN2ns4funcE").as_deref(), Some("ns::func"));
        assert_eq!(
            demangle("_ZN10my_kernels4gemmEPfi").as_deref(),
            Some("my_kernels::gemm(float*, int)")
        );
        // `_R` without a v0 path is a plain name.
        assert_eq!(demangle("_Reduce"), None);
        assert!(may_be_mangled("_RNvC1a1b") && !may_be_mangled("saxpy"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Any name, mangled-looking or not, demangles or gives `None`; never a panic.
        #[test]
        fn any_name_is_demangled_or_left(
            tail in "[_$.0-9A-Za-z]{0,60}|.{0,40}",
            prefix in proptest::sample::select(vec!["", "_Z", "_ZN", "_R", "_RNv", "_RINv"]),
        ) {
            let name = format!("{prefix}{tail}");
            if let Some(text) = demangle(&name) {
                proptest::prop_assert!(may_be_mangled(&name), "{name} -> {text}");
            }
            proptest::prop_assert!(restore_legacy_dots(&name).len() == name.len());
        }
    }
}
