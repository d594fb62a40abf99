//! The histograms (`resilience.call.duration`,
//! `resilience.attempt.duration`, `resilience.bulkhead.slot.wait`), fed at
//! each collection from the registry's bucketed histograms
//! ([`TelemetryHub::histograms`](bulkhead_core::TelemetryHub::histograms)).
//!
//! OpenTelemetry's Rust API has no observable histogram, and its SDK no
//! longer takes pre-aggregated data (`MetricProducer` was removed before
//! 1.0, opentelemetry-rust #2105; #2505 asks for it back; the SDK's data
//! points cannot be built outside it). So each collection records into a
//! synchronous `Histogram<f64>`, whose boundaries are the registry's own
//! bucket bounds, what every bucket gained since the previous collection:
//! that many values inside the bucket. The values are placed at the same
//! fraction of each bucket's width, the fraction that makes them add up to
//! what the histogram's sum gained; so bucket counts, the count and the sum
//! are exact (the sum to a float's precision). The cost is one `record` per
//! call made in the interval (about 100 ns each, on the collecting thread,
//! never on a caller's).

use std::collections::HashMap;
use std::time::Duration;

use ::opentelemetry::KeyValue;
use ::opentelemetry::metrics::{Histogram, Meter};

use bulkhead_core::InstanceHistogram;

use super::names::{HISTOGRAMS, INSTANCE, OUTCOME, histogram_position};

/// The histograms, made when the exporter starts (an instrument made
/// during a collection, inside a callback, would wait for the SDK's
/// pipeline lock that the collection holds), and what each series has
/// recorded.
pub(super) struct Histograms {
    instruments: Vec<Histogram<f64>>,
    /// Per series (histogram, instance, outcome), what it recorded so far.
    recorded: HashMap<(usize, String, String), Recorded>,
}

impl Histograms {
    /// The histograms on `meter`, whose boundaries are the upper bounds of
    /// the buckets of `buckets` (but the last, `Duration::MAX`: no bound).
    pub(super) fn new(meter: &Meter, buckets: impl Iterator<Item = Duration>) -> Self {
        let bounds: Vec<f64> = buckets
            .filter(|&bound| bound != Duration::MAX)
            .map(|bound| bound.as_secs_f64())
            .collect();
        let instruments = HISTOGRAMS
            .iter()
            .map(|spec| {
                meter
                    .f64_histogram(spec.name)
                    .with_unit("s")
                    .with_description(spec.help)
                    .with_boundaries(bounds.clone())
                    .build()
            })
            .collect();
        Histograms {
            instruments,
            recorded: HashMap::new(),
        }
    }

    /// The histograms of the registry's telemetry: its buckets' bounds.
    pub(super) fn registry(meter: &Meter) -> Self {
        let bounds: Vec<Duration> = bulkhead_core::HistogramSnapshot::default()
            .buckets()
            .map(|(bound, _)| bound.unwrap_or(Duration::MAX))
            .collect();
        Histograms::new(meter, bounds.into_iter())
    }

    /// Records what each of `readings` (cumulative, as the registry's
    /// telemetry reads them) gained since the previous collection.
    pub(super) fn record_all(&mut self, readings: &[InstanceHistogram]) {
        for reading in readings {
            let Some(which) = histogram_position(reading.kind()) else {
                continue;
            };
            let histogram = reading.histogram();
            let buckets: Vec<(Duration, u64)> = histogram
                .buckets()
                .map(|(bound, count)| (bound.unwrap_or(Duration::MAX), count))
                .collect();
            let (instance, outcome) = (reading.instance(), reading.outcome());
            self.record(which, instance, outcome, &buckets, histogram.sum());
        }
    }

    /// Records into histogram `which` (a position in `HISTOGRAMS`) what the
    /// series of `instance` and `outcome` gained since the last call:
    /// `buckets` are its cumulative counts per bucket, `(upper bound
    /// (inclusive), count)`, bounds ascending, the last `Duration::MAX` for
    /// the bucket without an upper bound; `sum` its cumulative sum. A series
    /// whose counts went down (its instance was replaced) starts again from
    /// 0.
    pub(super) fn record(
        &mut self,
        which: usize,
        instance: &str,
        outcome: &str,
        buckets: &[(Duration, u64)],
        sum: Duration,
    ) {
        let Some(histogram) = self.instruments.get(which) else {
            return;
        };
        let recorded = self
            .recorded
            .entry((which, instance.to_owned(), outcome.to_owned()))
            .or_default();
        if recorded.counts.len() != buckets.len()
            || recorded
                .counts
                .iter()
                .zip(buckets)
                .any(|(&was, &(_, now))| now < was)
            || sum < recorded.sum
        {
            *recorded = Recorded {
                counts: vec![0; buckets.len()],
                sum: Duration::ZERO,
            };
        }
        let gained: Vec<(Duration, Duration, u64)> = buckets
            .iter()
            .zip(&recorded.counts)
            .scan(Duration::ZERO, |lower, (&(upper, now), &was)| {
                let bucket = (*lower, upper, now - was);
                *lower = upper;
                Some(bucket)
            })
            .collect();
        let values = Placement::new(&gained, (sum - recorded.sum).as_secs_f64());
        let attributes = [
            KeyValue::new(INSTANCE, instance.to_owned()),
            KeyValue::new(OUTCOME, outcome.to_owned()),
        ];
        for &(lower, upper, count) in &gained {
            let value = values.value(lower, upper);
            for _ in 0..count {
                histogram.record(value, &attributes);
            }
        }
        recorded.counts = buckets.iter().map(|&(_, count)| count).collect();
        recorded.sum = sum;
    }
}

