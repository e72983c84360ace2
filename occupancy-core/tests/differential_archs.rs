//! The architecture table against NVIDIA's own lists, read at test time so that a new CUDA release
//! cannot add or change an architecture unnoticed:
//!
//! - CCCL's `cuda::arch_traits` (the newest `nvidia-cuda-cccl`, compiled here with g++): every
//!   architecture it knows is a row, with the same per-SM and per-block facts, and its
//!   arch-specific (`a`) list is ours;
//! - `nvcc --list-gpu-arch` / `--list-gpu-code` of both installed nvcc (13.0, the one builds use,
//!   and 13.5, the oracle): every architecture listed is a row;
//! - the `a`/`f` variants: exactly the `sm_*` names each ptxas (13.5, and 12.9 for sm_50..sm_72)
//!   accepts (`ptxas --help` lists them) are the variants the table accepts.
//!
//! Needs `scripts/setup-cuda.sh` (`source <(scripts/setup-cuda.sh --env)` sets NVCC,
//! OCCUPANCY_ORACLE_CUDA_HOME and OCCUPANCY_PTXAS_LEGACY). Fails, never skips, without them.

// A test reads the environment it runs in; the root clippy.toml's disallowed-methods are for
// the crates' own code.
#![allow(clippy::disallowed_methods)]

use occupancy_core::arch::{all, Arch, ArchFacts, Variant};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

fn env_path(name: &str) -> PathBuf {
    let value = std::env::var_os(name).unwrap_or_else(|| {
        panic!("{name} is not set: run `scripts/setup-cuda.sh && source <(scripts/setup-cuda.sh --env)`")
    });
    let path = PathBuf::from(value);
    assert!(
        path.exists(),
        "{name} = {} does not exist: run scripts/setup-cuda.sh",
        path.display()
    );
    path
}

fn oracle_home() -> PathBuf {
    env_path("OCCUPANCY_ORACLE_CUDA_HOME")
}

fn run(program: &PathBuf, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("running {} failed: {error}", program.display()));
    assert!(
        output.status.success(),
        "{} {args:?} failed:\n{}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

const TRAITS_PROGRAM: &str = r#"
#include <cuda/__device/arch_traits.h>
#include <cstdio>
int main() {
#define PRINT_TRAITS(_CC) { constexpr auto t = ::cuda::arch_traits<::cuda::arch_id::sm_##_CC>(); \
  std::printf("%d %d %d %d %d %d %d %d %d %zu %zu %zu %zu %d\n", t.compute_capability_major, \
    t.compute_capability_minor, t.max_threads_per_block, t.max_threads_per_multiprocessor, \
    t.max_warps_per_multiprocessor, t.max_blocks_per_multiprocessor, t.max_registers_per_block, \
    t.max_registers_per_multiprocessor, t.max_registers_per_thread, \
    t.max_shared_memory_per_multiprocessor, t.max_shared_memory_per_block, \
    t.max_shared_memory_per_block_optin, t.reserved_shared_memory_per_block, t.warp_size); }
  _CCCL_PP_FOR_EACH(PRINT_TRAITS, _CCCL_KNOWN_CUDA_ARCH_LIST)
#define PRINT_SPECIFIC(_CC) std::printf("a %d\n", _CC);
  _CCCL_PP_FOR_EACH(PRINT_SPECIFIC, _CCCL_KNOWN_CUDA_ARCH_SPECIFIC_LIST)
}
"#;

