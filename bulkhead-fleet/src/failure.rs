//! What a failed request to Redis says in a snapshot's `last_error` and in
//! a log line: the client's message without the password, and, where
//! Redis's own words mislead, what went wrong, led by Redis's code.

use redis::{ErrorKind, RedisError};

use super::driver::LinkError;
use super::topology::Topology;

/// The message for `error`, met on the Redis at `url`.
///
/// - A Redis that requires a password and got none refuses the fleet's
///   script before it says `NOAUTH`: an unauthenticated client may send
///   only short commands, and longer ones close the connection with
///   `Protocol error: unauthenticated multibulk length`. Both read
///   `NOAUTH: Redis requires authentication ...`.
/// - A password or user name Redis refuses reads `WRONGPASS: ...`.
/// - An ACL that denies the scripts or the keys reads `NOPERM: ...` with
///   the rules to grant; one that denies a Sentinel's `SENTINEL MASTER`,
///   with the rule to grant there.
/// - A node that is no writable primary (`READONLY`, `NOREPLICAS`,
///   `MASTERDOWN`, `LOADING`) or a Cluster that cannot serve the slot
///   (`CLUSTERDOWN`, `TRYAGAIN`) says what the fleet does about it: the
///   connection is dropped, and the next request looks the primary up
///   again.
///
/// The codes are read, never the server's words: Valkey says "Valkey"
/// where Redis says "Redis".
pub(crate) fn message(error: &RedisError, url: &Topology) -> String {
    let said = url.scrub(&error.to_string());
    let code = error.code().unwrap_or_default();
    let detail = error.detail().unwrap_or_default();
    let shown = url.to_string();
    let explained = if code == "NOAUTH" || detail.contains("unauthenticated") {
        let how = match url {
            Topology::Single { .. } => {
                "redis://user:password@host:port/db or redis://:password@host:port/db"
            }
            Topology::Sentinel(_) => {
                "redis+sentinel://user:password@host1,host2,host3/<master> (the primary's, before the Sentinels' hosts) or primary_auth in code"
            }
            Topology::Cluster(_) => {
                "redis+cluster://user:password@host1:port,host2:port or primary_auth in code"
            }
        };
        format!(
            "NOAUTH: Redis requires authentication, and the fleet's URL {shown} gives no password: \
             give one as {how}"
        )
    } else if code == "WRONGPASS" || error.kind() == ErrorKind::AuthenticationFailed {
        format!("WRONGPASS: Redis refused the user name or password of the fleet's URL {shown}")
    } else if code == "NOPERM" && detail.to_ascii_lowercase().contains("sentinel") {
        SENTINEL_NOPERM.to_owned()
    } else if code == "NOPERM" {
        "NOPERM: the Redis user may not run the fleet's scripts on its keys: \
         grant it +evalsha +eval +info ~bulkhead:{<prefix>:* (and +role under Sentinel)"
            .to_owned()
    } else if let Some(what) = not_a_primary(code) {
        format!("{code}: {what}")
    } else {
        return said;
    };
    format!("{explained} (Redis said: {said})")
}

/// What the NOPERM of a Sentinel on `SENTINEL MASTER` means.
pub(crate) const SENTINEL_NOPERM: &str = "NOPERM: the Sentinel's user may not look the primary up: \
     grant it +sentinel|master +subscribe +ping &+switch-master \
     (ACL SETUSER <user> +sentinel|master +subscribe +ping &+switch-master)";

/// What the fleet makes of a reply with `code` from a node that is not, or
/// not yet, a writable primary, or from a Cluster that cannot serve the
/// slot; `None` for another code. The driver drops the connection after
/// each of these.
pub(crate) fn not_a_primary(code: &str) -> Option<&'static str> {
    Some(match code {
        "READONLY" | "NOREPLICAS" => "the node is not a writable primary; looking it up again",
        "MASTERDOWN" => "the node is a replica that lost its primary; looking the primary up again",
        "LOADING" => "the node is still loading its data; connecting again",
        "CLUSTERDOWN" => {
            "the Cluster cannot serve the resource's slot (its primary failed and no replica took over yet, or the Cluster lost its majority); trying again"
        }
        "TRYAGAIN" => "the resource's keys are being moved between Cluster nodes; trying again",
        _ => return None,
    })
}

/// What a Sentinel's missing password means (its `NOAUTH`).
pub(crate) const SENTINEL_NOAUTH: &str = "NOAUTH: the Sentinel requires authentication, and the fleet gives it no password: \
     give the Sentinels' own as sentinel_password=.. (and sentinel_username=..) in the URL, \
     or as redis://user:password@host:port for each Sentinel's address in code";

/// What a Sentinel's refusal of its user name or password means.
pub(crate) const SENTINEL_WRONGPASS: &str = "WRONGPASS: the Sentinel refused the user name or password given for the Sentinels \
     (sentinel_username and sentinel_password in the URL, or the user information of a Sentinel's \
     address in code; the primary's own go before the hosts of the URL, or to primary_auth)";

/// What a Sentinel's `error` says, without passwords, `NOAUTH`,
/// `WRONGPASS` and `NOPERM` explained as the Sentinel's (the primary's
/// are [`message`]'s).
pub(crate) fn sentinel_message(error: &RedisError, topology: &Topology) -> String {
    let said = topology.scrub(&error.to_string());
    let code = error.code().unwrap_or_default();
    let detail = error.detail().unwrap_or_default();
    let explained = if code == "NOPERM" {
        SENTINEL_NOPERM
    } else if code == "NOAUTH" || detail.contains("unauthenticated") {
        SENTINEL_NOAUTH
    } else if code == "WRONGPASS" || error.kind() == ErrorKind::AuthenticationFailed {
        SENTINEL_WRONGPASS
    } else {
        return said;
    };
    format!("{explained} (the Sentinel said: {said})")
}

