//! The one build cache: every structure the viewer builds on demand (the views, and through
//! [`Cache::make_room`] the hit index, the tooltips' context and the panels) is checked here
//! against the embedder's [`Memory`] before it is built. The rule of docs/limits.md lives here
//! and only here: a structure is built when its estimated bytes fit what is free (and its
//! largest single allocation fits a contiguous piece of the heap); when they do not, the least
//! recently used entries the caller does not need are released one at a time until they do;
//! when they still do not, it is not built and the caller gets a [`Shortfall`] to say why.
//! Without a [`Memory`] (the CLI, tests) everything fits.

use std::collections::HashMap;
use std::hash::Hash;

use crate::memory::{contiguous_room, Memory};

/// Why something could not be built: the bytes it needed and what was free after releasing
/// everything the caller let go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// Estimated bytes needed.
    pub need: u64,
    /// Bytes free under the budget after the releases.
    pub free: u64,
    /// The total fits but its largest single allocation does not: the heap is fragmented.
    pub fragmented: bool,
}

/// Entries by key, each with the tick it was last used at, under one [`Memory`].
pub struct Cache<K, V> {
    entries: HashMap<K, (V, u64)>,
    clock: u64,
    memory: Option<Memory>,
}

impl<K: Copy + Eq + Hash, V> Default for Cache<K, V> {
    fn default() -> Self {
        Self::new(None)
    }
}

impl<K: Copy + Eq + Hash, V> Cache<K, V> {
    /// An empty cache checked against `memory` (none: everything fits).
    #[must_use]
    pub fn new(memory: Option<Memory>) -> Self {
        Cache {
            entries: HashMap::new(),
            clock: 0,
            memory,
        }
    }

    /// The memory entries are checked against.
    #[must_use]
    pub fn memory(&self) -> Option<Memory> {
        self.memory
    }

    /// Checks entries against `memory` from now on.
    pub fn set_memory(&mut self, memory: Option<Memory>) {
        self.memory = memory;
    }

    /// True when `key` is built.
    #[must_use]
    pub fn contains(&self, key: &K) -> bool {
        self.entries.contains_key(key)
    }

    /// The entry of `key`, without marking it used.
    #[must_use]
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// The entry of `key`, marked used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.clock += 1;
        let now = self.clock;
        self.entries.get_mut(key).map(|(v, t)| {
            *t = now;
            v
        })
    }

    /// Every entry (no order).
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.values_mut().map(|(v, _)| v)
    }

    /// Every key (no order).
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }

    /// Stores `value` for `key` (marked used), replacing what was there.
    pub fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        self.entries.insert(key, (value, self.clock));
    }

    /// Releases every entry `keep` does not hold on to.
    pub fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        self.entries.retain(|k, _| keep(k));
    }

    /// `Ok` when `need` bytes (whose largest single allocation is `largest`) fit: first as
    /// things are, then after releasing, least recently used first, the entries `keep` does
    /// not hold on to, one at a time until they fit. `Err`: what was missing once nothing more
    /// could go.
    ///
    /// # Errors
    /// [`Shortfall`] when they do not fit even then.
    pub fn make_room(
        &mut self,
        need: u64,
        largest: u64,
        keep: impl Fn(&K) -> bool,
    ) -> Result<(), Shortfall> {
        let Some(mem) = self.memory else {
            return Ok(());
        };
        let fits = |m: &Memory| need <= m.free() && contiguous_room(largest);
        while !fits(&mem) {
            let oldest = self
                .entries
                .iter()
                .filter(|(k, _)| !keep(k))
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| *k);
            let Some(k) = oldest else { break };
            self.entries.remove(&k);
        }
        let free = mem.free();
        if need <= free && contiguous_room(largest) {
            return Ok(());
        }
        Err(Shortfall {
            need,
            free,
            fragmented: need <= free,
        })
    }

    /// The entry of `key`, built by `build` when missing and its `estimate` bytes fit (after
    /// [`Cache::make_room`] with `keep`, which always holds on to `key`). `Ok(None)`: `build`
    /// gave nothing.
    ///
    /// # Errors
    /// [`Shortfall`] when it is missing and does not fit.
    pub fn get_or_build(
        &mut self,
        key: K,
        estimate: u64,
        keep: impl Fn(&K) -> bool,
        build: impl FnOnce() -> Option<V>,
    ) -> Result<Option<&mut V>, Shortfall> {
        if !self.contains(&key) {
            self.make_room(estimate, 0, |k| *k == key || keep(k))?;
            if let Some(v) = build() {
                self.insert(key, v);
            }
        }
        Ok(self.get_mut(&key))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static USED: Cell<u64> = const { Cell::new(0) };
    }
    fn used() -> u64 {
        USED.with(Cell::get)
    }

    /// An entry that holds `n` bytes of the probe while it lives.
    struct Held(u64);
    impl Held {
        fn new(n: u64) -> Self {
            USED.with(|u| u.set(u.get() + n));
            Held(n)
        }
    }
    impl Drop for Held {
        fn drop(&mut self) {
            USED.with(|u| u.set(u.get() - self.0));
        }
    }

    #[test]
    fn releases_the_least_recently_used_until_it_fits() {
        let mut c: Cache<u32, Held> = Cache::new(Some(Memory { used, budget: 100 }));
        for k in 0..3 {
            assert!(c
                .get_or_build(k, 30, |_| false, || Some(Held::new(30)))
                .is_ok());
        }
        assert_eq!(used(), 90);
        // 1 is used again: 0 is now the oldest, then 2.
        assert!(c.get_mut(&1).is_some());
        assert!(c
            .get_or_build(3, 30, |_| false, || Some(Held::new(30)))
            .is_ok());
        assert!(!c.contains(&0) && c.contains(&1) && c.contains(&2) && c.contains(&3));
        // Kept entries stay even when that leaves no room.
        let r = c.get_or_build(4, 90, |k| *k != 2, || Some(Held::new(90)));
        assert_eq!(
            r.err(),
            Some(Shortfall {
                need: 90,
                free: 40,
                fragmented: false
            })
        );
        assert!(!c.contains(&2) && c.contains(&1) && c.contains(&3) && !c.contains(&4));
        drop(c);
        assert_eq!(used(), 0);
    }

    #[test]
    fn without_memory_everything_fits() {
        let mut c: Cache<u32, u32> = Cache::default();
        assert_eq!(c.make_room(u64::MAX, u64::MAX, |_| false), Ok(()));
        assert_eq!(
            c.get_or_build(1, u64::MAX, |_| false, || Some(7)),
            Ok(Some(&mut 7))
        );
    }
}
