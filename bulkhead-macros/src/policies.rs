//! The five policy attributes: which attribute a path names ([`Kind`]), the
//! receivers of `#[retry]`, `#[circuit_breaker]`, `#[timeout]` and
//! `#[rate_limiter]` (`#[bulkhead]`'s is in `attr.rs`), and what one method
//! or function says with all of them ([`Annotations`]).

use darling::FromMeta;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, Ident, Path};

use crate::attr::{BulkheadArgs, Id, Receiver, Value, Wait};
use crate::codes::{self, Errors};
use crate::values::{
    AtLeastOne, Fraction, Kinds, Multiplier, Percent, Positive, Predicate, Window, WindowSize,
};

/// A policy attribute.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Bulkhead,
    Retry,
    CircuitBreaker,
    Timeout,
    RateLimiter,
}

impl Kind {
    pub(crate) const ALL: [Kind; 5] = [
        Kind::Bulkhead,
        Kind::Retry,
        Kind::CircuitBreaker,
        Kind::Timeout,
        Kind::RateLimiter,
    ];

    /// The attribute's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Bulkhead => "bulkhead",
            Kind::Retry => "retry",
            Kind::CircuitBreaker => "circuit_breaker",
            Kind::Timeout => "timeout",
            Kind::RateLimiter => "rate_limiter",
        }
    }

    /// The attribute called `name`.
    pub(crate) fn named(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// A key of the attribute with a value, for messages.
    pub(crate) fn example(self) -> &'static str {
        match self {
            Kind::Bulkhead => "max_concurrent = 4",
            Kind::Retry => "max_attempts = 3",
            Kind::CircuitBreaker => "failure_rate_threshold = 50",
            Kind::Timeout => "duration = \"1s\"",
            Kind::RateLimiter => "limit_for_period = 50",
        }
    }

    /// The policy attribute `path` names, if it names one: `bulkhead` (or
    /// any path ending in it, such as `bulkhead::bulkhead`), and the others
    /// written alone or from the crate (`retry`, `bulkhead::retry`), so that
    /// another crate's `#[foo::timeout]` is left alone.
    pub(crate) fn of(path: &Path) -> Option<Kind> {
        let last = path.segments.last()?;
        let kind = Kind::named(&last.ident.to_string())?;
        let from_the_crate = path.segments.len() == 1
            || path.segments.first().is_some_and(|s| s.ident == "bulkhead");
        (kind == Kind::Bulkhead || from_the_crate).then_some(kind)
    }
}

/// The keys of `#[retry(...)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct RetryArgs {
    pub(crate) name: Option<Id>,
    pub(crate) config: Option<Id>,
    pub(crate) max_attempts: Option<Value<AtLeastOne>>,
    pub(crate) wait: Option<Wait>,
    pub(crate) backoff_multiplier: Option<Value<Multiplier>>,
    pub(crate) max_wait_interval: Option<Value<Positive>>,
    pub(crate) jitter: Option<Value<Fraction>>,
    pub(crate) retry_if: Option<Value<Predicate>>,
    pub(crate) abort_on: Option<Kinds>,
}

impl Receiver for RetryArgs {
    const ATTRIBUTE: &'static str = "retry";
}

/// The keys of `#[circuit_breaker(...)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct CircuitBreakerArgs {
    pub(crate) name: Option<Id>,
    pub(crate) config: Option<Id>,
    pub(crate) failure_rate_threshold: Option<Value<Percent>>,
    pub(crate) sliding_window: Option<Value<Window>>,
    pub(crate) sliding_window_size: Option<Value<WindowSize>>,
    pub(crate) minimum_calls: Option<Value<AtLeastOne>>,
    pub(crate) wait_in_open: Option<Value<Positive>>,
    pub(crate) permitted_calls_in_half_open: Option<Value<AtLeastOne>>,
    pub(crate) slow_call_threshold: Option<Value<Positive>>,
    pub(crate) slow_call_rate_threshold: Option<Value<Percent>>,
    pub(crate) record_if: Option<Value<Predicate>>,
    pub(crate) ignore_on: Option<Kinds>,
}

