//! [`AdaptiveSnapshot`]: what an adaptive bulkhead's algorithm knows.

use std::time::{Duration, Instant};

use super::Adaptive;

/// An adaptive bulkhead's algorithm at one moment: its bounds, the limit it
/// keeps in force, its latency estimates and its counts since the bulkhead
/// was created. From [`Bulkhead::adaptive`](crate::Bulkhead::adaptive), and
/// in the registry's bulkhead snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AdaptiveSnapshot {
    /// The algorithm.
    pub algorithm: Adaptive,
    /// The lowest limit it may set (`min_concurrent`).
    pub floor: u32,
    /// The highest (`max_concurrent`).
    pub ceiling: u32,
    /// The limit in force: the bulkhead's `max_concurrent()` now.
    pub limit: u32,
    /// The latency of a call at low concurrency, as the probes measured it
    /// (`None` before the first window closed).
    pub no_load: Option<Duration>,
    /// The mean hold time of the successful calls of the last window
    /// (those near the limit, if there were enough of them).
    pub recent: Option<Duration>,
    /// Gradient2's long-term average of the windows' latencies, as
    /// published (`None` for the other algorithms).
    pub long_term: Option<Duration>,
    /// Whether a probe for the no-load latency is under way (the limit in
    /// force is then cut for one window).
    pub probing: bool,
    /// The slots of its resource's budget it holds above what it reserves
    /// (its floor, or its `reserved` if given and higher), if its resource
    /// has a budget.
    pub room_taken: Option<u32>,
    /// Its max-min fair share of that room (see
    /// [`Room`](super::Room)), as of the last time it asked for room (a
    /// window's close, or a change of its bounds): it holds at most this,
    /// and less while the others have not yet given back what they hold
    /// above theirs.
    pub room_share: Option<u32>,
    /// Windows closed, probes included.
    pub windows: u64,
    /// Probes closed.
    pub probes: u64,
    /// Calls that ended well, in the closed windows.
    pub successes: u64,
    /// Calls that returned an error: counted, not taken as congestion
    /// unless `errors_as_drops`.
    pub errors: u64,
    /// Calls dropped (timed out, cancelled) before they ended.
    pub drops: u64,
    /// When the last window closed, on the bulkhead's clock.
    pub last_window_at: Option<Instant>,
}
