//! What the HTTP tests of the axum example share.

use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};

/// Waits (without blocking the runtime) until `condition` holds. Not a
/// timing assertion: the bound only turns a hang into a failure.
pub(crate) async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < give_up, "gave up waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// With the reports' slots all held: 5 more reports, each refused with a
/// 503, then 4 checkouts, each answered 200.
pub(crate) async fn refused_reports_then_checkouts(client: &Client, base: &str) {
    for i in 0..5 {
        let refused = client
            .get(format!("{base}/reports/more-{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    for _ in 0..4 {
        let order = client
            .post(format!("{base}/checkout"))
            .send()
            .await
            .unwrap();
        assert_eq!(order.status(), StatusCode::OK);
    }
}