/// CCCL's traits, one line per architecture, and its arch-specific list.
fn cccl_traits() -> (Vec<Vec<u64>>, BTreeSet<u32>) {
    let include = oracle_home().join("include");
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let source = work.join("cccl_arch_traits.cpp");
    let binary = work.join("cccl_arch_traits");
    std::fs::write(&source, TRAITS_PROGRAM).unwrap();
    let output = Command::new(std::env::var("CXX").unwrap_or_else(|_| "g++".into()))
        .arg("-std=c++17")
        .arg("-I")
        .arg(include.join("cccl"))
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
        .expect("running g++ failed: install a C++ compiler or point $CXX at one");
    assert!(
        output.status.success(),
        "compiling CCCL's arch_traits.h failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut rows = Vec::new();
    let mut specific = BTreeSet::new();
    for line in run(&binary, &[]).lines() {
        if let Some(number) = line.strip_prefix("a ") {
            specific.insert(number.parse().unwrap());
        } else {
            rows.push(
                line.split(' ')
                    .map(|field| field.parse().unwrap())
                    .collect(),
            );
        }
    }
    (rows, specific)
}

fn our_fields(facts: &ArchFacts) -> Vec<u64> {
    [
        facts.major,
        facts.minor,
        facts.max_threads_per_block,
        facts.max_threads_per_sm,
        facts.max_warps_per_sm,
        facts.max_blocks_per_sm,
        facts.regs_per_block,
        facts.regs_per_sm,
        facts.max_regs_per_thread,
        facts.smem_per_sm,
        facts.smem_per_block,
        facts.smem_per_block_optin,
        facts.reserved_smem_per_block,
        facts.warp_size,
    ]
    .into_iter()
    .map(u64::from)
    .collect()
}

#[test]
fn every_arch_of_cccl_arch_traits_has_its_facts() {
    let (rows, specific) = cccl_traits();
    assert!(
        rows.len() >= 20,
        "CCCL listed only {} architectures",
        rows.len()
    );
    let mut seen = BTreeSet::new();
    for cccl in &rows {
        let name = format!("sm_{}{}", cccl[0], cccl[1]);
        let arch = Arch::parse(&name)
            .unwrap_or_else(|error| panic!("CCCL knows {name}, the table does not: {error}"));
        assert_eq!(
            our_fields(arch.facts()),
            *cccl,
            "{name}: ours vs CCCL (fields as in TRAITS_PROGRAM)"
        );
        seen.insert(arch.facts().name);
    }
    let ours_only: Vec<&str> = all()
        .iter()
        .map(|facts| facts.name)
        .filter(|name| !seen.contains(name))
        .collect();
    // Xavier (7.2) is in the Programming Guide's table but not in CCCL's traits.
    assert_eq!(ours_only, ["sm_72"], "rows CCCL does not know");
    let ours_specific: BTreeSet<u32> = Arch::every()
        .filter(|arch| arch.variant() == Variant::ArchSpecific)
        .map(Arch::number)
        .collect();
    assert_eq!(
        ours_specific, specific,
        "arch-specific (`a`) architectures: ours vs CCCL"
    );
}

fn listed_archs(nvcc: &PathBuf) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for flag in ["--list-gpu-arch", "--list-gpu-code"] {
        names.extend(run(nvcc, &[flag]).split_whitespace().map(str::to_string));
    }
    assert!(names.len() >= 10, "{} {names:?}", nvcc.display());
    names
}

#[test]
fn every_arch_each_installed_nvcc_lists_is_in_the_table() {
    let newest = oracle_home().join("bin").join("nvcc");
    for nvcc in [env_path("NVCC"), newest] {
        let version = run(&nvcc, &["--version"]);
        for name in listed_archs(&nvcc) {
            assert!(
                Arch::parse(&name).is_ok(),
                "{} ({}) lists {name}, the table does not know it",
                nvcc.display(),
                version.lines().last().unwrap_or_default()
            );
        }
    }
}

/// The `sm_*` names a ptxas accepts for `--gpu-name`, from its `--help`.
fn ptxas_names(ptxas: &PathBuf) -> BTreeSet<String> {
    let help = run(ptxas, &["--help"]);
    let start = help
        .find("--gpu-name")
        .expect("ptxas --help describes --gpu-name");
    let section = &help[start..];
    let end = section
        .find("Default value")
        .expect("the --gpu-name section ends");
    let allowed = section[..end]
        .split_once("Allowed values")
        .expect("ptxas --help lists the allowed --gpu-name values")
        .1;
    allowed
        .split('\'')
        .filter(|word| word.starts_with("sm_"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_variants_are_exactly_what_ptxas_accepts() {
    let newest = ptxas_names(&oracle_home().join("bin").join("ptxas"));
    let legacy = ptxas_names(&env_path("OCCUPANCY_PTXAS_LEGACY"));
    for name in newest.iter().chain(&legacy) {
        let arch =
            Arch::parse(name).unwrap_or_else(|error| panic!("ptxas accepts {name}: {error}"));
        assert_eq!(
            arch.variant() == Variant::Portable,
            !name.ends_with(['a', 'f']),
            "{name}"
        );
    }
    for arch in Arch::every() {
        let name = arch.to_string();
        // nvcc 13 dropped sm_50..sm_72; the 12.9 ptxas assembles them.
        let accepted_by = if arch.number() >= 75 {
            &newest
        } else {
            &legacy
        };
        assert!(
            accepted_by.contains(&name),
            "the table accepts {name}, ptxas does not"
        );
    }
    for rejected in ["sm_89a", "sm_90f", "sm_88a", "sm_88f", "sm_80a"] {
        assert!(
            !newest.contains(rejected) && Arch::parse(rejected).is_err(),
            "{rejected}"
        );
    }
}
