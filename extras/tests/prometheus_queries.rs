//! Every query of the Grafana dashboard (`docs/grafana/bulkhead.json`)
//! evaluated by a real Prometheus. The axum example's service
//! (`examples/axum_service.rs`) is served on a free loopback port; a
//! `prometheus` of the test's own (configuration and storage in a temporary
//! directory, a free loopback port: never a system service on :9090, and
//! killed when the test ends, a panic included) scrapes its `/metrics`
//! every second; once it has scraped every counter at 0, the service is
//! put under load by a live reload (reports delayed 3 s, the users'
//! directory hanging past its 2 s timeout, checkout resized) and driven
//! into served, refused, retried, timed-out and abandoned calls until its
//! circuit breaker opens and refuses calls too.
//!
//! Each PromQL expression of the dashboard (every panel's targets, found by
//! walking the JSON, so that panels added later are checked as they come)
//! is evaluated through `/api/v1/query` as Grafana would send it, its
//! variables filled as Grafana fills them:
//!
//! - `$label`, a custom variable, takes each of its values in turn
//!   (`exported_instance`, which a job scraping with the default
//!   `honor_labels: false` stores; `instance`, which a second job scraping
//!   the same target with `honor_labels: true` stores);
//! - `$bulkhead`, a query variable, is evaluated as Grafana does
//!   (`label_values(metric, label)` through `/api/v1/label/../values`) and
//!   must list every bulkhead of the service; then both *All* (its
//!   `allValue`, `.*`) and every value selected (`(a|b|c)`, regex-escaped)
//!   are substituted;
//! - `$__rate_interval` and `$__interval` become 15s (Grafana's rule, at
//!   least four scrape intervals, would give 4s with a 1 s scrape; 15s
//!   holds all of the load); any other variable fails the test, so that a
//!   new one is taught to it rather than skipped.
//!
//! Every expression, under every way of filling its variables, must succeed
//! and, at some point before a deadline (polled, not slept: a `rate()`
//! needs two scrapes in its window), return a series of a policy of the
//! service (a label holding its id) with a finite, non-zero value. A query
//! that cannot show anything but zero in this setup would be listed in
//! [`MAY_BE_ZERO`] with the reason (printed) and need only a non-empty
//! answer; none does today. A few panels must also show exact
//! [`FIGURES`] (the resized limit, the slots held, a 3 s hold read as
//! 3000 ms in the panel's unit). So the test proves that the dashboard's
//! queries parse, that their metric and label names, units and arithmetic
//! match what the exporter sends once Prometheus has renamed and stored
//! it, and that each panel shows the event it is about. It takes about
//! 10 s, 5 of them Prometheus's wait before it hands a new target to its
//! scrapers.
//!
//! Needs `prometheus` (Debian: `apt-get install -y prometheus`, which
//! `.ci/run` does) on the `PATH`, or `BULKHEAD_PROMETHEUS` naming the
//! binary; without one it fails, unless `BULKHEAD_SKIP_PROMETHEUS=1` says
//! to skip it (it prints that it did). Run it alone with
//!
//! ```sh
//! cargo test -p bulkhead-extras --features tower,metrics --test prometheus_queries -- --nocapture
//! ```
//!
//! (`--nocapture` prints every query and how many series it returned).

#[allow(dead_code)]
#[path = "../../examples/axum_service.rs"]
mod example;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bulkhead::Registry;
use example::Directory;
use reqwest::Client;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The dashboard, as shipped.
const DASHBOARD: &str = include_str!("../../docs/grafana/bulkhead.json");

/// How often the exporter samples the registry: well within a scrape.
const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// What Grafana's `$__rate_interval` (and `$__interval`) become: with a 1 s
/// scrape, Grafana's own rule (at least four scrape intervals) gives 4 s;
/// 15 s holds a few more and all of the test's traffic.
const RATE_INTERVAL: &str = "15s";

/// How long the dashboard's queries may take to show the traffic: a bound
/// that turns a hang into a failure, not a timing assertion (it takes a
/// few seconds).
const DEADLINE: Duration = Duration::from_secs(30);

/// Queries (by a part of their expression) that cannot show anything but
/// zero in this setup, and why: they need only a non-empty answer.
const MAY_BE_ZERO: &[(&str, &str)] = &[];

