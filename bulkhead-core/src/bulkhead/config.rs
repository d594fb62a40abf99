//! How a bulkhead is configured: [`BulkheadConfig`] and its builder,
//! generated from the bulkhead's keys (`bulkhead-keys`' `table/bulkhead.rs`),
//! and the rules between them.

use std::time::Duration;

use super::adaptive::{Adaptive, Aimd, Gradient2, Sampling, Vegas};
use super::semaphore::MAX_CONCURRENT;
use crate::QueueDiscipline;
use crate::config::{ConfigError, key_of};
use crate::intern::intern;
use crate::keys::{KeyValue, PolicyKind, ValueKind};
use crate::{Priority, ShedAt};

bulkhead_keys::__bulkhead_keys!(crate::config::policy_config! {
    kind: Bulkhead;
    /// The resolved configuration of a bulkhead.
    ///
    /// Defaults are Resilience4j's: 25 slots, no waiting, enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::BulkheadConfig;
    ///
    /// let config = BulkheadConfig::builder()
    ///     .max_concurrent(4)
    ///     .max_wait(Duration::from_millis(250))
    ///     .build()?;
    /// assert_eq!(config.max_concurrent(), 4);
    /// assert_eq!(config.to_string(), "max_concurrent = 4, max_wait = 250ms, enabled = true");
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct BulkheadConfig;
    /// Explicit values for a bulkhead, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration
    /// given by [`config`](Self::config), else `default`); see the registry
    /// for the full precedence. Values are checked when the configuration
    /// is resolved.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    #[must_use]
    pub struct BulkheadConfigBuilder;
    extra {
        /// The tunables of [`Adaptive::Aimd`] (from [`Aimd::builder`]).
        aimd: Aimd = Aimd::default();
        /// The tunables of [`Adaptive::Vegas`] (from [`Vegas::builder`]).
        vegas: Vegas = Vegas::default();
        /// The tunables of [`Adaptive::Gradient2`] (from
        /// [`Gradient2::builder`]).
        gradient2: Gradient2 = Gradient2::default();
        /// How an adaptive bulkhead gathers and judges its samples (from
        /// [`Sampling::builder`]).
        sampling: Sampling = Sampling::default();
    }
    errors: "ATR-003 if a limit is out of range, ATR-008 if `reserved` is; \
        from `build` and `build_on`, also ATR-015 unless `min_concurrent` <= \
        `initial_concurrent` <= `max_concurrent`, ATR-016 if `reserved` is above \
        `max_concurrent`; ATR-019 if `queue` is `lifo` or `codel` and \
        `queue_target` is zero or not below `queue_interval`.";
    checked_by: check_limits;
});

// The table's limit is the slot word's.
const _: () = assert!(
    matches!(key_of(PolicyKind::Bulkhead, "max_concurrent").kind(),
        ValueKind::Limit { max } if max == MAX_CONCURRENT)
);

impl BulkheadConfig {
    /// The default limit, 25.
    pub const DEFAULT_MAX_CONCURRENT: u32 = 25;
    /// The limit an adaptive bulkhead starts from unless told otherwise, 20
    /// (kept within `min_concurrent` and `max_concurrent`).
    pub const DEFAULT_INITIAL_CONCURRENT: u32 = 20;
    /// The largest accepted limit, 2^30 - 1.
    pub const MAX_CONCURRENT: u32 = MAX_CONCURRENT;

    /// The limit an adaptive bulkhead starts from: as set, or 20 kept
    /// within `min_concurrent` and `max_concurrent`.
    pub fn initial_concurrent(&self) -> u32 {
        self.initial_concurrent.unwrap_or_else(|| {
            Self::DEFAULT_INITIAL_CONCURRENT
                .min(self.max_concurrent)
                .max(self.min_concurrent)
        })
    }

    /// The slots of its resource's budget kept for this bulkhead alone
    /// (default: all of `max_concurrent`, a strict split). Above them, up
    /// to `max_concurrent`, it borrows slots of the budget that nobody
    /// reserved. Without a resource it has no effect.
    pub fn reserved(&self) -> u32 {
        self.reserved.unwrap_or(self.max_concurrent)
    }

    /// The class of the calls no scope gave one (see the key `priority`):
    /// as set, else [`Priority::Normal`].
    pub fn priority(&self) -> Priority {
        self.priority.unwrap_or_default()
    }

    /// Whether `priority` was given: a class given beats a tower layer's,
    /// which beats `Normal`.
    pub fn priority_set(&self) -> Option<Priority> {
        self.priority
    }