/// What a series has recorded so far: its cumulative counts and sum.
#[derive(Debug, Default)]
struct Recorded {
    counts: Vec<u64>,
    sum: Duration,
}

/// Where in its bucket each value gained goes, so that the values add up to
/// the sum gained: at the same fraction `t` of every bounded bucket's width,
/// and those beyond the last bound at what is left (at least just past the
/// bound). The true values lie in their buckets, so such a `t` in (0, 1]
/// exists; it is kept off 0, where a value would round onto the bucket's
/// lower bound, which belongs to the bucket below.
#[derive(Debug)]
struct Placement {
    t: f64,
    beyond: f64,
}

impl Placement {
    /// For `gained`, `(lower, upper, count)` per bucket, adding up to `sum`
    /// seconds.
    #[allow(clippy::cast_precision_loss)] // counts far below 2^53
    fn new(gained: &[(Duration, Duration, u64)], sum: f64) -> Self {
        let (mut low, mut high, mut beyond, mut last_bound) = (0.0, 0.0, 0u64, 0.0);
        for &(lower, upper, count) in gained {
            if upper == Duration::MAX {
                beyond += count;
            } else {
                low += count as f64 * lower.as_secs_f64();
                high += count as f64 * upper.as_secs_f64();
                last_bound = upper.as_secs_f64();
            }
        }
        let least_beyond = (last_bound * (1.0 + 1e-9)).max(f64::MIN_POSITIVE);
        let bounded_sum = sum - beyond as f64 * least_beyond;
        let t = if high > low {
            ((bounded_sum - low) / (high - low)).clamp(1e-6, 1.0)
        } else {
            1.0
        };
        let beyond_value = if beyond == 0 {
            least_beyond
        } else {
            ((sum - (low + t * (high - low))) / beyond as f64).max(least_beyond)
        };
        Placement {
            t,
            beyond: beyond_value,
        }
    }

    /// The value of the bucket `(lower, upper]`, in seconds.
    fn value(&self, lower: Duration, upper: Duration) -> f64 {
        if upper == Duration::MAX {
            self.beyond
        } else {
            let (lower, upper) = (lower.as_secs_f64(), upper.as_secs_f64());
            lower + self.t * (upper - lower)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, HistogramDataPoint, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    use super::Histograms;

    /// Records each of `steps` (cumulative buckets and sum) into a new
    /// exporter's call-duration histogram, and checks what one collection
    /// exported with `check`.
    fn exported(
        steps: &[(&[(Duration, u64)], Duration)],
        check: impl FnOnce(&HistogramDataPoint<f64>),
    ) {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let bounds = [MS, 10 * MS, 100 * MS, Duration::MAX];
        let mut histograms = Histograms::new(&provider.meter("test"), bounds.into_iter());
        for &(buckets, sum) in steps {
            histograms.record(0, "checkout", "success", buckets, sum);
        }
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
        let points: Vec<_> = histogram.data_points().collect();
        assert_eq!(points.len(), 1, "one series");
        let mut attributes: Vec<String> = points[0]
            .attributes()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        attributes.sort();
        assert_eq!(
            attributes,
            ["resilience.instance=checkout", "resilience.outcome=success"]
        );
        check(points[0]);
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn bucket_deltas_land_in_their_buckets_and_add_up_to_the_sum() {
        // 1 ms: 2 (0.4 ms each), 100 ms: 5 (50 ms each), beyond: 1 (3 s).
        let first: &[_] = &[(MS, 2), (10 * MS, 0), (100 * MS, 5), (Duration::MAX, 1)];
        let first_sum = Duration::from_micros(800) + 250 * MS + 3000 * MS;
        // Then three more at 10 ms (6 ms each), none elsewhere.
        let second: &[_] = &[(MS, 2), (10 * MS, 3), (100 * MS, 5), (Duration::MAX, 1)];
        let second_sum = first_sum + 18 * MS;
        exported(&[(first, first_sum), (second, second_sum)], |point| {
            assert_eq!(point.bounds().collect::<Vec<_>>(), [0.001, 0.01, 0.1]);
            assert_eq!(point.bucket_counts().collect::<Vec<_>>(), [2, 3, 5, 1]);
            assert_eq!(point.count(), 11);
            let sum = second_sum.as_secs_f64();
            assert!((point.sum() - sum).abs() < 1e-9, "{} != {sum}", point.sum());
        });
    }

    #[test]
    fn values_at_a_buckets_lower_bound_stay_in_it() {
        // Five values just past 10 ms, in (10 ms, 100 ms]: the sum asks for
        // the bottom of the bucket, and they must not fall into the one below.
        let buckets: &[_] = &[(MS, 0), (10 * MS, 0), (100 * MS, 5), (Duration::MAX, 0)];
        exported(&[(buckets, 50 * MS)], |point| {
            assert_eq!(point.bucket_counts().collect::<Vec<_>>(), [0, 0, 5, 0]);
            assert!(
                point.min().is_some_and(|min| min > 0.01),
                "{:?}",
                point.min()
            );
        });
    }

    #[test]
    fn a_series_whose_counts_went_down_starts_again() {
        let before: &[_] = &[(MS, 4), (10 * MS, 0), (100 * MS, 0), (Duration::MAX, 0)];
        let after: &[_] = &[(MS, 1), (10 * MS, 0), (100 * MS, 0), (Duration::MAX, 0)];
        exported(
            &[(before, 2 * MS), (after, Duration::from_micros(500))],
            |point| {
                assert_eq!(point.bucket_counts().collect::<Vec<_>>(), [5, 0, 0, 0]);
                assert!((point.sum() - 0.0025).abs() < 1e-9, "{}", point.sum());
            },
        );
    }
}