/// The service's own configuration, from the start (a bulkhead's
/// `max_wait` does not change live): callers of the users' directory wait
/// for one of its 4 slots up to 5 s rather than 50 ms, so that under load
/// a queue forms (waiting calls), which clients that hang up leave
/// (abandoned calls). (A wait the users' 2 s timeout cuts is abandoned too,
/// but a FIFO queue behind slots each held to its timeout hands every
/// waiter a slot just before its own deadline: it seldom happens.)
const WAIT_LONGER: &str = r#"
[bulkhead.instances.users]
max_wait = "5s"
"#;

/// The configuration that puts the service under load, reloaded live as
/// the example's `/reports/degrade` does (a reload replaces the whole TOML
/// configuration, so this holds all of it): reports delayed 3 s (the
/// example's `DEGRADE`), the users' directory hanging 3 s on every
/// attempt, past the users' 2 s timeout (attempts time out and are
/// retried, and the breaker, which counts timeouts as failures, opens and
/// refuses calls), and checkout
/// resized live (a limit change).
fn under_load() -> String {
    format!(
        "{}{WAIT_LONGER}{}",
        example::DEGRADE,
        r#"
[chaos.instances.users]
latency_rate = 1.0
latency = "3s"

[bulkhead.instances.checkout]
max_concurrent = 12
"#
    )
}

/// The `prometheus` binary: `$BULKHEAD_PROMETHEUS`, or the one on the
/// `PATH`; `None` if told to skip. Missing, the test fails.
fn binary() -> Option<PathBuf> {
    if std::env::var_os("BULKHEAD_SKIP_PROMETHEUS").is_some_and(|v| v == "1") {
        return None;
    }
    if let Some(path) = std::env::var_os("BULKHEAD_PROMETHEUS") {
        return Some(path.into());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join("prometheus"))
        .find(|candidate| candidate.is_file());
    Some(found.unwrap_or_else(|| {
        panic!(
            "this test needs a real prometheus and found none on the PATH: install it \
             (Debian: apt-get install -y prometheus; .ci/run does), point \
             BULKHEAD_PROMETHEUS at one, or set BULKHEAD_SKIP_PROMETHEUS=1 to skip it"
        )
    }))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("bound")
        .port()
}

/// A `prometheus` of the test's own, killed (and its directory removed)
/// when dropped, a panic included.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    base: String,
}

