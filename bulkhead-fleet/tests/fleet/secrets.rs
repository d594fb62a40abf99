//! Passwords and authentication: a password made of any characters never
//! shows in an error, a `Debug` output, a snapshot, an event or a log line
//! (in code, TOML and environment variables); a Redis that requires a
//! password says so.

use std::time::Duration;

use bulkhead_fleet::FleetConfig;
use bulkhead_registry::{Registry, RegistryError};

use crate::registry::LEASE;
use crate::support::{RedisServer, encoded, quoted, wait_for};

/// Every character with a meaning in a URL, and a few more.
const SPECIAL: &str = ":/?#[]@!$&'()*+,;=% \"<>\\^`{|}~";

/// Passwords with each of them between two parts that must never show,
/// and one with all of them.
fn passwords() -> Vec<String> {
    SPECIAL
        .chars()
        .map(|c| format!("Sup3r{c}S3cret"))
        .chain([format!("Sup3r{SPECIAL}S3cret")])
        .collect()
}

#[track_caller]
fn assert_hidden(what: &str, text: &str) {
    assert!(
        !text.contains("Sup3r") && !text.contains("S3cret"),
        "{what} shows the password: {text}"
    );
}

/// The ways a configuration error is shown.
fn shown(error: &RegistryError) -> [String; 2] {
    [error.to_string(), format!("{error:?}")]
}

/// A registry on fleet resource `db` of `config` (a Redis without a
/// password: AUTH fails), its events and logs captured, once its last
/// error is known: everything it shows.
fn everything_shown(config: FleetConfig) -> Vec<String> {
    let logs = logs::Collector::default();
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let _tracing = logs.capture(|| {
        let tracing = bulkhead_registry::observe::trace_events(&registry).unwrap();
        registry.fleet_resource("db", 10, config.clone()).unwrap();
        tracing
    });
    let failed = wait_for(Duration::from_secs(5), || {
        registry.snapshot().fleets()[0].last_error.is_some()
    });
    assert!(failed.is_some(), "{:?}", registry.snapshot().fleets());
    let snapshot = registry.snapshot();
    let mut shown = vec![
        format!("{config:?}"),
        config.redis_url(),
        format!("{registry:?}"),
        format!("{snapshot:?}"),
        snapshot.fleets()[0].last_error.clone().unwrap_or_default(),
        snapshot.fleets()[0].redis.clone(),
    ];
    registry.leave_fleets();
    shown.push(format!("{:?}", events.drain().collect::<Vec<_>>()));
    // The failure is logged by the fleet thread, the events by the
    // observer's, which may still be at it.
    #[cfg(feature = "tracing")]
    {
        let logged = wait_for(Duration::from_secs(5), || {
            let lines = logs.lines();
            lines.iter().any(|l| l.contains("WRONGPASS"))
                && lines.iter().any(|l| l.contains("reason=\"left\""))
        });
        assert!(logged.is_some(), "{:?}", logs.lines());
    }
    shown.extend(logs.lines());
    shown
}

#[test]
fn no_character_of_a_password_lets_it_show_anywhere() {
    let redis = RedisServer::start();
    let mut connected = Vec::new();
    for password in passwords() {
        for written in [password.clone(), encoded(&password)] {
            let url = format!("redis://app:{written}@127.0.0.1:{}/0", redis.port);
            // In code.
            match FleetConfig::redis(&url) {
                Err(error) => {
                    assert_eq!(error.code(), "REG-014");
                    for text in shown(&error) {
                        assert_hidden(&format!("FleetConfig::redis({url:?})"), &text);
                    }
                }
                Ok(config) => {
                    assert!(config.redis_url().contains("app:***@127.0.0.1"));
                    connected.push((url.clone(), config));
                }
            }
            // In TOML (escaped, and as written, which a `"` or a `\` in
            // the password breaks) and in environment variables.
            let toml = |fleet: &str| {
                format!("[resources.db]\nbudget = 10\nfleet = {fleet}\nprefix = \"secrets\"\n")
            };
            let vars = [
                ("BULKHEAD_RESOURCES__DB__BUDGET", "10"),
                ("BULKHEAD_RESOURCES__DB__FLEET", url.as_str()),
                ("BULKHEAD_RESOURCES__DB__PREFIX", "secrets"),
            ];
            // (A configuration that loads gives the same `FleetConfig` as
            // the code above: what a registry shows of it is checked there.)
            for loaded in [
                Registry::builder().config_toml(&toml(&quoted(&url))),
                Registry::builder().config_toml(&toml(&format!("\"{url}\""))),
                Registry::builder().config_vars("BULKHEAD_", vars),
            ] {
                let text = match loaded {
                    Err(error) => shown(&error).join(" "),
                    Ok(builder) => format!("{builder:?}"),
                };
                assert_hidden(&format!("configuration {url:?}"), &text);
            }
        }
    }
    // The encoded passwords, at least, reach Redis (and fail there); a
    // registry on each, side by side.
    assert!(connected.len() >= passwords().len(), "{}", connected.len());
    std::thread::scope(|scope| {
        for (url, config) in connected {
            scope.spawn(move || {
                for text in everything_shown(config) {
                    assert_hidden(&format!("a registry on {url:?}"), &text);
                }
            });
        }
    });
    // The URL: a REG-014 that shows no part of the password.
    let error = FleetConfig::redis("redis://app:ab#Sup3rS3cretPw@127.0.0.1:6379/0").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("redis://app:***@127.0.0.1:6379/0"),
        "{error}"
    );
    assert!(error.to_string().contains("percent-encode"), "{error}");
}

