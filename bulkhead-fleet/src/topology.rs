//! Where a fleet's Redis is ([`Topology`]): one server (a URL), a primary
//! that Sentinels name, or a Redis Cluster; the URL forms that name the
//! last two, and how each is shown without its passwords.
//!
//! - `redis+sentinel://[user:password@]host1[:port1][,host2[:port2]...]/<master_name>[/<db>][?sentinel_username=..&sentinel_password=..]`:
//!   default port 26379; the user information is the **primary's**
//!   credentials, the `sentinel_*` parameters the Sentinels' own AUTH
//!   (the convention of redis-vl, Prefect and the PyPI package
//!   Redis-Sentinel-Url; redis-rs has no Sentinel URL).
//! - `redis+cluster://[user:password@]host1[:port1][,host2[:port2]...]`:
//!   default port 6379, no database (a Cluster has only database 0).
//! - `rediss+sentinel://` and `rediss+cluster://`: TLS to every node and
//!   every Sentinel (feature `tls`).
//!
//! In these forms, a `/`, `?`, `#` or `,` in a user name or password must
//! be percent-encoded (`%2F`, `%3F`, `%23`, `%2C`), and a `&` in a query
//! value too (`%26`); `+` in a query value is a space, as in a form.

use std::fmt;

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisConnectionInfo};

use super::url::{RedisUrl, percent_decoded};

/// The default port of a Sentinel.
pub(crate) const SENTINEL_PORT: u16 = 26379;
/// The default port of a Redis node.
pub(crate) const REDIS_PORT: u16 = 6379;

/// Whether this build connects over TLS (feature `tls`).
pub(crate) const TLS_BUILT_IN: bool = cfg!(feature = "tls");

/// What a URL or address of a TLS form says without the feature `tls`.
pub(crate) const TLS_MISSING: &str = "TLS needs the feature `tls` of bulkhead-fleet (`redis-tls` of bulkhead), which this build lacks: enable it, or reach Redis over a private network or a TLS tunnel";

/// A password: compared, cloned and sent, never shown (`***`).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(text: &str) -> Self {
        Secret(text.to_owned())
    }

    /// The password, to connect.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// A user name and password for AUTH (either may be missing).
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub(crate) struct Auth {
    pub(crate) user: Option<String>,
    pub(crate) password: Option<Secret>,
}

impl Auth {
    fn is_empty(&self) -> bool {
        self.user.is_none() && self.password.is_none()
    }

    /// `user:***@`, `:***@`, `user@` or nothing.
    fn shown(&self) -> String {
        match (&self.user, &self.password) {
            (None, None) => String::new(),
            (user, password) => format!(
                "{}{}@",
                user.as_deref().unwrap_or_default(),
                if password.is_some() { ":***" } else { "" }
            ),
        }
    }

    /// `settings` with this user name and password.
    fn apply(&self, mut settings: RedisConnectionInfo) -> RedisConnectionInfo {
        if let Some(user) = &self.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password.expose());
        }
        settings
    }
}

