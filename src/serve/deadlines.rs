//! `--timeout`: one thread cancels every query whose time is up.
//!
//! spareval checks its cancellation token as it produces solutions, so a
//! cancelled query stops and releases its worker. A sleeper thread per query
//! (what a timer per request amounts to) exhausts threads under load; here
//! one thread waits for the earliest deadline of all.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use spareval::CancellationToken;

#[derive(Default)]
struct Pending {
    entries: Vec<(Instant, CancellationToken)>,
}

#[derive(Clone, Default)]
pub struct Deadlines {
    inner: Arc<(Mutex<Pending>, Condvar)>,
}

impl Deadlines {
    /// Starts the thread that cancels expired tokens.
    pub fn start() -> std::io::Result<Deadlines> {
        let d = Deadlines::default();
        let watcher = d.clone();
        std::thread::Builder::new().name("deadlines".into()).spawn(move || watcher.run())?;
        Ok(d)
    }

    /// Cancels `token` at `at` (unless it finished first; cancelling a
    /// finished query's token is harmless).
    pub fn add(&self, at: Instant, token: CancellationToken) {
        let (lock, wake) = &*self.inner;
        lock.lock().unwrap_or_else(|p| p.into_inner()).entries.push((at, token));
        wake.notify_one();
    }

    fn run(&self) {
        let (lock, wake) = &*self.inner;
        let mut pending = lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let now = Instant::now();
            // Finished queries cancel their own token, so it goes too.
            pending.entries.retain(|(at, token)| {
                let due = *at <= now;
                if due {
                    token.cancel();
                }
                !due && !token.is_cancelled()
            });
            let next = pending.entries.iter().map(|(at, _)| *at).min();
            pending = match next {
                Some(at) => {
                    wake.wait_timeout(pending, at - now).map_or_else(|p| p.into_inner().0, |(g, _)| g)
                }
                None => wake.wait(pending).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tokens_are_cancelled_at_their_deadline_and_not_before() {
        let d = Deadlines::start().unwrap();
        let (soon, later) = (CancellationToken::new(), CancellationToken::new());
        d.add(Instant::now() + Duration::from_secs(3600), later.clone());
        d.add(Instant::now() + Duration::from_millis(20), soon.clone());
        let waited = Instant::now();
        while !soon.is_cancelled() && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(soon.is_cancelled());
        assert!(!later.is_cancelled());
    }
}
