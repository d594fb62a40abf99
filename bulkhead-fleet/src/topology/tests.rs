use super::{Addr, Topology, parse_addr, parse_url};
use crate::FleetConfig;

/// Every character with a meaning in a URL, and a few more.
const SPECIAL: &str = ":/?#[]@!$&'()*+,;=% \"<>\\^`{|}~";

fn parsed(url: &str) -> Topology {
    match parse_url(url) {
        Some(Ok(topology)) => topology,
        other => panic!("{url}: {other:?}"),
    }
}

fn refused(url: &str) -> String {
    let error = FleetConfig::redis(url).unwrap_err();
    assert_eq!(error.code(), "REG-014", "{url}");
    error.to_string()
}

#[test]
fn sentinel_urls_parse_with_their_defaults() {
    let Topology::Sentinel(s) = parsed(
        "redis+sentinel://app:p%40ss@h1,h2:26380,[::1]:26381/mymaster/3?sentinel_username=sen&sentinel_password=a+b%26c",
    ) else {
        panic!("not Sentinel");
    };
    assert_eq!(s.name, "mymaster");
    assert_eq!(s.db, 3);
    assert!(!s.tls);
    let addrs: Vec<&Addr> = s.nodes.iter().map(|n| &n.addr).collect();
    assert_eq!(
        addrs,
        [
            &Addr::new("h1", 26379),
            &Addr::new("h2", 26380),
            &Addr::new("::1", 26381)
        ]
    );
    assert_eq!(s.primary.user.as_deref(), Some("app"));
    assert_eq!(
        s.primary.password.as_ref().map(|p| p.expose()),
        Some("p@ss")
    );
    for node in &s.nodes {
        assert_eq!(node.auth.user.as_deref(), Some("sen"));
        assert_eq!(
            node.auth.password.as_ref().map(|p| p.expose()),
            Some("a b&c")
        );
    }
    let Topology::Sentinel(s) = parsed("redis+sentinel://h/m") else {
        panic!("not Sentinel");
    };
    assert_eq!((s.db, s.primary.password.is_none()), (0, true));
    assert!(s.nodes[0].auth.password.is_none());
}

#[test]
fn cluster_urls_parse_with_their_defaults() {
    let Topology::Cluster(c) = parsed("redis+cluster://:pw@h1:7000,h2,10.0.0.3:7002/") else {
        panic!("not Cluster");
    };
    assert_eq!(
        c.nodes,
        [
            Addr::new("h1", 7000),
            Addr::new("h2", 6379),
            Addr::new("10.0.0.3", 7002)
        ]
    );
    assert_eq!(c.auth.user, None);
    assert_eq!(c.auth.password.as_ref().map(|p| p.expose()), Some("pw"));
    assert_eq!(parse_url("redis://h"), None);
    assert_eq!(parse_url("redis+unix:///tmp/r.sock"), None);
}

#[test]
fn a_sentinel_or_cluster_config_shows_its_url_form_without_passwords() {
    for (url, shown) in [
        (
            "redis+sentinel://h1,h2/m",
            "redis+sentinel://h1:26379,h2:26379/m",
        ),
        (
            "redis+sentinel://u:p@h1:1/m/0?sentinel_password=x",
            "redis+sentinel://u:***@h1:1/m?sentinel_password=***",
        ),
        (
            "redis+sentinel://:p@[::1]:5/m/7?sentinel_username=s",
            "redis+sentinel://:***@[::1]:5/m/7?sentinel_username=s",
        ),
        ("redis+cluster://u@h:7000", "redis+cluster://u@h:7000"),
        ("redis+cluster://h", "redis+cluster://h:6379"),
    ] {
        let config = FleetConfig::redis(url).unwrap();
        assert_eq!(config.redis_url(), shown, "{url}");
        assert!(format!("{config:?}").contains(shown), "{config:?}");
    }
}

#[test]
fn the_same_fleet_given_in_code_or_as_a_url_is_equal() {
    let url = FleetConfig::redis(
        "redis+sentinel://app:pw@h1,h2:26380/m/2?sentinel_username=s&sentinel_password=sp",
    )
    .unwrap();
    let code = FleetConfig::sentinel("m", ["redis://s:sp@h1", "redis://s:sp@h2:26380"])
        .unwrap()
        .primary_auth(Some("app"), "pw")
        .db(2);
    assert_eq!(url, code);
    assert_eq!(url.redis_url(), code.redis_url());
    // Each part counts: another password, database, name, address.
    for other in [
        code.clone().primary_auth(Some("app"), "pw2"),
        code.clone().db(1),
        FleetConfig::sentinel("m", ["redis://s:other@h1", "redis://s:sp@h2:26380"])
            .unwrap()
            .primary_auth(Some("app"), "pw")
            .db(2),
        FleetConfig::sentinel("n", ["redis://s:sp@h1", "redis://s:sp@h2:26380"])
            .unwrap()
            .primary_auth(Some("app"), "pw")
            .db(2),
    ] {
        assert_ne!(url, other);
    }
    let cluster = FleetConfig::cluster(["redis://:pw@h1:7000", "h2:7001"]).unwrap();
    assert_eq!(
        cluster,
        FleetConfig::redis("redis+cluster://:pw@h1:7000,h2:7001").unwrap()
    );
    assert_ne!(
        cluster,
        FleetConfig::redis("redis+cluster://:pw@h1:7000").unwrap()
    );
}

