//! The bulkhead's keys, and the rules between them (ATR-015, ATR-016;
//! ATR-018, the order of `shed_at`'s fractions, is its value's own rule:
//! see `ShedAt`).

use crate::{ConfigError, KeyValue, QueueDiscipline};

/// The largest limit a bulkhead takes, 2^30 - 1 (what its slot word
/// holds).
pub(crate) const MAX_CONCURRENT: u32 = (1 << 30) - 1;

/// The largest limit per key of a keyed bulkhead, 2^24 - 1 (what a key's
/// word holds).
pub const MAX_PER_KEY: u32 = (1 << 24) - 1;

/// The bulkhead's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __bulkhead_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// How many calls may hold a slot at once (1 to 2^30 - 1); for an
        /// adaptive bulkhead, the most its algorithm may allow (the
        /// ceiling).
        max_concurrent: u32 = Self::DEFAULT_MAX_CONCURRENT
            => Limit { max: MAX_CONCURRENT }, "25",
            "how many calls may hold a slot at once; with `adaptive`, the most the algorithm may allow";
        /// How long a caller may wait for a slot; zero (the default)
        /// rejects at once.
        max_wait: Duration = Duration::ZERO
            => Duration { positive: false }, "\"0\"",
            "how long a caller may wait for a slot; zero rejects at once";
        /// The order waiters of one class are served in (see
        /// [`QueueDiscipline`]): `fifo`, the default, oldest first; `lifo`
        /// newest first once the oldest has waited past `queue_target`;
        /// `codel` refuses long waiters once the queue has stood above
        /// `queue_target` for a `queue_interval`. Nothing without
        /// `max_wait`, as nobody waits.
        @shown_if(queue)
        queue: QueueDiscipline = QueueDiscipline::Fifo
            => Choice { ty: "QueueDiscipline", choices: &["fifo", "lifo", "codel"] },
            "\"fifo\"",
            "the order waiters of one class are served in: `fifo` oldest first; `lifo` newest first once the oldest has waited past `queue_target`; `codel` refuses waiters past twice `queue_target` once the queue has stood above it for a `queue_interval`";
        /// With `queue` `lifo` or `codel`: the wait a queue may hold
        /// without counting as standing (default 5 ms; above zero and
        /// below `queue_interval`).
        @shown_if(queue | queue_target)
        queue_target: Duration = QueueDiscipline::DEFAULT_TARGET
            => Duration { positive: false }, "\"5ms\"",
            "with `queue` `lifo` or `codel`: the wait a queue may hold without counting as standing (ATR-019 unless above zero and below `queue_interval`)";
        /// With `queue` `codel`: how long the shortest wait must stay above
        /// `queue_target` before the queue counts as overloaded (default
        /// 100 ms).
        @shown_if(queue | queue_interval)
        queue_interval: Duration = QueueDiscipline::DEFAULT_INTERVAL
            => Duration { positive: false }, "\"100ms\"",
            "with `queue` `codel`: how long the shortest wait must stay above `queue_target` before waiters are refused";
        /// Whether the bulkhead limits anything (the default); a disabled
        /// one lets every call through and counts nothing.
        enabled: bool = true
            => Bool, "true",
            "whether the bulkhead limits anything; a disabled one lets every call through";
        /// The shared resource (a connection pool, a database) whose
        /// budget this bulkhead's slots count against, if any, which the
        /// registry enforces; see `Registry::resource`.
        @set(into some String)
        @shown_if(resource)
        resource: Option<&'static str> = None
            => Name, "",
            "the shared resource whose budget the slots count against (REG-010 if they exceed it, REG-011 if it has none)";
        /// The algorithm that moves the limit between `min_concurrent` and
        /// `max_concurrent` (then the ceiling) from the calls' hold times;
        /// [`Adaptive::Off`], the default, keeps `max_concurrent`. See the
        /// adaptive guide.
        @shown_if(adaptive)
        adaptive: Adaptive = Adaptive::Off
            => Choice { ty: "Adaptive", choices: &["off", "aimd", "vegas", "gradient2"] },
            "\"off\"",
            "the algorithm that moves the limit between `min_concurrent` and `max_concurrent` from the calls' hold times; `off` keeps `max_concurrent`";
        /// The lowest limit an adaptive bulkhead's algorithm may set (1 to
        /// 2^30 - 1, at most `initial_concurrent`; default 1).
        @shown_if(adaptive)
        min_concurrent: u32 = 1
            => Limit { max: MAX_CONCURRENT }, "1",
            "with `adaptive`: the lowest limit the algorithm may set (ATR-015 unless `min_concurrent` <= `initial_concurrent` <= `max_concurrent`)";
        /// The limit an adaptive bulkhead starts from, at which its first
        /// window measures the no-load latency (between `min_concurrent`
        /// and `max_concurrent`; default 20 kept between them).
        @set(some u32)
        @getter(own)
        @shown_if(adaptive)
        initial_concurrent: Option<u32> = None
            => Limit { max: MAX_CONCURRENT }, "20",
            "with `adaptive`: the limit it starts from, at which it measures the no-load latency; without it, 20 kept within `min_concurrent` and `max_concurrent`";
        /// Keeps `reserved` slots of the resource's budget for this
        /// bulkhead alone (0 to `max_concurrent`; default: all of
        /// `max_concurrent`). Above them, up to `max_concurrent`, it
        /// borrows the slots of the budget nobody reserved, so the limits
        /// on a resource may add up to more than its budget while the
        /// reservations stay within it.
        @set(some u32)
        @getter(own)
        @shown_if(reserved)
        reserved: Option<u32> = None
            => Count { min: 0, max: MAX_CONCURRENT }, "",
            "on a resource: the slots of its budget kept for this bulkhead alone, by default all of `max_concurrent`; above them, up to `max_concurrent`, it borrows the slots nobody reserved (ATR-016 if above `max_concurrent`)";
        /// The class of the calls through this bulkhead that no scope
        /// gave one (`bulkhead::priority::scope` and `with` beat it; it
        /// beats a tower layer's). Without it, such calls are
        /// [`Priority::Normal`], or the tower layer's class.
        @set(some Priority)
        @getter(own)
        @shown_if(priority)
        priority: Option<Priority> = None
            => Priority, "",
            "the class of the calls no `priority::scope` gave one: `sheddable`, `normal`, `high` or `critical` (ATR-017 otherwise); without it, `normal` or a tower layer's class";
        /// Per class below `Critical`, the fraction of the limit above
        /// which calls of that class are refused (shed): see [`ShedAt`].
        /// Default `sheddable=0.5, normal=1, high=1`.
        @shown_if(shed_at)
        shed_at: ShedAt = ShedAt::DEFAULT
            => ShedAt, "\"sheddable=0.5, normal=1, high=1\"",
            "per class below `critical`, the fraction of the limit above which its calls are refused, as in \"sheddable=0.5, normal=0.8, high=0.9\" (ATR-017 for an unknown class or a fraction outside (0, 1], ATR-018 unless sheddable <= normal <= high)";
        /// A keyed bulkhead's limit per key (1 to 2^24 - 1; default 1):
        /// how many calls of one key may hold a slot at once, under the
        /// global `max_concurrent`. Nothing on a bulkhead without keys.
        @shown_if(per_key)
        per_key: u32 = 1
            => Limit { max: MAX_PER_KEY }, "1",
            "keyed bulkhead: how many calls of one key may hold a slot at once, under `max_concurrent` for all keys together";
        /// A keyed bulkhead's most live keys (1 to 2^32 - 1; default
        /// 100,000): a call with a new key past it is refused until idle
        /// keys are evicted. Nothing on a bulkhead without keys.
        @shown_if(max_keys)
        max_keys: u32 = 100_000
            => Limit { max: u32::MAX }, "100000",
            "keyed bulkhead: the most keys it keeps at once; a call with a new key past it is refused (REG-017 in its event) until idle keys are evicted";
        /// How long a key of a keyed bulkhead stays without calls before
        /// it is evicted (default 60 s; evicted between once and 1.5
        /// times this after its last call ended, by sweeps every quarter of
        /// it). Nothing on a bulkhead without keys.
        @shown_if(idle_evict)
        idle_evict: Duration = Duration::from_secs(60)
            => Duration { positive: false }, "\"60s\"",
            "keyed bulkhead: how long a key stays without calls before it is evicted and costs no memory";
    } };
}

