//! Running nvcc processes in parallel without exceeding cargo's `-j`.
//!
//! A build script owns one implicit job token. When cargo's jobserver is reachable
//! (`CARGO_MAKEFLAGS`), every extra concurrent job first takes a token from it, so occupancy-build
//! never runs more compilers than cargo allows across the whole build; without a jobserver
//! (the CLI), `NUM_JOBS` or the number of CPUs bounds it. This module schedules closures; it knows
//! nothing about what they run.
//!
//! A job may do several things at once (nvcc assembling each architecture in a thread of its
//! own, `--threads`): it borrows the extra slots from a [`Lender`], which hands out only what is
//! idle (a worker that found the queue empty, a jobserver token nobody holds), never waiting for
//! one. At the start of a build every slot is busy and each compile runs alone; at its tail the
//! last compiles spread over the slots the finished workers left.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// The extra slots a running job may borrow: the idle workers' own slots, and tokens of cargo's
/// jobserver that are free at the moment.
#[derive(Debug)]
pub struct Lender<'a> {
    idle: &'a AtomicUsize,
    client: Option<&'static jobserver::Client>,
}

/// Slots borrowed from a [`Lender`], given back when dropped.
#[derive(Debug)]
pub struct Borrowed<'a> {
    idle: &'a AtomicUsize,
    from_idle: usize,
    tokens: Vec<jobserver::Acquired>,
}

impl Borrowed<'_> {
    /// How many slots were lent.
    pub fn count(&self) -> usize {
        self.from_idle + self.tokens.len()
    }
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        self.idle.fetch_add(self.from_idle, Ordering::SeqCst);
    }
}

impl<'a> Lender<'a> {
    /// Up to `wanted` slots that are idle now, without waiting: idle workers' first, then free
    /// jobserver tokens.
    pub fn borrow(&self, wanted: usize) -> Borrowed<'a> {
        let mut from_idle = 0;
        while from_idle < wanted {
            let taken = self
                .idle
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |idle| {
                    idle.checked_sub(1)
                });
            if taken.is_err() {
                break;
            }
            from_idle += 1;
        }
        let mut tokens = Vec::new();
        if let Some(client) = self.client {
            while from_idle + tokens.len() < wanted {
                match client.try_acquire() {
                    Ok(Some(token)) => tokens.push(token),
                    _ => break,
                }
            }
        }
        Borrowed {
            idle: self.idle,
            from_idle,
            tokens,
        }
    }
}

/// Runs every task, at most `max_jobs` at once (and within cargo's jobserver when there is one),
/// returning the results in the tasks' order. A task may borrow idle slots while it runs
/// ([`Lender`]).
pub fn run_all<T: Send, F: FnOnce(&Lender<'_>) -> T + Send>(
    tasks: Vec<F>,
    max_jobs: usize,
) -> Vec<T> {
    let task_count = tasks.len();
    let queue: Mutex<VecDeque<(usize, F)>> = Mutex::new(tasks.into_iter().enumerate().collect());
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..task_count).map(|_| None).collect());
    let max_jobs = max_jobs.max(1);
    let workers = max_jobs.min(task_count.max(1));
    let client = if max_jobs > 1 { jobserver() } else { None };
    // Slots of `-j` no worker runs on: with a jobserver only the build script's own token is
    // ours to lend (the rest are the jobserver's); without one, every slot beyond the workers.
    let idle = AtomicUsize::new(match client {
        Some(_) => 0,
        None => max_jobs - workers,
    });
    let lender = Lender {
        idle: &idle,
        client,
    };
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
            let (next, store, lender, idle) = (&next, &store, &lender, &idle);
            scope.spawn(move || loop {
                // Worker 0 runs on the build script's own token; the others borrow one per job.
                let token = match (worker, client) {
                    (0, _) | (_, None) => None,
                    (_, Some(client)) => match client.acquire() {
                        Ok(token) => Some(token),
                        Err(_) => return,
                    },
                };
                let Some((index, task)) = next() else {
                    // A worker with a slot of its own (not a jobserver token, which goes back
                    // to the jobserver when dropped) lends it to the jobs still running.
                    if token.is_none() {
                        idle.fetch_add(1, Ordering::SeqCst);
                    }
                    return;
                };
                store(index, task(lender));
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
                move |_: &Lender<'_>| {
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
    fn a_job_borrows_only_what_is_idle_and_gives_it_back() {
        // Three slots, two jobs: one slot is idle from the start, and the first job to finish
        // lends its worker's slot to the other (no jobserver in unit tests).
        let lent = Mutex::new(Vec::new());
        let tasks: Vec<_> = [0u64, 300]
            .into_iter()
            .map(|wait| {
                let lent = &lent;
                move |lender: &Lender<'_>| {
                    std::thread::sleep(std::time::Duration::from_millis(wait));
                    let borrowed = lender.borrow(5);
                    lent.lock().unwrap().push(borrowed.count());
                }
            })
            .collect();
        run_all(tasks, 3);
        let mut lent = lent.into_inner().unwrap();
        lent.sort();
        // The quick job finds the spare slot; the slow one, after it, finds the spare slot
        // (given back) and the quick job's worker's slot.
        assert_eq!(lent, [1, 2]);
        let one = run_all(vec![|lender: &Lender<'_>| lender.borrow(3).count()], 1);
        assert_eq!(one, [0], "a build of -j1 lends nothing");
    }

    #[test]
    fn no_tasks_is_fine() {
        let tasks: Vec<fn(&Lender<'_>) -> u8> = Vec::new();
        assert!(run_all(tasks, 4).is_empty());
    }
}
