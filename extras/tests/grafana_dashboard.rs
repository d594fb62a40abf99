//! The Grafana dashboard (`docs/grafana/bulkhead.json`) cannot rot: the
//! axum example's service is served on 127.0.0.1 with its Prometheus
//! exporter and driven until every figure the dashboard shows exists
//! (reports refused by a full bulkhead, checkouts, users retried after the
//! directory failed by chaos); `/metrics` is then scraped over real HTTP and parsed as
//! Prometheus's text format, and every PromQL expression of the dashboard
//! (each panel's queries and each variable's) must name only metrics the
//! scrape has, taking `rate()` and its kin over counters only. (A real
//! Prometheus evaluating every query is `tests/prometheus_queries.rs`.)

#[allow(dead_code)]
#[path = "../../examples/axum_service.rs"]
mod example;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bulkhead::Registry;
use example::{Directory, REPORTS_SLOTS};
use prometheus_parse::{Scrape, Value};
use reqwest::{Client, StatusCode};
use support::{refused_reports_then_checkouts, wait_until};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The dashboard, as shipped.
const DASHBOARD: &str = include_str!("../../docs/grafana/bulkhead.json");

/// How often the exporter samples in this test: often, so that the test
/// waits little for a sample after its calls.
const INTERVAL: Duration = Duration::from_millis(50);

/// PromQL's words that are not metric names (Grafana's `$variables` are
/// skipped where they are read).
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
];

/// PromQL's aggregation operators, which may take `by (..)` before their
/// parentheses: `sum by (a) (x)`.
const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The words after which a parenthesized list holds label names.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// Functions that need a counter: a gauge under them is a mistake.
const COUNTER_FUNCTIONS: &[&str] = &["rate", "irate", "increase", "resets"];

/// The metric names `expr` reads: its words that are not functions,
/// keywords, label names, numbers, durations, strings or Grafana variables.
/// Grafana's `label_values(metric, label)` reads `metric`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let expr = without_label_values_label(expr);
    let skeleton = strip(&expr);
    let chars: Vec<char> = skeleton.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' {
            // A Grafana variable: `$bulkhead`, `${label}`, `$__rate_interval`.
            i += 1;
            while i < chars.len() && (is_word(chars[i]) || "{}".contains(chars[i])) {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            // A number (`1e6`, `0.5`) or a duration (`5m`).
            while i < chars.len() && (is_word(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if is_word_start(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let called = chars.get(next) == Some(&'(');
            if called && LABEL_LISTS.contains(&word.as_str()) {
                i = closing(&chars, next) + 1;
            } else if !called
                && !KEYWORDS.contains(&word.to_lowercase().as_str())
                && !AGGREGATIONS.contains(&word.as_str())
            {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The metric names read inside calls of [`COUNTER_FUNCTIONS`] in `expr`.
fn counter_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = strip(expr).chars().collect();
    let text: String = chars.iter().collect();
    let mut names = BTreeSet::new();
    for function in COUNTER_FUNCTIONS {
        for (at, _) in text.match_indices(function) {
            let before = text[..at].chars().next_back();
            let open = at + function.len();
            if before.is_some_and(is_word) || chars.get(open) != Some(&'(') {
                continue;
            }
            let close = closing(&chars, open);
            let inner: String = chars[open + 1..close].iter().collect();
            names.extend(metric_names(&inner));
        }
    }
    names
}

/// `label_values(metric, label)` as `metric`: its last argument is a label.
fn without_label_values_label(expr: &str) -> String {
    let Some(at) = expr.find("label_values(") else {
        return expr.to_owned();
    };
    let chars: Vec<char> = expr.chars().collect();
    let open = at + "label_values".len();
    let close = closing(&chars, open);
    let inner: String = chars[open + 1..close].iter().collect();
    let metric = inner
        .rsplit_once(',')
        .map_or(inner.as_str(), |(metric, _)| metric);
    format!("{}{metric}{}", &expr[..at], &expr[close + 1..])
}

/// `expr` without string literals, label matchers (`{..}`) and range
/// selectors (`[..]`), which hold no metric names.
fn strip(expr: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut quote = None;
    for c in expr.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '{' | '[') => depth += 1,
            (None, '}' | ']') => depth = depth.saturating_sub(1),
            (None, c) if depth == 0 => out.push(c),
            (None, _) => {}
        }
    }
    out
}

/// The index of the `)` closing the `(` at `open`.
fn closing(chars: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!(
        "unbalanced parentheses in {:?}",
        chars.iter().collect::<String>()
    )
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Every PromQL expression of `dashboard`: the `expr` of each panel's
/// targets, and the query of each variable that queries Prometheus.
fn expressions(dashboard: &serde_json::Value) -> Vec<String> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr", serde_json::Value::String(expr)) => out.push(expr.clone()),
                        _ => walk(value, out),
                    }
                }
            }
            serde_json::Value::Array(values) => values.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if variable["type"] == "query" {
            let query = &variable["query"];
            let query = query["query"].as_str().or(query.as_str());
            out.push(query.expect("a variable's query").to_owned());
        }
    }
    out
}

