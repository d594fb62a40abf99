//! [`did_you_mean`]: the one way a name that names nothing is matched to
//! what was meant, for the macros' and the registry's messages alike.

/// The candidate closest to `given`, if one is close enough to be what was
/// meant: ignoring case, at most two edits apart, or a third of `given`'s
/// length for a longer name (Levenshtein distance). The first of equally
/// close candidates wins.
///
/// # Examples
///
/// ```
/// use bulkhead_keys::did_you_mean;
///
/// let keys = ["max_concurrent", "max_wait", "enabled"];
/// assert_eq!(did_you_mean("max_concurent", keys), Some("max_concurrent"));
/// assert_eq!(did_you_mean("MAX_WAIT", keys), Some("max_wait"));
/// assert_eq!(did_you_mean("colour", keys), None);
/// ```
pub fn did_you_mean<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let given = given.to_lowercase();
    let close_enough = 2.max(given.chars().count() / 3);
    candidates
        .into_iter()
        .map(|candidate| (distance(&given, &candidate.to_lowercase()), candidate))
        .filter(|(distance, _)| *distance <= close_enough)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
        assert_eq!(distance("circuit_braker", "circuit_breaker"), 1);
    }

    #[test]
    fn the_closest_candidate_is_suggested_only_if_close() {
        let policies = [
            "bulkhead",
            "retry",
            "circuit_breaker",
            "timeout",
            "rate_limiter",
        ];
        assert_eq!(
            did_you_mean("circuit_braker", policies),
            Some("circuit_breaker")
        );
        assert_eq!(did_you_mean("cache", policies), None);
        let kinds = ["BulkheadFull", "CircuitOpen", "Timeout", "RateLimited"];
        assert_eq!(did_you_mean("BulkheadFul", kinds), Some("BulkheadFull"));
        assert_eq!(did_you_mean("circuitopen", kinds), Some("CircuitOpen"));
        assert_eq!(did_you_mean("Slow", kinds), None);
        assert_eq!(did_you_mean("x", []), None);
    }
}