/// A host and port (a host name, an IPv4 address, or an IPv6 address
/// without its brackets).
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub(crate) struct Addr {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Addr {
    pub(crate) fn new(host: &str, port: u16) -> Self {
        Addr {
            host: host.to_owned(),
            port,
        }
    }

    /// How to connect to it: over TLS or not, with `auth` and `db`.
    pub(crate) fn connection_info(
        &self,
        tls: bool,
        auth: &Auth,
        db: i64,
    ) -> redis::RedisResult<ConnectionInfo> {
        let addr = if tls {
            ConnectionAddr::TcpTls {
                host: self.host.clone(),
                port: self.port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(self.host.clone(), self.port)
        };
        let info = addr.into_connection_info()?;
        let settings = auth.apply(info.redis_settings().clone()).set_db(db);
        Ok(info.set_redis_settings(settings))
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A Sentinel: where it is, and its own AUTH.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct SentinelNode {
    pub(crate) addr: Addr,
    pub(crate) auth: Auth,
}

/// The primary that a set of Sentinels names.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Sentinels {
    /// The master name the Sentinels monitor.
    pub(crate) name: String,
    pub(crate) nodes: Vec<SentinelNode>,
    /// The primary's AUTH and database.
    pub(crate) primary: Auth,
    pub(crate) db: i64,
    pub(crate) tls: bool,
}

/// A Redis Cluster, reached through any of its nodes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Cluster {
    pub(crate) nodes: Vec<Addr>,
    pub(crate) auth: Auth,
    /// Always 0 but when set otherwise with `FleetConfig::db` (refused by
    /// the check).
    pub(crate) db: i64,
    pub(crate) tls: bool,
}

/// Where the fleet's Redis is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Topology {
    /// One server (or a managed endpoint): a URL `redis-rs` reads. Its
    /// AUTH and database, when given in code (which only Sentinel and
    /// Cluster take), are kept to be refused by the check.
    Single {
        url: RedisUrl,
        auth: Option<Auth>,
        db: Option<i64>,
    },
    Sentinel(Sentinels),
    Cluster(Cluster),
}

impl Topology {
    /// What the check refuses that the builder methods set, if anything.
    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Topology::Single { auth, db, .. } => {
                let mut given = Vec::new();
                if auth.is_some() {
                    given.push("primary_auth");
                }
                if db.is_some() {
                    given.push("db");
                }
                (!given.is_empty()).then(|| {
                    format!(
                        "{} apply to a fleet on Sentinel or Cluster; for one Redis, give them in its URL (redis://user:password@host:port/db)",
                        given.join(" and ")
                    )
                })
            }
            Topology::Sentinel(sentinels) if sentinels.db < 0 => Some(format!(
                "database {} is not a database number (0 or above)",
                sentinels.db
            )),
            Topology::Cluster(cluster) if cluster.db != 0 => Some(format!(
                "a Redis Cluster has only database 0, not {}",
                cluster.db
            )),
            _ => None,
        }
    }

    /// `text` with every password of the topology replaced by `***`: for
    /// messages from elsewhere (the client crate, the system).
    pub(crate) fn scrub(&self, text: &str) -> String {
        match self {
            Topology::Single { url, auth, .. } => {
                let text = url.scrub(text);
                match auth {
                    Some(auth) => scrub_all(&text, auth.password.iter()),
                    None => text,
                }
            }
            Topology::Sentinel(s) => scrub_all(
                text,
                s.nodes
                    .iter()
                    .filter_map(|n| n.auth.password.as_ref())
                    .chain(&s.primary.password),
            ),
            Topology::Cluster(c) => scrub_all(text, c.auth.password.iter()),
        }
    }
}

/// `text` with each of `secrets` (as given, and percent-encoded as a URL
/// may have carried it) replaced by `***`, longest first.
fn scrub_all<'a>(text: &str, secrets: impl Iterator<Item = &'a Secret>) -> String {
    let mut texts: Vec<String> = secrets
        .flat_map(|s| [s.expose().to_owned(), percent_encoded(s.expose())])
        .filter(|s| !s.is_empty())
        .collect();
    texts.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    texts.dedup();
    texts.iter().fold(text.to_owned(), |text, secret| {
        text.replace(secret.as_str(), "***")
    })
}

/// `text` with every byte outside the unreserved set percent-encoded.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl fmt::Display for Topology {
    /// The URL, every password as `***`; Sentinel and Cluster in their
    /// URL form, with every port.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts = |addrs: &mut dyn Iterator<Item = &Addr>| {
            addrs.map(Addr::to_string).collect::<Vec<_>>().join(",")
        };
        match self {
            Topology::Single { url, .. } => write!(f, "{url}"),
            Topology::Sentinel(s) => {
                let scheme = if s.tls {
                    "rediss+sentinel"
                } else {
                    "redis+sentinel"
                };
                write!(
                    f,
                    "{scheme}://{}{}/{}",
                    s.primary.shown(),
                    hosts(&mut s.nodes.iter().map(|n| &n.addr)),
                    s.name
                )?;
                if s.db != 0 {
                    write!(f, "/{}", s.db)?;
                }
                let mut query = Vec::new();
                let first = s.nodes.first().map(|n| &n.auth.user);
                if let Some(Some(user)) = first
                    && s.nodes.iter().all(|n| n.auth.user.as_ref() == Some(user))
                {
                    query.push(format!("sentinel_username={user}"));
                }
                if s.nodes.iter().any(|n| n.auth.password.is_some()) {
                    query.push("sentinel_password=***".to_owned());
                }
                if !query.is_empty() {
                    write!(f, "?{}", query.join("&"))?;
                }
                Ok(())
            }
            Topology::Cluster(c) => {
                let scheme = if c.tls {
                    "rediss+cluster"
                } else {
                    "redis+cluster"
                };
                write!(
                    f,
                    "{scheme}://{}{}",
                    c.auth.shown(),
                    hosts(&mut c.nodes.iter())
                )?;
                if c.db != 0 {
                    write!(f, "/{}", c.db)?;
                }
                Ok(())
            }
        }
    }
}

