//! What the query operators hold, counted against the same `--memory-limit`
//! as the column caches.
//!
//! A process's limit is split between decoded columns (the caches) and the
//! store's mapped pages ([`super::ColumnCache::within`]). An operator that
//! holds a join side or a table of groups takes its bytes from the caches'
//! share: each cache gives way in proportion to its budget, at once when
//! the operator has grown by another 1/64 of the caches' budgets
//! ([`make_room`]), and at its own next lookup or insert. The caches are the
//! part that can be rebuilt; an operator's table cannot be dropped without
//! dropping the query.
//!
//! Counts are process-wide, as the limit is: two queries on two endpoint
//! workers both press on every cache. Each operator reports an estimate of
//! its tables (capacity times entry size) as they grow, not the
//! allocator's truth; spareval's own tables are not counted here.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};

use super::CacheInner;

/// Bytes the operators report holding now.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The budgets of the column caches alive now, summed.
static CACHE_BUDGETS: AtomicUsize = AtomicUsize::new(0);

/// One operator's share of [`HELD`]: set as its tables grow, given back
/// when it is dropped (an answer returned, a query cancelled or failed).
#[derive(Debug, Default)]
pub struct HeldBytes(usize);

impl HeldBytes {
    pub fn new() -> Self {
        HeldBytes(0)
    }

    /// This operator now holds `bytes`. Growth past 1/64 of the caches'
    /// budgets since room was last made makes room now.
    pub fn set(&mut self, bytes: usize) {
        let step = CACHE_BUDGETS.load(Relaxed) / 64;
        if bytes < self.0 {
            let held = HELD.fetch_sub(self.0 - bytes, Relaxed) - (self.0 - bytes);
            ROOM_MADE_AT.fetch_min(held, Relaxed);
            if self.0 - bytes > step {
                give_back_freed();
            }
            self.0 = bytes;
            return;
        }
        let held = HELD.fetch_add(bytes - self.0, Relaxed) + (bytes - self.0);
        self.0 = bytes;
        if held > ROOM_MADE_AT.load(Relaxed).saturating_add(step) {
            ROOM_MADE_AT.store(held, Relaxed);
            make_room();
        }
    }

    /// What this operator last reported.
    pub fn bytes(&self) -> usize {
        self.0
    }
}

/// A copy of a table holds as much again.
impl Clone for HeldBytes {
    fn clone(&self) -> Self {
        let mut copy = HeldBytes::new();
        copy.set(self.0);
        copy
    }
}

/// A table's bytes are given back once it is dropped: the fields of the
/// value that owns both drop in order, the table before its count.
impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.set(0);
    }
}

/// Bytes every operator reports holding now.
pub fn held_by_operators() -> usize {
    HELD.load(Relaxed)
}

/// The caches alive, with their budgets: an operator's growth evicts from
/// them at once ([`make_room`]), not at their next read, which may come
/// after the query's peak.
type Caches = Vec<(Weak<Mutex<CacheInner>>, usize)>;
static CACHES: Mutex<Caches> = Mutex::new(Vec::new());

/// [`HELD`] when room was last made in the caches.
static ROOM_MADE_AT: AtomicUsize = AtomicUsize::new(0);

/// Registers a cache and its budget (until [`cache_dropped`]).
pub(super) fn cache_made(budget: usize, cache: &Arc<Mutex<CacheInner>>) {
    CACHE_BUDGETS.fetch_add(budget, Relaxed);
    let mut caches = CACHES.lock().unwrap_or_else(|p| p.into_inner());
    caches.retain(|(c, _)| c.strong_count() > 0);
    caches.push((Arc::downgrade(cache), budget));
}

pub(super) fn cache_dropped(budget: usize) {
    CACHE_BUDGETS.fetch_sub(budget, Relaxed);
}

/// What a cache of `budget` bytes may hold now: its budget less its share
/// (by budget, among the caches alive) of what the operators hold.
pub(super) fn cache_room(budget: usize) -> usize {
    room(budget, HELD.load(Relaxed), CACHE_BUDGETS.load(Relaxed))
}

fn room(budget: usize, held: usize, all_budgets: usize) -> usize {
    if held == 0 {
        return budget;
    }
    let all = all_budgets.max(budget) as u128;
    let share = (held as u128 * budget as u128 / all) as usize;
    budget.saturating_sub(share)
}

/// Evicts from every cache what it may no longer hold, and gives the freed
/// memory back to the kernel.
fn make_room() {
    let caches: Vec<_> = CACHES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    for (cache, budget) in caches {
        if let Some(cache) = cache.upgrade() {
            cache.lock().unwrap_or_else(|p| p.into_inner()).evict_past(cache_room(budget));
        }
    }
    give_back_freed();
}

fn give_back_freed() {
    if let Some(give_back) = GIVE_BACK_FREED.get() {
        give_back();
    }
}

/// Gives freed heap memory back to the kernel; set once by the binary,
/// which chose the allocator ([`on_heap_over_budget`]).
static GIVE_BACK_FREED: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// The heap's resident bytes after the last [`GIVE_BACK_FREED`].
static AFTER_LAST_GIVE_BACK: AtomicUsize = AtomicUsize::new(0);

/// Registers what returns freed heap memory to the kernel (for mimalloc,
/// `mi_collect(true)`). An allocator keeps freed pages for a while to hand
/// them out again; a column cache that gives way to an operator frees
/// columns by the hundred megabytes, and until they are given back they
/// count against the limit as if still held (258 MiB of a large join's
/// 769 MiB heap at 100M quads).
pub fn on_heap_over_budget(give_back: fn()) {
    let _ = GIVE_BACK_FREED.set(give_back);
}

/// Called with the heap's resident bytes where the mapped pages' budget is
/// kept: past the caches' budgets (the heap's share of the limit: the
/// caches and the operators' tables they give way to), freed memory is
/// given back, once more each time the heap has grown by another 1/16.
pub(crate) fn keep_freed_heap_within_budget(heap: u64) {
    let Some(give_back) = GIVE_BACK_FREED.get() else { return };
    let budget = CACHE_BUDGETS.load(Relaxed);
    let heap = heap as usize;
    let last = AFTER_LAST_GIVE_BACK.load(Relaxed);
    if budget == 0 || heap <= budget || heap <= last.saturating_add(budget / 16) {
        return;
    }
    give_back();
    let after = crate::store::sidecars::checked::resident_bytes().map_or(heap, |r| r.anonymous as usize);
    AFTER_LAST_GIVE_BACK.store(after, Relaxed);
}

/// Bytes of a hash map of `capacity` entries of `entry` bytes each (one
/// control byte an entry beside it, and the table's empty eighth).
pub fn hashed_bytes(capacity: usize, entry: usize) -> usize {
    capacity * (entry + 1) * 8 / 7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caches_give_room_to_the_operators_by_their_budgets() {
        assert_eq!(room(1000, 0, 4000), 1000);
        // 800 held over caches of 1000 and 3000 bytes: 200 from the first.
        assert_eq!(room(1000, 800, 4000), 800);
        assert_eq!(room(3000, 800, 4000), 2400);
        // More held than every cache: nothing left, never below zero.
        assert_eq!(room(1000, 10_000, 4000), 0);
        // A cache not yet counted among the budgets (made on another
        // thread) still gives at most all of itself.
        assert_eq!(room(1000, 500, 0), 500);
    }
}
