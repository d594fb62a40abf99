//! Keyed bulkheads: a limit per key (a tenant, a user, a shard) under one
//! global limit, so that one key's flood cannot take every slot of a
//! shared dependency.
//!
//! A [`KeyedBulkhead`] admits a call of key `k` while `k` holds fewer than
//! its `per_key` slots and all keys together hold fewer than
//! `max_concurrent`. A key may have limits of its own
//! ([`KeyLimits`]): its own `per_key`, and `reserved` slots counted
//! against `max_concurrent` from the start, so that they are always free
//! for it at once. When the global limit binds, a slot that comes free goes
//! to a waiting call of the key holding the fewest slots (max-min fair),
//! the oldest among equals. Keys idle for `idle_evict` are evicted by a
//! sweep off the call path; at most `max_keys` are live at once.

mod node;
mod slots;
// No background thread under loom (outside the models) nor Miri (which
// wants every thread joined).
#[cfg(not(any(loom, miri)))]
mod sweep;
mod table;
mod wait;

#[cfg(all(test, not(loom)))]
mod tests;

pub use wait::KeyedEnter;

pub(crate) use node::KeySlot;

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bulkhead::{Bulkhead, BulkheadConfig, BulkheadPermit, OwnedBulkheadPermit};
use crate::clock::nanos;
use crate::config::ConfigError;
use crate::context::PolicyContext;
use crate::events::{BulkheadEvent, BulkheadEventKind, Event, KeyRefusal};
use crate::loom::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use crate::loom::{Mutex, lock, peek};
use crate::rejection::BulkheadFull;
use node::{HELD, Node, WAITERS};
use slots::{Admit, Refusal, SlotRef, Slots, Take};
use table::{Found, Table};

/// The limits of one key of a [`KeyedBulkhead`] that has its own.
///
/// # Examples
///
/// ```
/// use bulkhead_core::KeyLimits;
///
/// // Up to 10 calls at once, 5 of them always free for this key.
/// let limits = KeyLimits::new(10).reserved(5);
/// assert_eq!((limits.per_key(), limits.reserved_slots()), (10, 5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyLimits {
    per_key: u32,
    reserved: u32,
}

impl KeyLimits {
    /// At most `per_key` calls of the key at once, none reserved.
    pub const fn new(per_key: u32) -> Self {
        KeyLimits {
            per_key,
            reserved: 0,
        }
    }

    /// Keeps `reserved` of the global slots for the key alone (at most its
    /// `per_key`; all keys' reservations together at most
    /// `max_concurrent`).
    #[must_use]
    pub const fn reserved(mut self, reserved: u32) -> Self {
        self.reserved = reserved;
        self
    }

    /// The limit per key.
    pub const fn per_key(&self) -> u32 {
        self.per_key
    }

    /// The slots reserved.
    pub const fn reserved_slots(&self) -> u32 {
        self.reserved
    }
}

/// What a keyed bulkhead's permits reach through their anchor: the
/// release of a key's slot, whatever the keys' type.
pub(crate) trait Anchor: Send + Sync + fmt::Debug {
    fn release(&self, slot: NonNull<KeySlot>);
}

/// The sweeps so far: their number (the epoch calls stamp on their key)
/// and the times of the recent ones.
#[derive(Debug)]
struct Sweeps {
    seq: u16,
    /// `(seq, at)` of the sweeps since the newest one at least
    /// `idle_evict` old.
    recent: std::collections::VecDeque<(u16, Instant)>,
    last: Option<Instant>,
}

struct Inner<K> {
    slots: Slots,
    table: Table<K>,
    max_keys: AtomicUsize,
    /// `idle_evict` in nanoseconds.
    idle_evict: AtomicU64,
    /// `max_wait` in nanoseconds.
    max_wait: AtomicU64,
    /// Whether it limits anything (a disabled one admits every call).
    enabled: bool,
    sweeps: Mutex<Sweeps>,
    /// New keys refused at `max_keys`.
    refused_keys: AtomicU64,
}

impl<K> fmt::Debug for Inner<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("slots", &self.slots)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync> Anchor for Inner<K> {
    fn release(&self, slot: NonNull<KeySlot>) {
        // SAFETY: a permit of the key gives its slot back once: it holds it.
        unsafe { self.slots.release(SlotRef::from_ptr(slot)) }
    }
}

