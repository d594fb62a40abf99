//! What a failed request to Redis says in a snapshot's `last_error` and in
//! a log line: the client's message without the password, and, where
//! Redis's own words mislead, what went wrong, led by Redis's code.

use redis::{ErrorKind, RedisError};

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
///   the rules to grant.
pub(crate) fn message(error: &RedisError, url: &Topology) -> String {
    let said = url.scrub(&error.to_string());
    let code = error.code().unwrap_or_default();
    let detail = error.detail().unwrap_or_default();
    let shown = url.to_string();
    let explained = if code == "NOAUTH" || detail.contains("unauthenticated") {
        format!(
            "NOAUTH: Redis requires authentication, and the fleet's URL {shown} gives no password: \
             give one as redis://user:password@host:port/db or redis://:password@host:port/db"
        )
    } else if code == "WRONGPASS" || error.kind() == ErrorKind::AuthenticationFailed {
        format!("WRONGPASS: Redis refused the user name or password of the fleet's URL {shown}")
    } else if code == "NOPERM" {
        "NOPERM: the Redis user may not run the fleet's scripts on its keys: \
         grant it +evalsha +eval +script|load ~bulkhead:{<prefix>:*"
            .to_owned()
    } else {
        return said;
    };
    format!("{explained} (Redis said: {said})")
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
}
