// Records the host triple so that archiving works outside build scripts (the CLI), where cargo
// does not set TARGET/HOST for `cc`.
// The crate's own build script reads the host cargo names (not a build of kernels).
#[allow(clippy::disallowed_methods)]
fn main() {
    println!(
        "cargo:rustc-env=OCCUPANCY_BUILD_HOST={}",
        std::env::var("HOST").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=build.rs");
}
