//! Notes on undefined bounds macros, from nvcc's own words (quoted from nvcc 13.0 on a `.cu`
//! that uses `OCCUPANCY_BOUNDS_scale` with no declaration) and, where nvcc is installed, from a
//! real failing compile.

use super::*;

const DECLARED: &str = "#[occupancy::kernel(block = 256)]\nfn scale2();\n#[occupancy::kernel(block = 128, max_registers = 64)]\nfn saxpy();\n#[occupancy::kernel(family = \"affine_*\", block = 256)]\nfn affine();\n";

/// nvcc 13.0's output for `__global__ void OCCUPANCY_BOUNDS_scale scale(float* x)`.
const NVCC_OUTPUT: &str = "k.cu(2): error: incomplete type \"void\" is not allowed\n  extern \"C\" __attribute__((global)) void OCCUPANCY_BOUNDS_scale scale(float* x) { x[threadIdx.x] *= 2.0f; }\n                                          ^\n\n1 error detected in the compilation of \"k.cu\".\n";

fn failure(diagnostics: &str, file: &Path) -> Error {
    Error::NvccFailed {
        file: file.to_path_buf(),
        status: "exit status: 2".into(),
        diagnostics: diagnostics.into(),
        command: "nvcc k.cu".into(),
        notes: Vec::new(),
    }
}

fn notes_of(error: &Error) -> Vec<String> {
    match error {
        Error::NvccFailed { notes, .. } => notes.clone(),
        Error::Several(errors) => errors.iter().flat_map(notes_of).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn an_undeclared_kernel_s_macro_is_named_with_the_declared_ones_and_the_closest() {
    let defined = DefinedBounds::of(&Declarations::of_lib_rs(DECLARED));
    let error = annotate(
        Error::Several(vec![failure(NVCC_OUTPUT, Path::new("/nowhere/k.cu"))]),
        &defined,
    );
    assert_eq!(
        notes_of(&error),
        ["`OCCUPANCY_BOUNDS_scale` is not defined: no `#[occupancy::kernel]` declaration names kernel `scale` (declared: `saxpy`, `scale2`; did you mean `scale2`?)"]
    );
    let text = error.to_string();
    assert!(
        text.contains("incomplete type")
            && text.contains("\nnote: `OCCUPANCY_BOUNDS_scale` is not defined"),
        "{text}"
    );
}

#[test]
fn families_missing_keys_missing_includes_and_no_package_each_say_so() {
    let defined = DefinedBounds::of(&Declarations::of_lib_rs(DECLARED));
    let dir = std::env::temp_dir().join(format!("occupancy-bounds-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("k.cu");
    // The token is not echoed by nvcc here: it is found in the source at the reported line.
    std::fs::write(
        &source,
        "// no include\n__global__ void __launch_bounds__(OCCUPANCY_LAUNCH_BOUNDS_FAMILY_afine) a(float*) {}\n__global__ void __maxnreg__(OCCUPANCY_MAX_REGISTERS_scale2) b(float*) {}\n__global__ void OCCUPANCY_BOUNDS_saxpy c(float*) {}\n",
    )
    .unwrap();
    let diagnostics = "k.cu(2): error: identifier is undefined\nk.cu(3): error: identifier is undefined\nk.cu(4): error: incomplete type\n";
    let notes = notes_of(&annotate(failure(diagnostics, &source), &defined));
    assert_eq!(notes.len(), 3, "{notes:#?}");
    assert!(
        notes[0].starts_with("`OCCUPANCY_BOUNDS_saxpy` is defined in occupancy_bounds.h")
            && notes[0].contains("#include \"occupancy_bounds.h\""),
        "{notes:#?}"
    );
    assert_eq!(
        notes[1],
        "`OCCUPANCY_LAUNCH_BOUNDS_FAMILY_afine` is not defined: no `#[occupancy::kernel(family = ...)]` stub is named `afine` (declared: `affine`; did you mean `affine`?)"
    );
    assert_eq!(
        notes[2],
        "`OCCUPANCY_MAX_REGISTERS_scale2` is not defined: the declaration of `scale2` sets no `max_registers`"
    );
    let without = notes_of(&annotate(
        failure(NVCC_OUTPUT, &source),
        &DefinedBounds::without_package(),
    ));
    assert!(
        without[0].contains("without a package")
            && without[0].contains("-DOCCUPANCY_BOUNDS_scale="),
        "{without:?}"
    );
    // Other failures get no note.
    let other = notes_of(&annotate(
        failure("k.cu(1): error: identifier \"x\" is undefined\n", &source),
        &defined,
    ));
    assert!(other.is_empty(), "{other:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// The shape the notes rely on, from the nvcc this machine has (skipped without one).
#[test]
fn a_real_nvcc_failure_gets_the_note() {
    let Some(nvcc) = std::env::var_os("NVCC").or_else(|| {
        std::env::var_os("CUDA_HOME").map(|home| Path::new(&home).join("bin/nvcc").into_os_string())
    }) else {
        eprintln!("no NVCC or CUDA_HOME: skipped");
        return;
    };
    let dir = std::env::temp_dir().join(format!("occupancy-bounds-nvcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("k.cu");
    std::fs::write(&source, "extern \"C\" __global__ void OCCUPANCY_BOUNDS_scale scale(float* x) { x[threadIdx.x] *= 2.0f; }\n").unwrap();
    let Ok(output) = std::process::Command::new(nvcc)
        .args(["-c", "-o"])
        .arg(dir.join("k.o"))
        .arg(&source)
        .output()
    else {
        eprintln!("nvcc did not run: skipped");
        return;
    };
    assert!(!output.status.success());
    let diagnostics = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let notes = notes_of(&annotate(
        failure(&diagnostics, &source),
        &DefinedBounds::of(&Declarations::of_lib_rs(DECLARED)),
    ));
    assert!(notes.iter().any(|note| note.starts_with("`OCCUPANCY_BOUNDS_scale` is not defined: no `#[occupancy::kernel]` declaration names kernel `scale`")), "{diagnostics}\n{notes:#?}");
    std::fs::remove_dir_all(dir).unwrap();
}