/// A bulkhead with a limit per key under one global limit.
///
/// It admits a call of key `k` while `k` holds fewer than its `per_key`
/// slots and all keys together hold fewer than `max_concurrent`. A key may
/// have limits of its own ([`KeyLimits`]): its own `per_key`, and
/// `reserved` slots counted against `max_concurrent` from the start, always
/// free for it at once. When the global limit binds, a slot that comes free
/// goes to a waiting call of the key holding the fewest slots (max-min
/// fair), the oldest among equals. Keys idle for `idle_evict` are evicted
/// by a sweep off the call path; at most `max_keys` are live at once.
///
/// Cheap to clone; clones share the same keys and slots. Keys are any
/// `Hash + Eq` value the caller owns; a call passes anything its key type
/// borrows as (`&str` for `String` keys), which must hash and compare as
/// the key does (the [`Borrow`] contract). Permits are the same
/// [`BulkheadPermit`]s a [`Bulkhead`] gives.
///
/// Bad keys cost keys, never correctness or unbounded memory: a key whose
/// `Hash` disagrees with its `Eq` (or with its borrowed form's) may land in
/// a new node at each call, each such node one of the `max_keys`, and the
/// global limit still holds; the empty key and a huge one are keys like
/// any other (a key's own memory is kept once, in its node, while it is
/// live). A key with limits of its own that never gets a call stays live
/// and keeps its reservation.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadConfig, KeyedBulkhead};
///
/// let config = BulkheadConfig::builder()
///     .max_concurrent(3) // all tenants together
///     .per_key(2)        // each tenant
///     .build()?;
/// let api: KeyedBulkhead<String> = KeyedBulkhead::new("api", config);
///
/// let a1 = api.try_enter("tenant-a")?;
/// let a2 = api.try_enter("tenant-a")?;
/// assert!(api.try_enter("tenant-a").is_err()); // tenant-a holds its 2
/// let b1 = api.try_enter("tenant-b")?;          // tenant-b is not starved
/// assert!(api.try_enter("tenant-c").is_err()); // 3 in flight in all
/// drop(a1);
/// assert!(api.try_enter("tenant-c").is_ok());
/// # drop((a2, b1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedBulkhead<K> {
    anchor: Bulkhead,
    inner: Arc<Inner<K>>,
}

impl<K> Clone for KeyedBulkhead<K> {
    fn clone(&self) -> Self {
        KeyedBulkhead {
            anchor: self.anchor.clone(),
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> KeyedBulkhead<K> {
    /// The bulkhead this one is built on, which its permits name: its
    /// id, configuration and event context.
    pub(crate) fn anchor(&self) -> &Bulkhead {
        &self.anchor
    }

    /// The histograms its registry keeps for its instance, as
    /// [`Bulkhead::telemetry`]: for the tower `KeyedBulkheadLayer`.
    pub fn telemetry(&self) -> Option<std::sync::Arc<crate::InstanceTelemetry>> {
        self.anchor.telemetry()
    }
}

impl<K> fmt::Debug for KeyedBulkhead<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBulkhead")
            .field("instance", &self.anchor.instance())
            .field("max_concurrent", &self.inner.slots.cap())
            .field("per_key", &self.inner.slots.per_key())
            .field("keys", &self.inner.table.len())
            .finish()
    }
}

/// The largest `max_wait` honoured: longer waits are cut to it, so that a
/// deadline never overflows an `Instant`.
const LONGEST_WAIT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl<K: Hash + Eq + Send + Sync + 'static> KeyedBulkhead<K> {
    /// A keyed bulkhead on the system clock that publishes no events, with
    /// no key of its own limits: `max_concurrent` is the global limit,
    /// `per_key` each key's, `max_wait` how long a call may wait,
    /// `max_keys` and `idle_evict` bound the live keys.
    pub fn new(instance: &str, config: BulkheadConfig) -> Self {
        KeyedBulkhead::with_context(instance, config, PolicyContext::default())
    }

    /// A keyed bulkhead measuring `max_wait` and `idle_evict` on the
    /// context's clock and publishing to its event bus.
    pub fn with_context(instance: &str, config: BulkheadConfig, context: PolicyContext) -> Self {
        match KeyedBulkhead::with_keys(instance, config, context, []) {
            Ok(keyed) => keyed,
            Err(_) => unreachable!("no key limits, nothing to refuse"),
        }
    }