#[test]
fn a_redis_that_requires_a_password_says_so_with_its_code() {
    let redis = RedisServer::start();
    let _: () = redis.cmd(&["CONFIG", "SET", "requirepass", "Sup3rS3cret"]);
    let last_error = |url: &str| {
        let registry = Registry::new();
        let config = FleetConfig::redis(url).unwrap().prefix("auth").lease(LEASE);
        registry.fleet_resource("db", 10, config).unwrap();
        wait_for(Duration::from_secs(5), || {
            registry.snapshot().fleets()[0].last_error.is_some()
        });
        let error = registry.snapshot().fleets()[0].last_error.clone();
        error.unwrap_or_default()
    };
    let port = redis.port;
    let none = last_error(&format!("redis://127.0.0.1:{port}/0"));
    assert!(
        none.starts_with(
            "NOAUTH: Redis requires authentication, and the fleet's URL redis://127.0.0.1:"
        ),
        "{none}"
    );
    let wrong = last_error(&format!("redis://:n0tTheOne@127.0.0.1:{port}/0"));
    assert!(wrong.starts_with("WRONGPASS: "), "{wrong}");
    assert!(!wrong.contains("n0tTheOne"), "{wrong}");
    // The right one joins.
    let registry = Registry::new();
    let url = format!("redis://:Sup3rS3cret@127.0.0.1:{port}/0");
    let config = FleetConfig::redis(&url)
        .unwrap()
        .prefix("auth")
        .lease(LEASE);
    registry.fleet_resource("db", 10, config).unwrap();
    let joined = wait_for(Duration::from_secs(5), || {
        registry.snapshot().fleets()[0].renewals > 0
    });
    assert!(joined.is_some(), "{:?}", registry.snapshot().fleets());
}

/// What `tracing` logs, as text (with the feature `tracing`; none without).
mod logs {
    use std::sync::{Arc, Mutex};

    /// Keeps every event's fields, formatted.
    #[derive(Clone, Default)]
    pub(super) struct Collector {
        lines: Arc<Mutex<Vec<String>>>,
    }

    impl Collector {
        pub(super) fn lines(&self) -> Vec<String> {
            self.lines.lock().unwrap().clone()
        }

        /// Runs `f` with this collector as the default subscriber: threads
        /// started there (the fleet's, the tracing observer's) log to it.
        #[cfg(feature = "tracing")]
        pub(super) fn capture<T>(&self, f: impl FnOnce() -> T) -> T {
            subscriber::keep_callsites_open();
            tracing::subscriber::with_default(self.clone(), f)
        }

        #[cfg(not(feature = "tracing"))]
        pub(super) fn capture<T>(&self, f: impl FnOnce() -> T) -> T {
            f()
        }
    }

    #[cfg(feature = "tracing")]
    mod subscriber {
        use std::fmt::{Debug, Write};

        use tracing::field::{Field, Visit};
        use tracing::span::{Attributes, Id, Record};
        use tracing::{Event, Metadata, Subscriber};

        use super::Collector;

        /// A subscriber that wants no event but asks to be asked each time.
        struct Undecided;

        impl Subscriber for Undecided {
            fn register_callsite(
                &self,
                _: &'static Metadata<'static>,
            ) -> tracing::subscriber::Interest {
                tracing::subscriber::Interest::sometimes()
            }
            fn enabled(&self, _: &Metadata<'_>) -> bool {
                false
            }
            fn new_span(&self, _: &Attributes<'_>) -> Id {
                Id::from_u64(1)
            }
            fn record(&self, _: &Id, _: &Record<'_>) {}
            fn record_follows_from(&self, _: &Id, _: &Id) {}
            fn event(&self, _: &Event<'_>) {}
            fn enter(&self, _: &Id) {}
            fn exit(&self, _: &Id) {}
        }

        /// Keeps, for the whole test process, a dispatcher that asks every
        /// callsite to check the subscriber at each event. Without it, a
        /// callsite first reached by a thread with no subscriber (another
        /// test's fleet thread) while only one dispatcher is registered is
        /// cached as never interesting, and the collector never sees it.
        pub(in super::super) fn keep_callsites_open() {
            static KEPT: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
            KEPT.get_or_init(|| tracing::Dispatch::new(Undecided));
        }

        struct Line(String);

        impl Visit for Line {
            fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
                let _ = write!(self.0, " {}={value:?}", field.name());
            }
        }

        impl Subscriber for Collector {
            fn enabled(&self, _: &Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &Attributes<'_>) -> Id {
                Id::from_u64(1)
            }
            fn record(&self, _: &Id, _: &Record<'_>) {}
            fn record_follows_from(&self, _: &Id, _: &Id) {}
            fn event(&self, event: &Event<'_>) {
                let mut line = Line(format!("{}", event.metadata().level()));
                event.record(&mut line);
                self.lines.lock().unwrap().push(line.0);
            }
            fn enter(&self, _: &Id) {}
            fn exit(&self, _: &Id) {}
        }
    }
}