/// Parses the URL forms of Sentinel and Cluster (`redis+sentinel://`,
/// `rediss+sentinel://`, `redis+cluster://`, `rediss+cluster://`); `None`
/// for another scheme. The error says what is wrong, quoting no part of
/// the user information or of a password.
pub(crate) fn parse_url(url: &str) -> Option<Result<Topology, String>> {
    let (scheme, rest) = url.split_once("://")?;
    let (tls, sentinel) = match scheme {
        "redis+sentinel" => (false, true),
        "rediss+sentinel" => (true, true),
        "redis+cluster" => (false, false),
        "rediss+cluster" => (true, false),
        _ => return None,
    };
    Some(parse_rest(rest, tls, sentinel))
}

const ENCODE: &str = "its user name or password holds a `/`, `?`, `#` or `,`, which would end the host part: percent-encode them (%2F, %3F, %23, %2C)";

fn parse_rest(rest: &str, tls: bool, sentinel: bool) -> Result<Topology, String> {
    if tls && !TLS_BUILT_IN {
        return Err(TLS_MISSING.to_owned());
    }
    // The authority ends at the first `/`, `?` or `#`: a user information
    // holds none of them unencoded.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    // An `@` past the authority (outside the query's values): a user
    // information with an unencoded delimiter.
    let query_keys_have_at = query.is_some_and(|q| {
        q.split('&')
            .any(|p| p.split_once('=').map_or(p, |(k, _)| k).contains('@'))
    });
    if path.contains('@') || query_keys_have_at {
        return Err(ENCODE.to_owned());
    }
    if path.contains('#') {
        return Err("a URL fragment (`#...`) means nothing here".to_owned());
    }
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let auth = match userinfo {
        Some(info) if info.contains(',') => return Err(ENCODE.to_owned()),
        Some(info) => userinfo_auth(info),
        None => Auth::default(),
    };
    let default_port = if sentinel { SENTINEL_PORT } else { REDIS_PORT };
    // A host part that does not parse, with an `@` further on, may be a
    // piece of a user information: say so without quoting it.
    let addrs = parse_hosts(hosts, default_port).map_err(|problem| {
        if tail.contains('@') {
            ENCODE.to_owned()
        } else {
            problem
        }
    })?;
    if sentinel {
        let (name, db) = sentinel_path(path)?;
        let mut sentinel_auth = Auth::default();
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decoded(&value.replace('+', " "));
            match key {
                "sentinel_username" => sentinel_auth.user = Some(value),
                "sentinel_password" => sentinel_auth.password = Some(Secret(value)),
                _ if pair.contains('@') => return Err(ENCODE.to_owned()),
                // Maybe the rest of a password that holds a `&`.
                _ if sentinel_auth.password.is_some() => {
                    return Err("an unknown parameter follows sentinel_password: percent-encode a `&` of a password as %26 (a Sentinel URL takes sentinel_username and sentinel_password)".to_owned());
                }
                key if key.starts_with("sentinel_") => {
                    return Err(format!(
                        "unknown parameter {key:?}: a Sentinel URL takes sentinel_username and sentinel_password"
                    ));
                }
                key => {
                    return Err(format!(
                        "unknown parameter {key:?}: a Sentinel URL takes sentinel_username and sentinel_password (the primary's credentials go before the hosts, its database after the master name)"
                    ));
                }
            }
        }
        Ok(Topology::Sentinel(Sentinels {
            name,
            nodes: addrs
                .into_iter()
                .map(|addr| SentinelNode {
                    addr,
                    auth: sentinel_auth.clone(),
                })
                .collect(),
            primary: auth,
            db,
            tls,
        }))
    } else {
        if !path.is_empty() && path != "/" {
            return Err(
                "a Redis Cluster has only database 0: give no /<db> after the hosts".to_owned(),
            );
        }
        if query.is_some_and(|q| !q.is_empty()) {
            return Err("a Cluster URL takes no parameters".to_owned());
        }
        Ok(Topology::Cluster(Cluster {
            nodes: addrs,
            auth,
            db: 0,
            tls,
        }))
    }
}

/// The user name and password of `user[:password]`, percent-decoded.
fn userinfo_auth(info: &str) -> Auth {
    let (user, password) = match info.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (info, None),
    };
    Auth {
        user: (!user.is_empty()).then(|| percent_decoded(user)),
        password: password.map(|p| Secret(percent_decoded(p))),
    }
}

/// The master name and database of `/<name>[/<db>]`.
fn sentinel_path(path: &str) -> Result<(String, i64), String> {
    let path = path.strip_prefix('/').unwrap_or(path);
    let mut parts = path.split('/');
    let name = percent_decoded(parts.next().unwrap_or_default());
    let db = parts.next();
    if parts.next().is_some() {
        return Err("the master name may not hold a `/`".to_owned());
    }
    check_master_name(&name)?;
    let db = match db {
        None | Some("") => 0,
        Some(db) => db.parse::<u32>().map(i64::from).map_err(|_| {
            format!(
                "{db:?} after the master name is not a database number (the master name may not hold a `/`)"
            )
        })?,
    };
    Ok((name, db))
}

