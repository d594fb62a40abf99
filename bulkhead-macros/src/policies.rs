//! The policies: which there are (`bulkhead-keys`' [`PolicyKind`], in the
//! order of the composition), what the macros add to them
//! ([`PolicyAttribute`]: each one's attribute, read with its table of keys),
//! and the policies one method or function runs under ([`PolicySet`]).
//!
//! A new key is a row of its policy's table in `bulkhead-keys`, and nothing
//! here (if its value is of a new kind, that kind in `values/`). A new
//! policy is a line of `bulkhead-keys`' `PolicyKind`, whose `match`es the
//! compiler then points out, and its entry point in `lib.rs`.

use darling::ast::NestedMeta;
use syn::punctuated::Punctuated;
use syn::{Meta, Token};

pub(crate) use bulkhead_keys::PolicyKind;

use crate::attr::{self, Keys, Written};
use crate::krate::{Krate, Origin};
use crate::symbol::{self, Symbol};

/// What the macros add to a [`PolicyKind`]: its attribute.
pub(crate) trait PolicyAttribute: Sized {
    /// The attribute's name.
    fn attribute(self) -> Symbol;

    /// Reads the policy's attribute as `written` with the policy's table of
    /// keys, or every error in it, coded.
    fn read(self, written: Written<'_>) -> syn::Result<Policy>;

    /// The policy whose attribute is called `word`.
    fn named(word: &str) -> Option<Self>;

    /// The policy attribute `meta` is, if it is one of ours. The rule, the
    /// same on trait methods and on functions, whatever the order of the
    /// attributes:
    ///
    /// - a path from the crate (`bulkhead::timeout`, `::bulkhead::retry`,
    ///   or from the name the dependency is given, or the `crate = ".."`
    ///   path) is always ours;
    /// - another path (`ntest::timeout`) never is;
    /// - a bare name (`timeout`, `r#retry`) is ours unless its arguments
    ///   cannot be: a bare literal (`#[timeout(100)]`, ntest's) or a nested
    ///   list (`#[retry(times(3))]`), shapes our keys never take.
    fn of(meta: &Meta, krate: &Krate) -> Option<Self>;
}

impl PolicyAttribute for PolicyKind {
    fn attribute(self) -> Symbol {
        symbol::policy(self)
    }

    fn read(self, written: Written<'_>) -> syn::Result<Policy> {
        Ok(Policy {
            kind: self,
            keys: attr::read(self, written)?,
        })
    }

    fn named(word: &str) -> Option<PolicyKind> {
        PolicyKind::ALL
            .into_iter()
            .find(|kind| *word == kind.attribute())
    }

    fn of(meta: &Meta, krate: &Krate) -> Option<PolicyKind> {
        let (word, origin) = krate.origin(meta.path())?;
        let kind = PolicyKind::named(&word)?;
        let ours = match origin {
            Origin::Bare => could_be_ours(meta),
            Origin::Crate => true,
            Origin::Other => false,
        };
        ours.then_some(kind)
    }
}

/// Whether the arguments of `meta` can be a policy attribute's: none,
/// `key = value` pairs and bare keys, or something that does not parse (a
/// syntax error of ours, such as `max_concurrent = `, reported when read).
fn could_be_ours(meta: &Meta) -> bool {
    let Meta::List(list) = meta else {
        return true;
    };
    match list.parse_args_with(Punctuated::<NestedMeta, Token![,]>::parse_terminated) {
        Ok(items) => items.iter().all(|item| match item {
            NestedMeta::Meta(meta) => !matches!(meta, Meta::List(_)),
            NestedMeta::NameValueInvalidExpr(_) => true,
            NestedMeta::Lit(_) => false,
        }),
        Err(_) => true,
    }
}

/// One policy attribute, read: which policy, and its keys.
#[derive(Debug)]
pub(crate) struct Policy {
    pub(crate) kind: PolicyKind,
    pub(crate) keys: Keys,
}

/// The policies one method or function runs under, at most one of each
/// kind, kept in the order of the composition whatever the order they were
/// written in.
#[derive(Debug, Default)]
pub(crate) struct PolicySet(Vec<Policy>);

impl PolicySet {
    /// Adds `policy` in its place in the composition; the set holds one
    /// policy of each kind at most (a second is refused before it is read).
    pub(crate) fn insert(&mut self, policy: Policy) {
        let at = self
            .0
            .partition_point(|held| held.kind.depth() < policy.kind.depth());
        self.0.insert(at, policy);
    }