impl Receiver for CircuitBreakerArgs {
    const ATTRIBUTE: &'static str = "circuit_breaker";
}

/// The keys of `#[timeout(...)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct TimeoutArgs {
    pub(crate) name: Option<Id>,
    pub(crate) config: Option<Id>,
    pub(crate) duration: Option<Value<Positive>>,
}

impl Receiver for TimeoutArgs {
    const ATTRIBUTE: &'static str = "timeout";
}

/// The keys of `#[rate_limiter(...)]`.
#[derive(Debug, Default, FromMeta)]
pub(crate) struct RateLimiterArgs {
    pub(crate) name: Option<Id>,
    pub(crate) config: Option<Id>,
    pub(crate) limit_for_period: Option<Value<AtLeastOne>>,
    pub(crate) refresh_period: Option<Value<Positive>>,
    pub(crate) max_wait: Option<Wait>,
}

impl Receiver for RateLimiterArgs {
    const ATTRIBUTE: &'static str = "rate_limiter";
}

/// What the policy attributes of one method or function say: one receiver
/// per attribute written.
#[derive(Debug, Default)]
pub(crate) struct PolicyArgs {
    pub(crate) bulkhead: Option<BulkheadArgs>,
    pub(crate) retry: Option<RetryArgs>,
    pub(crate) circuit_breaker: Option<CircuitBreakerArgs>,
    pub(crate) timeout: Option<TimeoutArgs>,
    pub(crate) rate_limiter: Option<RateLimiterArgs>,
}

impl PolicyArgs {
    /// Whether the bulkhead is the only policy: the call then takes a slot
    /// itself, without the composition of `Policies`.
    pub(crate) fn only_bulkhead(&self) -> bool {
        self.retry.is_none()
            && self.circuit_breaker.is_none()
            && self.timeout.is_none()
            && self.rate_limiter.is_none()
    }

    pub(crate) fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Bulkhead => self.bulkhead.is_some(),
            Kind::Retry => self.retry.is_some(),
            Kind::CircuitBreaker => self.circuit_breaker.is_some(),
            Kind::Timeout => self.timeout.is_some(),
            Kind::RateLimiter => self.rate_limiter.is_some(),
        }
    }

    /// The attribute with its keys, as parsed from `input`; a parse error
    /// goes to `errors` and returns `false`.
    fn parse(&mut self, kind: Kind, input: Input<'_>, errors: &mut Errors) -> bool {
        fn put<R: Receiver>(slot: &mut Option<R>, input: Input<'_>, errors: &mut Errors) -> bool {
            let parsed = match input {
                Input::Tokens(tokens) => R::from_tokens(tokens),
                Input::Attribute(attr) => R::from_attribute(attr),
            };
            let parsed = errors.attribute(R::ATTRIBUTE, parsed);
            let ok = parsed.is_some();
            *slot = Some(parsed.unwrap_or_default());
            ok
        }
        match kind {
            Kind::Bulkhead => put(&mut self.bulkhead, input, errors),
            Kind::Retry => put(&mut self.retry, input, errors),
            Kind::CircuitBreaker => put(&mut self.circuit_breaker, input, errors),
            Kind::Timeout => put(&mut self.timeout, input, errors),
            Kind::RateLimiter => put(&mut self.rate_limiter, input, errors),
        }
    }
}

/// Where an attribute's keys are read from.
pub(crate) enum Input<'a> {
    /// The arguments of the attribute macro being expanded.
    Tokens(TokenStream),
    /// An attribute on the item.
    Attribute(&'a Attribute),
}

/// The policy attributes found on one method or function.
#[derive(Default)]
pub(crate) struct Annotations {
    /// Each attribute, with the span of its path, in the order found.
    pub(crate) written: Vec<(Kind, Span)>,
    /// What they say.
    parsed: PolicyArgs,
    /// Whether one of them did not parse (its errors are reported).
    failed: bool,
}