    /// [`with_context`](Self::with_context), with keys that have limits of
    /// their own. These keys are made at once, count as live keys and are
    /// never evicted; their reservations are taken from `max_concurrent` at
    /// once, whether calls of the key ever come or not.
    ///
    /// # Errors
    ///
    /// ATR-020 ([`ConfigError::KeyedLimits`]) if a key's `reserved` is
    /// above its `per_key`, if the reservations add up to more than
    /// `max_concurrent`, or if there are more such keys than `max_keys`;
    /// ATR-003 if a `per_key` is 0 or above 2^24 - 1.
    pub fn with_keys(
        instance: &str,
        config: BulkheadConfig,
        context: PolicyContext,
        keys: impl IntoIterator<Item = (K, KeyLimits)>,
    ) -> Result<Self, ConfigError> {
        let keys: Vec<(K, KeyLimits)> = keys.into_iter().collect();
        let mut reserved = 0u64;
        for (index, (_, limits)) in keys.iter().enumerate() {
            let name = || format!("keys[{index}]");
            if limits.per_key == 0 || limits.per_key > bulkhead_keys::MAX_PER_KEY {
                return Err(ConfigError::LimitOutOfRange {
                    key: format!("{}.per_key", name()),
                    value: limits.per_key.to_string(),
                    max: u64::from(bulkhead_keys::MAX_PER_KEY),
                });
            }
            if limits.reserved > limits.per_key {
                return Err(ConfigError::KeyedLimits {
                    key: format!("{}.reserved", name()),
                    reason: format!(
                        "reserved ({}) is above the key's per_key ({})",
                        limits.reserved, limits.per_key
                    ),
                });
            }
            reserved += u64::from(limits.reserved);
        }
        if reserved > u64::from(config.max_concurrent()) {
            return Err(ConfigError::KeyedLimits {
                key: "keys".to_owned(),
                reason: format!(
                    "the keys' reservations add up to {reserved}, above max_concurrent ({})",
                    config.max_concurrent()
                ),
            });
        }
        if keys.len() > config.max_keys() as usize {
            return Err(ConfigError::KeyedLimits {
                key: "keys".to_owned(),
                reason: format!(
                    "{} keys have limits of their own, above max_keys ({})",
                    keys.len(),
                    config.max_keys()
                ),
            });
        }
        let now = context.clock().now();
        let inner = Arc::new(Inner {
            slots: Slots::new(config.max_concurrent(), config.per_key(), reserved),
            table: Table::new(),
            max_keys: AtomicUsize::new(config.max_keys() as usize),
            idle_evict: AtomicU64::new(nanos(config.idle_evict())),
            max_wait: AtomicU64::new(nanos(config.max_wait().min(LONGEST_WAIT))),
            enabled: config.enabled(),
            sweeps: Mutex::new(Sweeps {
                seq: 0,
                recent: std::collections::VecDeque::new(),
                last: Some(now),
            }),
            refused_keys: AtomicU64::new(0),
        });
        for (index, (key, limits)) in keys.into_iter().enumerate() {
            let node = Node {
                slot: KeySlot::new(0, limits.per_key, limits.reserved),
                key,
            };
            if !inner.table.insert(node) {
                return Err(ConfigError::KeyedLimits {
                    key: format!("keys[{index}]"),
                    reason: "the key is listed twice".to_owned(),
                });
            }
        }
        let anchor = Bulkhead::keyed_anchor(
            instance,
            config,
            context,
            Arc::clone(&inner) as Arc<dyn Anchor>,
        );
        #[cfg(not(any(loom, miri)))]
        sweep::register(
            Arc::downgrade(&inner) as std::sync::Weak<dyn sweep::Sweep>,
            anchor.context().clock(),
        );
        Ok(KeyedBulkhead { anchor, inner })
    }