crate::__bulkhead_keys!(crate::rows::key_table! { pub(crate) const KEYS });

/// Checks the keys written together (as in one attribute, one layer of
/// configuration) that depend on each other, for those given:
/// `min_concurrent` <= `initial_concurrent` <= `max_concurrent` (ATR-015,
/// naming the key out of place), and `reserved` <= `max_concurrent`
/// (ATR-016, about `reserved`); and, when `queue` is given as `lifo` or
/// `codel`, `queue_target` above zero and below `queue_interval` among
/// those given (ATR-019, about `queue_target`).
pub(crate) fn check_together(values: &[(&str, &KeyValue)]) -> Result<(), ConfigError> {
    check_queue(values)?;
    let integer = |name: &str| {
        values.iter().find_map(|(key, value)| match value {
            KeyValue::Integer(n) if *key == name => Some(*n),
            _ => None,
        })
    };
    check_order(
        integer("min_concurrent"),
        integer("initial_concurrent"),
        integer("max_concurrent"),
    )?;
    match (integer("reserved"), integer("max_concurrent")) {
        (Some(reserved), Some(max_concurrent)) if reserved > max_concurrent => {
            Err(ConfigError::ReservedAboveLimit {
                key: "reserved".to_owned(),
                reserved,
                max_concurrent,
            })
        }
        _ => Ok(()),
    }
}