impl Annotations {
    /// Adds the attribute `kind` written as `tokens` (for spans) with the
    /// keys in `input`. A second attribute of a kind on `owner` is ATR-002.
    pub(crate) fn add(
        &mut self,
        kind: Kind,
        tokens: &dyn ToTokens,
        input: Input<'_>,
        owner: &Ident,
        errors: &mut Errors,
    ) {
        if self.parsed.has(kind) {
            errors.spanned(
                tokens.to_token_stream(),
                format!(
                    "{}: #[{}] is given twice on `{owner}`; merge the keys into one attribute",
                    codes::MALFORMED,
                    kind.name()
                ),
            );
            return;
        }
        self.written.push((kind, tokens.to_token_stream().span()));
        if !self.parsed.parse(kind, input, errors) {
            self.failed = true;
        }
    }

    /// What the attributes say, if every one of them parsed: an item with
    /// an attribute in error is not wrapped with half its policies.
    pub(crate) fn args(&self) -> Option<&PolicyArgs> {
        (!self.failed).then_some(&self.parsed)
    }

    /// Whether any policy attribute was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// The attributes written, for messages: `#[retry]`, or `#[retry] and
    /// #[bulkhead]`, or `#[a], #[b] and #[c]`.
    pub(crate) fn names(&self) -> String {
        let names: Vec<String> = self
            .written
            .iter()
            .map(|(kind, _)| format!("#[{}]", kind.name()))
            .collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    fn annotations(attrs: Vec<Attribute>) -> (Annotations, Vec<String>) {
        let owner: Ident = parse_quote!(call);
        let mut errors = Errors::default();
        let mut found = Annotations::default();
        for attr in &attrs {
            let kind = Kind::of(attr.path()).unwrap();
            found.add(kind, attr, Input::Attribute(attr), &owner, &mut errors);
        }
        let errors = match errors.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (found, errors)
    }

    #[test]
    fn policy_attributes_are_recognised_by_name_alone_or_from_the_crate() {
        let of = |path: Path| Kind::of(&path);
        assert_eq!(of(parse_quote!(retry)), Some(Kind::Retry));
        assert_eq!(
            of(parse_quote!(bulkhead::circuit_breaker)),
            Some(Kind::CircuitBreaker)
        );
        assert_eq!(of(parse_quote!(::bulkhead::timeout)), Some(Kind::Timeout));
        assert_eq!(of(parse_quote!(bulkhead::bulkhead)), Some(Kind::Bulkhead));
        assert_eq!(
            of(parse_quote!(ntest::timeout)),
            None,
            "another crate's attribute"
        );
        assert_eq!(of(parse_quote!(doc)), None);
    }

    #[test]
    fn every_attribute_parses_and_a_repeated_one_is_atr_002() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_attempts = 2)]),
            parse_quote!(#[bulkhead]),
            parse_quote!(#[timeout(duration = "1s")]),
            parse_quote!(#[retry]),
        ]);
        assert_eq!(
            errors,
            ["ATR-002: #[retry] is given twice on `call`; merge the keys into one attribute"]
        );
        assert_eq!(found.names(), "#[retry], #[bulkhead] and #[timeout]");
        let args = found.args().unwrap();
        assert_eq!(
            args.retry
                .as_ref()
                .unwrap()
                .max_attempts
                .as_ref()
                .unwrap()
                .value
                .0,
            2
        );
        assert!(args.bulkhead.is_some() && args.circuit_breaker.is_none());
        assert!(!args.only_bulkhead());
    }

    #[test]
    fn one_attribute_in_error_leaves_the_item_unwrapped_and_every_error_is_reported() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_attempts = 0, jiter = 0.5)]),
            parse_quote!(#[circuit_breaker(sliding_window = "counted", ignore_on = [Busy])]),
            parse_quote!(#[rate_limiter(refresh_period = "0s")]),
        ]);
        assert!(found.args().is_none());
        assert_eq!(errors.len(), 5, "{errors:#?}");
        assert!(
            errors[0].starts_with("ATR-008: max_attempts"),
            "{}",
            errors[0]
        );
        assert_eq!(
            errors[1],
            "ATR-002: unknown key `jiter` in #[retry]; did you mean `jitter`?"
        );
        assert!(
            errors[2].starts_with("ATR-010: sliding_window"),
            "{}",
            errors[2]
        );
        assert!(
            errors[3].starts_with("ATR-009: ignore_on lists `Busy`"),
            "{}",
            errors[3]
        );
        assert!(errors[4].starts_with("ATR-008: refresh_period must be longer than zero"));
    }

    #[test]
    fn zero_waits_and_caps_and_a_jitter_of_one_are_atr_008() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(max_wait_interval = "0ms", jitter = 1)]),
            parse_quote!(#[circuit_breaker(wait_in_open = "0", slow_call_threshold = "0s")]),
        ]);
        assert!(found.args().is_none());
        assert_eq!(
            errors,
            [
                "ATR-008: max_wait_interval must be longer than zero, got \"0ms\"",
                "ATR-008: jitter must be at least 0 and less than 1, got 1",
                "ATR-008: wait_in_open must be longer than zero, got \"0\"",
                "ATR-008: slow_call_threshold must be longer than zero, got \"0s\"",
            ]
        );
    }

    #[test]
    fn every_key_of_every_policy_parses() {
        let (found, errors) = annotations(vec![
            parse_quote!(#[retry(name = "r", config = "c", max_attempts = 5, wait = "100ms",
                backoff_multiplier = 2.0, max_wait_interval = "10s", jitter = 0.5,
                retry_if = errors::is_transient, abort_on = [BulkheadFull, Timeout])]),
            parse_quote!(#[circuit_breaker(name = "b", config = "c", failure_rate_threshold = 25,
                sliding_window = "time", sliding_window_size = 60, minimum_calls = 10,
                wait_in_open = "30s", permitted_calls_in_half_open = 2,
                slow_call_threshold = "2s", slow_call_rate_threshold = 80.5,
                record_if = is_failure, ignore_on = [BulkheadFull])]),
            parse_quote!(#[timeout(name = "t", config = "c", duration = "250ms")]),
            parse_quote!(#[rate_limiter(name = "l", config = "c", limit_for_period = 10,
                refresh_period = "1s", max_wait = "0")]),
        ]);
        assert_eq!(errors, Vec::<String>::new());
        let args = found.args().unwrap();
        let retry = args.retry.as_ref().unwrap();
        assert_eq!(
            retry.abort_on.as_ref().unwrap().0,
            ["BulkheadFull", "Timeout"]
        );
        assert_eq!(retry.jitter.as_ref().unwrap().value.0, 0.5);
        let breaker = args.circuit_breaker.as_ref().unwrap();
        assert_eq!(breaker.sliding_window.as_ref().unwrap().value, Window::Time);
        assert_eq!(
            breaker.slow_call_rate_threshold.as_ref().unwrap().value.0,
            80.5
        );
        assert_eq!(
            args.rate_limiter
                .as_ref()
                .unwrap()
                .max_wait
                .as_ref()
                .unwrap()
                .value,
            std::time::Duration::ZERO
        );
    }

    #[test]
    fn a_bare_literal_says_how_to_write_the_keys_of_that_attribute() {
        let errors = match RetryArgs::from_tokens(quote!(3)) {
            Err(e) => crate::attr::coded(e, "retry").to_string(),
            Ok(_) => panic!("a bare literal"),
        };
        assert_eq!(
            errors,
            "ATR-002: #[retry] takes `key = value` pairs, not bare literals, as in #[retry(max_attempts = 3)]"
        );
    }
}