/// The message for a request that failed on `link`'s side or Redis's.
pub(crate) fn link_message(error: &LinkError, topology: &Topology) -> String {
    match error {
        LinkError::Redis(error) => message(error, topology),
        LinkError::NoPrimary(reason) => {
            topology.scrub(&format!("no primary: {reason}; looking it up again"))
        }
    }
}

#[cfg(test)]
mod tests {
    use redis::{ErrorKind, RedisError};

    use super::message;

    #[test]
    fn authentication_failures_say_so_with_their_code_and_no_password() {
        let url = crate::FleetConfig::redis("redis://app:s3cr3t@h:6379/0").unwrap();
        let url = url.topology();
        let protocol = RedisError::from((
            ErrorKind::Server(redis::ServerErrorKind::ResponseError),
            "An error was signalled by the server",
            "Protocol error: unauthenticated multibulk length".to_owned(),
        ));
        let shown = message(&protocol, url);
        assert!(
            shown.starts_with("NOAUTH: Redis requires authentication"),
            "{shown}"
        );
        assert!(
            shown.contains("unauthenticated multibulk length"),
            "{shown}"
        );
        let wrong = RedisError::from((
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
            "WRONGPASS s3cr3t".to_owned(),
        ));
        let shown = message(&wrong, url);
        assert!(shown.starts_with("WRONGPASS: "), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        let other = RedisError::from((ErrorKind::Io, "broken pipe"));
        assert_eq!(message(&other, url), other.to_string());
    }

    /// `error` as the client reads the server's `reply` (`-CODE words`).
    fn server(reply: &str) -> RedisError {
        let value = redis::parse_redis_value(format!("{reply}\r\n").as_bytes()).unwrap();
        value.extract_error().unwrap_err()
    }

    #[test]
    fn a_node_that_is_no_writable_primary_says_the_fleet_looks_again() {
        let url = crate::FleetConfig::redis(
            "redis+sentinel://:s3cr3t@h1,h2,h3/mymaster?sentinel_password=t0ps3cr3t",
        )
        .unwrap();
        let url = url.topology();
        for (reply, starts, says) in [
            (
                "-READONLY You can't write against a read only replica.",
                "READONLY: the node is not a writable primary; looking it up again",
                "read only replica",
            ),
            (
                "-NOREPLICAS Not enough good replicas to write.",
                "NOREPLICAS: the node is not a writable primary; looking it up again",
                "good replicas",
            ),
            (
                "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
                "MASTERDOWN: the node is a replica that lost its primary",
                "Link with MASTER",
            ),
            (
                "-LOADING Valkey is loading the dataset in memory",
                "LOADING: the node is still loading",
                "Valkey is loading",
            ),
            (
                "-CLUSTERDOWN The cluster is down",
                "CLUSTERDOWN: the Cluster cannot serve the resource's slot",
                "cluster is down",
            ),
            (
                "-TRYAGAIN Multiple keys request during rehashing of slot",
                "TRYAGAIN: the resource's keys are being moved",
                "rehashing",
            ),
            (
                "-NOPERM User app has no permissions to run the 'sentinel|master' command",
                "NOPERM: the Sentinel's user may not look the primary up: grant it +sentinel|master",
                "'sentinel|master'",
            ),
            (
                "-NOPERM User app has no permissions to run the 'evalsha' command",
                "NOPERM: the Redis user may not run the fleet's scripts",
                "'evalsha'",
            ),
        ] {
            let shown = message(&server(reply), url);
            assert!(shown.starts_with(starts), "{reply}: {shown}");
            assert!(shown.contains(says), "{reply}: {shown}");
        }
        // The F1 status of the script, as `Scripts::acquire` reports it.
        let replica = RedisError::from((
            ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
            "the node is a replica",
            "the node answered role:slave to the script".to_owned(),
        ));
        assert!(message(&replica, url).starts_with("READONLY: the node is not a writable primary"));
        let noperm =
            server("-NOPERM User s has no permissions to run the 'sentinel|master' command");
        let shown = super::sentinel_message(&noperm, url);
        assert!(shown.starts_with("NOPERM: the Sentinel's user"), "{shown}");
        let wrong =
            server("-WRONGPASS invalid username-password pair or user is disabled. t0ps3cr3t");
        let shown = super::sentinel_message(&wrong, url);
        assert!(!shown.contains("t0ps3cr3t"), "{shown}");
        assert!(shown.starts_with(super::SENTINEL_WRONGPASS), "{shown}");
        assert!(!message(&wrong, url).contains("t0ps3cr3t"));
        // As redis-rs reports a refused AUTH when it connects.
        let refused = RedisError::from((
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        ));
        let shown = super::sentinel_message(&refused, url);
        assert!(shown.starts_with(super::SENTINEL_WRONGPASS), "{shown}");
        let noauth = server("-NOAUTH Authentication required.");
        let shown = super::sentinel_message(&noauth, url);
        assert!(shown.starts_with(super::SENTINEL_NOAUTH), "{shown}");
        assert!(shown.contains("Authentication required"), "{shown}");
    }

    #[test]
    fn no_primary_says_why_without_passwords() {
        let config = crate::FleetConfig::redis(
            "redis+sentinel://:s3cr3t@h1/mymaster?sentinel_password=t0ps3cr3t",
        )
        .unwrap();
        let shown = super::link_message(
            &crate::driver::LinkError::NoPrimary(
                "no Sentinel majority names a primary (h1:26379: AUTH t0ps3cr3t refused)"
                    .to_owned(),
            ),
            config.topology(),
        );
        assert_eq!(
            shown,
            "no primary: no Sentinel majority names a primary (h1:26379: AUTH *** refused); looking it up again"
        );
    }
}