    /// The instance id.
    pub fn instance(&self) -> &'static str {
        self.anchor.instance()
    }

    /// The configuration it was built with, with the live limits.
    pub fn config(&self) -> BulkheadConfig {
        let config = self.anchor.config();
        config
            .with_max_concurrent(self.inner.slots.cap())
            .unwrap_or(config)
            .with_keyed(
                self.inner.slots.per_key(),
                self.inner.max_keys.load(Relaxed) as u32,
                Duration::from_nanos(self.inner.idle_evict.load(Relaxed)),
                Duration::from_nanos(self.inner.max_wait.load(Relaxed)),
            )
    }

    /// Takes a free slot of `key`, or fails at once with [`BulkheadFull`]
    /// whatever `max_wait` says.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if `key` holds its `per_key` slots, all keys hold
    /// `max_concurrent`, others wait, or `key` is new and `max_keys` keys
    /// are live.
    #[inline]
    pub fn try_enter<Q>(&self, key: &Q) -> Result<BulkheadPermit<'_>, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if self.inner.enabled {
            match self.fast(key) {
                KEY_FULL => return Err(self.reject(Refusal::KeyFull, false)),
                GLOBAL_FULL => return Err(self.reject(Refusal::GlobalFull, false)),
                SLOW => {}
                slot => return Ok(self.taken(slot)),
            }
        }
        self.try_enter_slow(key)
    }

    /// One try at a slot of a live key, inlined, on an enabled bulkhead:
    /// what it got comes back in one register (the slot's address, or
    /// [`KEY_FULL`], [`GLOBAL_FULL`], [`SLOW`] for a new key or a call that
    /// has to go to the lock), not as a result in memory. Nothing is done
    /// but the slot taken.
    #[inline]
    fn fast<Q>(&self, key: &Q) -> usize
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slots = &self.inner.slots;
        self.inner
            .table
            .find(key, |node| match slots.try_take(&node.slot) {
                Take::Taken => NonNull::from(&node.slot).as_ptr().expose_provenance(),
                Take::Refused(Refusal::KeyFull) => KEY_FULL,
                Take::Refused(Refusal::GlobalFull) => GLOBAL_FULL,
                Take::Refused(Refusal::TooManyKeys) | Take::Queue => SLOW,
            })
            .unwrap_or(SLOW)
    }

    /// The permit of the slot at the address [`fast`](Self::fast) returned.
    #[inline]
    pub(crate) fn taken(&self, slot: usize) -> BulkheadPermit<'_> {
        self.anchor.keyed_permit(Some(self.inner.slot_at(slot)))
    }

    /// [`try_enter`](Self::try_enter) of a new key, a disabled bulkhead, or
    /// a key whose call has to go to the lock.
    #[inline(never)]
    fn try_enter_slow<Q>(&self, key: &Q) -> Result<BulkheadPermit<'_>, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if !self.inner.enabled {
            return Ok(self.anchor.keyed_permit(None));
        }
        match self.take(key, None) {
            Ok(slot) => Ok(self.anchor.keyed_permit(Some(slot))),
            Err(Waited::Refused(refusal)) => Err(self.reject(refusal, false)),
            Err(Waited::Queued(..)) => unreachable!("no wake, no queueing"),
        }
    }

    /// Takes a slot of `key`, blocking the thread up to `max_wait` (and no
    /// later than the deadline of a [`deadline::scope`](crate::deadline)
    /// in force) for one to come free.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] as [`try_enter`](Self::try_enter), once the wait
    /// ran out; at once for a new key past `max_keys`.
    pub fn enter<Q>(&self, key: &Q) -> Result<BulkheadPermit<'_>, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if !self.inner.enabled {
            return Ok(self.anchor.keyed_permit(None));
        }
        // A free slot of a live key costs what `try_enter`'s does: the
        // clock and the thread's handle are read only to wait.
        let fast = self.fast(key);
        if fast > SLOW {
            return Ok(self.taken(fast));
        }
        let Some(until) = self.wait_until() else {
            // No wait: `try_enter`, the lookup already made.
            if let Some(refusal) = refusal_of(fast) {
                return Err(self.reject(refusal, false));
            }
            return self.try_enter_slow(key);
        };
        let wake = crate::clock::Wake::Thread(crate::loom::thread::current());
        match self.take(key, Some(wake)) {
            Ok(slot) => Ok(self.anchor.keyed_permit(Some(slot))),
            Err(Waited::Refused(refusal)) => Err(self.reject(refusal, false)),
            Err(Waited::Queued(seq, slot)) => {
                let clock = self.anchor.context().clock();
                loop {
                    if self.inner.slots.granted(seq, None) {
                        return Ok(self.anchor.keyed_permit(Some(slot.as_ptr())));
                    }
                    if clock.now() >= until {
                        // SAFETY: still queued until the cancel below.
                        let blocked_by = unsafe { self.inner.slots.blocked_by(slot) };
                        if self.inner.slots.cancel(seq) {
                            return Ok(self.anchor.keyed_permit(Some(slot.as_ptr())));
                        }
                        return Err(self.reject(blocked_by, true));
                    }
                    clock.park_until(until);
                }
            }
        }
    }

    /// Takes a slot of `key`, waiting without blocking up to `max_wait`
    /// (and no later than a deadline scope's); see [`KeyedEnter`]. The
    /// future borrows `key`; the permit it gives borrows the bulkhead only.
    pub fn enter_async<'a, 'k, Q>(&'a self, key: &'k Q) -> KeyedEnter<'a, 'k, K, Q>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        KeyedEnter::new(self, key)
    }

    /// `call`, an attempt under other policies, run holding a slot of `key`
    /// (waiting as [`enter`](Self::enter) does): a refusal is
    /// `CallError::Rejected`, the call's own error `CallError::Inner`, for
    /// the policies around it to judge (`CallError::flatten` turns the
    /// outcome back into one `CallError`).
    #[doc(hidden)]
    #[inline]
    pub fn hold<Q, T, E>(
        &self,
        key: &Q,
        call: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, crate::CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let permit = self
            .enter(key)
            .map_err(|full| crate::CallError::Rejected(full.into()))?;
        let result = call();
        drop(permit);
        result.map_err(crate::CallError::Inner)
    }

    /// [`hold`](Self::hold) of an attempt's future, waiting as
    /// [`enter_async`](Self::enter_async) does.
    #[doc(hidden)]
    pub async fn hold_async<Q, T, E>(
        &self,
        key: &Q,
        attempt: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, crate::CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let permit = self
            .enter_async(key)
            .await
            .map_err(|full| crate::CallError::Rejected(full.into()))?;
        let result = attempt.await;
        drop(permit);
        result.map_err(crate::CallError::Inner)
    }

    /// Like [`try_enter`](Self::try_enter), with a permit that can move to
    /// another thread or task (it keeps the bulkhead alive).
    ///
    /// # Errors
    ///
    /// As [`try_enter`](Self::try_enter).
    pub fn try_enter_owned<Q>(&self, key: &Q) -> Result<OwnedBulkheadPermit, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let permit = self.try_enter(key)?;
        Ok(self.anchor.owned(permit))
    }

    /// A free slot of a live key, as an owned permit, if there is one: no
    /// wait, no queue, no rejection published; `None` means "go through
    /// [`enter_owned_async`](Self::enter_owned_async)" (for a tower layer,
    /// which then allocates only for requests that may wait).
    #[doc(hidden)]
    #[inline]
    pub fn try_enter_owned_if_free<Q>(&self, key: &Q) -> Option<OwnedBulkheadPermit>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if !self.inner.enabled {
            return None;
        }
        let fast = self.fast(key);
        (fast > SLOW).then(|| self.anchor.owned(self.taken(fast)))
    }

    /// Like [`enter`](Self::enter), with a permit that can move.
    ///
    /// # Errors
    ///
    /// As [`enter`](Self::enter).
    pub fn enter_owned<Q>(&self, key: &Q) -> Result<OwnedBulkheadPermit, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let permit = self.enter(key)?;
        Ok(self.anchor.owned(permit))
    }

    /// Like [`enter_async`](Self::enter_async), with a permit that can
    /// move.
    ///
    /// # Errors
    ///
    /// As [`enter_async`](Self::enter_async).
    pub async fn enter_owned_async<Q>(&self, key: &Q) -> Result<OwnedBulkheadPermit, BulkheadFull>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let permit = self.enter_async(key).await?;
        Ok(self.anchor.owned(permit))
    }

    /// The calls of `key` holding a slot now (0 for a key not live).
    pub fn in_flight<Q>(&self, key: &Q) -> u32
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inner
            .table
            .find(key, |node| (peek(&node.slot.word) & HELD) as u32)
            .unwrap_or(0)
    }

    /// Whether `key` is live (has a node: it had a call since it was last
    /// evicted, or has limits of its own).
    pub fn is_live<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.inner.table.find(key, |_| ()).is_some()
    }

    /// The live keys.
    pub fn keys(&self) -> usize {
        self.inner.table.len()
    }

    /// The calls of all keys holding a slot now (a sum over the live keys,
    /// each read on its own: exact when nothing moves).
    pub fn concurrent_calls(&self) -> u32 {
        let mut sum = 0u32;
        self.inner.table.for_each(|node| {
            sum = sum.saturating_add((peek(&node.slot.word) & HELD) as u32);
        });
        sum
    }

    /// The calls waiting for a slot now.
    pub fn waiting_calls(&self) -> u32 {
        self.inner.slots.waiting() as u32
    }

    /// The global limit in force.
    pub fn max_concurrent(&self) -> u32 {
        self.inner.slots.cap()
    }

    /// How long a call may wait for a slot (zero: it never waits).
    pub fn max_wait(&self) -> Duration {
        Duration::from_nanos(peek(&self.inner.max_wait))
    }

    /// The limit of a key without one of its own.
    pub fn per_key(&self) -> u32 {
        self.inner.slots.per_key()
    }

    /// The limits of `key`: its own, or `per_key` and nothing reserved.
    pub fn limits_of<Q>(&self, key: &Q) -> KeyLimits
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let default = self.inner.slots.per_key();
        self.inner
            .table
            .find(key, |node| {
                let (per_key, reserved) = node.slot.limits(default);
                KeyLimits::new(per_key as u32).reserved(reserved as u32)
            })
            .unwrap_or(KeyLimits::new(default))
    }

    /// Changes the global limit (1 to 2^30 - 1, and at least the keys'
    /// reservations); calls above a lowered limit finish, and no new one
    /// is admitted beyond it meanwhile.
    ///
    /// # Errors
    ///
    /// ATR-003 out of range; ATR-020 below the reservations.
    pub fn set_max_concurrent(&self, max_concurrent: u32) -> Result<(), ConfigError> {
        self.anchor.config().with_max_concurrent(max_concurrent)?;
        let reserved = self.reserved_total();
        if u64::from(max_concurrent) < reserved {
            return Err(ConfigError::KeyedLimits {
                key: "max_concurrent".to_owned(),
                reason: format!(
                    "{max_concurrent} is below the keys' reservations, {reserved} in all"
                ),
            });
        }
        let from = self.inner.slots.cap();
        self.inner.slots.set_cap(max_concurrent);
        if from != max_concurrent {
            self.publish(BulkheadEventKind::LimitChanged {
                from,
                to: max_concurrent,
            });
        }
        Ok(())
    }

    /// Changes the limit of the keys without one of their own (1 to
    /// 2^24 - 1).
    ///
    /// # Errors
    ///
    /// ATR-003 out of range.
    pub fn set_per_key(&self, per_key: u32) -> Result<(), ConfigError> {
        check_per_key("per_key", per_key)?;
        self.inner.slots.set_per_key(per_key);
        Ok(())
    }

    /// Changes the limit of a key with limits of its own (its reservation
    /// stays as built).
    ///
    /// # Errors
    ///
    /// ATR-003 out of range; ATR-020 for a key without limits of its own,
    /// or below its reservation.
    pub fn set_key_per_key<Q>(&self, key: &Q, per_key: u32) -> Result<(), ConfigError>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized + fmt::Debug,
    {
        check_per_key("per_key", per_key)?;
        let changed = self.inner.table.find(key, |node| {
            if !node.slot.pinned() {
                return Err(format!("{key:?} has no limits of its own"));
            }
            let (_, reserved) = node.slot.limits(0);
            if u64::from(per_key) < reserved {
                return Err(format!(
                    "per_key ({per_key}) is below the key's reservation ({reserved})"
                ));
            }
            node.slot.set_per_key(per_key);
            Ok(())
        });
        match changed {
            Some(Ok(())) => {
                self.inner.slots.redispatch();
                Ok(())
            }
            Some(Err(reason)) => Err(ConfigError::KeyedLimits {
                key: format!("keys.{key:?}.per_key"),
                reason,
            }),
            None => Err(ConfigError::KeyedLimits {
                key: format!("keys.{key:?}.per_key"),
                reason: format!("{key:?} has no limits of its own"),
            }),
        }
    }

    /// Changes `max_keys`; keys live beyond a lowered bound stay until
    /// evicted.
    ///
    /// # Errors
    ///
    /// ATR-003 for 0.
    pub fn set_max_keys(&self, max_keys: u32) -> Result<(), ConfigError> {
        if max_keys == 0 {
            return Err(ConfigError::LimitOutOfRange {
                key: "max_keys".to_owned(),
                value: "0".to_owned(),
                max: u64::from(u32::MAX),
            });
        }
        self.inner.max_keys.store(max_keys as usize, Relaxed);
        Ok(())
    }

    /// Changes `max_wait`, for calls that start waiting from now on.
    pub fn set_max_wait(&self, max_wait: Duration) {
        self.inner
            .max_wait
            .store(nanos(max_wait.min(LONGEST_WAIT)), Relaxed);
    }

    /// Changes `idle_evict`, from the next sweep.
    pub fn set_idle_evict(&self, idle_evict: Duration) {
        self.inner.idle_evict.store(nanos(idle_evict), Relaxed);
    }

    /// Runs a sweep now if one is due (sweeps run at most every quarter of
    /// `idle_evict`, also from a background thread), evicting the keys idle
    /// for `idle_evict` or longer. Returns how many it evicted. A key is
    /// evicted between `idle_evict` and 1.5 times `idle_evict` after its
    /// last call ended, given a sweep every quarter of it.
    pub fn evict_idle(&self) -> usize {
        self.inner.sweep_if_due(self.anchor.context().clock().now())
    }

    /// New keys refused since the start because `max_keys` keys were
    /// live.
    pub fn refused_keys(&self) -> u64 {
        self.inner.refused_keys.load(Relaxed)
    }

    /// What it holds now: totals, and the `top` keys holding the most
    /// slots (then the most waiters), most first. Reads every live key
    /// (one shard at a time under its read lock).
    pub fn snapshot(&self, top: usize) -> KeyedSnapshot<K>
    where
        K: Clone,
    {
        let default = self.inner.slots.per_key();
        let mut in_flight = 0u64;
        let mut reserved = 0u64;
        let mut busy = 0usize;
        let mut heaviest: Vec<KeyOccupancy<K>> = Vec::new();
        self.inner.table.for_each(|node| {
            let word = peek(&node.slot.word);
            let held = (word & HELD) as u32;
            let waiting = ((word & WAITERS) >> 24) as u32;
            in_flight += u64::from(held);
            reserved += node.slot.limits(0).1;
            if held > 0 || waiting > 0 {
                busy += 1;
            }
            if top == 0 || (held == 0 && waiting == 0) {
                return;
            }
            let weight = (held, waiting);
            if heaviest.len() == top
                && heaviest
                    .last()
                    .is_some_and(|last| (last.in_flight, last.waiting) >= weight)
            {
                return;
            }
            let (per_key, reserved) = node.slot.limits(default);
            let entry = KeyOccupancy {
                key: node.key.clone(),
                in_flight: held,
                waiting,
                per_key: per_key as u32,
                reserved: reserved as u32,
            };
            let at = heaviest.partition_point(|e| (e.in_flight, e.waiting) >= weight);
            heaviest.insert(at, entry);
            heaviest.truncate(top);
        });
        KeyedSnapshot {
            in_flight: u32::try_from(in_flight).unwrap_or(u32::MAX),
            waiting: self.inner.slots.waiting() as u32,
            max_concurrent: self.inner.slots.cap(),
            per_key: default,
            reserved: u32::try_from(reserved).unwrap_or(u32::MAX),
            keys: self.inner.table.len(),
            busy_keys: busy,
            max_keys: self.inner.max_keys.load(Relaxed),
            refused_keys: self.inner.refused_keys.load(Relaxed),
            top: heaviest,
        }
    }

    /// The keys' reservations, in all.
    fn reserved_total(&self) -> u64 {
        let mut reserved = 0;
        self.inner.table.for_each(|node| {
            reserved += node.slot.limits(0).1;
        });
        reserved
    }

    /// Whether refused calls may wait (`max_wait` is not zero): one load,
    /// no clock read.
    #[inline(always)]
    pub(crate) fn waits(&self) -> bool {
        self.inner.max_wait.load(Relaxed) != 0
    }

    /// When a waiting call gives up: `None` if calls do not wait (or a
    /// deadline scope has already passed).
    pub(crate) fn wait_until(&self) -> Option<Instant> {
        let max_wait = Duration::from_nanos(self.inner.max_wait.load(Relaxed));
        if max_wait.is_zero() {
            return None;
        }
        let now = self.anchor.context().clock().now();
        let own = now + max_wait;
        let until = crate::deadline::first_before(Some(own)).unwrap_or(own);
        (until > now).then_some(until)
    }

    /// A slot of `key`: taken, refused, or (with `wake`) queued for.
    pub(crate) fn take<Q>(
        &self,
        key: &Q,
        wake: Option<crate::clock::Wake>,
    ) -> Result<NonNull<KeySlot>, Waited>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self.take_once(key, wake) {
            Err(Retry(wake)) => {
                // A new key past `max_keys`: evict the idle keys if a sweep
                // is due, and try once more.
                if self.evict_idle() > 0
                    && let Ok(taken) = self.take_once(key, wake)
                {
                    return taken;
                }
                self.inner.refused_keys.fetch_add(1, Relaxed);
                Err(Waited::Refused(Refusal::TooManyKeys))
            }
            Ok(taken) => taken,
        }
    }

    #[inline]
    fn take_once<Q>(
        &self,
        key: &Q,
        wake: Option<crate::clock::Wake>,
    ) -> Result<Result<NonNull<KeySlot>, Waited>, Retry>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut wake = wake;
        let slots = &self.inner.slots;
        let mut wakes = Vec::new();
        let found = self.inner.table.with_node(
            key,
            self.inner.max_keys.load(Relaxed),
            || Node {
                slot: KeySlot::new(slots.epoch.load(Relaxed) as u16, 0, 0),
                key: key.to_owned(),
            },
            |node| {
                let slot = &node.slot;
                match slots.try_take(slot) {
                    Take::Taken => Ok(NonNull::from(slot)),
                    Take::Refused(refusal) if wake.is_none() => Err(Waited::Refused(refusal)),
                    Take::Refused(_) | Take::Queue => {
                        let (admit, served) = slots.admit(slot, wake.take());
                        wakes = served;
                        match admit {
                            Admit::Taken => Ok(NonNull::from(slot)),
                            Admit::Refused(refusal) => Err(Waited::Refused(refusal)),
                            Admit::Queued(seq) => Err(Waited::Queued(seq, SlotRef::new(slot))),
                        }
                    }
                }
            },
        );
        match found {
            Found::Live(taken) => {
                self.wake_served(wakes, &taken);
                Ok(taken)
            }
            Found::Full => Err(Retry(wake)),
        }
    }

    /// Wakes the waiters a call's slow path served, out of the shard's
    /// lock. If a waker panics, the call gives back what it got (a slot,
    /// or its place in the queue) before the panic goes on: it would
    /// otherwise be lost with its permit, and the slot with it for good.
    fn wake_served(
        &self,
        wakes: Vec<crate::clock::Wake>,
        taken: &Result<NonNull<KeySlot>, Waited>,
    ) {
        if wakes.is_empty() {
            return;
        }
        let woken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::clock::wake_all(wakes);
        }));
        if let Err(panic) = woken {
            let slots = &self.inner.slots;
            match *taken {
                // SAFETY: this call holds the slot it took.
                Ok(slot) => unsafe { slots.release(SlotRef::from_ptr(slot)) },
                Err(Waited::Queued(seq, slot)) => {
                    if slots.cancel(seq) {
                        // SAFETY: the slot was handed to this waiter.
                        unsafe { slots.release(slot) };
                    }
                }
                Err(Waited::Refused(_)) => {}
            }
            std::panic::resume_unwind(panic);
        }
    }

    /// Publishes a refusal (to the listeners, if any: nothing is counted on
    /// the call path, as for a plain bulkhead's quiet rejection; observers
    /// count the events); the error.
    #[cold]
    pub(crate) fn reject(&self, refusal: Refusal, waited: bool) -> BulkheadFull {
        if self.anchor.context().has_listeners() {
            let (reason, limit) = match refusal {
                Refusal::KeyFull => (KeyRefusal::KeyFull, self.inner.slots.per_key()),
                Refusal::GlobalFull => (KeyRefusal::GlobalFull, self.inner.slots.cap()),
                Refusal::TooManyKeys => (
                    KeyRefusal::TooManyKeys,
                    u32::try_from(peek(&self.inner.max_keys)).unwrap_or(u32::MAX),
                ),
            };
            self.publish(BulkheadEventKind::KeyRejected {
                reason,
                limit,
                waited,
            });
        }
        BulkheadFull::new(self.anchor.instance())
    }

    fn publish(&self, kind: BulkheadEventKind) {
        let instance = self.anchor.instance();
        self.anchor
            .context()
            .publish(|at| Event::Bulkhead(BulkheadEvent { instance, kind, at }));
    }
}

