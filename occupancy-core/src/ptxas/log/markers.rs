//! The lines build drivers print when a build failed. A log that holds one is the log of a
//! build in which some step never finished: the kernels of a file whose compile crashed or was
//! never started have no record, so the log cannot show that every kernel passed.
//!
//! Each marker is matched on the line as the parser sees it (CI and MSBuild prefixes stripped,
//! leading blanks trimmed), by its exact shape, so that ordinary output (a kernel named
//! `killed`, a test called `FAILED_cases`) is no marker. The compiler's own errors (`ptxas
//! fatal`, `nvcc error`, `file(3): error:`) are [`super::super::CompilerError`]s, not markers.

/// What failure `trimmed` (a line of another tool's output) reports, if any: the marker named
/// as the user would look for it.
pub(super) fn build_failure(trimmed: &str) -> Option<&'static str> {
    let line = trimmed.trim_end();
    let starts = |prefix: &str| line.starts_with(prefix);
    if starts("FAILED: Build did NOT complete successfully") {
        return Some("bazel's `FAILED: Build did NOT complete successfully`");
    }
    if starts("FAILED: ") || line == "FAILED:" {
        return Some("ninja's `FAILED:` (a build step failed)");
    }
    if starts("ninja: build stopped") {
        return Some("ninja's `build stopped`");
    }
    if is_make_error(line) {
        return Some("make's `*** ... Error` (a recipe failed)");
    }
    if starts("Build FAILED.") {
        return Some("MSBuild's `Build FAILED.`");
    }
    if has_msbuild_error(line) {
        return Some("MSBuild's `error MSB...`");
    }
    if starts("CMake Error") {
        return Some("CMake's `CMake Error`");
    }
    if starts("error: failed to run custom build command") {
        return Some("cargo's `failed to run custom build command` (a build script failed)");
    }
    if starts("error: could not compile") {
        return Some("cargo's `could not compile`");
    }
    if line.contains(" detected in the compilation of ") && line.contains("error") {
        return Some("nvcc's `errors detected in the compilation of`");
    }
    signal(line)
}

/// `make: *** [...] Error 1`, `make[2]: *** ...`, `gmake[1]: ***`, `mingw32-make: ***`.
fn is_make_error(line: &str) -> bool {
    let Some(rest) = ["make", "gmake", "mingw32-make"]
        .iter()
        .find_map(|tool| line.strip_prefix(tool))
    else {
        return false;
    };
    let rest = match rest.strip_prefix('[') {
        Some(level) => {
            let digits = level.bytes().take_while(u8::is_ascii_digit).count();
            match level[digits..].strip_prefix(']') {
                Some(after) if digits > 0 => after,
                _ => return false,
            }
        }
        None => rest,
    };
    rest.starts_with(": *** ")
}

/// `... : error MSB3721: The command ... exited with code 1.`
fn has_msbuild_error(line: &str) -> bool {
    let mut from = 0;
    while let Some(at) = line[from..].find("error MSB") {
        let after = &line[from + at + "error MSB".len()..];
        if after
            .bytes()
            .next()
            .is_some_and(|byte| byte.is_ascii_digit())
        {
            return true;
        }
        from += at + 1;
    }
    false
}

/// A process killed by a signal, as shells and the C library report it: `Segmentation fault`,
/// `(core dumped)`, and `Killed` / `Terminated` alone, after a job's process id (`bash: line 1:
/// 4242 Killed  nvcc ...`) or after a colon (`sh: 1: Killed`).
fn signal(line: &str) -> Option<&'static str> {
    if line.contains("Segmentation fault") {
        return Some("a `Segmentation fault` (a tool crashed)");
    }
    if line.contains("core dumped") {
        return Some("a `core dumped` (a tool crashed)");
    }
    for (word, marker) in [
        (
            "Killed",
            "a `Killed` process (out of memory, or a time limit)",
        ),
        ("Terminated", "a `Terminated` process"),
    ] {
        if killed_by_signal(line, word) {
            return Some(marker);
        }
    }
    None
}

/// Whether `word` appears as a shell's report of a signal: the whole line, or a whole word after
/// a process id or a colon.
fn killed_by_signal(line: &str, word: &str) -> bool {
    let mut from = 0;
    while let Some(at) = line[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let after_ok = line[end..]
            .chars()
            .next()
            .is_none_or(|next| next.is_whitespace());
        let before = line[..start].trim_end_matches([' ', '\t']);
        let spaced = before.len() < start;
        let previous = before.rsplit([' ', '\t']).next().unwrap_or("");
        let before_ok = before.is_empty()
            || (spaced && before.ends_with(':'))
            || (spaced && !previous.is_empty() && previous.bytes().all(|b| b.is_ascii_digit()));
        if after_ok && before_ok {
            return true;
        }
        from = end;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_s_failure_line_is_a_marker() {
        for line in [
            "FAILED: CMakeFiles/k.dir/k.cu.o",
            "ninja: build stopped: subcommand failed.",
            "make: *** [Makefile:3: all] Error 1",
            "make[2]: *** [CMakeFiles/k.dir/build.make:76: k.o] Error 1",
            "gmake[1]: *** Waiting for unfinished jobs....",
            "mingw32-make: *** [all] Error 2",
            "C:\\x\\CUDA 12.4.targets(799,9): error MSB3721: The command \"nvcc.exe\" exited with code 1.",
            "Build FAILED.",
            "CMake Error at CMakeLists.txt:12 (project):",
            "1 error detected in the compilation of \"k.cu\".",
            "2 errors detected in the compilation of \"/tmp/k.cu\".",
            "Segmentation fault (core dumped)",
            "/bin/sh: line 1: 4242 Segmentation fault      ptxas -v k.ptx",
            "Aborted (core dumped)",
            "Killed",
            "bash: line 1: 4242 Killed                  nvcc -c k.cu",
            "sh: 1: Terminated",
            "FAILED: Build did NOT complete successfully",
            "error: failed to run custom build command for `kernels v0.1.0 (/src)`",
            "error: could not compile `kernels` (lib) due to 1 previous error",
        ] {
            assert!(build_failure(line).is_some(), "{line:?}");
        }
    }

    #[test]
    fn ordinary_output_is_no_marker() {
        for line in [
            "ptxas info    : Compiling entry function 'Killed' for 'sm_90'",
            "-- FAILED_cases test list",
            "[ 50%] Building CUDA object CMakeFiles/k.dir/k.cu.o",
            "make[1]: Entering directory '/src'",
            "makefile: nothing",
            "warning: process was not Killed",
            "KilledCount = 3",
            "test terminated_early ... ok",
            "MSBuild version 17.9 error MSBx",
            "the errors detected in the compilation are none",
            "Terminated: no",
        ] {
            assert_eq!(build_failure(line), None, "{line:?}");
        }
    }
}