    /// The policies, outermost first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Policy> {
        self.0.iter()
    }

    /// The first policy that may call the method again
    /// ([`PolicyKind::calls_again`]), if there is one.
    pub(crate) fn calling_again(&self) -> Option<PolicyKind> {
        self.0
            .iter()
            .map(|policy| policy.kind)
            .find(|kind| kind.calls_again())
    }

    /// The policy of `kind`, if the set has it.
    pub(crate) fn get(&self, kind: PolicyKind) -> Option<&Policy> {
        self.0.iter().find(|policy| policy.kind == kind)
    }

    /// The method a fallback names (`method = ".."`), if the set has a
    /// fallback that names one.
    pub(crate) fn fallback_method(&self) -> Option<&syn::Ident> {
        self.get(PolicyKind::Fallback)?.keys.method()
    }

    /// The `key = ..` of the bulkhead, if the set has a keyed bulkhead.
    pub(crate) fn key(&self) -> Option<&crate::attr::KeyParam> {
        self.get(PolicyKind::Bulkhead)?.keys.key()
    }

    /// The bulkhead, if it is the only policy: the call then takes a slot
    /// itself, without the composition of `Policies`.
    pub(crate) fn bulkhead_alone(&self) -> Option<&Policy> {
        match &self.0[..] {
            [only] if only.kind == PolicyKind::Bulkhead => Some(only),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;
    use syn::parse_quote;

    use super::*;

    /// The builder settings of `#[kind(tokens)]`, or its errors.
    fn read(kind: PolicyKind, tokens: TokenStream) -> Result<String, Vec<String>> {
        kind.read(Written::Args(tokens))
            .map(|policy| policy.keys.settings().to_string())
            .map_err(|e| e.into_iter().map(|e| e.to_string()).collect())
    }

    /// `#[bulkhead(tokens)]`, read, or its errors.
    fn bulkhead(tokens: TokenStream) -> Result<Keys, Vec<String>> {
        PolicyKind::Bulkhead
            .read(Written::Args(tokens))
            .map(|policy| policy.keys)
            .map_err(|e| e.into_iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn every_policy_is_found_by_its_attribute_in_the_order_of_the_composition() {
        for kind in PolicyKind::ALL {
            assert_eq!(PolicyKind::named(kind.attribute().as_str()), Some(kind));
        }
        let mut set = PolicySet::default();
        for kind in PolicyKind::ALL {
            set.insert(kind.read(Written::Args(TokenStream::new())).unwrap());
        }
        let kinds: Vec<PolicyKind> = set.iter().map(|policy| policy.kind).collect();
        assert_eq!(kinds, PolicyKind::OUTSIDE_IN);
    }

    #[test]
    fn policy_attributes_are_recognised_by_name_alone_or_from_the_crate() {
        let krate = Krate::new(Some(&parse_quote!(::bulkhead)));
        let of = |meta: Meta| PolicyKind::of(&meta, &krate);
        assert_eq!(of(parse_quote!(retry)), Some(PolicyKind::Retry));
        assert_eq!(of(parse_quote!(r#retry)), Some(PolicyKind::Retry));
        assert_eq!(
            of(parse_quote!(timeout(duration = "1s"))),
            Some(PolicyKind::Timeout)
        );
        assert_eq!(
            of(parse_quote!(timeout(duraton = "1s"))),
            Some(PolicyKind::Timeout),
            "a misspelt key is ours, and reported"
        );
        assert_eq!(of(parse_quote!(timeout(100))), None, "ntest's");
        assert_eq!(of(parse_quote!(retry(times(3)))), None);
        assert_eq!(
            of(parse_quote!(bulkhead::timeout(100))),
            Some(PolicyKind::Timeout),
            "always ours from the crate"
        );
        assert_eq!(of(parse_quote!(other::bulkhead)), None);
        assert_eq!(
            of(parse_quote!(bulkhead::circuit_breaker)),
            Some(PolicyKind::CircuitBreaker)
        );
        assert_eq!(
            of(parse_quote!(::bulkhead::timeout)),
            Some(PolicyKind::Timeout)
        );
        assert_eq!(
            of(parse_quote!(bulkhead::bulkhead)),
            Some(PolicyKind::Bulkhead)
        );
        assert_eq!(
            of(parse_quote!(ntest::timeout)),
            None,
            "another crate's attribute"
        );
        assert_eq!(of(parse_quote!(doc)), None);
    }

    #[test]
    fn every_bulkhead_key_parses() {
        let keys = bulkhead(quote!(
            name = "thumbnails",
            config = "slow",
            max_concurrent = 4,
            max_wait = "250ms",
            enabled = "false"
        ))
        .unwrap();
        assert_eq!(keys.name().unwrap().value, "thumbnails");
        assert_eq!(
            keys.settings().to_string(),
            ". config (\"slow\") . max_concurrent (4u32) . max_wait (:: bulkhead :: __private :: Duration :: new (0u64 , 250000000u32)) . enabled (false)"
        );
    }

    #[test]
    fn no_arguments_means_no_explicit_values() {
        let keys = bulkhead(TokenStream::new()).unwrap();
        assert!(keys.name().is_none() && keys.settings().is_empty());
        assert_eq!(
            read(PolicyKind::Bulkhead, TokenStream::new()),
            Ok(String::new())
        );
    }

    #[test]
    fn a_bare_zero_is_a_duration() {
        assert_eq!(
            read(PolicyKind::Bulkhead, quote!(max_wait = "0")),
            Ok(". max_wait (:: bulkhead :: __private :: Duration :: new (0u64 , 0u32))".to_owned())
        );
    }

    #[test]
    fn a_duration_past_duration_max_is_atr_001_too_large() {
        for text in [
            "18446744073709551615s 1000ms",
            "18446744073709551615s 999999999ns 1ns",
            "584542046091y",
        ] {
            let errors = bulkhead(quote!(max_wait = #text)).unwrap_err();
            assert_eq!(
                errors,
                [format!(
                    "ATR-001: invalid duration {text:?} for max_wait: the duration is too large; the longest is 18446744073709551615s 999999999ns, about 584.5 billion years"
                )]
            );
        }
    }

    #[test]
    fn every_error_is_reported_at_once_with_its_code() {
        let errors = bulkhead(quote!(
            max_wait = "25Oms",
            max_concurrent = 0,
            enabled = "yes",
            max_concurent = 4
        ))
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].starts_with("ATR-001: invalid duration \"25Oms\": expected a number"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            "ATR-003: max_concurrent must be between 1 and 1073741823, got 0"
        );
        assert_eq!(
            errors[2],
            "ATR-006: enabled must be true or false, got \"yes\""
        );
        assert_eq!(
            errors[3],
            "ATR-002: unknown key `max_concurent` in #[bulkhead]; did you mean `max_concurrent`?"
        );
    }

    #[test]
    fn wrong_kinds_of_values_name_their_key() {
        let errors = bulkhead(quote!(
            name = 4,
            max_concurrent = "4",
            max_concurrent = -1,
            max_wait = 250,
            enabled = 1
        ))
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "ATR-002: name must be a string literal such as \"thumbnails\", got 4",
                "ATR-003: max_concurrent must be an integer between 1 and 1073741823, got \"4\"",
                "ATR-002: duplicate key `max_concurrent` in #[bulkhead]",
                "ATR-001: max_wait must be a duration string such as \"250ms\", got 250",
                "ATR-006: enabled must be true or false, got 1",
            ]
        );
    }

    #[test]
    fn a_limit_out_of_range_or_suffixed_is_atr_003() {
        assert_eq!(
            bulkhead(quote!(max_concurrent = -1)).unwrap_err(),
            ["ATR-003: max_concurrent must be between 1 and 1073741823, got -1"]
        );
        assert_eq!(
            bulkhead(quote!(max_concurrent = 1073741824)).unwrap_err(),
            ["ATR-003: max_concurrent must be between 1 and 1073741823, got 1073741824"]
        );
        assert_eq!(
            bulkhead(quote!(max_concurrent = 4u8)).unwrap_err(),
            [
                "ATR-003: max_concurrent is written without a type suffix, as in max_concurrent = 4, got 4u8"
            ]
        );
        assert_eq!(
            bulkhead(quote!(max_concurrent = 300u8)).unwrap_err().len(),
            1
        );
    }

    #[test]
    fn the_adaptive_keys_set_the_builder() {
        assert_eq!(
            read(
                PolicyKind::Bulkhead,
                quote!(
                    initial_concurrent = 10,
                    adaptive = "gradient2",
                    max_concurrent = 200,
                    min_concurrent = 2
                )
            )
            .unwrap(),
            ". max_concurrent (200u32) . adaptive (:: bulkhead :: __private :: Adaptive :: Gradient2) . min_concurrent (2u32) . initial_concurrent (10u32)"
        );
        assert_eq!(
            bulkhead(quote!(adaptive = "tcp")).unwrap_err(),
            [
                "ATR-010: adaptive must be \"off\", \"aimd\", \"vegas\" or \"gradient2\", got \"tcp\""
            ]
        );
    }

    #[test]
    fn limits_written_out_of_order_are_atr_015_on_the_key_out_of_place() {
        assert_eq!(
            bulkhead(quote!(max_concurrent = 10, min_concurrent = 20)).unwrap_err(),
            [
                "ATR-015: min_concurrent is out of order: min_concurrent (20) <= initial_concurrent (..) <= max_concurrent (10) must hold"
            ]
        );
        assert_eq!(
            bulkhead(quote!(initial_concurrent = 30, max_concurrent = 10)).unwrap_err(),
            [
                "ATR-015: initial_concurrent is out of order: min_concurrent (..) <= initial_concurrent (30) <= max_concurrent (10) must hold"
            ]
        );
        // Keys not written are not judged here: configuration may give them.
        assert!(bulkhead(quote!(min_concurrent = 30)).is_ok());
    }

    #[test]
    fn an_unknown_key_far_from_any_lists_the_keys() {
        assert_eq!(
            bulkhead(quote!(colour = "red")).unwrap_err(),
            [
                "ATR-002: unknown key `colour` in #[bulkhead]; expected one of `adaptive`, `config`, `enabled`, `idle_evict`, `initial_concurrent`, `key`, `max_concurrent`, `max_keys`, `max_wait`, `min_concurrent`, `name`, `per_key`, `priority`, `queue`, `queue_interval`, `queue_target`, `reserved`, `resource`, `shed_at`"
            ]
        );
    }

    #[test]
    fn suffixes_on_strings_are_refused_with_the_keys_code() {
        assert_eq!(
            bulkhead(quote!(max_wait = "1s"ms, name = "x"sfx, enabled = "true"b)).unwrap_err(),
            [
                "ATR-001: max_wait is written without a suffix after its literal, as in max_wait = \"250ms\", got \"1s\"ms",
                "ATR-002: name is written without a suffix after its literal, as in name = \"thumbnails\", got \"x\"sfx",
                "ATR-006: enabled is written without a suffix after its literal, as in enabled = false, got \"true\"b",
            ]
        );
        assert!(read(PolicyKind::Retry, quote!(abort_on = ["Timeout"x])).is_err());
        assert!(read(PolicyKind::Retry, quote!(retry_if = "is_transient"x)).is_err());
    }

    #[test]
    fn unknown_keys_say_what_was_meant() {
        assert_eq!(
            bulkhead(quote!(MAX_CONCURRENT = 4)).unwrap_err(),
            [
                "ATR-002: unknown key `MAX_CONCURRENT` in #[bulkhead]; did you mean `max_concurrent`?"
            ]
        );
        assert_eq!(
            bulkhead(quote!(max_attempts = 3)).unwrap_err(),
            [
                "ATR-002: unknown key `max_attempts` in #[bulkhead]; `max_attempts` is a key of #[retry], a policy of its own: add #[retry(max_attempts = ..)] to the method or function"
            ]
        );
    }

    #[test]
    fn the_crate_key_is_a_path_in_a_string() {
        let keys = bulkhead(quote!(crate = "::deps::bulkhead", max_concurrent = 2)).unwrap();
        assert_eq!(
            {
                let path = &keys.krate().unwrap().value;
                quote!(#path).to_string().replace(' ', "")
            },
            "::deps::bulkhead"
        );
        assert_eq!(keys.settings().to_string(), ". max_concurrent (2u32)");
        let refused = "ATR-002: `crate` names the path of the bulkhead crate in a string, as in #[bulkhead(crate = \"::my_deps::bulkhead\")]";
        assert_eq!(bulkhead(quote!(crate = bh)).unwrap_err(), [refused]);
        assert_eq!(bulkhead(quote!(crate = "a b")).unwrap_err(), [refused]);
        assert_eq!(
            bulkhead(quote!(crate = "bh", crate = "bh")).unwrap_err(),
            ["ATR-002: duplicate key `crate` in #[bulkhead]"]
        );
    }

    #[test]
    fn a_keyed_bulkhead_names_its_key_parameter_and_sets_its_limits() {
        let keys = bulkhead(quote!(
            name = "api",
            per_key = 4,
            key = tenant,
            max_keys = 1000,
            idle_evict = "5m"
        ))
        .unwrap();
        assert_eq!(keys.key().unwrap().ident, "tenant");
        assert_eq!(
            keys.settings().to_string(),
            ". per_key (4u32) . max_keys (1000u32) . idle_evict (:: bulkhead :: __private :: Duration :: new (300u64 , 0u32))",
            "`key` is no setting"
        );
        assert_eq!(
            bulkhead(quote!(kye = tenant)).unwrap_err(),
            ["ATR-002: unknown key `kye` in #[bulkhead]; did you mean `key`?"]
        );
    }

    #[test]
    fn a_key_that_is_no_bare_name_or_given_twice_or_on_another_policy_is_refused() {
        let written = "ATR-021: `key` names a parameter of the method, written bare, as in #[bulkhead(per_key = 4, key = tenant)]";
        assert_eq!(bulkhead(quote!(key = "tenant")).unwrap_err(), [written]);
        assert_eq!(bulkhead(quote!(key = a::b)).unwrap_err(), [written]);
        assert_eq!(bulkhead(quote!(key)).unwrap_err(), [written]);
        assert_eq!(
            bulkhead(quote!(key = a, key = b)).unwrap_err(),
            [
                "ATR-002: duplicate key `key` in #[bulkhead]: a keyed bulkhead has one key, the value of one parameter"
            ]
        );
        for kind in PolicyKind::ALL {
            if kind == PolicyKind::Bulkhead {
                continue;
            }
            let errors = read(kind, quote!(key = tenant)).unwrap_err();
            assert!(
                errors[0].starts_with("ATR-021: `key` is a key of #[bulkhead] alone"),
                "{errors:?}"
            );
        }
    }

    #[test]
    fn keyed_limits_without_a_key_do_nothing_and_a_key_refuses_what_it_does_not_support() {
        assert!(
            bulkhead(quote!(per_key = 2, max_keys = 10, idle_evict = "1s")).is_ok(),
            "as in configuration, a bulkhead without keys has them and does nothing with them"
        );
        let errors = bulkhead(quote!(
            key = tenant,
            adaptive = "aimd",
            min_concurrent = 1,
            initial_concurrent = 2,
            resource = "db",
            reserved = 1,
            priority = "high",
            shed_at = "sheddable=0.5",
            queue = "lifo",
            queue_target = "1ms",
            queue_interval = "10ms"
        ))
        .unwrap_err();
        assert_eq!(errors.len(), crate::attr::NOT_KEYED.len(), "{errors:?}");
        assert!(
            errors.iter().all(|e| e.starts_with("ATR-022: ")),
            "{errors:?}"
        );
        assert!(
            bulkhead(quote!(
                key = tenant,
                max_concurrent = 8,
                max_wait = "1s",
                enabled = false
            ))
            .is_ok(),
            "a keyed bulkhead's global limit, wait and switch"
        );
    }

    #[test]
    fn a_key_with_nothing_after_its_equals_sign_says_how_to_write_it() {
        let attr: syn::Attribute = parse_quote!(#[bulkhead(max_concurrent = )]);
        let error = PolicyKind::Bulkhead
            .read(Written::Attribute(&attr))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "ATR-003: max_concurrent needs a value after its `=`, as in max_concurrent = 4"
        );
    }

    #[test]
    fn a_key_without_value_says_how_to_write_it() {
        assert_eq!(
            bulkhead(quote!(max_wait)).unwrap_err(),
            ["ATR-001: max_wait needs a value, as in max_wait = \"250ms\""]
        );
        assert_eq!(
            bulkhead(quote!(name = "")).unwrap_err(),
            ["ATR-002: name must not be empty"]
        );
    }

    #[test]
    fn a_bare_literal_or_a_value_says_how_to_write_the_keys_of_that_attribute() {
        assert_eq!(
            read(PolicyKind::Retry, quote!(3)),
            Err(vec![
                "ATR-002: #[retry] takes `key = value` pairs, not bare literals, as in #[retry(max_attempts = 3)]".to_owned()
            ])
        );
        let attr: syn::Attribute = parse_quote!(#[timeout = "1s"]);
        let error = PolicyKind::Timeout
            .read(Written::Attribute(&attr))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "ATR-002: #[timeout] takes a list of keys, as in #[timeout(duration = \"1s\")]"
        );
    }

    #[test]
    fn only_the_keys_written_are_set_in_the_order_of_the_table() {
        assert_eq!(
            read(
                PolicyKind::Retry,
                quote!(
                    jitter = 0.25,
                    abort_on = [Timeout],
                    max_attempts = 2,
                    retry_if = is_transient
                )
            )
            .unwrap(),
            ". max_attempts (2u32) . jitter (0.25f64) . abort_on ([:: bulkhead :: __private :: RejectionKind :: Timeout])"
        );
        let breaker = read(
            PolicyKind::CircuitBreaker,
            quote!(
                sliding_window = "time",
                failure_rate_threshold = 20,
                ignore_on = [],
                config = "c"
            ),
        )
        .unwrap();
        assert_eq!(
            breaker,
            ". config (\"c\") . failure_rate_threshold (20f32) . sliding_window (:: bulkhead :: __private :: SlidingWindow :: Time) . ignore_on ([])"
        );
        assert_eq!(
            read(PolicyKind::Timeout, quote!(duration = "1500ms")).unwrap(),
            ". duration (:: bulkhead :: __private :: Duration :: new (1u64 , 500000000u32))"
        );
        assert_eq!(
            read(
                PolicyKind::Bulkhead,
                quote!(
                    resource = "db",
                    enabled = false,
                    max_wait = "0",
                    max_concurrent = 4
                )
            )
            .unwrap(),
            ". max_concurrent (4u32) . max_wait (:: bulkhead :: __private :: Duration :: new (0u64 , 0u32)) . enabled (false) . resource (\"db\")"
        );
    }

    #[test]
    fn every_key_of_every_policy_parses() {
        let policies = [
            (
                PolicyKind::Retry,
                quote!(
                    name = "r",
                    config = "c",
                    max_attempts = 5,
                    wait = "100ms",
                    backoff_multiplier = 2.0,
                    max_wait_interval = "10s",
                    jitter = 0.5,
                    retry_if = errors::is_transient,
                    abort_on = [BulkheadFull, Timeout]
                ),
            ),
            (
                PolicyKind::CircuitBreaker,
                quote!(
                    name = "b",
                    config = "c",
                    failure_rate_threshold = 25,
                    sliding_window = "time",
                    sliding_window_size = 60,
                    minimum_calls = 10,
                    wait_in_open = "30s",
                    permitted_calls_in_half_open = 2,
                    slow_call_threshold = "2s",
                    slow_call_rate_threshold = 80.5,
                    record_if = is_failure,
                    ignore_on = [BulkheadFull]
                ),
            ),
            (
                PolicyKind::Timeout,
                quote!(name = "t", config = "c", duration = "250ms"),
            ),
            (
                PolicyKind::RateLimiter,
                quote!(
                    name = "l",
                    config = "c",
                    limit_for_period = 10,
                    refresh_period = "1s",
                    max_wait = "0"
                ),
            ),
            (
                PolicyKind::Hedge,
                quote!(name = "h", config = "c", max_hedged = 2, delay = "p99.9"),
            ),
            (
                PolicyKind::Fallback,
                quote!(
                    name = "f",
                    config = "c",
                    method = "cached",
                    on = [BulkheadFull],
                    on_error = true
                ),
            ),
        ];
        for (kind, tokens) in policies {
            let policy = kind.read(Written::Args(tokens)).unwrap();
            assert!(policy.keys.name().is_some(), "{kind:?}");
        }
        let hedge = PolicyKind::Hedge
            .read(Written::Args(quote!(delay = "p90", max_hedged = 3)))
            .unwrap();
        assert_eq!(
            hedge.keys.settings().to_string(),
            ". max_hedged (3u32) . delay (:: bulkhead :: __private :: HedgeDelay :: Percentile { tenths : 900u16 })"
        );
        let fixed = PolicyKind::Hedge
            .read(Written::Args(quote!(delay = "50ms")))
            .unwrap();
        assert_eq!(
            fixed.keys.settings().to_string(),
            ". delay (:: bulkhead :: __private :: Duration :: new (0u64 , 50000000u32))"
        );
        let fallback = PolicyKind::Fallback
            .read(Written::Args(quote!(method = "cached", on_error = true)))
            .unwrap();
        assert_eq!(fallback.keys.method().unwrap(), "cached");
        assert_eq!(
            fallback.keys.settings().to_string(),
            ". on_error (true)",
            "a method is no setting"
        );
        let retry = PolicyKind::Retry
            .read(Written::Args(quote!(retry_if = errors::is_transient)))
            .unwrap();
        let predicates: Vec<(&str, String)> = retry
            .keys
            .predicates()
            .into_iter()
            .map(|(key, path)| (key, quote!(#path).to_string()))
            .collect();
        assert_eq!(
            predicates,
            [("retry_if", "errors :: is_transient".to_owned())]
        );
        assert!(
            retry.keys.settings().is_empty(),
            "a predicate is no setting"
        );
    }

    #[test]
    fn a_set_keeps_the_order_of_the_composition() {
        let mut set = PolicySet::default();
        for kind in [PolicyKind::Bulkhead, PolicyKind::Timeout, PolicyKind::Retry] {
            set.insert(kind.read(Written::Args(TokenStream::new())).unwrap());
        }
        let kinds: Vec<PolicyKind> = set.iter().map(|policy| policy.kind).collect();
        assert_eq!(
            kinds,
            [PolicyKind::Retry, PolicyKind::Timeout, PolicyKind::Bulkhead]
        );
        assert_eq!(set.calling_again(), Some(PolicyKind::Retry));
        assert!(set.bulkhead_alone().is_none());
        let mut alone = PolicySet::default();
        alone.insert(
            PolicyKind::Bulkhead
                .read(Written::Args(TokenStream::new()))
                .unwrap(),
        );
        assert!(alone.bulkhead_alone().is_some());
        assert_eq!(alone.calling_again(), None);
    }
}