#[test]
fn every_bad_sentinel_or_cluster_url_is_reg_014_and_says_why() {
    for (url, says) in [
        ("redis+sentinel:///m", "no address"),
        ("redis+sentinel://u:p@/m", "no address"),
        ("redis+cluster://", "no address"),
        ("redis+sentinel://h1,,h2/m", "has no host"),
        ("redis+sentinel://h", "no master name"),
        ("redis+sentinel://h/", "no master name"),
        ("redis+sentinel://h/a/b/c", "may not hold a `/`"),
        ("redis+sentinel://h/a%2Fb", "may not hold a `/`"),
        ("redis+sentinel://h/a/b", "not a database number"),
        ("redis+sentinel://h:0/m", "is not a port"),
        ("redis+sentinel://h:65536/m", "is not a port"),
        ("redis+sentinel://h:x/m", "is not a port"),
        ("redis+cluster://h:-1", "is not a port"),
        ("redis+cluster://[::1:7000", "lacks its `]`"),
        ("redis+cluster://h:7000/0", "only database 0"),
        ("redis+cluster://h:7000?x=1", "takes no parameters"),
        (
            "redis+sentinel://h/m?sentinel_pasword=x",
            "\"sentinel_pasword\"",
        ),
        ("redis+sentinel://h/m?sentinel_tls=1", "\"sentinel_tls\""),
        ("redis+sentinel://h/m?db=1", "unknown parameter \"db\""),
        ("redis+sentinel://h/m#x", "fragment"),
        (
            "redis+sentinel://h/m?sentinel_password=a&b",
            "percent-encode a `&`",
        ),
        ("redis+sentinel://u:a,b@h/m", "percent-encode"),
        ("redis+sentinel://h1,u:p@h2/m", "percent-encode"),
        ("redis+sentinel://u:a/b@h/m", "percent-encode"),
        ("redis+sentinel://u:a?b@h/m", "percent-encode"),
        ("redis+sentinel://u:a?b=c@h/m", "percent-encode"),
        (
            "redis+sentinel://u:a?sentinel_password=c@h/m",
            "percent-encode",
        ),
        ("redis+sentinel://u:a#b@h/m", "percent-encode"),
        ("redis+cluster://u:a/b@h", "percent-encode"),
        ("http://h", "expected redis://"),
    ] {
        let message = refused(url);
        assert!(message.contains(says), "{url}: {message}");
    }
    #[cfg(not(feature = "tls"))]
    for url in [
        "rediss://h:6379",
        "rediss+sentinel://h/m",
        "rediss+cluster://h:7000",
    ] {
        assert!(refused(url).contains("feature `tls`"), "{url}");
    }
}

#[test]
fn bad_addresses_given_in_code_are_reg_014() {
    let sentinel = |name: &str, addrs: &[&str]| {
        let error = FleetConfig::sentinel(name, addrs.iter()).unwrap_err();
        assert_eq!(error.code(), "REG-014");
        error.to_string()
    };
    assert!(sentinel("m", &[]).contains("no address"));
    assert!(sentinel("", &["h"]).contains("no master name"));
    assert!(sentinel("a/b", &["h"]).contains("may not hold a `/`"));
    assert!(sentinel("m", &["h:99999"]).contains("is not a port"));
    assert!(sentinel("m", &["http://h"]).contains("expected host:port"));
    assert!(sentinel("m", &["u:p@h"]).contains("redis://user:password@host:port"));
    assert!(sentinel("m", &["h1,h2"]).contains("one address per item"));
    assert!(sentinel("m", &["h 1"]).contains("is not a host name"));
    assert!(sentinel("m", &["redis://h/0"]).contains("no path"));
    let shown = sentinel("m", &["redis://u:s3cr3t@h:0"]);
    assert!(!shown.contains("s3cr3t"), "{shown}");
    let error = FleetConfig::cluster(["redis://:a@h1", "redis://:b@h2"]).unwrap_err();
    assert!(error.to_string().contains("share one AUTH"), "{error}");
    assert!(!error.to_string().contains(":a@") && !error.to_string().contains(":b@"));
    assert_eq!(
        FleetConfig::cluster(Vec::<String>::new())
            .unwrap_err()
            .code(),
        "REG-014"
    );
    #[cfg(not(feature = "tls"))]
    assert!(sentinel("m", &["rediss://h"]).contains("feature `tls`"));
}