impl Prometheus {
    /// Starts `binary` scraping `target` (`host:port`) every second, as two
    /// jobs: `bulkhead` (`honor_labels: false`, Prometheus's default) and
    /// `bulkhead_honor_labels` (`honor_labels: true`).
    fn spawn(binary: &PathBuf, target: &str) -> Self {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("bulkhead-prometheus-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n\
             \x20 - job_name: bulkhead\n    static_configs:\n      - targets: [\"{target}\"]\n\
             \x20 - job_name: bulkhead_honor_labels\n    honor_labels: true\n    \
             static_configs:\n      - targets: [\"{target}\"]\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).expect("the configuration");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("a log file");
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        Prometheus {
            child,
            dir,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Started and ready to answer (another try on another port if its
    /// port was taken meanwhile).
    async fn start(binary: &PathBuf, target: &str, client: &Client) -> Self {
        for _ in 0..3 {
            let mut prometheus = Prometheus::spawn(binary, target);
            let give_up = Instant::now() + Duration::from_secs(30);
            while Instant::now() < give_up {
                if let Ok(Some(_)) = prometheus.child.try_wait() {
                    break;
                }
                let ready = client
                    .get(format!("{}/-/ready", prometheus.base))
                    .send()
                    .await;
                if ready.is_ok_and(|r| r.status().is_success()) {
                    return prometheus;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            eprintln!(
                "prometheus did not start on {}:\n{}",
                prometheus.base,
                prometheus.log()
            );
        }
        panic!("prometheus did not start (three tries)")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Prometheus's HTTP API.
struct Api {
    client: Client,
    base: String,
}

/// One series of an answer: its labels and (last) value.
type Series = (BTreeMap<String, String>, f64);

impl Api {
    /// `GET path` as JSON, whatever the status (errors come as JSON too).
    async fn get(&self, path: &str) -> Result<Value, String> {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body = response.text().await.map_err(|e| e.to_string())?;
        let json: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        if json["status"] == "success" {
            Ok(json["data"].clone())
        } else {
            Err(format!("{}: {}", json["errorType"], json["error"]))
        }
    }

    /// The instant query `expr`, evaluated now.
    async fn query(&self, expr: &str) -> Result<Vec<Series>, String> {
        let data = self
            .get(&format!("/api/v1/query?query={}", encode(expr)))
            .await?;
        let value = |pair: &Value| -> f64 {
            pair[1]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let labels = |metric: &Value| -> BTreeMap<String, String> {
            metric
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let result = &data["result"];
        match data["resultType"].as_str() {
            Some("vector") => Ok(result
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| (labels(&s["metric"]), value(&s["value"])))
                .collect()),
            Some("matrix") => Ok(result
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| {
                    let last = s["values"].as_array().and_then(|v| v.last());
                    (labels(&s["metric"]), last.map_or(f64::NAN, value))
                })
                .collect()),
            Some("scalar") => Ok(vec![(BTreeMap::new(), value(result))]),
            other => Err(format!("an answer of type {other:?}: {data}")),
        }
    }

    /// Grafana's `label_values(selector, label)` (or `label_values(label)`).
    async fn label_values(&self, query: &str) -> Result<Vec<String>, String> {
        let inner = query
            .trim()
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .ok_or_else(|| {
                format!("the variable query {query:?} is not label_values(..): teach the test")
            })?;
        let (selector, label) = match inner.rsplit_once(',') {
            Some((selector, label)) => (Some(selector.trim()), label.trim()),
            None => (None, inner.trim()),
        };
        let mut path = format!("/api/v1/label/{label}/values");
        if let Some(selector) = selector {
            write!(path, "?match[]={}", encode(selector)).expect("a String");
        }
        let data = self.get(&path).await?;
        Ok(data
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect())
    }
}

/// `text` percent-encoded for a URL's query.
fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            write!(out, "%{byte:02X}").expect("a String");
        }
    }
    out
}

/// `value` escaped as Grafana escapes a value of a multi-value variable
/// for Prometheus's `=~`: each regex metacharacter behind `\\` (a PromQL
/// string's escape of one backslash).
fn regex_escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if "\\^$.|?*+()[]{}".contains(c) {
            out.push_str("\\\\");
        }
        out.push(c);
    }
    out
}

/// One way of filling the dashboard's variables: each name to its text.
#[derive(Clone, Debug, Default)]
struct Variant(BTreeMap<String, String>);

impl Variant {
    fn describe(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("${k}={v}")).collect();
        parts.join(", ")
    }
}

/// `expr` with its variables filled from `variant` and Grafana's built-in
/// ones; an unknown variable, or a format (`${x:csv}`), is an error.
fn substitute(expr: &str, variant: &Variant) -> Result<String, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let name: String;
        if chars.get(i + 1) == Some(&'{') {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '}')
                .ok_or_else(|| format!("an unclosed ${{ in {expr}"))?;
            name = chars[i + 2..i + end].iter().collect();
            i += end + 1;
        } else {
            let start = i + 1;
            let mut end = start;
            while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            name = chars[start..end].iter().collect();
            i = end;
        }
        let value = match name.as_str() {
            "__rate_interval" | "__interval" => RATE_INTERVAL.to_owned(),
            _ => variant.0.get(&name).cloned().ok_or_else(|| {
                format!("{expr} uses ${name}, which the test does not know: teach it to the test")
            })?,
        };
        out.push_str(&value);
    }
    Ok(out)
}

/// Every PromQL expression of the dashboard's panels (rows' panels too):
/// the `expr` of each target, wherever it is.
fn expressions(dashboard: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr", Value::String(expr)) => out.push(expr.clone()),
                        _ => walk(value, out),
                    }
                }
            }
            Value::Array(values) => values.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// Every way of filling the dashboard's variables the test checks: each
