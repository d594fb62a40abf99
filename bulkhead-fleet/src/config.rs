//! [`FleetConfig`]: where a fleet's Redis is and how its leases run, and
//! [`OnUnreachable`]: what a process does when it cannot reach it.

use std::fmt;
use std::time::Duration;

use super::url::RedisUrl;
use bulkhead_registry::RegistryError;

/// How a resource's budget is shared across a fleet: the Redis that keeps
/// the leases, the key prefix of the application, the lease and what to do
/// when Redis cannot be reached. Given to
/// [`Registry::fleet_resource`](bulkhead_registry::Registry::fleet_resource).
///
/// The URL's password never appears in `Debug`, in an error, an event or a
/// snapshot: they show `redis://user:***@host:6379/0`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_fleet::{FleetConfig, OnUnreachable};
///
/// let config = FleetConfig::redis("redis://app:s3cr3t@10.0.0.5:6379/0")?
///     .prefix("shop")
///     .lease(Duration::from_secs(10))
///     .on_unreachable(OnUnreachable::Closed);
/// assert_eq!(config.redis_url(), "redis://app:***@10.0.0.5:6379/0");
/// assert!(!format!("{config:?}").contains("s3cr3t"));
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct FleetConfig {
    url: RedisUrl,
    prefix: String,
    lease: Duration,
    margin: Option<Duration>,
    on_unreachable: OnUnreachable,
}

/// What a process does with a fleet resource once its lease ran out on its
/// own clock without a renewal (Redis stopped, unreachable or too slow).
///
/// Whatever the setting, the fleet stays within its budget when Redis is
/// lost for every process: a process first keeps its fallback or its last
/// grant, whichever is smaller, and uses its whole fallback only once no
/// grant made before the loss can be in use anywhere (its first failure
/// plus one lease and the margin); and the fallbacks are shared out by the
/// fleet while Redis answers, so that they add up to at most the budget.
/// A process that never reached Redis has no fallback. When only some
/// processes lose Redis, the others take their shares once their leases
/// run out on Redis (as they would a dead process's): then the fleet may
/// exceed its budget by the fallback of each process that cannot reach
/// Redis; only [`Closed`](Self::Closed) rules that out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnUnreachable {
    /// No slots until Redis answers again: the fleet stays within its
    /// budget whatever part of it loses Redis (`on_unreachable = "closed"`).
    Closed,
    /// Up to this many slots (`on_unreachable = 5`): the fleet shares out
    /// the budget among the processes' fallbacks, max-min fair, so a
    /// process gets fewer when the processes' numbers add up to more than
    /// the budget.
    Slots(u32),
    /// An even part of the budget among the processes
    /// (`on_unreachable = "even_share"`, the default): the fleet shares out
    /// the budget among the processes' fallbacks, max-min fair.
    #[default]
    EvenShare,
}

impl fmt::Display for OnUnreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnUnreachable::Closed => f.write_str("closed"),
            OnUnreachable::Slots(n) => write!(f, "{n}"),
            OnUnreachable::EvenShare => f.write_str("even_share"),
        }
    }
}

impl OnUnreachable {
    /// Reads a configuration value: `closed`, `even_share` or a number.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "closed" => Some(OnUnreachable::Closed),
            "even_share" => Some(OnUnreachable::EvenShare),
            n => n.parse().ok().map(OnUnreachable::Slots),
        }
    }

    /// The fallback it asks the fleet for, the budget being `budget`:
    /// none, `n`, or the whole budget (of which the fleet gives an even
    /// part, max-min fair with the others' asks).
    pub(crate) fn asks(self, budget: u32) -> u32 {
        match self {
            OnUnreachable::Closed => 0,
            OnUnreachable::Slots(n) => n.min(budget),
            OnUnreachable::EvenShare => budget,
        }
    }
}