/// The scraped metrics, each name (histograms' and summaries' with their
/// `_bucket`, `_sum` and `_count` series) to whether it is a counter.
fn scraped(body: &str) -> BTreeMap<String, bool> {
    let scrape = Scrape::parse(body.lines().map(|line| Ok(line.to_owned()))).expect("parses");
    let mut names = BTreeMap::new();
    for sample in &scrape.samples {
        let name = sample.metric.clone();
        match sample.value {
            // The series of a histogram (and a summary's `_sum` and
            // `_count`) only grow: a rate of them is what
            // `histogram_quantile` and means are made of.
            Value::Histogram(_) => {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"), true);
                }
                names.insert(name, false);
            }
            Value::Summary(_) => {
                for suffix in ["_sum", "_count"] {
                    names.insert(format!("{name}{suffix}"), true);
                }
                names.insert(name, false);
            }
            Value::Counter(_) => {
                names.insert(name, true);
            }
            Value::Gauge(_) | Value::Untyped(_) => {
                names.insert(name, false);
            }
        }
    }
    names
}

/// The value of the sample `name` whose labels include `labels`.
fn value(body: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let scrape = Scrape::parse(body.lines().map(|line| Ok(line.to_owned()))).expect("parses");
    scrape
        .samples
        .iter()
        .filter(|sample| sample.metric == name)
        .find(|sample| labels.iter().all(|(k, v)| sample.labels.get(k) == Some(v)))
        .map(|sample| match sample.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
            _ => f64::NAN,
        })
}