    /// Whether `reserved` was given (else it follows `max_concurrent`).
    pub fn reserved_set(&self) -> Option<u32> {
        self.reserved
    }

    /// Checks that `min_concurrent` <= `initial_concurrent` <=
    /// `max_concurrent`, and `reserved` <= `max_concurrent`, and that a
    /// `lifo` or `codel` queue has `0 < queue_target < queue_interval`,
    /// naming the key out of place after `key_prefix`.
    ///
    /// # Errors
    ///
    /// ATR-015 if the limits are out of order, ATR-016 if `reserved` is
    /// above `max_concurrent`, ATR-019 if `queue_target` is out of range.
    pub fn check_limits(&self, key_prefix: &str) -> Result<(), ConfigError> {
        check_together(
            [
                ("min_concurrent", Some(self.min_concurrent)),
                ("initial_concurrent", Some(self.initial_concurrent())),
                ("max_concurrent", Some(self.max_concurrent)),
                ("reserved", self.reserved),
            ],
            key_prefix,
        )?;
        self.queue
            .check_target("queue_target", self.queue_target, self.queue_interval)
            .map_err(|e| e.prefixed(key_prefix))
    }

    /// The queue's discipline and its times, as the queue takes them.
    pub(crate) fn discipline(&self) -> super::queue::Discipline {
        super::queue::Discipline {
            queue: self.queue,
            target: self.queue_target,
            interval: self.queue_interval,
        }
    }

    /// The same configuration with the queue's discipline and its times
    /// as a live bulkhead runs them ([`Bulkhead::set_queue`](super::Bulkhead::set_queue)).
    pub(crate) fn with_live_queue(mut self, discipline: super::queue::Discipline) -> Self {
        self.queue = discipline.queue;
        self.queue_target = discipline.target;
        self.queue_interval = discipline.interval;
        self
    }

    /// The same configuration, counted against `resource`'s budget
    /// instead (as a registry's reload moves a live bulkhead's
    /// bookkeeping).
    #[must_use]
    pub fn on_resource(mut self, resource: Option<&str>) -> Self {
        self.resource = resource.map(intern);
        self
    }

    /// The configuration a live bulkhead made from this one runs with once
    /// its limit (an adaptive bulkhead's ceiling) is set to `max`, as
    /// [`Bulkhead::set_max_concurrent`](super::Bulkhead::set_max_concurrent)
    /// sets it: `initial_concurrent` (which only mattered at the start) and
    /// `reserved` kept at most `max`.
    ///
    /// # Errors
    ///
    /// ATR-003 if `max` is out of range; ATR-015 if it is below an adaptive
    /// bulkhead's `min_concurrent`.
    pub fn with_max_concurrent(&self, max: u32) -> Result<BulkheadConfig, ConfigError> {
        let max = crate::config::check_limit(
            "max_concurrent",
            max.into(),
            BulkheadConfig::MAX_CONCURRENT.into(),
        )?;
        if self.adaptive != Adaptive::Off && max < self.min_concurrent {
            return Err(ConfigError::LimitsOutOfOrder {
                key: "min_concurrent".to_owned(),
                min: self.min_concurrent.to_string(),
                initial: "..".to_owned(),
                max: max.to_string(),
            });
        }
        Ok((*self).with_live_limits(max, self.reserved))
    }

    /// The same configuration with a keyed bulkhead's live values.
    pub(crate) fn with_keyed(
        mut self,
        per_key: u32,
        max_keys: u32,
        idle_evict: std::time::Duration,
        max_wait: std::time::Duration,
    ) -> Self {
        self.per_key = per_key;
        self.max_keys = max_keys;
        self.idle_evict = idle_evict;
        self.max_wait = max_wait;
        self
    }

    /// The same configuration with the limit (an adaptive bulkhead's
    /// ceiling) `max` and the reservation `reserved` a live bulkhead runs
    /// with (`set_max_concurrent`, `set_reserved`), the floor, the start and
    /// the reservation kept below the limit.
    pub(crate) fn with_live_limits(mut self, max: u32, reserved: Option<u32>) -> Self {
        self.max_concurrent = max;
        self.min_concurrent = self.min_concurrent.min(max);
        self.initial_concurrent = self.initial_concurrent.map(|n| n.min(max));
        self.reserved = reserved.map(|r| r.min(max));
        self
    }

