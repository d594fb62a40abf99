//! How a bulkhead serves its waiters: [`QueueDiscipline`], the `queue`
//! key, and the rule between it and `queue_target`, `queue_interval`
//! (ATR-019).

use std::fmt;
use std::time::Duration;

use crate::config::ConfigError;

/// The order a bulkhead serves the callers waiting for a slot in: the
/// `queue` key. Waiters are served by class first (a higher priority
/// before a lower one); the discipline orders the waiters of one class.
/// Every waiter keeps its `max_wait` whatever the discipline.
///
/// # Examples
///
/// ```
/// use bulkhead_keys::QueueDiscipline;
///
/// assert_eq!(QueueDiscipline::parse("queue", "codel"), Ok(QueueDiscipline::Codel));
/// assert_eq!(QueueDiscipline::default(), QueueDiscipline::Fifo);
/// assert_eq!(QueueDiscipline::Lifo.to_string(), "lifo");
/// assert_eq!(QueueDiscipline::parse("queue", "fair").unwrap_err().code(), "ATR-010");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueueDiscipline {
    /// First come, first served (the default).
    #[default]
    Fifo,
    /// Adaptive LIFO: oldest first while the oldest waiter has waited at
    /// most `queue_target`; past it, the newest first (the callers most
    /// likely still there), the older ones running out their `max_wait`.
    Lifo,
    /// CoDel, folly's variant: first come, first served, but once every
    /// waiter served during a `queue_interval` waited longer than
    /// `queue_target`, the queue is overloaded, and while it is, a waiter
    /// that has waited longer than twice `queue_target` is refused when
    /// its turn comes instead of being handed the slot.
    Codel,
}

impl QueueDiscipline {
    /// Every discipline, the default first.
    pub const ALL: [QueueDiscipline; 3] = [
        QueueDiscipline::Fifo,
        QueueDiscipline::Lifo,
        QueueDiscipline::Codel,
    ];

    /// The default `queue_target`, 5 ms (folly's CoDel target delay).
    pub const DEFAULT_TARGET: Duration = Duration::from_millis(5);

    /// The default `queue_interval`, 100 ms (folly's CoDel interval).
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

    /// The name used in attributes and configuration: `fifo`, `lifo` or
    /// `codel`.
    pub const fn name(self) -> &'static str {
        match self {
            QueueDiscipline::Fifo => "fifo",
            QueueDiscipline::Lifo => "lifo",
            QueueDiscipline::Codel => "codel",
        }
    }

    /// Parses a name, as given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChoice`] (ATR-010) for anything but the three
    /// names.
    pub fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        let name = value.trim();
        Self::ALL
            .into_iter()
            .find(|discipline| discipline.name() == name)
            .ok_or_else(|| ConfigError::InvalidChoice {
                key: key.to_owned(),
                value: value.to_owned(),
                choices: Self::ALL.map(Self::name).join(", "),
            })
    }

    /// Whether it reads `queue_target` (and `queue_interval`): `lifo` and
    /// `codel`.
    pub const fn is_timed(self) -> bool {
        !matches!(self, QueueDiscipline::Fifo)
    }

    /// Checks `queue_target` against `queue_interval` for this discipline:
    /// a timed one needs `0 < queue_target < queue_interval`. `key` is the
    /// name the error gives `queue_target`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::QueueTargetOutOfRange`] (ATR-019).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_keys::QueueDiscipline;
    ///
    /// let ms = Duration::from_millis;
    /// assert!(QueueDiscipline::Codel.check_target("queue_target", ms(5), ms(100)).is_ok());
    /// let err = QueueDiscipline::Lifo.check_target("queue_target", ms(100), ms(100)).unwrap_err();
    /// assert_eq!(err.code(), "ATR-019");
    /// // A first come, first served queue reads neither.
    /// assert!(QueueDiscipline::Fifo.check_target("queue_target", ms(0), ms(0)).is_ok());
    /// ```
    pub fn check_target(
        self,
        key: &str,
        target: Duration,
        interval: Duration,
    ) -> Result<(), ConfigError> {
        if self.is_timed() && (target.is_zero() || target >= interval) {
            return Err(ConfigError::QueueTargetOutOfRange {
                key: key.to_owned(),
                queue: self.name().to_owned(),
                target,
                interval,
            });
        }
        Ok(())
    }
}

impl fmt::Display for QueueDiscipline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
