use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{Answer, Resolver, choose};
use crate::topology::{Addr, Auth, SentinelNode, Sentinels};

fn up(host: &str, epoch: u64) -> Answer {
    Answer {
        addr: Addr::new(host, 6379),
        epoch,
        valid: true,
    }
}

fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn a_majority_of_the_configured_sentinels_must_name_the_primary() {
    let p = Addr::new("p", 6379);
    assert_eq!(choose(&[up("p", 1), up("p", 1)], 3, 0), Ok((p.clone(), 1)));
    assert_eq!(
        choose(&[up("p", 1), up("p", 1), up("p", 1)], 3, 0),
        Ok((p.clone(), 1))
    );
    // Fewer answers than a majority of those configured: 1 of 3, 2 of 4.
    let one = choose(&[up("p", 1)], 3, 0).unwrap_err();
    assert_eq!(
        one,
        "no Sentinel majority names p:6379: 1 of 3 Sentinels at config-epoch 1, 2 needed"
    );
    assert!(choose(&[up("p", 1), up("p", 1)], 4, 0).is_err());
    assert!(choose(&[up("p", 1), up("p", 1), up("p", 1)], 4, 0).is_ok());
    // Split between two addresses at one epoch: neither has a majority.
    assert!(choose(&[up("p", 1), up("o", 1)], 3, 0).is_err());
    // No answer at all.
    let none = choose(&[], 3, 0).unwrap_err();
    assert!(
        none.starts_with("no Sentinel majority names a primary"),
        "{none}"
    );
    // A single Sentinel: its answer is the majority.
    assert_eq!(choose(&[up("p", 0)], 1, 0), Ok((Addr::new("p", 6379), 0)));
}

#[test]
fn the_address_at_the_highest_epoch_is_the_only_candidate() {
    // Two name the old primary at epoch 1, one (the leader) the new one at
    // 2: the new one lacks a majority, and the old one is not chosen.
    let answers = [up("o", 1), up("o", 1), up("p", 2)];
    let refused = choose(&answers, 3, 0).unwrap_err();
    assert!(
        refused.starts_with("no Sentinel majority names p:6379"),
        "{refused}"
    );
    // Once two name it at 2, it is.
    let answers = [up("o", 1), up("p", 2), up("p", 2)];
    assert_eq!(choose(&answers, 3, 0), Ok((Addr::new("p", 6379), 2)));
}

#[test]
fn an_epoch_below_the_highest_accepted_is_refused() {
    // A majority, not every Sentinel, at a lower epoch: stale ones.
    let answers = [up("o", 1), up("o", 1)];
    assert_eq!(
        choose(&answers, 3, 2).unwrap_err(),
        "Sentinel config-epoch went back: 1 after 2"
    );
    assert!(choose(&answers, 3, 1).is_ok());
    // Every Sentinel answers, but not all name one address at one epoch.
    let split = [up("o", 1), up("o", 1), up("p", 0)];
    assert!(choose(&split, 3, 2).is_err());
    let mut flagged = [up("o", 1), up("o", 1), up("o", 1)];
    flagged[2].valid = false;
    assert!(choose(&flagged, 3, 2).is_err());
}

#[test]
fn a_set_reset_as_a_whole_is_followed() {
    // Every configured Sentinel redeployed without its sentinel.conf: all
    // of them name one primary at epoch 0 again. Refusing it would refuse
    // every request until the process restarts.
    let answers = [up("p", 0), up("p", 0), up("p", 0)];
    assert_eq!(choose(&answers, 3, 4), Ok((Addr::new("p", 6379), 0)));
}

#[test]
fn answers_flagged_down_or_not_master_do_not_count() {
    let mut answers = [up("p", 1), up("p", 1), up("p", 1)];
    answers[0].valid = false;
    answers[1].valid = false;
    assert!(choose(&answers, 3, 0).is_err());
    // A higher epoch from an answer that does not count changes nothing.
    let mut answers = [up("p", 1), up("p", 1), up("x", 9)];
    answers[2].valid = false;
    assert_eq!(choose(&answers, 3, 0), Ok((Addr::new("p", 6379), 1)));

    let base = [
        ("name", "mymaster"),
        ("ip", "10.0.0.1"),
        ("port", "6380"),
        ("config-epoch", "3"),
    ];
    for (flags, valid) in [
        ("master", true),
        ("master,disconnected", true),
        ("master,s_down", false),
        ("master,s_down,o_down", false),
        ("master,o_down,failover_in_progress", false),
        ("slave", false),
        ("", false),
    ] {
        let mut pairs = base.to_vec();
        pairs.push(("flags", flags));
        let answer = Answer::from_fields(&fields(&pairs)).unwrap();
        assert_eq!(answer.valid, valid, "{flags}");
        assert_eq!(answer.addr, Addr::new("10.0.0.1", 6380));
        assert_eq!(answer.epoch, 3);
    }
    assert_eq!(Answer::from_fields(&fields(&[("ip", "h")])), None);
    assert_eq!(
        Answer::from_fields(&fields(&[("ip", "h"), ("port", "x")])),
        None
    );
}