/// `min <= initial <= max` for those given, else ATR-015 naming the key
/// out of order.
fn check_order(
    min: Option<u32>,
    initial: Option<u32>,
    max: Option<u32>,
) -> Result<(), ConfigError> {
    let out_of_order = |key: &str| ConfigError::LimitsOutOfOrder {
        key: key.to_owned(),
        min: min.map_or_else(|| "..".to_owned(), |n| n.to_string()),
        initial: initial.map_or_else(|| "..".to_owned(), |n| n.to_string()),
        max: max.map_or_else(|| "..".to_owned(), |n| n.to_string()),
    };
    let above = |a: Option<u32>, b: Option<u32>| matches!((a, b), (Some(a), Some(b)) if a > b);
    if above(min, max) {
        return Err(out_of_order("min_concurrent"));
    }
    if above(min, initial) || above(initial, max) {
        return Err(out_of_order("initial_concurrent"));
    }
    Ok(())
}

/// ATR-019 among the values given: a `queue` of `lifo` or `codel` with a
/// zero `queue_target`, or with one not below the `queue_interval` given.
/// Without `queue`, or without the interval, a layer below decides.
fn check_queue(values: &[(&str, &KeyValue)]) -> Result<(), ConfigError> {
    let find = |name: &str| {
        values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    };
    let duration = |name: &str| match find(name) {
        Some(KeyValue::Duration(d)) => Some(*d),
        _ => None,
    };
    let queue = match find("queue") {
        Some(KeyValue::Text(name)) => QueueDiscipline::parse("queue", name).ok(),
        _ => None,
    };
    match (queue, duration("queue_target")) {
        // Without the interval, only a zero target is certain to be out of
        // range (a layer below may give a longer interval).
        (Some(queue), Some(target)) => match duration("queue_interval") {
            Some(interval) => queue.check_target("queue_target", target, interval),
            None if target.is_zero() => {
                let interval = QueueDiscipline::DEFAULT_INTERVAL;
                queue.check_target("queue_target", target, interval)
            }
            None => Ok(()),
        },
        _ => Ok(()),
    }
}