/// What the inlined fast path of `try_enter` got, when not a slot's
/// address (a `KeySlot` is 8-aligned: no address is below 8).
const KEY_FULL: usize = 1;
const GLOBAL_FULL: usize = 2;
const SLOW: usize = 3;

/// The refusal a [`KeyedBulkhead::fast`] result stands for, if it is one
/// (`None` for a slot's address or [`SLOW`]).
#[inline(always)]
pub(crate) const fn refusal_of(fast: usize) -> Option<Refusal> {
    match fast {
        KEY_FULL => Some(Refusal::KeyFull),
        GLOBAL_FULL => Some(Refusal::GlobalFull),
        _ => None,
    }
}

/// A new key found `max_keys` keys live; the wake not used.
struct Retry(Option<crate::clock::Wake>);

/// What [`KeyedBulkhead::take`] got instead of a slot.
pub(crate) enum Waited {
    Refused(Refusal),
    Queued(u64, SlotRef),
}

fn check_per_key(key: &str, per_key: u32) -> Result<(), ConfigError> {
    if per_key == 0 || per_key > bulkhead_keys::MAX_PER_KEY {
        return Err(ConfigError::LimitOutOfRange {
            key: key.to_owned(),
            value: per_key.to_string(),
            max: u64::from(bulkhead_keys::MAX_PER_KEY),
        });
    }
    Ok(())
}