    /// The same configuration with the classes' shares and default class
    /// a live bulkhead has in force.
    pub(crate) fn with_live_classes(mut self, shed_at: ShedAt, priority: Option<Priority>) -> Self {
        self.shed_at = shed_at;
        self.priority = priority;
        self
    }
}

impl BulkheadConfigBuilder {
    /// Checks the values set here against each other, as an attribute's
    /// are: `min_concurrent` <= `initial_concurrent` <= `max_concurrent`
    /// among those set (ATR-015), `reserved` <= `max_concurrent` if both
    /// are (ATR-016), and a `lifo` or `codel` queue's `queue_target` above
    /// zero and below its `queue_interval` among those set (ATR-019), naming the key out of place after `key_prefix`. A
    /// value not set here is left to the layers below (so it is no error
    /// that one of them could fix); check a resolved configuration with
    /// [`BulkheadConfig::check_limits`].
    ///
    /// # Errors
    ///
    /// ATR-015, ATR-016 or ATR-019, as above.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::BulkheadConfig;
    ///
    /// let written = BulkheadConfig::builder().min_concurrent(5).initial_concurrent(3);
    /// let err = written.check_together("bulkhead.instances.a.").unwrap_err();
    /// assert_eq!(
    ///     (err.code(), err.key()),
    ///     ("ATR-015", "bulkhead.instances.a.initial_concurrent")
    /// );
    /// // A layer below may still give a max_concurrent of 10.
    /// assert!(BulkheadConfig::builder().min_concurrent(12).check_together("").is_ok());
    /// ```
    pub fn check_together(&self, key_prefix: &str) -> Result<(), ConfigError> {
        check_together(
            [
                ("max_concurrent", self.max_concurrent),
                ("min_concurrent", self.min_concurrent),
                ("initial_concurrent", self.initial_concurrent),
                ("reserved", self.reserved),
            ],
            key_prefix,
        )?;
        let queue = [
            (
                "queue",
                self.queue.map(|q| KeyValue::Text(q.name().to_owned())),
            ),
            ("queue_target", self.queue_target.map(KeyValue::Duration)),
            (
                "queue_interval",
                self.queue_interval.map(KeyValue::Duration),
            ),
        ];
        let written: Vec<(&str, KeyValue)> = queue
            .into_iter()
            .filter_map(|(key, value)| value.map(|v| (key, v)))
            .collect();
        let pairs: Vec<(&str, &KeyValue)> = written.iter().map(|(k, v)| (*k, v)).collect();
        PolicyKind::Bulkhead
            .check_together(&pairs)
            .map_err(|e| e.prefixed(key_prefix))
    }
}

/// The rules between the limits given (the table's
/// [`check_together`](PolicyKind::check_together)), naming the key out of
/// place after `key_prefix`.
fn check_together(limits: [(&str, Option<u32>); 4], key_prefix: &str) -> Result<(), ConfigError> {
    let written: Vec<(&str, KeyValue)> = limits
        .into_iter()
        .filter_map(|(key, value)| value.map(|n| (key, KeyValue::Integer(n))))
        .collect();
    let pairs: Vec<(&str, &KeyValue)> = written.iter().map(|(k, v)| (*k, v)).collect();
    PolicyKind::Bulkhead
        .check_together(&pairs)
        .map_err(|e| e.prefixed(key_prefix))
}

impl crate::config::Choice for QueueDiscipline {
    fn parse(key: &str, text: &str) -> Result<Self, ConfigError> {
        QueueDiscipline::parse(key, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4js() {
        let config = BulkheadConfig::builder().build().unwrap();
        assert_eq!(config.max_concurrent(), 25);
        assert_eq!(config.max_wait(), Duration::ZERO);
        assert!(config.enabled());
    }

    #[test]
    fn max_concurrent_zero_is_atr_003() {
        let err = BulkheadConfig::builder()
            .max_concurrent(0)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-003");
        assert!(
            err.to_string().starts_with("ATR-003: max_concurrent"),
            "{err}"
        );
    }

    #[test]
    fn max_concurrent_above_the_largest_is_atr_003() {
        let err = BulkheadConfig::builder()
            .max_concurrent(u32::MAX)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-003");
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = BulkheadConfig::builder()
            .max_concurrent(3)
            .max_wait(Duration::from_secs(1))
            .build()
            .unwrap();
        let config = BulkheadConfig::builder()
            .max_concurrent(7)
            .build_on(&base)
            .unwrap();
        assert_eq!(config.max_concurrent(), 7);
        assert_eq!(config.max_wait(), Duration::from_secs(1));
    }
}