/// value of a custom variable, and for each, a query variable's *All* and
/// its every value selected. A query variable's values must include every
/// id in `bulkheads`.
async fn variants(dashboard: &Value, api: &Api, bulkheads: &BTreeSet<String>) -> Vec<Variant> {
    let mut variants = vec![Variant::default()];
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("the dashboard's variables")
    {
        let name = variable["name"].as_str().expect("a variable's name");
        let query = &variable["query"];
        let query = query["query"].as_str().or(query.as_str()).unwrap_or("");
        let mut next = Vec::new();
        match variable["type"].as_str() {
            // The data source: Prometheus, this one.
            Some("datasource") => continue,
            Some("custom") => {
                for variant in &variants {
                    for option in query.split(',') {
                        // `text : value`, or the value alone.
                        let value = option.rsplit(" : ").next().unwrap_or(option).trim();
                        let mut variant = variant.clone();
                        variant.0.insert(name.to_owned(), value.to_owned());
                        next.push(variant);
                    }
                }
            }
            Some("query") => {
                for variant in &variants {
                    let query = substitute(query, variant).expect("a variable's query");
                    let values = api
                        .label_values(&query)
                        .await
                        .unwrap_or_else(|e| panic!("variable ${name}, {query}: {e}"));
                    let listed: BTreeSet<String> = values.iter().cloned().collect();
                    assert!(
                        bulkheads.is_subset(&listed),
                        "variable ${name}, {query} ({}): lists {listed:?}, not every bulkhead \
                         of the service ({bulkheads:?})",
                        variant.describe()
                    );
                    if variable["includeAll"] == true {
                        let all = variable["allValue"].as_str().unwrap_or_else(|| {
                            panic!("${name}: an All without allValue: teach the test")
                        });
                        let mut with_all = variant.clone();
                        with_all.0.insert(name.to_owned(), all.to_owned());
                        next.push(with_all);
                    }
                    let selected = if variable["multi"] == true {
                        let escaped: Vec<String> = values.iter().map(|v| regex_escape(v)).collect();
                        format!("({})", escaped.join("|"))
                    } else {
                        regex_escape(&values[0])
                    };
                    let mut with_selected = variant.clone();
                    with_selected.0.insert(name.to_owned(), selected);
                    next.push(with_selected);
                }
            }
            other => panic!("variable ${name} of type {other:?}: teach the test"),
        }
        variants = next;
    }
    variants
}

/// Whether `series` shows a policy of the service (a label holding one of
/// `ids`) with a finite value that is not zero (or, `may_be_zero`, any).
fn shows_a_policy(series: &[Series], ids: &BTreeSet<String>, may_be_zero: bool) -> bool {
    series.iter().any(|(labels, value)| {
        labels.values().any(|v| ids.contains(v))
            && (may_be_zero || (value.is_finite() && *value != 0.0))
    })
}

/// The `expr` of the target `ref_id` of the panel titled `title` (a
/// collapsed row's panels included).
fn panel_expr(dashboard: &Value, title: &str, ref_id: &str) -> String {
    fn panels<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for panel in list.as_array().into_iter().flatten() {
            out.push(panel);
            panels(&panel["panels"], out);
        }
    }
    let mut all = Vec::new();
    panels(&dashboard["panels"], &mut all);
    all.into_iter()
        .filter(|panel| panel["title"] == title)
        .flat_map(|panel| panel["targets"].as_array().into_iter().flatten())
        .find(|target| target["refId"] == ref_id)
        .and_then(|target| target["expr"].as_str())
        .unwrap_or_else(|| panic!("no panel {title:?} with a target {ref_id}"))
        .to_owned()
}

/// A figure the dashboard must show exactly: the panel's query, for one
/// policy, must come to a value within `range` (its unit the panel's).
struct Figure {
    panel: &'static str,
    ref_id: &'static str,
    instance: &'static str,
    range: std::ops::Range<f64>,
}

/// What the load makes the dashboard show, whatever the timing.
const FIGURES: &[Figure] = &[
    // The limit as resized live by the load's configuration.
    Figure {
        panel: "In flight vs limit",
        ref_id: "B",
        instance: "checkout",
        range: 12.0..12.5,
    },
    // The 3 reports slots, held by delayed reports.
    Figure {
        panel: "In flight vs limit",
        ref_id: "A",
        instance: "reports",
        range: 3.0..3.5,
    },
    // A report holds its slot for chaos's 3 s: 3000 ms, in the panel's
    // unit (ms), a little more for the call around it.
    Figure {
        panel: "Latency of admitted calls (mean time holding a slot)",
        ref_id: "A",
        instance: "reports",
        range: 3000.0..3500.0,
    },
];