#[cfg(not(any(loom, miri)))]
impl<K: Hash + Eq + Send + Sync> sweep::Sweep for Inner<K> {
    fn sweep_at(&self, now: Instant) {
        self.sweep_if_due(now);
    }

    fn period(&self) -> Duration {
        self.period()
    }
}

impl<K> Inner<K> {
    /// The slot at the address the fast path found, with the provenance of
    /// the node it came from (exposed when the address was taken).
    #[inline]
    fn slot_at(&self, addr: usize) -> NonNull<KeySlot> {
        let ptr = std::ptr::with_exposed_provenance_mut::<KeySlot>(addr);
        // An address the fast path returned: never null (all values below
        // 8 are not addresses).
        NonNull::new(ptr).unwrap_or(NonNull::dangling())
    }
}

impl<K: Hash + Eq> Inner<K> {
    /// Every how often a sweep may run.
    fn period(&self) -> Duration {
        (Duration::from_nanos(self.idle_evict.load(Relaxed)) / 4).max(Duration::from_millis(1))
    }

    /// A sweep if one is due at `now`: see [`KeyedBulkhead::evict_idle`].
    fn sweep_if_due(&self, now: Instant) -> usize {
        let idle_evict = Duration::from_nanos(self.idle_evict.load(Relaxed));
        let period = self.period();
        let mut sweeps = lock(&self.sweeps);
        if sweeps.last.is_some_and(|last| now < last + period) {
            return 0;
        }
        sweeps.last = Some(now);
        sweeps.seq = sweeps.seq.wrapping_add(1);
        let seq = sweeps.seq;
        // A swap rather than a store: loom 0.7 lets a later read-modify-write
        // (`peek` under loom) read the value before a relaxed store; once
        // per sweep, it costs nothing.
        self.slots.epoch.swap(u32::from(seq), Relaxed);
        sweeps.recent.push_back((seq, now));
        let old_enough = |at: Instant| {
            now.checked_duration_since(at)
                .is_some_and(|d| d >= idle_evict)
        };
        while sweeps.recent.len() >= 2 && old_enough(sweeps.recent[1].1) {
            sweeps.recent.pop_front();
        }
        // A key stamped before the newest sweep at least `idle_evict` old
        // was idle by that sweep's time (one busy then is stamped with it,
        // so every sweep walks the keys, even one that can evict none).
        let older_than = match sweeps.recent.front() {
            Some(&(threshold, at)) if old_enough(at) => seq.wrapping_sub(threshold),
            _ => u16::MAX,
        };
        drop(sweeps);
        self.table.sweep(seq, older_than)
    }
}

/// What a keyed bulkhead holds: see [`KeyedBulkhead::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyedSnapshot<K> {
    /// Calls holding a slot, all keys together.
    pub in_flight: u32,
    /// Calls waiting for a slot.
    pub waiting: u32,
    /// The global limit.
    pub max_concurrent: u32,
    /// The limit of a key without one of its own.
    pub per_key: u32,
    /// The keys' reservations, in all.
    pub reserved: u32,
    /// Live keys.
    pub keys: usize,
    /// Live keys with calls holding or waiting for a slot.
    pub busy_keys: usize,
    /// The most live keys.
    pub max_keys: usize,
    /// New keys refused at `max_keys` since the start.
    pub refused_keys: u64,
    /// The keys holding the most slots (then with the most waiters), most
    /// first; keys with neither are left out.
    pub top: Vec<KeyOccupancy<K>>,
}

/// One key in a [`KeyedSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyOccupancy<K> {
    /// The key.
    pub key: K,
    /// Its calls holding a slot.
    pub in_flight: u32,
    /// Its calls waiting.
    pub waiting: u32,
    /// Its limit.
    pub per_key: u32,
    /// Its reservation.
    pub reserved: u32,
}
