//! One key's slots: a word of counts beside the key, in a node of its own
//! that a permit points at.

use crate::loom::atomic::{AtomicU64, Ordering};
use crate::loom::peek;

/// The calls of the key holding a slot: bits 0 to 23.
pub(super) const HELD: u64 = (1 << 24) - 1;
/// One waiter of the key: the waiters' count is bits 24 to 47.
pub(super) const WAITER: u64 = 1 << 24;
/// The waiters of the key not yet given a slot.
pub(super) const WAITERS: u64 = HELD << 24;
/// The sweep epoch of the key's last call (16 bits, wrapping), from bit 48.
pub(super) const EPOCH_SHIFT: u32 = 48;
const EPOCH: u64 = 0xffff << EPOCH_SHIFT;

/// One key's counts, what a permit of the key points at. Independent of
/// the key's type, so that a permit and the release need no generics.
///
/// ```text
///  63        48 47            24 23             0
/// +------------+----------------+----------------+
/// | epoch      | waiters        | held           |
/// +------------+----------------+----------------+
/// ```
#[derive(Debug)]
pub(crate) struct KeySlot {
    pub(super) word: AtomicU64,
    /// `per_key` (bits 0 to 31; 0: the bulkhead's, which a reload may
    /// change) and `reserved` (bits 32 to 63, fixed for the node's life)
    /// of a key with limits of its own; 0 for every other key.
    limits: AtomicU64,
}

impl KeySlot {
    pub(super) fn new(epoch: u16, per_key: u32, reserved: u32) -> Self {
        KeySlot {
            word: AtomicU64::new(u64::from(epoch) << EPOCH_SHIFT),
            limits: AtomicU64::new(u64::from(per_key) | u64::from(reserved) << 32),
        }
    }

    /// The key's limit (its own, else `default`) and its reservation.
    #[inline]
    pub(super) fn limits(&self, default: u32) -> (u64, u64) {
        let limits = peek(&self.limits);
        let own = limits & 0xffff_ffff;
        let per_key = if own == 0 { u64::from(default) } else { own };
        (per_key, limits >> 32)
    }

    /// Whether the key has limits of its own (it is then never evicted).
    pub(super) fn pinned(&self) -> bool {
        peek(&self.limits) != 0
    }

    /// Changes the key's own limit per key (its reservation stays).
    pub(super) fn set_per_key(&self, per_key: u32) {
        let reserved = peek(&self.limits) & !0xffff_ffff;
        self.limits
            .store(reserved | u64::from(per_key), Ordering::Relaxed);
    }
}

/// The word with its epoch replaced.
#[inline]
pub(super) fn with_epoch(word: u64, epoch: u16) -> u64 {
    word & !EPOCH | u64::from(epoch) << EPOCH_SHIFT
}

/// The epoch in a word.
#[inline]
pub(super) fn epoch_of(word: u64) -> u16 {
    (word >> EPOCH_SHIFT) as u16
}

/// A key and its counts. `slot` comes first (`repr(C)`): a permit holds a
/// pointer to it alone.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Node<K> {
    pub(super) slot: KeySlot,
    pub(super) key: K,
}
