//! Running nvcc processes in parallel without exceeding cargo's `-j`.
//!
//! A build script owns one implicit job token. When cargo's jobserver is reachable
//! (`CARGO_MAKEFLAGS`), every extra concurrent job first takes a token from it, so occupancy-build
//! never runs more compilers than cargo allows across the whole build; without a jobserver
//! (the CLI), `NUM_JOBS` or the number of CPUs bounds it. This module schedules closures; it knows
//! nothing about what they run.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use crate::env::TrackedEnv;

fn jobserver() -> Option<&'static jobserver::Client> {
    static CLIENT: OnceLock<Option<jobserver::Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // SAFETY: `from_env` is unsafe because the file descriptors it names in
            // CARGO_MAKEFLAGS might have been closed and reused by the process. Cargo hands them
            // to the build script and neither this crate nor a build script closes them; this is
            // the same call (and argument) `cc`'s parallel feature makes.
            #[allow(unsafe_code)]
            let client = unsafe { jobserver::Client::from_env() };
            client
        })
        .as_ref()
}

/// The most jobs to run at once: `NUM_JOBS` (set by cargo for build scripts), else the CPUs.
pub fn max_parallel_jobs(env: &TrackedEnv) -> usize {
    env.get("NUM_JOBS")
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&jobs| jobs > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        })
}

/// Runs every task, at most `max_jobs` at once (and within cargo's jobserver when there is one),
/// returning the results in the tasks' order.
pub fn run_all<T: Send, F: FnOnce() -> T + Send>(tasks: Vec<F>, max_jobs: usize) -> Vec<T> {
    let task_count = tasks.len();
    let queue: Mutex<VecDeque<(usize, F)>> = Mutex::new(tasks.into_iter().enumerate().collect());
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..task_count).map(|_| None).collect());
    let workers = max_jobs.clamp(1, task_count.max(1));
    let client = if workers > 1 { jobserver() } else { None };
    let next = || {
        queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front()
    };
    let store = |index: usize, value: T| {
        results
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())[index] = Some(value);
    };
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let next = &next;
            let store = &store;
            scope.spawn(move || loop {
                // Worker 0 runs on the build script's own token; the others borrow one per job.
                let token = match (worker, client) {
                    (0, _) | (_, None) => None,
                    (_, Some(client)) => match client.acquire() {
                        Ok(token) => Some(token),
                        Err(_) => return,
                    },
                };
                let Some((index, task)) = next() else { return };
                store(index, task());
                drop(token);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .into_iter()
        .map(|result| {
            result.expect("every queued task ran (worker 0 never stops before the queue is empty)")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn runs_everything_in_order_and_within_the_limit() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let tasks: Vec<_> = (0..20)
            .map(|index| {
                let running = &running;
                let peak = &peak;
                move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                    index * 2
                }
            })
            .collect();
        let results = run_all(tasks, 3);
        assert_eq!(results, (0..20).map(|index| index * 2).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 3);
    }

    #[test]
    fn no_tasks_is_fine() {
        let tasks: Vec<fn() -> u8> = Vec::new();
        assert!(run_all(tasks, 4).is_empty());
    }
}