#[test]
fn builder_values_the_topology_cannot_take_fail_the_check() {
    let single = FleetConfig::redis("redis://h/0").unwrap();
    for config in [
        single.clone().db(1),
        single.clone().primary_auth(None, "s3cr3t"),
        FleetConfig::cluster(["h:7000"]).unwrap().db(1),
        FleetConfig::sentinel("m", ["h"]).unwrap().db(-1),
    ] {
        let error = config.check("db").unwrap_err();
        assert_eq!(error.code(), "REG-014");
        assert!(!error.to_string().contains("s3cr3t"), "{error}");
    }
    assert!(single.check("db").is_ok());
    assert!(
        FleetConfig::cluster(["h:7000"])
            .unwrap()
            .db(0)
            .check("db")
            .is_ok()
    );
    assert!(
        FleetConfig::sentinel("m", ["h"])
            .unwrap()
            .db(15)
            .check("db")
            .is_ok()
    );
}

#[test]
fn addresses_parse_with_ipv6_and_default_ports() {
    assert_eq!(parse_addr("h", 1), Ok(Addr::new("h", 1)));
    assert_eq!(parse_addr("[fe80::1]", 1), Ok(Addr::new("fe80::1", 1)));
    assert_eq!(parse_addr("[fe80::1]:9", 1), Ok(Addr::new("fe80::1", 9)));
    assert_eq!(Addr::new("fe80::1", 9).to_string(), "[fe80::1]:9");
    assert!(parse_addr("fe80::1", 1).is_err());
    assert!(parse_addr("[::1]x", 1).is_err());
    assert!(parse_addr(":1", 1).is_err());
}

/// A password in any host part, in the primary's user information or in
/// `sentinel_password=`, with any character (encoded where the form needs
/// it), never shows: not in the URL shown, `Debug`, an error, or a
/// message scrubbed by the topology.
#[test]
fn no_password_shows_whatever_it_holds_and_wherever_it_is() {
    let passwords = SPECIAL
        .chars()
        .map(|c| format!("Sup3r{c}S3cret"))
        .chain([format!("Sup3r{SPECIAL}S3cret")]);
    for password in passwords {
        let encoded = super::percent_encoded(&password);
        let good = [
            format!("redis+sentinel://app:{encoded}@h1,h2/m"),
            format!("redis+sentinel://h1,h2/m?sentinel_password={encoded}"),
            format!(
                "redis+sentinel://:{encoded}@h1/m/1?sentinel_username=s&sentinel_password={encoded}"
            ),
            format!("redis+cluster://app:{encoded}@h1:1,h2:2"),
        ];
        for url in &good {
            let config = FleetConfig::redis(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            let topology = config.topology();
            for shown in [
                config.redis_url(),
                format!("{config:?}"),
                format!("{topology:?}"),
            ] {
                assert!(!shown.contains("Sup3r"), "{shown}");
                assert!(!shown.contains("S3cret"), "{shown}");
                assert!(shown.contains("***"), "{shown}");
            }
            let message = format!("AUTH {password} refused; {encoded}");
            assert_eq!(topology.scrub(&message), "AUTH *** refused; ***");
        }
        // Unencoded, in every host part and in the query: the URL is
        // refused (or read), and nothing of the password shows.
        let raw = [
            format!("redis+sentinel://app:{password}@h1,h2/m"),
            format!("redis+sentinel://h1,app:{password}@h2/m"),
            format!("redis+sentinel://h1:1,h2:2,app:{password}@h3:3/m"),
            format!("redis+cluster://app:{password}@h1:1,app:{password}@h2:2"),
            format!("redis+cluster://h1:1,:{password}@h2:2"),
            format!("redis+sentinel://h1/m?sentinel_password={password}"),
            format!("redis+sentinel://h1/m?sentinel_password={password}&sentinel_username=u"),
            format!("rediss+sentinel://app:{password}@h1/m?sentinel_password={password}"),
        ];
        for url in &raw {
            let shown = match FleetConfig::redis(url) {
                Ok(config) => format!("{} {config:?}", config.redis_url()),
                Err(error) => format!("{error} {error:?}"),
            };
            assert!(!shown.contains("Sup3r"), "{url}: {shown}");
            assert!(!shown.contains("S3cret"), "{url}: {shown}");
        }
        // Given in code.
        for config in [
            FleetConfig::sentinel("m", [format!("redis://s:{encoded}@h1"), "h2".to_owned()])
                .map(|c| c.primary_auth(Some("app"), &password)),
            FleetConfig::cluster([format!("redis://:{encoded}@h1:1")]),
        ] {
            let config = config.unwrap();
            for shown in [config.redis_url(), format!("{config:?}")] {
                assert!(!shown.contains("Sup3r"), "{shown}");
                assert!(!shown.contains("S3cret"), "{shown}");
            }
            assert_eq!(config.topology().scrub(&password), "***");
        }
        for bad in [
            format!("redis://s:{password}@h1:0"),
            format!("redis://s:{encoded}@h1:0"),
            format!("redis://s:{password}@h1/x"),
            format!("s:{password}@h1"),
        ] {
            for error in [
                FleetConfig::sentinel("m", [bad.as_str()]).unwrap_err(),
                FleetConfig::cluster([bad.as_str()]).unwrap_err(),
            ] {
                let shown = format!("{error} {error:?}");
                assert!(!shown.contains("Sup3r"), "{bad}: {shown}");
                assert!(!shown.contains("S3cret"), "{bad}: {shown}");
            }
        }
    }
}
