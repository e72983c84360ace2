//! The `#[occupancy::kernel(...)]` attribute. Use it through the `occupancy` crate, which also
//! holds the types the expansion names.
//!
//! This crate is the thin entry only: parsing and validation live in `occupancy_core::spec`
//! (shared with the build helper's source scanner); here the declaration is turned into tokens.
//! It must not grow its own grammar or checks. What it adds is knowledge of the build: the
//! facts file `occupancy-build` writes (see `facts`), so a declaration the build never checked
//! does not compile as if it had been.

use proc_macro::TokenStream;

mod expand;
mod facts_file;

/// Declares a CUDA kernel's launch and limits next to its Rust stub.
///
/// See the `occupancy` crate and `docs/declaring-kernels.md` for the keys and stub styles.
#[proc_macro_attribute]
pub fn kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::kernel(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