impl FleetConfig {
    /// The lease when none is given: 10 seconds.
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);
    /// The shortest lease: 100 milliseconds.
    pub const MIN_LEASE: Duration = Duration::from_millis(100);
    /// The longest lease: a day. A process that dies keeps its share for
    /// up to a lease; longer is no use, and would reach durations that
    /// Redis's clock and this process's cannot add up.
    pub const MAX_LEASE: Duration = Duration::from_secs(24 * 60 * 60);
    /// The key prefix when none is given.
    pub const DEFAULT_PREFIX: &'static str = "default";

    /// A fleet on the Redis at `url`: `redis://[user:password@]host[:port][/db]`
    /// or `redis+unix:///path/to/redis.sock[?db=0&pass=..]`.
    ///
    /// # Errors
    ///
    /// REG-014 if the URL does not parse, or is a `rediss://` URL (TLS is
    /// not built in), or its user name or password holds a `/`, `?` or `#`
    /// that is not percent-encoded (a parser would end the host part
    /// there); the message shows the URL without its password, whatever
    /// characters that holds.
    pub fn redis(url: &str) -> Result<Self, RegistryError> {
        let url = RedisUrl::new(url);
        let scheme = url.expose().split("://").next().unwrap_or_default();
        let problem = match scheme {
            "redis" if url.userinfo_needs_encoding() => Some(
                "its user name or password holds a `/`, `?` or `#`, which would end the host part: percent-encode them (%2F, %3F, %23)"
                    .to_owned(),
            ),
            "redis" | "redis+unix" | "unix" => {
                redis::Client::open(url.expose()).err().map(|e| url.scrub(&e.to_string()))
            }
            "rediss" => Some(
                "rediss:// needs TLS, which bulkhead does not build in: reach Redis over a private network or a TLS tunnel"
                    .to_owned(),
            ),
            _ => Some("expected redis://host:port/db or redis+unix:///path".to_owned()),
        };
        match problem {
            Some(problem) => Err(RegistryError::FleetConfig {
                resource: String::new(),
                message: format!("Redis URL {url} cannot be used: {problem}"),
            }),
            None => Ok(FleetConfig {
                url,
                prefix: Self::DEFAULT_PREFIX.to_owned(),
                lease: Self::DEFAULT_LEASE,
                margin: None,
                on_unreachable: OnUnreachable::default(),
            }),
        }
    }

    /// The application's key prefix (`default` unless given): fleets on one
    /// Redis with different prefixes never see each other's leases, and an
    /// ACL can restrict an application to `~bulkhead:{<prefix>:*`. It may
    /// not contain `{` or `}`.
    pub fn prefix(mut self, prefix: &str) -> Self {
        prefix.clone_into(&mut self.prefix);
        self
    }

    /// How long a lease lasts without a renewal (10 s unless given; from
    /// 100 ms to a day). Processes renew every third of it, and a process
    /// that died frees its share within one lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long before its lease runs out on its own clock a process that
    /// could not renew stops admitting calls (a quarter of the lease unless
    /// given; at most half of it). It must cover the calls admitted just
    /// before (keep their timeout below it) and the difference between
    /// this process's clock and Redis's.
    pub fn margin(mut self, margin: Duration) -> Self {
        self.margin = Some(margin);
        self
    }

    /// What to do once the lease ran out without a renewal
    /// ([`OnUnreachable::EvenShare`] unless given).
    pub fn on_unreachable(mut self, on_unreachable: OnUnreachable) -> Self {
        self.on_unreachable = on_unreachable;
        self
    }

    /// The Redis URL, its password shown as `***`.
    pub fn redis_url(&self) -> String {
        self.url.to_string()
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The lease.
    pub fn lease_duration(&self) -> Duration {
        self.lease
    }

    /// The margin: as given, or a quarter of the lease.
    pub fn margin_duration(&self) -> Duration {
        self.margin.unwrap_or(self.lease / 4)
    }

    /// What happens when Redis cannot be reached.
    pub fn unreachable(&self) -> OnUnreachable {
        self.on_unreachable
    }

    pub(crate) fn url(&self) -> &RedisUrl {
        &self.url
    }

    /// Checks the configuration for `resource`.
    ///
    /// # Errors
    ///
    /// REG-014 naming what is wrong.
    pub(crate) fn check(&self, resource: &str) -> Result<(), RegistryError> {
        match self.problem(resource) {
            Some((_, message)) => Err(RegistryError::FleetConfig {
                resource: resource.to_owned(),
                message,
            }),
            None => Ok(()),
        }
    }

    /// What makes the configuration unusable for `resource`, if anything:
    /// the configuration key it is about (`fleet` for the resource's name,
    /// which the fleet makes a hash tag; `prefix`, `lease`, `margin`) and
    /// what is wrong.
    pub(crate) fn problem(&self, resource: &str) -> Option<(&'static str, String)> {
        for (key, what, name) in [
            ("fleet", "resource name", resource),
            ("prefix", "key prefix", self.prefix.as_str()),
        ] {
            if name.is_empty() || name.contains(['{', '}']) {
                return Some((
                    key,
                    format!(
                        "the {what} {name:?} must be non-empty and without {{ or }}: it is the hash tag that keeps a resource's keys in one Redis Cluster slot"
                    ),
                ));
            }
        }
        if self.lease < Self::MIN_LEASE {
            return Some((
                "lease",
                format!(
                    "lease {:?} is shorter than the minimum {:?}",
                    self.lease,
                    Self::MIN_LEASE
                ),
            ));
        }
        if self.lease > Self::MAX_LEASE {
            return Some((
                "lease",
                format!(
                    "lease {:?} is longer than the maximum {:?} (a day)",
                    self.lease,
                    Self::MAX_LEASE
                ),
            ));
        }
        let margin = self.margin_duration();
        if margin.is_zero() || margin > self.lease / 2 {
            return Some((
                "margin",
                format!(
                    "margin {margin:?} must be above 0 and at most half the lease ({:?})",
                    self.lease
                ),
            ));
        }
        None
    }
}

impl fmt::Debug for FleetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetConfig")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .field("lease", &self.lease)
            .field("margin", &self.margin_duration())
            .field("on_unreachable", &self.on_unreachable)
            .finish()
    }
}