/// Sends the load's requests every 200 ms until aborted: checkouts (served),
/// reports (delayed 3 s, then refused: their 3 slots are held) and users
/// (timed out and retried, waiting for a slot, given up by clients that
/// hang up, then refused by the open breaker).
async fn drive(client: Client, base: String) {
    let mut calls = JoinSet::new();
    let mut n = 0u64;
    loop {
        n += 1;
        for _ in 0..2 {
            calls.spawn(client.post(format!("{base}/checkout")).send());
        }
        calls.spawn(client.get(format!("{base}/reports/r-{n}")).send());
        // More than the 4 users slots, each held 2 s (to the timeout), can
        // serve: a queue forms.
        for i in 0..6 {
            calls.spawn(client.get(format!("{base}/users/{}", n * 6 + i)).send());
        }
        // A client that hangs up after 300 ms, while it waits in that queue:
        // its call is dropped (abandoned).
        calls.spawn(
            client
                .get(format!("{base}/users/0"))
                .timeout(Duration::from_millis(300))
                .send(),
        );
        while calls.try_join_next().is_some() {}
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn variables_are_filled_as_grafana_fills_them() {
    let mut variant = Variant::default();
    variant
        .0
        .insert("label".to_owned(), "exported_instance".to_owned());
    variant.0.insert(
        "bulkhead".to_owned(),
        format!("({})", regex_escape("a.b|c")),
    );
    assert_eq!(
        substitute(
            r#"sum by ($label) (rate(x{${label}=~"$bulkhead"}[$__rate_interval]))"#,
            &variant
        )
        .unwrap(),
        r#"sum by (exported_instance) (rate(x{exported_instance=~"(a\\.b\\|c)"}[15s]))"#
    );
    assert_eq!(
        substitute("increase(x[$__interval])", &variant).unwrap(),
        "increase(x[15s])"
    );
    // Unknown variables and formats are the test's to learn, not to skip.
    assert!(substitute("x{a=\"$other\"}", &variant).is_err());
    assert!(substitute("x{a=~\"${bulkhead:csv}\"}", &variant).is_err());
    assert!(substitute("x[$__range]", &variant).is_err());
    assert_eq!(encode("a b{c=\"d\"}[1m]"), "a%20b%7Bc%3D%22d%22%7D%5B1m%5D");
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("JSON");
    assert!(panel_expr(&dashboard, "In flight vs limit", "B").contains("bulkhead_max_concurrent"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_of_the_dashboard_returns_data_from_a_real_prometheus() {
    let Some(binary) = binary() else {
        // Not `eprintln!`, which libtest captures: a skip must not look
        // like a silent pass.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: BULKHEAD_SKIP_PROMETHEUS=1 (no Prometheus evaluated the dashboard)"
        );
        return;
    };
    let started = Instant::now();
    let registry = Registry::builder()
        .track_sizing(true)
        .config_toml(WAIT_LONGER)
        .expect("the service's configuration")
        .build();
    let (app, _exporter) =
        example::service(&registry, Directory, SAMPLE_INTERVAL).expect("a fresh registry");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let target = listener.local_addr().expect("bound").to_string();
    let base = format!("http://{target}");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::new();

    let prometheus = Prometheus::start(&binary, &target, &client).await;
    let api = Api {
        client: client.clone(),
        base: prometheus.base.clone(),
    };
    // Both jobs scraped once before any traffic, so that every counter's
    // first point is its 0 and its rate() sees the increase. (Prometheus
    // hands new targets to its scrapers about 5 s after it starts.)
    let give_up = Instant::now() + DEADLINE;
    loop {
        let up = api.query("up == 1").await.unwrap_or_default();
        if up.len() == 2 {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "prometheus never scraped {target} (up: {up:?}):\n{}",
            prometheus.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let snapshot = registry.snapshot();
    let bulkheads: BTreeSet<String> = snapshot
        .bulkheads()
        .iter()
        .map(|b| b.instance.clone())
        .collect();
    let mut ids = bulkheads.clone();
    ids.extend(snapshot.retries().iter().map(|p| p.instance.clone()));
    ids.extend(
        snapshot
            .circuit_breakers()
            .iter()
            .map(|p| p.instance.clone()),
    );
    ids.extend(snapshot.timeouts().iter().map(|p| p.instance.clone()));
    ids.extend(snapshot.chaos().iter().map(|p| p.instance.clone()));

    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("JSON");
    let expressions = expressions(&dashboard);
    assert!(expressions.len() >= 10, "{expressions:?}");
    let variants = variants(&dashboard, &api, &bulkheads).await;
    if MAY_BE_ZERO.is_empty() {
        println!("MAY_BE_ZERO is empty: every query must show a non-zero value");
    }
    for (part, reason) in MAY_BE_ZERO {
        println!("may be zero here: the queries with {part:?}: {reason}");
        assert!(
            expressions.iter().any(|e| e.contains(part)),
            "MAY_BE_ZERO names {part:?}, which no query of the dashboard has any more"
        );
    }
    // The figures, read as Grafana would with `$label` at its default and
    // one policy selected.
    let figures: Vec<(String, &Figure)> = FIGURES
        .iter()
        .map(|figure| {
            let mut variant = Variant::default();
            variant
                .0
                .insert("label".to_owned(), "exported_instance".to_owned());
            variant
                .0
                .insert("bulkhead".to_owned(), regex_escape(figure.instance));
            let expr = panel_expr(&dashboard, figure.panel, figure.ref_id);
            (
                substitute(&expr, &variant).unwrap_or_else(|e| panic!("{e}")),
                figure,
            )
        })
        .collect();

    registry
        .reload_toml(&under_load())
        .expect("the load's configuration");
    let load = tokio::spawn(drive(client.clone(), base.clone()));
    let give_up = Instant::now() + DEADLINE;

    // Each query under each variant, and each figure, until it shows.
    let mut pending: BTreeMap<(usize, usize), String> = BTreeMap::new();
    for e in 0..expressions.len() {
        for v in 0..variants.len() {
            pending.insert((e, v), "not evaluated".to_owned());
        }
    }
    let mut figures_pending: BTreeMap<usize, String> = (0..figures.len())
        .map(|f| (f, "not evaluated".to_owned()))
        .collect();
    let mut shown: BTreeMap<usize, usize> = BTreeMap::new();
    while !(pending.is_empty() && figures_pending.is_empty()) && Instant::now() < give_up {
        let keys: Vec<(usize, usize)> = pending.keys().copied().collect();
        for (e, v) in keys {
            let expr = &expressions[e];
            let may_be_zero = MAY_BE_ZERO.iter().any(|(part, _)| expr.contains(part));
            let query = substitute(expr, &variants[v]).unwrap_or_else(|e| panic!("{e}"));
            match api.query(&query).await {
                // A query Prometheus refuses never will do better.
                Err(error) => panic!(
                    "the dashboard's {expr}\n  as {query}\n  ({})\n  fails: {error}",
                    variants[v].describe()
                ),
                Ok(series) if shows_a_policy(&series, &ids, may_be_zero) => {
                    pending.remove(&(e, v));
                    shown.insert(e, series.len());
                }
                Ok(series) => {
                    pending.insert((e, v), format!("{series:?}"));
                }
            }
        }
        let keys: Vec<usize> = figures_pending.keys().copied().collect();
        for f in keys {
            let (query, figure) = &figures[f];
            let series = api
                .query(query)
                .await
                .unwrap_or_else(|e| panic!("{query} fails: {e}"));
            if let [(_, value)] = series.as_slice()
                && figure.range.contains(value)
            {
                figures_pending.remove(&f);
            } else {
                figures_pending.insert(f, format!("{series:?}"));
            }
        }
        if !(pending.is_empty() && figures_pending.is_empty()) {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    load.abort();
    let mut report = String::new();
    for ((e, v), last) in &pending {
        writeln!(
            report,
            "- {}\n  ({})\n  last answer: {last}",
            expressions[*e],
            variants[*v].describe()
        )
        .expect("a String");
    }
    assert!(
        pending.is_empty(),
        "queries of the dashboard that never showed a policy's non-zero value within \
         {DEADLINE:?} (make the test's load show it, or list it in MAY_BE_ZERO with the \
         reason):\n{report}"
    );
    for (f, last) in &figures_pending {
        let (query, figure) = &figures[*f];
        writeln!(
            report,
            "- {:?} {} for {}: {query}\n  expected within {:?}, last answer: {last}",
            figure.panel, figure.ref_id, figure.instance, figure.range
        )
        .expect("a String");
    }
    assert!(
        figures_pending.is_empty(),
        "figures the dashboard never showed within {DEADLINE:?}:\n{report}"
    );
    for (e, expr) in expressions.iter().enumerate() {
        println!(
            "ok ({} series): {expr}",
            shown.get(&e).copied().unwrap_or(0)
        );
    }
    println!(
        "{} queries x {} variants and {} figures evaluated by {} in {:.1?}",
        expressions.len(),
        variants.len(),
        figures.len(),
        binary.display(),
        started.elapsed()
    );
    drop(prometheus);
}
