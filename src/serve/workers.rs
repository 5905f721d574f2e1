//! Threads kept between requests: one pool for connections, one for queries.
//!
//! Starting a thread per request or per connection cost more than a
//! selective query itself (`clone3`, mapping the stack, a fresh allocator
//! heap, and unmapping it all again at exit: a quarter of the server's CPU
//! in `perf` when each request came on a new connection), so finished
//! workers wait for the next job. A new worker starts only when none is
//! idle, up to `max`.
//!
//! Query workers run with the large request stack
//! (`sparql::limits::spawn_request_thread`), because parsing and evaluation
//! recurse; each connection has at most one query in progress, so with the
//! connection cap as `max` no job ever waits behind a full pool
//! ([`Workers::run`]). Connection threads have the default stack (a small
//! query runs on them, within bounds tested for an eighth of it); the
//! accepting thread waits for a free one ([`Workers::run_when_free`]), so
//! connections beyond the cap queue in the kernel's listen backlog, not in
//! memory.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

type Job = Box<dyn FnOnce() + Send>;

/// The stack a pool's threads get.
#[derive(Clone, Copy, Debug)]
pub enum Stack {
    /// `sparql::limits::STACK_BYTES`, for parsing and evaluation.
    Request,
    /// The platform's default thread stack.
    Default,
}

pub struct Workers {
    jobs: Mutex<Sender<Job>>,
    queue: Arc<Mutex<Receiver<Job>>>,
    counts: Arc<(Mutex<Counts>, Condvar)>,
    max: usize,
    stack: Stack,
    name: &'static str,
}

/// Jobs handed out and not yet finished (queued or running), and threads.
#[derive(Default, Debug)]
struct Counts {
    busy: usize,
    started: usize,
}

impl Workers {
    pub fn new(max: usize, stack: Stack, name: &'static str) -> Workers {
        let (tx, rx) = channel();
        Workers {
            jobs: Mutex::new(tx),
            queue: Arc::new(Mutex::new(rx)),
            counts: Default::default(),
            max: max.max(1),
            stack,
            name,
        }
    }

    /// Runs `job` on an idle worker, or on a new one; past `max` busy
    /// workers it waits in the queue for the first to finish.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let counts = lock(&self.counts.0);
        self.hand_out(counts, Box::new(job))
    }

    /// Waits until a worker is free (or may start), then runs `job` on it.
    pub fn run_when_free(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let (mutex, freed) = &*self.counts;
        let mut counts = lock(mutex);
        while counts.busy >= self.max {
            counts = freed.wait(counts).unwrap_or_else(|p| p.into_inner());
        }
        self.hand_out(counts, Box::new(job))
    }

    /// Runs `f` on a worker and waits for its value; `None` if it panicked.
    pub fn run_and_wait<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<Option<T>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.run(move || {
            let _ = tx.send(f());
        })?;
        Ok(rx.recv().ok())
    }

    fn hand_out(&self, mut counts: MutexGuard<'_, Counts>, job: Job) -> std::io::Result<()> {
        counts.busy += 1;
        if counts.busy > counts.started && counts.started < self.max {
            if let Err(e) = self.start_worker() {
                counts.busy -= 1;
                return Err(e);
            }
            counts.started += 1;
        }
        drop(counts);
        let jobs = lock(&self.jobs);
        jobs.send(job).map_err(|_| std::io::Error::other("the worker pool has stopped"))
    }

    fn start_worker(&self) -> std::io::Result<()> {
        let (queue, counts) = (Arc::clone(&self.queue), Arc::clone(&self.counts));
        let work = move || loop {
            let next = lock(&queue).recv();
            let Ok(job) = next else { return };
            // A panicking job must not take the worker (and its place in
            // the pool) with it; the job's channel reports the failure.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let (mutex, freed) = &*counts;
            lock(mutex).busy -= 1;
            freed.notify_one();
        };
        match self.stack {
            Stack::Request => crate::sparql::limits::spawn_request_thread(work).map(drop),
            Stack::Default => std::thread::Builder::new().name(self.name.into()).spawn(work).map(drop),
        }
    }
}

/// Locks `m`, taking it over when a request panicked while holding it: the
/// endpoint's locks guard values that are replaced whole, never half-written.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    fn counts(pool: &Workers) -> (usize, usize) {
        let c = lock(&pool.counts.0);
        (c.busy, c.started)
    }

    fn wait_idle(pool: &Workers) {
        while counts(pool).0 > 0 {
            std::thread::yield_now();
        }
    }

    #[test]
    fn finished_workers_take_the_next_jobs_and_a_panic_costs_no_worker() {
        let pool = Workers::new(4, Stack::Request, "test");
        let (tx, rx) = sync_channel(16);
        for i in 0..8 {
            let tx = tx.clone();
            pool.run(move || tx.send(i).unwrap()).unwrap();
            assert_eq!(rx.recv().unwrap(), i);
            // The worker counts itself idle just after the job returns.
            wait_idle(&pool);
        }
        assert_eq!(counts(&pool).1, 1, "one worker served one job at a time");
        assert_eq!(pool.run_and_wait(|| 7).unwrap(), Some(7));
        assert_eq!(pool.run_and_wait(|| -> u8 { panic!("a job's bug") }).unwrap(), None);
        let tx2 = tx.clone();
        pool.run(move || tx2.send(99).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 99);
        assert!(counts(&pool).1 <= 2);
    }

    #[test]
    fn run_when_free_waits_for_a_worker_past_the_cap() {
        let pool = Arc::new(Workers::new(2, Stack::Default, "test"));
        let (release_tx, release_rx) = sync_channel::<()>(0);
        let release_rx = Arc::new(Mutex::new(release_rx));
        for _ in 0..2 {
            let rx = Arc::clone(&release_rx);
            pool.run_when_free(move || lock(&rx).recv().unwrap()).unwrap();
        }
        assert_eq!(counts(&pool), (2, 2));
        let (done_tx, done_rx) = sync_channel(1);
        let third = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.run_when_free(move || done_tx.send(()).unwrap()).unwrap())
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(done_rx.try_recv().is_err(), "a third job ran while two workers were busy");
        release_tx.send(()).unwrap();
        third.join().unwrap();
        done_rx.recv().unwrap();
        release_tx.send(()).unwrap();
        wait_idle(&pool);
        assert_eq!(counts(&pool), (0, 2), "no third thread was started");
    }
}
