//! The live keys: a table of nodes in shards, each behind a read-write
//! lock. A call finds its key's node under the read lock and counts itself
//! in the node's word before letting the lock go; a sweep frees idle nodes
//! under the write lock. So a node is freed only when no call holds a slot
//! of it or waits for one, and nobody is between finding it and counting.

use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::ptr::NonNull;

use hashbrown::HashTable;

use super::node::{HELD, Node, WAITERS, epoch_of, with_epoch};
use crate::loom::atomic::{AtomicUsize, Ordering::*};
use crate::loom::{RwLock, peek, read, write};

/// A node the table owns (made by `Box::into_raw`, freed by a sweep or the
/// table's drop).
struct Owned<K>(NonNull<Node<K>>);

impl<K> Owned<K> {
    fn node(&self) -> &Node<K> {
        // SAFETY: the table owns the node until it removes it, and removes
        // it only under its shard's write lock; `&self` borrows the table.
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: an `Owned` is a `Box<Node<K>>` that the table frees itself.
unsafe impl<K: Send> Send for Owned<K> {}
// SAFETY: as for `Send`: shared access to the node is `&Node<K>`.
unsafe impl<K: Sync> Sync for Owned<K> {}

/// The keys' hasher: foldhash, seeded per table (a fixed seed under loom,
/// whose models must repeat).
#[cfg(not(loom))]
type Hasher = foldhash::fast::RandomState;
#[cfg(loom)]
type Hasher = foldhash::fast::FixedState;

/// Takes back a key counted in `live` whose node was not made.
struct Uncount<'a>(&'a AtomicUsize);

impl Drop for Uncount<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// What a lookup finds.
pub(crate) enum Found<R> {
    /// The key's node, and what the caller did with it under the lock.
    Live(R),
    /// The key is new and the table holds `max_keys` keys.
    Full,
}

pub(crate) struct Table<K> {
    shards: Box<[RwLock<HashTable<Owned<K>>>]>,
    /// The shard's bits of a hash (below the top seven, which hashbrown
    /// uses within a shard): `hash << 7 >> shift`.
    shift: u32,
    hasher: Hasher,
    live: AtomicUsize,
}

impl<K: Hash + Eq> Table<K> {
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        let shards = std::thread::available_parallelism()
            .map_or(4, |n| n.get() * 4)
            .next_power_of_two()
            .clamp(4, 64);
        #[cfg(loom)]
        let shards: usize = 2;
        Table {
            shards: (0..shards).map(|_| RwLock::new(HashTable::new())).collect(),
            shift: 64 - shards.trailing_zeros(),
            hasher: Hasher::default(),
            live: AtomicUsize::new(0),
        }
    }

    fn shard(&self, hash: u64) -> &RwLock<HashTable<Owned<K>>> {
        let index = if self.shift == 64 {
            0
        } else {
            ((hash << 7) >> self.shift) as usize
        };
        &self.shards[index]
    }

