//! The tables read as they should: every policy once, in its place, each
//! key named once. (That the builders agree with them is tested where the
//! builders are, in `bulkhead-core`.)

use crate::{BASE_CONFIG, CONFIG, Key, NAME, PolicyKind};

#[test]
fn every_policy_is_listed_once_and_has_its_place_in_the_composition() {
    for (i, kind) in PolicyKind::OUTSIDE_IN.into_iter().enumerate() {
        assert_eq!(kind.depth(), i);
        assert_eq!(PolicyKind::from_name(kind.name()), Some(kind));
        assert_eq!(kind.to_string(), kind.name());
        assert!(PolicyKind::ALL.contains(&kind));
    }
    assert_eq!(PolicyKind::from_name("cache"), None);
    let calling_again: Vec<_> = PolicyKind::ALL
        .into_iter()
        .filter(|kind| kind.calls_again())
        .collect();
    assert_eq!(
        calling_again,
        [PolicyKind::Retry, PolicyKind::Hedge, PolicyKind::Fallback]
    );
    assert_eq!(
        PolicyKind::OUTSIDE_IN,
        [
            PolicyKind::Fallback,
            PolicyKind::Retry,
            PolicyKind::Hedge,
            PolicyKind::CircuitBreaker,
            PolicyKind::RateLimiter,
            PolicyKind::Timeout,
            PolicyKind::Bulkhead,
            PolicyKind::Chaos,
        ],
        "the fixed order of the docs"
    );
}

#[test]
fn every_policy_names_each_key_once() {
    for kind in PolicyKind::ALL {
        let mut names: Vec<&str> = kind.all_keys().map(Key::name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "{kind}");
        for common in [NAME, CONFIG, BASE_CONFIG] {
            assert!(!kind.keys().contains(&common), "{kind}");
            assert_eq!(kind.key(common.name()), Some(&common));
        }
        let example = kind.example().split(" = ").next().unwrap();
        assert!(kind.key(example).is_some(), "{kind}: {example}");
    }
}
