//! The threads queries are evaluated on: kept between requests.
//!
//! Requests run on threads with the large request stack
//! (`sparql::limits::spawn_request_thread`), because parsing and
//! evaluation recurse. Starting such a thread per request cost more than a
//! selective query itself (mapping and unmapping the stack), so finished
//! workers wait for the next job. A new worker starts only when none is
//! idle, up to `max` (the connection cap: each connection has at most one
//! query in progress, so no job ever waits behind a full pool).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

pub struct Workers {
    jobs: Mutex<Sender<Job>>,
    queue: Arc<Mutex<Receiver<Job>>>,
    idle: Arc<AtomicUsize>,
    started: AtomicUsize,
    max: usize,
}

impl Workers {
    pub fn new(max: usize) -> Workers {
        let (tx, rx) = channel();
        Workers {
            jobs: Mutex::new(tx),
            queue: Arc::new(Mutex::new(rx)),
            idle: Arc::new(AtomicUsize::new(0)),
            started: AtomicUsize::new(0),
            max: max.max(1),
        }
    }

    /// Runs `job` on an idle worker, or on a new one.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let claimed =
            self.idle.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
        if !claimed && self.started.load(Ordering::SeqCst) < self.max {
            self.start_worker()?;
        }
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        jobs.send(Box::new(job)).map_err(|_| std::io::Error::other("the worker pool has stopped"))
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

    fn start_worker(&self) -> std::io::Result<()> {
        let (queue, idle) = (Arc::clone(&self.queue), Arc::clone(&self.idle));
        self.started.fetch_add(1, Ordering::SeqCst);
        crate::sparql::limits::spawn_request_thread(move || loop {
            let next = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
            let Ok(job) = next else { return };
            // A panicking job must not take the worker (and its place in
            // the pool) with it; the job's channel reports the failure.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            idle.fetch_add(1, Ordering::SeqCst);
        })
        .map(drop)
        .inspect_err(|_| {
            self.started.fetch_sub(1, Ordering::SeqCst);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn finished_workers_take_the_next_jobs_and_a_panic_costs_no_worker() {
        let pool = Workers::new(4);
        let (tx, rx) = sync_channel(16);
        for i in 0..8 {
            let tx = tx.clone();
            pool.run(move || tx.send(i).unwrap()).unwrap();
            assert_eq!(rx.recv().unwrap(), i);
            // The worker counts itself idle just after the job returns.
            while pool.idle.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
        }
        assert_eq!(pool.started.load(Ordering::SeqCst), 1, "one worker served one job at a time");
        assert_eq!(pool.run_and_wait(|| 7).unwrap(), Some(7));
        assert_eq!(pool.run_and_wait(|| -> u8 { panic!("a job's bug") }).unwrap(), None);
        let tx2 = tx.clone();
        pool.run(move || tx2.send(99).unwrap()).unwrap();
        assert_eq!(rx.recv().unwrap(), 99);
        assert!(pool.started.load(Ordering::SeqCst) <= 2);
    }
}
