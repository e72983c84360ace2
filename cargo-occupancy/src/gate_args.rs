//! The flags of the commands that gate (`check`, `build`): lint levels, the lock, the compile
//! cache, declared once.

use std::path::PathBuf;

use crate::outputs::Output;

/// Lint levels, the lock and the cache directory of a command that gates.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GateArgs {
    /// Make a lint deny-level (repeatable).
    #[arg(long = "deny", value_name = "LINT")]
    pub deny: Vec<String>,
    /// Make a lint warn-level (repeatable).
    #[arg(long = "warn", value_name = "LINT")]
    pub warn: Vec<String>,
    /// Make a lint allow-level (repeatable).
    #[arg(long = "allow", value_name = "LINT")]
    pub allow: Vec<String>,
    /// A lock to compare every kernel read with (`occupancy.lock`, the format a build's
    /// baseline has): numbers worse than it are `regression` (deny), any other difference
    /// `baseline_stale` (warn). Sources, logs and binaries alike, each under its own path.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Write the lock (`--lock FILE`) from what this check reads instead of comparing with it:
    /// the entries of the inputs read are replaced, every other entry is kept.
    #[arg(long, requires = "lock")]
    pub bless: bool,
    /// Directory for nvcc's outputs and the per-file cache, yours alone (default:
    /// $XDG_CACHE_HOME/occupancy or ~/.cache/occupancy, created private, kept between runs).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

impl GateArgs {
    /// What these flags write: the lock it blesses, the `--cache-dir` it compiles into.
    pub fn outputs(&self) -> Vec<Output<'_>> {
        let lock = self.lock.iter().filter(|_| self.bless).map(|lock| Output {
            flag: "--lock",
            path: lock,
            is_dir: false,
        });
        let cache = self.cache_dir.iter().map(|dir| Output {
            flag: "--cache-dir",
            path: dir,
            is_dir: true,
        });
        lock.chain(cache).collect()
    }
}
