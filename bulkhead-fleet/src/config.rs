//! [`FleetConfig`]: where a fleet's Redis is and how its leases run, and
//! [`OnUnreachable`]: what a process does when it cannot reach it.

use std::fmt;
use std::time::Duration;

use super::topology::{
    self, Auth, Cluster, REDIS_PORT, SENTINEL_PORT, Secret, SentinelNode, Sentinels, TLS_BUILT_IN,
    TLS_MISSING, Topology,
};
use super::url::RedisUrl;
use bulkhead_registry::RegistryError;

/// How a resource's budget is shared across a fleet: the Redis that keeps
/// the leases, the key prefix of the application, the lease and what to do
/// when Redis cannot be reached. Given to
/// [`Registry::fleet_resource`](bulkhead_registry::Registry::fleet_resource).
///
/// The Redis is one server ([`redis`](Self::redis)), the primary that a
/// set of Sentinels names ([`sentinel`](Self::sentinel), or a
/// `redis+sentinel://` URL), or a Redis Cluster ([`cluster`](Self::cluster),
/// or a `redis+cluster://` URL). Under Sentinel, the fleet looks the
/// primary up again after a failed connection, a `READONLY`, `MASTERDOWN`,
/// `LOADING` or `NOREPLICAS` reply and on Sentinel's `+switch-master`, and
/// applies a grant only once a majority of the Sentinels still names the
/// node that made it.
///
/// No password (of the URL, of the primary, of a Sentinel) ever appears in
/// `Debug`, in an error, an event or a snapshot: they show
/// `redis://user:***@host:6379/0`.
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
    topology: Topology,
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
    /// or `redis+unix:///path/to/redis.sock[?db=0&pass=..]` for one server
    /// (or a managed endpoint that follows its primary), or one of the
    /// forms of Sentinel and Cluster:
    ///
    /// - `redis+sentinel://[user:password@]host1[:port1][,host2[:port2]...]/<master_name>[/<db>][?sentinel_username=..&sentinel_password=..]`:
    ///   the primary that the Sentinels at these addresses (port 26379
    ///   unless given) name `<master_name>`. The user information is the
    ///   **primary's** credentials, and `<db>` its database; the
    ///   `sentinel_*` parameters are the Sentinels' own AUTH (the
    ///   convention of redis-vl and Prefect; redis-rs has no Sentinel URL).
    ///   Give every Sentinel: a grant is applied only while a majority of
    ///   those given name its node.
    /// - `redis+cluster://[user:password@]host1[:port1][,host2[:port2]...]`:
    ///   a Redis Cluster reached through any of these nodes (port 6379
    ///   unless given; no database: a Cluster has only database 0).
    /// - `rediss://`, `rediss+sentinel://`, `rediss+cluster://`: the same
    ///   over TLS, to every node and Sentinel, with the feature `tls`
    ///   (`redis-tls` of the facade).
    ///
    /// In the Sentinel and Cluster forms, a `/`, `?`, `#` or `,` of a user
    /// name or password is percent-encoded (`%2F`, `%3F`, `%23`, `%2C`),
    /// and so is a `&` of a parameter's value (`%26`, `+` being a space).
    ///
    /// # Errors
    ///
    /// REG-014 if the URL does not parse, or is a TLS form without the
    /// feature `tls`, or its user name or password holds a `/`, `?` or `#`
    /// that is not percent-encoded (a parser would end the host part
    /// there); for Sentinel and Cluster also without an address, with a
    /// port not in 1-65535, an empty master name or one with a `/`, a
    /// database under Cluster, or a parameter other than
    /// `sentinel_username` and `sentinel_password`. The message shows the
    /// URL without its passwords, whatever characters they hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_fleet::FleetConfig;
    ///
    /// let config = FleetConfig::redis(
    ///     "redis+sentinel://app:s3cr3t@10.0.0.1,10.0.0.2:26380,10.0.0.3/mymaster/2\
    ///      ?sentinel_password=t0ps3cr3t",
    /// )?;
    /// assert_eq!(
    ///     config.redis_url(),
    ///     "redis+sentinel://app:***@10.0.0.1:26379,10.0.0.2:26380,10.0.0.3:26379/mymaster/2\
    ///      ?sentinel_password=***"
    /// );
    /// let cluster = FleetConfig::redis("redis+cluster://:s3cr3t@10.0.1.1:7000,10.0.1.2:7000")?;
    /// assert_eq!(cluster.redis_url(), "redis+cluster://:***@10.0.1.1:7000,10.0.1.2:7000");
    ///
    /// let error = FleetConfig::redis("redis+sentinel://app:s3cr3t@10.0.0.1/").unwrap_err();
    /// assert_eq!(error.code(), "REG-014");
    /// assert!(error.to_string().contains("no master name"));
    /// assert!(!error.to_string().contains("s3cr3t"));
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn redis(url: &str) -> Result<Self, RegistryError> {
        let shown = RedisUrl::new(url);
        let invalid =
            |problem: String| invalid(format!("Redis URL {shown} cannot be used: {problem}"));
        if let Some(parsed) = topology::parse_url(url) {
            return parsed.map(Self::on).map_err(invalid);
        }
        let url = shown.clone();
        let scheme = url.expose().split("://").next().unwrap_or_default();
        let problem = match scheme {
            "redis" | "rediss" if url.userinfo_needs_encoding() => Some(
                "its user name or password holds a `/`, `?` or `#`, which would end the host part: percent-encode them (%2F, %3F, %23)"
                    .to_owned(),
            ),
            "rediss" if !TLS_BUILT_IN => Some(TLS_MISSING.to_owned()),
            "redis" | "rediss" | "redis+unix" | "unix" => {
                redis::Client::open(url.expose()).err().map(|e| url.scrub(&e.to_string()))
            }
            _ => Some(
                "expected redis://host:port/db, redis+unix:///path, redis+sentinel://host:port,../master_name or redis+cluster://host:port,.."
                    .to_owned(),
            ),
        };
        match problem {
            Some(problem) => Err(invalid(problem)),
            None => Ok(Self::on(Topology::Single {
                url,
                auth: None,
                db: None,
            })),
        }
    }

    /// A fleet on the primary that the Sentinels at `sentinels` name
    /// `master_name`. Each address is `host[:port]` (port 26379 unless
    /// given; `[v6]:port` for IPv6) or `redis://[user:password@]host[:port]`,
    /// whose user information is that Sentinel's own AUTH (`rediss://` for
    /// TLS, with the feature `tls`: then every address must be one).
    /// The primary's own AUTH and database are
    /// [`primary_auth`](Self::primary_auth) and [`db`](Self::db).
    ///
    /// Give every Sentinel of the set: the fleet applies a grant only while
    /// a majority of those given (more than half) name, at the highest
    /// configuration epoch seen, the node that made it.
    ///
    /// # Errors
    ///
    /// REG-014 with no address, an address that does not parse (a port
    /// not in 1-65535 included), an empty master name or one with a `/`,
    /// or a TLS address without the feature `tls`; the message shows no
    /// password.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_fleet::FleetConfig;
    ///
    /// let config = FleetConfig::sentinel(
    ///     "mymaster",
    ///     ["10.0.0.1:26379", "10.0.0.2", "redis://sentinel:t0ps3cr3t@10.0.0.3:26380"],
    /// )?
    /// .primary_auth(Some("app"), "s3cr3t")
    /// .db(2);
    /// assert_eq!(
    ///     config.redis_url(),
    ///     "redis+sentinel://app:***@10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26380/mymaster/2\
    ///      ?sentinel_password=***"
    /// );
    /// assert!(!format!("{config:?}").contains("s3cr3t"));
    /// assert_eq!(FleetConfig::sentinel("", ["10.0.0.1"]).unwrap_err().code(), "REG-014");
    /// assert_eq!(FleetConfig::sentinel("m", [""; 0]).unwrap_err().code(), "REG-014");
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn sentinel<I, S>(master_name: &str, sentinels: I) -> Result<Self, RegistryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let fail = |problem: String| invalid(format!("Sentinel set cannot be used: {problem}"));
        topology::check_master_name(master_name).map_err(fail)?;
        let (nodes, tls) = nodes(sentinels, SENTINEL_PORT).map_err(fail)?;
        Ok(Self::on(Topology::Sentinel(Sentinels {
            name: master_name.to_owned(),
            nodes: nodes
                .into_iter()
                .map(|(addr, auth)| SentinelNode { addr, auth })
                .collect(),
            primary: Auth::default(),
            db: 0,
            tls,
        })))
    }

    /// A fleet on the Redis Cluster reached through any of `nodes`: each
    /// `host[:port]` (port 6379 unless given) or
    /// `redis://[user:password@]host[:port]` (`rediss://` for TLS, with the
    /// feature `tls`). The nodes' AUTH is the user information of the
    /// addresses (the same on every one that gives it) or
    /// [`primary_auth`](Self::primary_auth). The client follows `MOVED`
    /// and `ASK`, and a failover of the slot's primary.
    ///
    /// # Errors
    ///
    /// REG-014 with no address, an address that does not parse, addresses
    /// with different user information, or a TLS address without the
    /// feature `tls`; the message shows no password.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_fleet::FleetConfig;
    ///
    /// let config = FleetConfig::cluster(["10.0.1.1:7000", "10.0.1.2:7000", "10.0.1.3:7000"])?
    ///     .primary_auth(None, "s3cr3t");
    /// assert_eq!(
    ///     config.redis_url(),
    ///     "redis+cluster://:***@10.0.1.1:7000,10.0.1.2:7000,10.0.1.3:7000"
    /// );
    /// assert_eq!(FleetConfig::cluster(["10.0.1.1:70000"]).unwrap_err().code(), "REG-014");
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn cluster<I, S>(nodes: I) -> Result<Self, RegistryError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let fail = |problem: String| invalid(format!("Cluster nodes cannot be used: {problem}"));
        let (nodes, tls) = self::nodes(nodes, REDIS_PORT).map_err(fail)?;
        let mut auth: Option<Auth> = None;
        for (_, given) in nodes.iter().filter(|(_, a)| *a != Auth::default()) {
            match &auth {
                Some(first) if first != given => {
                    return Err(fail(
                        "the nodes give different user names or passwords: a Cluster's nodes share one AUTH"
                            .to_owned(),
                    ));
                }
                _ => auth = Some(given.clone()),
            }
        }
        Ok(Self::on(Topology::Cluster(Cluster {
            nodes: nodes.into_iter().map(|(addr, _)| addr).collect(),
            auth: auth.unwrap_or_default(),
            db: 0,
            tls,
        })))
    }

    /// The primary's user name (none: the default user) and password,
    /// under Sentinel (the Sentinels' own AUTH is given with their
    /// addresses), or the nodes' under Cluster. With one Redis
    /// ([`redis`](Self::redis)) they belong in its URL: the check of the
    /// configuration refuses them there (REG-014).
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_fleet::FleetConfig;
    ///
    /// let config = FleetConfig::sentinel("mymaster", ["10.0.0.1", "10.0.0.2", "10.0.0.3"])?
    ///     .primary_auth(Some("app"), "s3cr3t");
    /// assert!(config.redis_url().starts_with("redis+sentinel://app:***@10.0.0.1:26379,"));
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn primary_auth(mut self, user: Option<&str>, password: &str) -> Self {
        let auth = Auth {
            user: user.map(str::to_owned),
            password: Some(Secret::new(password)),
        };
        match &mut self.topology {
            Topology::Single { auth: given, .. } => *given = Some(auth),
            Topology::Sentinel(sentinels) => sentinels.primary = auth,
            Topology::Cluster(cluster) => cluster.auth = auth,
        }
        self
    }

    /// The primary's database under Sentinel (0 unless given). A Cluster
    /// has only database 0, and one Redis takes it in its URL: the check
    /// of the configuration refuses another database under Cluster, a
    /// database for one Redis, and a negative one (REG-014).
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_fleet::FleetConfig;
    /// use bulkhead_registry::Registry;
    ///
    /// let config = FleetConfig::sentinel("mymaster", ["10.0.0.1", "10.0.0.2", "10.0.0.3"])?.db(3);
    /// assert!(config.redis_url().ends_with("/mymaster/3"));
    /// let cluster = FleetConfig::cluster(["10.0.1.1:7000"])?.db(3);
    /// let error = Registry::new().fleet_resource("db", 10, cluster).unwrap_err();
    /// assert_eq!(error.code(), "REG-014");
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn db(mut self, db: i64) -> Self {
        match &mut self.topology {
            Topology::Single { db: given, .. } => *given = Some(db),
            Topology::Sentinel(sentinels) => sentinels.db = db,
            Topology::Cluster(cluster) => cluster.db = db,
        }
        self
    }

    /// A configuration with the defaults on `topology`.
    fn on(topology: Topology) -> Self {
        FleetConfig {
            topology,
            prefix: Self::DEFAULT_PREFIX.to_owned(),
            lease: Self::DEFAULT_LEASE,
            margin: None,
            on_unreachable: OnUnreachable::default(),
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

    /// The Redis URL, every password shown as `***`: under Sentinel and
    /// Cluster, their URL form with every address and port
    /// (`redis+sentinel://app:***@h1:26379,h2:26379/mymaster?sentinel_password=***`).
    /// Sentinels given different AUTH show the user name only if they
    /// share it.
    pub fn redis_url(&self) -> String {
        self.topology.to_string()
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

    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
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
        if let Some(problem) = self.topology.problem() {
            return Some(("fleet", problem));
        }
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
            .field("url", &self.topology.to_string())
            .field("prefix", &self.prefix)
            .field("lease", &self.lease)
            .field("margin", &self.margin_duration())
            .field("on_unreachable", &self.on_unreachable)
            .finish()
    }
}

/// REG-014 with `message`, for no resource yet.
fn invalid(message: String) -> RegistryError {
    RegistryError::FleetConfig {
        resource: String::new(),
        message,
    }
}

/// The addresses given in code, their AUTH, and whether they are all TLS
/// forms (all or none must be).
fn nodes<I, S>(nodes: I, default_port: u16) -> Result<(Vec<(topology::Addr, Auth)>, bool), String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut parsed = Vec::new();
    let mut tls = None;
    for node in nodes {
        let (addr, auth, is_tls) = topology::parse_node(node.as_ref(), default_port)?;
        if *tls.get_or_insert(is_tls) != is_tls {
            return Err(
                "some addresses are rediss:// and others not: TLS is for every node or none"
                    .to_owned(),
            );
        }
        parsed.push((addr, auth));
    }
    if parsed.is_empty() {
        return Err("no address: give at least one host[:port]".to_owned());
    }
    let addrs: Vec<topology::Addr> = parsed.iter().map(|(addr, _)| addr.clone()).collect();
    topology::distinct(&addrs)?;
    Ok((parsed, tls.unwrap_or(false)))
}