/// A Sentinel that answers `SENTINEL MASTER` with what `answer` holds at
/// the time (its fields; empty: an error), and `+OK` to anything else.
pub(crate) async fn stub(answer: Arc<Mutex<Vec<(String, String)>>>) -> Addr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = Arc::clone(&answer);
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some((command, used)) = parse_command(&buffer) {
                        buffer.drain(..used);
                        let reply = if command.first().map(|c| c.to_ascii_uppercase())
                            == Some("SENTINEL".to_owned())
                        {
                            let fields = answer.lock().unwrap().clone();
                            if fields.is_empty() {
                                "-ERR No such master with that name\r\n".to_owned()
                            } else {
                                let mut out = format!("*{}\r\n", fields.len() * 2);
                                for (k, v) in fields {
                                    for text in [k, v] {
                                        out.push_str(&format!("${}\r\n{text}\r\n", text.len()));
                                    }
                                }
                                out
                            }
                        } else {
                            "+OK\r\n".to_owned()
                        };
                        if socket.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    Addr::new("127.0.0.1", port)
}

/// One RESP command (`*N` then `$len` strings) at the start of `buffer`,
/// and how many bytes it took.
fn parse_command(buffer: &[u8]) -> Option<(Vec<String>, usize)> {
    let line = |at: usize| -> Option<(&str, usize)> {
        let end = buffer[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((std::str::from_utf8(&buffer[at..end]).ok()?, end + 2))
    };
    let (head, mut at) = line(0)?;
    let count: usize = head.strip_prefix('*')?.parse().ok()?;
    let mut parts = Vec::new();
    for _ in 0..count {
        let (len, next) = line(at)?;
        let len: usize = len.strip_prefix('$')?.parse().ok()?;
        let end = next + len;
        if buffer.len() < end + 2 {
            return None;
        }
        parts.push(String::from_utf8_lossy(&buffer[next..end]).into_owned());
        at = end + 2;
    }
    Some((parts, at))
}

pub(crate) fn master(port: u16, epoch: u64, flags: &str) -> Vec<(String, String)> {
    [
        ("name", "mymaster".to_owned()),
        ("ip", "127.0.0.1".to_owned()),
        ("port", port.to_string()),
        ("flags", flags.to_owned()),
        ("config-epoch", epoch.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The resolver against three stub Sentinels (and one address where none
/// listens): lookups, confirmations and the epoch it keeps.
#[test]
fn the_resolver_follows_a_majority_and_never_an_epoch_that_went_back() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let answers: Vec<_> = (0..3)
            .map(|_| Arc::new(Mutex::new(master(7001, 1, "master"))))
            .collect();
        let mut nodes = Vec::new();
        for answer in &answers {
            nodes.push(SentinelNode {
                addr: stub(Arc::clone(answer)).await,
                auth: Auth::default(),
            });
        }
        // A fourth Sentinel, down: 3 of 4 still make a majority.
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead_addr = Addr::new("127.0.0.1", dead.local_addr().unwrap().port());
        drop(dead);
        nodes.push(SentinelNode {
            addr: dead_addr,
            auth: Auth::default(),
        });
        // A fifth, silent: it accepts and never answers (a host gone
        // without a reset). 3 of 5 are a majority still, and each lookup
        // waits for it no longer than the resolver's timeout.
        let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_addr = Addr::new("127.0.0.1", silent.local_addr().unwrap().port());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = silent.accept().await {
                held.push(socket);
            }
        });
        let silent_shown = silent_addr.to_string();
        nodes.push(SentinelNode {
            addr: silent_addr,
            auth: Auth::default(),
        });
        let sentinels = Sentinels {
            name: "mymaster".to_owned(),
            nodes,
            primary: Auth::default(),
            db: 0,
            tls: false,
        };
        let mut resolver = Resolver::new(&sentinels, Duration::from_millis(200));
        let old = Addr::new("127.0.0.1", 7001);
        let new = Addr::new("127.0.0.1", 7002);
        assert_eq!(resolver.resolve().await, Ok((old.clone(), 1)));
        let start = tokio::time::Instant::now();
        assert_eq!(resolver.confirm(&old).await, Ok(()));
        // Not a timing assertion of the system: the resolver's own bound
        // (200 ms per Sentinel) with a second of slack.
        assert!(start.elapsed() < Duration::from_millis(1200));

        // One Sentinel sees the old primary down: 2 of 5 is no majority.
        *answers[0].lock().unwrap() = master(7001, 1, "master,s_down");
        let refused = resolver.confirm(&old).await.unwrap_err();
        assert!(
            refused.starts_with("no Sentinel majority names 127.0.0.1:7001"),
            "{refused}"
        );

        // The switch: all three name the new primary at epoch 2.
        for answer in &answers {
            *answer.lock().unwrap() = master(7002, 2, "master");
        }
        assert_eq!(resolver.resolve().await, Ok((new.clone(), 2)));
        let refused = resolver.confirm(&old).await.unwrap_err();
        assert!(
            refused.starts_with("no Sentinel majority names 127.0.0.1:7001"),
            "{refused}"
        );
        assert_eq!(resolver.confirm(&new).await, Ok(()));

        // Restored Sentinels naming the old primary at the old epoch
        // confirm nothing any more.
        for answer in &answers {
            *answer.lock().unwrap() = master(7001, 1, "master");
        }
        let refused = resolver.confirm(&old).await.unwrap_err();
        assert!(
            refused.starts_with("Sentinel config-epoch went back: 1 after 2 (127.0.0.1:")
                && refused.contains(&format!("{silent_shown}: ")),
            "{refused}"
        );
        assert!(resolver.resolve().await.is_err());

        // Sentinels that do not know the name say so.
        for answer in &answers {
            answer.lock().unwrap().clear();
        }
        let refused = resolver.resolve().await.unwrap_err();
        assert!(refused.contains("No such master"), "{refused}");
    });
}