    /// Runs `with` on `key`'s node under its shard's lock, making the node
    /// if the key is new (unless the table holds `max_keys` keys, or
    /// `make` says no).
    #[inline]
    pub(crate) fn with_node<Q, R>(
        &self,
        key: &Q,
        max_keys: usize,
        make: impl FnOnce() -> Node<K>,
        with: impl FnOnce(&Node<K>) -> R,
    ) -> Found<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let shard = self.shard(hash);
        {
            let table = read(shard);
            if let Some(owned) = table.find(hash, |owned| owned.node().key.borrow() == key) {
                return Found::Live(with(owned.node()));
            }
        }
        let mut table = write(shard);
        if let Some(owned) = table.find(hash, |owned| owned.node().key.borrow() == key) {
            return Found::Live(with(owned.node()));
        }
        // Counted in before it is made: new keys of two shards racing for
        // the last place cannot both see it free.
        if self.live.fetch_add(1, Relaxed) >= max_keys {
            self.live.fetch_sub(1, Relaxed);
            return Found::Full;
        }
        // Given back if making the key (or hashing one on a resize) panics.
        let counted = Uncount(&self.live);
        let node = make();
        let hasher = &self.hasher;
        let owned = Owned(NonNull::from(Box::leak(Box::new(node))));
        let entry = table.insert_unique(hash, owned, |owned| hasher.hash_one(&owned.node().key));
        std::mem::forget(counted);
        Found::Live(with(entry.get().node()))
    }

    /// Adds `node` (a key with limits of its own); false if its key is
    /// live already.
    pub(crate) fn insert(&self, node: Node<K>) -> bool {
        let hash = self.hasher.hash_one(&node.key);
        let mut table = write(self.shard(hash));
        if table
            .find(hash, |owned| owned.node().key == node.key)
            .is_some()
        {
            return false;
        }
        let hasher = &self.hasher;
        let owned = Owned(NonNull::from(Box::leak(Box::new(node))));
        table.insert_unique(hash, owned, |owned| hasher.hash_one(&owned.node().key));
        self.live.fetch_add(1, Relaxed);
        true
    }

    /// Runs `with` on `key`'s node if the key is live.
    pub(crate) fn find<Q, R>(&self, key: &Q, with: impl FnOnce(&Node<K>) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let table = read(self.shard(hash));
        table
            .find(hash, |owned| owned.node().key.borrow() == key)
            .map(|owned| with(owned.node()))
    }

    /// Visits every live node, one shard at a time under its read lock.
    pub(crate) fn for_each(&self, mut visit: impl FnMut(&Node<K>)) {
        for shard in &self.shards {
            let table = read(shard);
            for owned in table.iter() {
                visit(owned.node());
            }
        }
    }

    /// A sweep at `epoch`: frees the nodes with no calls and no waiters
    /// whose last call is more than `older_than` epochs old, except those
    /// with limits of their own, and marks the busy ones as seen now.
    /// Returns how many it freed.
    pub(crate) fn sweep(&self, epoch: u16, older_than: u16) -> usize {
        let mut freed = 0;
        let mut evicted: Vec<Box<Node<K>>> = Vec::new();
        for shard in &self.shards {
            let mut table = write(shard);
            table.retain(|owned| {
                let slot = &owned.node().slot;
                let mut word = peek(&slot.word);
                loop {
                    if word & (HELD | WAITERS) != 0 {
                        // Busy: seen now (calls that end later start its
                        // idle time no earlier than this sweep).
                        let seen = with_epoch(word, epoch);
                        match slot.word.compare_exchange(word, seen, SeqCst, SeqCst) {
                            Ok(_) => return true,
                            Err(now) => word = now,
                        }
                        continue;
                    }
                    // Idle: no call can count itself in it while the write
                    // lock is held, and no permit or waiter points at it.
                    let old = epoch.wrapping_sub(epoch_of(word));
                    if slot.pinned() || old <= older_than {
                        return true;
                    }
                    // SAFETY: made by `Box::leak` in `with_node`, removed
                    // from the table by returning false, never used again.
                    // Dropped once the lock is let go: a key's `Drop` that
                    // panics must not leave the table holding a freed node
                    // (nor hold the shard meanwhile).
                    evicted.push(unsafe { Box::from_raw(owned.0.as_ptr()) });
                    return false;
                }
            });
            let len = table.len();
            if !evicted.is_empty() && len < table.capacity() / 4 {
                let hasher = &self.hasher;
                table.shrink_to(len, |owned| hasher.hash_one(&owned.node().key));
            }
            drop(table);
            freed += evicted.len();
            self.live.fetch_sub(evicted.len(), Relaxed);
            evicted.clear();
        }
        freed
    }
}

impl<K> Table<K> {
    pub(crate) fn len(&self) -> usize {
        peek(&self.live)
    }
}

impl<K> Drop for Table<K> {
    fn drop(&mut self) {
        for shard in self.shards.iter_mut() {
            let table = match shard.get_mut() {
                Ok(table) => table,
                Err(poisoned) => poisoned.into_inner(),
            };
            for owned in table.drain() {
                // SAFETY: made by `Box::leak` in `with_node`; the table is
                // being dropped, and a permit keeps it alive (through the
                // bulkhead that owns it), so nothing points at the node.
                drop(unsafe { Box::from_raw(owned.0.as_ptr()) });
            }
        }
    }
}

impl<K> std::fmt::Debug for Table<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("shards", &self.shards.len())
            .field("live", &peek(&self.live))
            .finish()
    }
}