#[test]
fn metric_names_are_read_out_of_promql() {
    let names = |expr: &str| metric_names(expr).into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(
            r#"sum by ($label) (rate(bulkhead_rejections_total{$label=~"$bulkhead"}[$__rate_interval]))"#
        ),
        ["bulkhead_rejections_total"]
    );
    assert_eq!(
        names("sum by (a) (rate(x_total[5m])) / sum by (a) (rate(y_total[5m])) / 1e6"),
        ["x_total", "y_total"]
    );
    assert_eq!(
        names("histogram_quantile(0.99, sum by (le) (rate(latency_seconds_bucket[1m])))"),
        ["latency_seconds_bucket"]
    );
    assert_eq!(
        names(r#"a + on (job) group_left (state) b offset 5m > bool 0.5 and c{x="rate(d)"}"#),
        ["a", "b", "c"]
    );
    assert_eq!(
        names("label_values(bulkhead_max_concurrent, $label)"),
        ["bulkhead_max_concurrent"]
    );
    assert_eq!(names("label_values(up, exported_instance)"), ["up"]);
    assert_eq!(
        counter_names("rate(a_total[1m]) / b + increase(c_total[5m])")
            .into_iter()
            .collect::<Vec<_>>(),
        ["a_total", "c_total"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_of_the_dashboard_names_a_metric_the_service_exports() {
    let registry = Registry::builder().track_sizing(true).build();
    let (app, exporter) =
        example::service(&registry, Directory, INTERVAL).expect("a fresh registry");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let base = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = Client::new();

    // Reports: chaos delays every report 600 s (longer than the test), so
    // that they take every slot, and further reports are refused.
    registry
        .reload_toml(
            "[chaos.instances.reports]\nenabled = true\nlatency_rate = 1.0\nlatency = \"600s\"",
        )
        .unwrap();
    let mut hanging = JoinSet::new();
    for i in 0..REPORTS_SLOTS {
        hanging.spawn(client.get(format!("{base}/reports/slow-{i}")).send());
    }
    let reports = registry.bulkhead("reports").unwrap();
    wait_until("the slow reports hold their slots", || {
        reports.concurrent_calls() == REPORTS_SLOTS
    })
    .await;
    refused_reports_then_checkouts(&client, &base).await;
    // Users: chaos fails the directory's calls 3 and 6, each retried.
    for id in 1..=6 {
        let user = client
            .get(format!("{base}/users/{id}"))
            .send()
            .await
            .unwrap();
        assert_eq!(user.status(), StatusCode::OK, "user {id}");
    }

    // A sample taken after the calls, with every event counted.
    // 3 latencies injected, 5 refusals, 2 faults injected, 2 retries.
    wait_until("the exporter counted the events", || {
        exporter.events() >= 12
    })
    .await;
    let taken = exporter.samples();
    wait_until("a sample after the calls", || exporter.samples() > taken).await;
    let body = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .text()
        .await
        .unwrap();
    let metrics = scraped(&body);

    let dashboard: serde_json::Value = serde_json::from_str(DASHBOARD).expect("JSON");
    let expressions = expressions(&dashboard);
    assert!(expressions.len() >= 10, "{expressions:?}");
    let mut named = BTreeSet::new();
    for expr in &expressions {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "{expr} names no metric");
        for name in &names {
            assert!(
                metrics.contains_key(name),
                "the dashboard's {expr} names {name}, which /metrics does not have:\n{body}"
            );
        }
        for name in counter_names(expr) {
            assert_eq!(
                metrics.get(&name),
                Some(&true),
                "{expr} takes a rate of {name}, which is not a counter"
            );
        }
        named.extend(names);
    }
    // The figures the pattern says to watch, the breaker, the retries and
    // the sizing figures are all on it.
    for figure in [
        "bulkhead_in_flight",
        "bulkhead_max_concurrent",
        "bulkhead_waiting",
        "bulkhead_rejections_total",
        "bulkhead_hold_microseconds_total",
        "bulkhead_completed_total",
        "bulkhead_admitted_total",
        "bulkhead_abandoned_total",
        "bulkhead_circuit_breaker_state",
        "bulkhead_retries_total",
    ] {
        assert!(
            named.contains(figure),
            "the dashboard does not show {figure}"
        );
    }

    // And the scrape says what happened.
    let reports = [("instance", "reports")];
    assert_eq!(
        value(&body, "bulkhead_rejections_total", &reports),
        Some(5.0)
    );
    assert_eq!(
        value(&body, "bulkhead_in_flight", &reports),
        Some(f64::from(REPORTS_SLOTS))
    );
    assert_eq!(
        value(
            &body,
            "bulkhead_retries_total",
            &[("instance", "users"), ("cause", "Injected")]
        ),
        Some(2.0)
    );
    assert_eq!(
        value(
            &body,
            "bulkhead_circuit_breaker_state",
            &[("instance", "users"), ("state", "closed")]
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &body,
            "bulkhead_completed_total",
            &[("instance", "checkout")]
        ),
        Some(4.0)
    );

    assert_eq!(
        value(
            &body,
            "bulkhead_chaos_injections_total",
            &[("instance", "reports"), ("kind", "latency")]
        ),
        Some(f64::from(REPORTS_SLOTS))
    );
    assert_eq!(
        value(
            &body,
            "bulkhead_chaos_injections_total",
            &[("instance", "users"), ("kind", "fault")]
        ),
        Some(2.0)
    );

    // The delayed reports would take 600 s: their clients hang up, which
    // gives their slots back.
    registry.reload_toml("").unwrap();
    hanging.abort_all();
    let bulkhead = registry.bulkhead("reports").unwrap();
    wait_until("the abandoned slots are back", || {
        bulkhead.concurrent_calls() == 0
    })
    .await;
    assert_eq!(exporter.lost(), 0);
}
