//! [`DeadlineHeader`]: which header carries a request's deadline, and how
//! the layers read and write it.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::{digits, grpc_timeout};

/// The name of gRPC's deadline header.
static GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The header that carries a request's deadline, as the time left: gRPC's
/// `grpc-timeout` (the default), or a header holding a count of
/// milliseconds, such as Envoy's `x-envoy-expected-rq-timeout-ms`.
///
/// # Examples
///
/// ```
/// use bulkhead_registry::tower::DeadlineHeader;
/// use http::HeaderName;
///
/// assert_eq!(DeadlineHeader::default().name(), "grpc-timeout");
/// let envoy = DeadlineHeader::Millis(HeaderName::from_static("x-envoy-expected-rq-timeout-ms"));
/// assert_eq!(envoy.name(), "x-envoy-expected-rq-timeout-ms");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeadlineHeader {
    /// `grpc-timeout`: 1 to 8 digits and a unit (see
    /// [`grpc_timeout`](super::grpc_timeout)).
    #[default]
    Grpc,
    /// A header of this name holding whole milliseconds (ASCII digits).
    Millis(HeaderName),
}

impl DeadlineHeader {
    /// The header's name.
    pub fn name(&self) -> &HeaderName {
        match self {
            DeadlineHeader::Grpc => &GRPC_TIMEOUT,
            DeadlineHeader::Millis(name) => name,
        }
    }

    /// The time left that `headers` give: the shortest of the header's
    /// values that it can hold (a value it cannot hold is ignored), `None`
    /// without one.
    pub(super) fn read(&self, headers: &HeaderMap) -> Option<Duration> {
        let parse = match self {
            DeadlineHeader::Grpc => grpc_timeout::parse,
            DeadlineHeader::Millis(_) => parse_millis,
        };
        headers.get_all(self.name()).iter().filter_map(parse).min()
    }

    /// Writes `left` into `headers`, unless they already hold a time no
    /// longer than it; otherwise `left` replaces every value of the header
    /// (all longer, or values it cannot hold).
    pub(super) fn write(&self, headers: &mut HeaderMap, left: Duration) {
        if self.read(headers).is_some_and(|there| there <= left) {
            return;
        }
        let value = match self {
            DeadlineHeader::Grpc => grpc_timeout::format(left),
            DeadlineHeader::Millis(_) => format_millis(left),
        };
        headers.insert(self.name().clone(), value);
    }
}

/// Whole milliseconds: ASCII digits only, no sign, no space (beyond
/// `u64::MAX`, that many: a `max` still caps it).
fn parse_millis(value: &HeaderValue) -> Option<Duration> {
    digits(value.as_bytes()).map(Duration::from_millis)
}

/// Whole milliseconds rounded down, at least 1 (0 would read as "no
/// timeout" to some proxies).
fn format_millis(left: Duration) -> HeaderValue {
    let millis = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1);
    HeaderValue::from(millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envoy() -> DeadlineHeader {
        DeadlineHeader::Millis(HeaderName::from_static("x-envoy-expected-rq-timeout-ms"))
    }

    fn headers(name: &'static str, value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn each_header_reads_its_own_name_and_format() {
        let grpc = headers("grpc-timeout", "250m");
        assert_eq!(
            DeadlineHeader::Grpc.read(&grpc),
            Some(Duration::from_millis(250))
        );
        assert_eq!(envoy().read(&grpc), None);
        let millis = headers("x-envoy-expected-rq-timeout-ms", "1500");
        assert_eq!(envoy().read(&millis), Some(Duration::from_millis(1500)));
        assert_eq!(DeadlineHeader::Grpc.read(&millis), None);
        for bad in ["", "-5", "+5", "1.5", "15ms", " 15"] {
            let bad = headers("x-envoy-expected-rq-timeout-ms", bad);
            assert_eq!(envoy().read(&bad), None);
        }
        let mut wide = HeaderMap::new();
        let value = HeaderValue::from_bytes("１５".as_bytes()).unwrap(); // not ASCII
        wide.insert("x-envoy-expected-rq-timeout-ms", value.clone());
        wide.insert("grpc-timeout", value);
        assert_eq!(
            (envoy().read(&wide), DeadlineHeader::Grpc.read(&wide)),
            (None, None)
        );
        // Beyond u64: as long as can be (a `max` caps it), not ignored.
        let huge = headers("x-envoy-expected-rq-timeout-ms", "99999999999999999999999");
        assert_eq!(envoy().read(&huge), Some(Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn writing_never_raises_a_smaller_time_already_there() {
        for header in [DeadlineHeader::Grpc, envoy()] {
            let mut headers = HeaderMap::new();
            header.write(&mut headers, Duration::from_millis(800));
            assert_eq!(header.read(&headers), Some(Duration::from_millis(800)));
            header.write(&mut headers, Duration::from_secs(5));
            assert_eq!(header.read(&headers), Some(Duration::from_millis(800)));
            header.write(&mut headers, Duration::from_millis(300));
            assert_eq!(header.read(&headers), Some(Duration::from_millis(300)));
            headers.insert(header.name().clone(), HeaderValue::from_static("soon"));
            header.write(&mut headers, Duration::from_millis(200));
            assert_eq!(header.read(&headers), Some(Duration::from_millis(200)));
        }
    }

    #[test]
    fn of_several_values_the_shortest_holds_and_is_never_raised() {
        for (header, long, short, shorter) in [
            (DeadlineHeader::Grpc, "5S", "100m", "50000000n"),
            (envoy(), "5000", "100", "50"),
        ] {
            let name = header.name().clone();
            let mut headers = HeaderMap::new();
            for value in [long, "soon", short] {
                headers.append(&name, HeaderValue::from_static(value));
            }
            assert_eq!(header.read(&headers), Some(Duration::from_millis(100)));
            header.write(&mut headers, Duration::from_secs(1));
            assert_eq!(header.read(&headers), Some(Duration::from_millis(100)));
            assert_eq!(
                headers.get_all(&name).iter().count(),
                3,
                "left as they were"
            );
            header.write(&mut headers, Duration::from_millis(50));
            let values: Vec<_> = headers.get_all(&name).iter().collect();
            assert_eq!(values, [shorter]);
        }
    }

    #[test]
    fn milliseconds_round_down_to_at_least_one() {
        assert_eq!(format_millis(Duration::from_micros(2_999)), "2");
        assert_eq!(format_millis(Duration::from_micros(10)), "1");
        assert_eq!(format_millis(Duration::MAX), u64::MAX.to_string().as_str());
    }
}
