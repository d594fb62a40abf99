//! PLANNED: the histograms (`resilience.call.duration`,
//! `resilience.attempt.duration`, `resilience.bulkhead.slot.wait`), fed at
//! each collection from the registry's bucketed histograms once they land.
//!
//! OpenTelemetry's Rust API has no observable histogram, and its SDK no
//! longer takes pre-aggregated data (`MetricProducer` was removed before
//! 1.0, opentelemetry-rust #2105; #2505 asks for it back). So each
//! collection records into a synchronous `Histogram<f64>` what every bucket
//! gained since the previous one: that many values at the bucket's middle,
//! on an instrument whose boundaries are the registry's own bucket bounds,
//! so that every value lands in the bucket it came from. Bucket counts and
//! the count are exact; the sum is exact to within a bucket's width per
//! value. The cost is one `record` per call made in the interval, paid on
//! the collecting thread, never by a caller.

use std::collections::HashMap;
use std::time::Duration;

use ::opentelemetry::KeyValue;
use ::opentelemetry::metrics::{Histogram, Meter};

use super::names::{HISTOGRAMS, INSTANCE, OUTCOME};

/// The histograms, made on first use (their boundaries are those of the
/// first buckets they are given), and what each series has recorded.
pub(super) struct Histograms {
    meter: Meter,
    instruments: Vec<Option<Histogram<f64>>>,
    /// Per series (histogram, instance, outcome), the cumulative bucket
    /// counts recorded so far.
    recorded: HashMap<(usize, String, &'static str), Vec<u64>>,
}

impl Histograms {
    pub(super) fn new(meter: &Meter) -> Self {
        Histograms {
            meter: meter.clone(),
            instruments: HISTOGRAMS.iter().map(|_| None).collect(),
            recorded: HashMap::new(),
        }
    }

    /// Records into histogram `which` (a position in `HISTOGRAMS`) what the
    /// series of `instance` and `outcome` gained since the last call:
    /// `buckets` are its cumulative counts per bucket, `(upper bound
    /// (inclusive), count)`, bounds ascending, the last `Duration::MAX` for
    /// the bucket without an upper bound. A series whose counts went down
    /// (its instance was replaced) starts again from 0.
    #[allow(dead_code)] // PLANNED: called once `RegistrySnapshot::histograms()` lands.
    pub(super) fn record(
        &mut self,
        which: usize,
        instance: &str,
        outcome: &'static str,
        buckets: &[(Duration, u64)],
    ) {
        let (Some(spec), Some(slot)) = (HISTOGRAMS.get(which), self.instruments.get_mut(which))
        else {
            return;
        };
        let histogram = slot.get_or_insert_with(|| {
            let bounds = buckets
                .iter()
                .map(|&(bound, _)| bound)
                .filter(|&bound| bound != Duration::MAX)
                .map(|bound| bound.as_secs_f64())
                .collect();
            self.meter
                .f64_histogram(spec.name)
                .with_unit("s")
                .with_description(spec.help)
                .with_boundaries(bounds)
                .build()
        });
        let attributes = [
            KeyValue::new(INSTANCE, instance.to_owned()),
            KeyValue::new(OUTCOME, outcome),
        ];
        let recorded = self
            .recorded
            .entry((which, instance.to_owned(), outcome))
            .or_default();
        if recorded.len() != buckets.len()
            || recorded
                .iter()
                .zip(buckets)
                .any(|(&was, &(_, now))| now < was)
        {
            recorded.clear();
            recorded.resize(buckets.len(), 0);
        }
        let mut lower = Duration::ZERO;
        for (&(upper, count), was) in buckets.iter().zip(recorded.iter_mut()) {
            let value = middle(lower, upper);
            for _ in *was..count {
                histogram.record(value, &attributes);
            }
            *was = count;
            lower = upper;
        }
    }
}

/// A value inside the bucket `(lower, upper]`, in seconds: its middle, or
/// twice its lower bound for the last bucket (no upper bound).
fn middle(lower: Duration, upper: Duration) -> f64 {
    if upper == Duration::MAX {
        (lower.as_secs_f64() * 2.0).max(f64::MIN_POSITIVE)
    } else {
        (lower.as_secs_f64() + upper.as_secs_f64()) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    use super::Histograms;

    #[test]
    fn bucket_deltas_land_in_the_buckets_they_came_from() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let mut histograms = Histograms::new(&provider.meter("test"));
        let ms = Duration::from_millis;
        // Cumulative counts: 1 ms: 2, 10 ms: 0, 100 ms: 5, beyond: 1.
        let first = [(ms(1), 2), (ms(10), 0), (ms(100), 5), (Duration::MAX, 1)];
        histograms.record(0, "checkout", "success", &first);
        // Three more at 10 ms, none elsewhere: only those are recorded.
        let second = [(ms(1), 2), (ms(10), 3), (ms(100), 5), (Duration::MAX, 1)];
        histograms.record(0, "checkout", "success", &second);
        provider.force_flush().expect("collected");

        let metrics = exporter.get_finished_metrics().expect("exported");
        let metric = metrics
            .iter()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
            .find(|metric| metric.name() == "resilience.call.duration")
            .expect("the histogram is exported");
        assert_eq!(metric.unit(), "s");
        let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = metric.data() else {
            panic!("an f64 histogram");
        };
        let point = histogram.data_points().next().expect("one series");
        assert_eq!(point.bounds().collect::<Vec<_>>(), [0.001, 0.01, 0.1]);
        assert_eq!(point.bucket_counts().collect::<Vec<_>>(), [2, 3, 5, 1]);
        assert_eq!(point.count(), 11);
        let mut attributes: Vec<String> = point
            .attributes()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        attributes.sort();
        assert_eq!(
            attributes,
            ["resilience.instance=checkout", "resilience.outcome=success"]
        );
    }
}