/// A master name is non-empty and holds no `/`.
pub(crate) fn check_master_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        Err("no master name: give the name the Sentinels monitor (`sentinel monitor <name> ...`) after the hosts, as in redis+sentinel://host:26379/mymaster".to_owned())
    } else if name.contains('/') {
        Err(format!("the master name {name:?} may not hold a `/`"))
    } else if name.chars().any(char::is_whitespace) {
        Err(format!("the master name {name:?} may not hold a space"))
    } else {
        Ok(())
    }
}

/// The addresses of `host1[:port1][,host2[:port2]...]`.
fn parse_hosts(hosts: &str, default_port: u16) -> Result<Vec<Addr>, String> {
    if hosts.is_empty() {
        return Err("no address: give at least one host[:port]".to_owned());
    }
    let addrs = hosts
        .split(',')
        .map(|host| parse_addr(host, default_port))
        .collect::<Result<Vec<_>, _>>()?;
    distinct(&addrs)?;
    Ok(addrs)
}

/// Refuses an address given twice: a Sentinel listed twice would count
/// twice toward the majority that names the primary.
pub(crate) fn distinct(addrs: &[Addr]) -> Result<(), String> {
    for (i, addr) in addrs.iter().enumerate() {
        let twice = addrs[..i]
            .iter()
            .any(|a| a.port == addr.port && a.host.eq_ignore_ascii_case(&addr.host));
        if twice {
            return Err(format!(
                "{addr} is given twice: each address must be another node (a Sentinel counts once toward the majority)"
            ));
        }
    }
    Ok(())
}

/// The address `host[:port]` or `[v6]:port`.
pub(crate) fn parse_addr(text: &str, default_port: u16) -> Result<Addr, String> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let Some((host, after)) = v6.split_once(']') else {
            return Err(format!("address {text:?}: an IPv6 address lacks its `]`"));
        };
        match after {
            "" => (host, None),
            port => match port.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Err(format!("address {text:?}: expected `:port` after `]`")),
            },
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    if host.is_empty() {
        return Err(format!(
            "address {text:?} has no host: give host[:port], separated by `,`"
        ));
    }
    let bad = |c: char| c.is_whitespace() || "[]@/?#,".contains(c);
    let v6 = text.starts_with('[');
    if host.contains(bad) || (!v6 && host.contains(':')) {
        return Err(format!("address {text:?}: {host:?} is not a host name"));
    }
    let port = match port {
        None => default_port,
        Some(port) => match port.parse::<u16>() {
            Ok(port) if port > 0 => port,
            _ => {
                return Err(format!(
                    "address {text:?}: port {port:?} is not a port (1-65535)"
                ));
            }
        },
    };
    Ok(Addr::new(host, port))
}

/// One address given in code (`FleetConfig::sentinel`, `::cluster`):
/// `host[:port]`, or `redis://[user:password@]host[:port]` (`rediss://`
/// for TLS) whose user information is that node's AUTH. Returns it, its
/// AUTH and whether it is a TLS form.
pub(crate) fn parse_node(text: &str, default_port: u16) -> Result<(Addr, Auth, bool), String> {
    let shown = || RedisUrl::new(text).to_string();
    let (tls, rest) = if let Some(rest) = text.strip_prefix("redis://") {
        (false, rest)
    } else if let Some(rest) = text.strip_prefix("rediss://") {
        (true, rest)
    } else if text.contains("://") {
        return Err(format!(
            "address {}: expected host:port or redis://[user:password@]host:port",
            shown()
        ));
    } else if text.contains('@') {
        return Err(format!(
            "address {}: give a user name and password as redis://user:password@host:port",
            shown()
        ));
    } else {
        (false, text)
    };
    if tls && !TLS_BUILT_IN {
        return Err(format!("address {}: {TLS_MISSING}", shown()));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if tail.contains('@') {
        return Err(format!("address {}: {ENCODE}", shown()));
    }
    if !tail.is_empty() && tail != "/" {
        return Err(format!(
            "address {}: expected no path or parameters after host:port",
            shown()
        ));
    }
    let (auth, host) = match authority.rfind('@') {
        Some(at) => (userinfo_auth(&authority[..at]), &authority[at + 1..]),
        None => (Auth::default(), authority),
    };
    if host.contains(',') {
        return Err(format!(
            "address {}: one address per item (no `,`)",
            shown()
        ));
    }
    let addr = parse_addr(host, default_port).map_err(|e| {
        if auth.is_empty() {
            e
        } else {
            format!("address {}: not host:port", shown())
        }
    })?;
    Ok((addr, auth, tls))
}

#[cfg(test)]
mod tests;
