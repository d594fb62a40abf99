//! The config builders generated code passes to the registry: one per
//! policy attribute, holding only the values the attribute gives (the
//! registry lays them over the named configuration). Each value keeps the
//! span of the literal it was written as.

use std::time::Duration;

use proc_macro2::{Literal, Span, TokenStream};
use quote::{ToTokens as _, quote, quote_spanned};

use crate::attr::{BulkheadArgs, Value};
use crate::policies::{CircuitBreakerArgs, RateLimiterArgs, RetryArgs, TimeoutArgs};
use crate::values::{Kinds, Predicate, Window};

/// `.config("name")`, if the attribute names one.
fn config(config: &Option<Value<String>>) -> Option<TokenStream> {
    config.as_ref().map(|c| {
        let name = &c.value;
        quote_spanned!(c.span=> .config(#name))
    })
}

/// `.key(value)` for a value written in the attribute, made by `tokens`.
fn set<T>(
    key: &str,
    value: &Option<Value<T>>,
    tokens: impl Fn(&T) -> TokenStream,
) -> Option<TokenStream> {
    value.as_ref().map(|v| {
        let method = syn::Ident::new(key, v.span);
        let value = tokens(&v.value);
        quote_spanned!(v.span=> .#method(#value))
    })
}

/// `Duration::new(secs, nanos)`.
fn duration(value: &Duration) -> TokenStream {
    let secs = value.as_secs();
    let nanos = value.subsec_nanos();
    quote!(::bulkhead::__private::Duration::new(#secs, #nanos))
}

/// `.key([RejectionKind::A, ..])`, for `abort_on` / `ignore_on`.
fn kinds(key: &str, kinds: &Option<Kinds>) -> Option<TokenStream> {
    kinds.as_ref().map(|kinds| {
        let method = syn::Ident::new(key, Span::call_site());
        let kinds = kinds
            .0
            .iter()
            .map(|kind| syn::Ident::new(kind, Span::call_site()));
        quote!(.#method([#(::bulkhead::__private::RejectionKind::#kinds),*]))
    })
}

/// The bulkhead's builder.
pub(crate) fn bulkhead(args: &BulkheadArgs) -> TokenStream {
    let config = config(&args.config);
    let max_concurrent = set("max_concurrent", &args.max_concurrent, |v| quote!(#v));
    let max_wait = set("max_wait", &args.max_wait, duration);
    let enabled = set("enabled", &args.enabled, |v| quote!(#v));
    let resource = set("resource", &args.resource, |v| quote!(#v));
    quote! {
        ::bulkhead::__private::BulkheadConfig::builder()
            #config #max_concurrent #max_wait #enabled #resource
    }
}

/// The retry's builder (`retry_if` is not part of it: see [`predicate`]).
pub(crate) fn retry(args: &RetryArgs) -> TokenStream {
    let config = config(&args.config);
    let max_attempts = set("max_attempts", &args.max_attempts, |v| {
        let n = v.0;
        quote!(#n)
    });
    let wait = set("wait", &args.wait, duration);
    let backoff = set("backoff_multiplier", &args.backoff_multiplier, |v| {
        Literal::f64_suffixed(v.0).into_token_stream()
    });
    let cap = set("max_wait_interval", &args.max_wait_interval, |v| {
        duration(&v.0)
    });
    let jitter = set("jitter", &args.jitter, |v| {
        Literal::f64_suffixed(v.0).into_token_stream()
    });
    let abort_on = kinds("abort_on", &args.abort_on);
    quote! {
        ::bulkhead::__private::RetryConfig::builder()
            #config #max_attempts #wait #backoff #cap #jitter #abort_on
    }
}

/// The circuit breaker's builder (`record_if` is not part of it).
pub(crate) fn circuit_breaker(args: &CircuitBreakerArgs) -> TokenStream {
    let percent = |v: &crate::values::Percent| Literal::f32_suffixed(v.0).into_token_stream();
    let count = |v: &crate::values::AtLeastOne| {
        let n = v.0;
        quote!(#n)
    };
    let config = config(&args.config);
    let failure_rate = set(
        "failure_rate_threshold",
        &args.failure_rate_threshold,
        percent,
    );
    let window = set("sliding_window", &args.sliding_window, |w| match w {
        Window::Count => quote!(::bulkhead::__private::SlidingWindow::Count),
        Window::Time => quote!(::bulkhead::__private::SlidingWindow::Time),
    });
    let size = set("sliding_window_size", &args.sliding_window_size, |v| {
        let n = v.0;
        quote!(#n)
    });
    let minimum = set("minimum_calls", &args.minimum_calls, count);
    let wait_in_open = set("wait_in_open", &args.wait_in_open, |v| duration(&v.0));
    let half_open = set(
        "permitted_calls_in_half_open",
        &args.permitted_calls_in_half_open,
        count,
    );
    let slow = set("slow_call_threshold", &args.slow_call_threshold, |v| {
        duration(&v.0)
    });
    let slow_rate = set(
        "slow_call_rate_threshold",
        &args.slow_call_rate_threshold,
        percent,
    );
    let ignore_on = kinds("ignore_on", &args.ignore_on);
    quote! {
        ::bulkhead::__private::CircuitBreakerConfig::builder()
            #config #failure_rate #window #size #minimum #wait_in_open #half_open
            #slow #slow_rate #ignore_on
    }
}

/// The timeout's builder.
pub(crate) fn timeout(args: &TimeoutArgs) -> TokenStream {
    let config = config(&args.config);
    let duration = set("duration", &args.duration, |v| duration(&v.0));
    quote! {
        ::bulkhead::__private::TimeoutConfig::builder() #config #duration
    }
}

/// The rate limiter's builder.
pub(crate) fn rate_limiter(args: &RateLimiterArgs) -> TokenStream {
    let config = config(&args.config);
    let limit = set("limit_for_period", &args.limit_for_period, |v| {
        let n = v.0;
        quote!(#n)
    });
    let refresh = set("refresh_period", &args.refresh_period, |v| duration(&v.0));
    let max_wait = set("max_wait", &args.max_wait, duration);
    quote! {
        ::bulkhead::__private::RateLimiterConfig::builder() #config #limit #refresh #max_wait
    }
}

/// The path of a `retry_if` / `record_if` function, as written.
pub(crate) fn predicate(value: &Option<Value<Predicate>>) -> Option<&syn::ExprPath> {
    value.as_ref().map(|v| &v.value.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::Receiver;

    #[test]
    fn only_the_keys_written_are_set() {
        let args = RetryArgs::from_tokens(quote!(
            max_attempts = 2,
            jitter = 0.25,
            abort_on = [Timeout]
        ))
        .unwrap();
        let out = retry(&args).to_string();
        assert_eq!(
            out,
            ":: bulkhead :: __private :: RetryConfig :: builder () . max_attempts (2u32) . jitter (0.25f64) . abort_on ([:: bulkhead :: __private :: RejectionKind :: Timeout])"
        );
        let args = CircuitBreakerArgs::from_tokens(quote!(
            sliding_window = "time",
            failure_rate_threshold = 20,
            ignore_on = []
        ))
        .unwrap();
        let out = circuit_breaker(&args).to_string();
        assert!(out.contains(". failure_rate_threshold (20f32)"), "{out}");
        assert!(
            out.contains(". sliding_window (:: bulkhead :: __private :: SlidingWindow :: Time)"),
            "{out}"
        );
        assert!(out.contains(". ignore_on ([])"), "{out}");
        let args = TimeoutArgs::from_tokens(quote!(duration = "1500ms")).unwrap();
        assert_eq!(
            timeout(&args).to_string(),
            ":: bulkhead :: __private :: TimeoutConfig :: builder () . duration (:: bulkhead :: __private :: Duration :: new (1u64 , 500000000u32))"
        );
    }
}
