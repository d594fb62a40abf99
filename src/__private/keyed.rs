//! A keyed bulkhead: what a method or function whose `#[bulkhead(..,
//! key = tenant)]` names a parameter calls. A wrapper's `new` gets the
//! bulkhead from [`keyed_bulkhead`], the one place generated code reaches
//! the registry for it, and a function with a body through the `static`
//! it keeps it in ([`KeyedFn`]), from [`Registry::global`]; each call
//! takes a slot of its argument's key with [`enter_keyed`] or
//! [`enter_keyed_async`], a rejection being its result.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bulkhead_core::{
    BulkheadConfigBuilder, BulkheadPermit, CallError, Classifier, ErrorPredicate, KeyedBulkhead,
    Policies, PolicyContext, Pushback,
};
use bulkhead_registry::{BulkheadKey, MethodPolicy, Registry, RegistryError};

use super::reject::Reject;

/// The types a keyed bulkhead's key may have: what a call's argument is
/// kept as (the parameter's type, or `Q::Owned` for a parameter `&Q`).
///
/// Every item here bounds the key type by it, and generated code names the
/// key type with the parameter's span, so that a key that cannot be kept
/// is reported with ATR-021 at the parameter's type.
#[diagnostic::on_unimplemented(
    message = "ATR-021: `{Self}` cannot key a keyed bulkhead: a key must be `Hash + Eq + Clone + FromStr + Display + Debug + Send + Sync + 'static`",
    label = "the key of `#[bulkhead(key = ..)]`: it must be `Hash + Eq + Clone + FromStr + Display + Debug + Send + Sync + 'static` (configuration names keys, snapshots show them)"
)]
pub trait KeyType: BulkheadKey {}

#[diagnostic::do_not_recommend]
impl<K: BulkheadKey> KeyType for K {}

/// What a call passes to enter a keyed bulkhead of keys `K`: `K` itself,
/// or what `K` borrows as (`str` for `String`). Its message is
/// [`KeyType`]'s: a parameter `&Q` whose `Q` cannot key is reported with
/// the same ATR-021.
#[diagnostic::on_unimplemented(
    message = "ATR-021: `{Self}` cannot key a keyed bulkhead: a key must be `Hash + Eq + Clone + FromStr + Display + Debug + Send + Sync + 'static`",
    label = "the key of `#[bulkhead(key = ..)]`: it must be `Hash + Eq + Clone + FromStr + Display + Debug + Send + Sync + 'static` (configuration names keys, snapshots show them)"
)]
pub trait KeyOf<K>: Hash + Eq + ToOwned<Owned = K> {}

#[diagnostic::do_not_recommend]
impl<K, Q: Hash + Eq + ToOwned<Owned = K> + ?Sized> KeyOf<K> for Q {}

/// The keyed bulkhead `id` of the wrapper of the method `source`, its
/// configuration `spec` (the attribute's values) laid under the
/// registry's configuration of bulkhead `id` (`[bulkhead.instances.<id>]`
/// with its `keys."<key>"`, a named `config`, the `default` one), as every
/// policy's: the registry's keyed bulkhead `id`, shared by every wrapper
/// that declares it alike, listed, reloaded and publishing its events.
///
/// # Errors
///
/// As [`Registry::keyed_bulkhead_builder`]: REG-004 for a `config` the
/// registry does not have, REG-008 if keyed bulkhead `id` exists with
/// another configuration, REG-018 if `id` is a plain bulkhead (or keyed by
/// another type), the ATR code of a configured value out of range.
pub fn keyed_bulkhead<K: KeyType>(
    registry: &Registry,
    id: &str,
    source: &str,
    spec: &BulkheadConfigBuilder,
) -> Result<KeyedBulkhead<K>, RegistryError> {
    registry
        .keyed_bulkhead_builder::<K>(id)
        .configure(|_| spec.clone())
        .source(source)
        .build()
}

/// [`KeyedBulkhead::enter`] with the key `key` (blocking up to
/// `max_wait`), a rejection being given as the method's result. The
/// permit borrows the bulkhead only: the argument the key was borrowed
/// from moves into the call.
///
/// # Errors
///
/// The rejected call's result.
#[inline]
pub fn enter_keyed<'b, K, Q, R>(
    keyed: &'b KeyedBulkhead<K>,
    key: &Q,
    reject: Reject<R>,
) -> Result<BulkheadPermit<'b>, R>
where
    K: KeyType + Borrow<Q>,
    Q: KeyOf<K> + ?Sized,
{
    keyed.enter(key).map_err(|full| reject.reject(full))
}

/// [`KeyedBulkhead::enter_async`] with the key `key` (waiting up to
/// `max_wait`), a rejection being given as the method's result.
///
/// # Errors
///
/// The rejected call's result.
pub async fn enter_keyed_async<'a, K, Q, R>(
    keyed: &'a KeyedBulkhead<K>,
    key: &'a Q,
    reject: Reject<R>,
) -> Result<BulkheadPermit<'a>, R>
where
    K: KeyType + Borrow<Q>,
    Q: KeyOf<K> + ?Sized,
{
    keyed
        .enter_async(key)
        .await
        .map_err(|full| reject.reject(full))
}

/// The keyed bulkhead of a function with a body, in a `static` the macro
/// declares in it: made by its first call, from [`Registry::global`].
pub struct KeyedFn<K> {
    bulkhead: OnceLock<KeyedBulkhead<K>>,
}

impl<K> KeyedFn<K> {
    /// No bulkhead yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        KeyedFn {
            bulkhead: OnceLock::new(),
        }
    }
}

impl<K: KeyType> KeyedFn<K> {
    /// The keyed bulkhead `id` of the function `source`, made from its
    /// attribute's values `spec()` on the first call.
    ///
    /// If the global registry refuses it (a `config` it does not have, a
    /// bulkhead `id` of another configuration), the function runs under
    /// a keyed bulkhead of the attribute's values alone, as a function's
    /// other policies do.
    #[inline]
    pub fn get(
        &'static self,
        id: &str,
        source: &str,
        spec: impl FnOnce() -> BulkheadConfigBuilder,
    ) -> &'static KeyedBulkhead<K> {
        self.bulkhead.get_or_init(|| of_global(id, source, spec()))
    }
}

/// The keyed bulkhead `id` of the function or method `source`, of the
/// attribute's values `spec`, from [`Registry::global`]; if the registry
/// refuses it, one of the attribute's values alone, outside it.
fn of_global<K: KeyType>(id: &str, source: &str, spec: BulkheadConfigBuilder) -> KeyedBulkhead<K> {
    let registry = Registry::global();
    // Not kept for `Registry::function_policy_errors` (as a function's
    // other policies' errors are): a known gap.
    keyed_bulkhead(registry, id, source, &spec).unwrap_or_else(|_| {
        let context = PolicyContext::new(Arc::clone(registry.clock()));
        // An attribute's values were checked when it compiled.
        KeyedBulkhead::with_context(id, spec.build().unwrap_or_default(), context)
    })
}

/// The keyed bulkheads of a method with a body, one per `Self` type (as
/// `MethodPolicy` keeps a method's other policies), in a `static` the
/// macro declares in it: each made by the first call for its type, from
/// [`Registry::global`], its id the attribute's `name` or
/// `<SelfType>::<method>(<param types>)`.
///
/// A `MethodPolicy` of keyed bulkheads: the first type's is kept inline
/// (its type name compared on each call, by pointer then by value), the
/// others in a map.
pub struct KeyedMethod<K: 'static>(MethodPolicy<KeyedBulkhead<K>>);

impl<K> KeyedMethod<K> {
    /// No bulkhead for any type yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        KeyedMethod(MethodPolicy::new())
    }
}

impl<K: KeyType> KeyedMethod<K> {
    /// The keyed bulkhead of the method `method` (its name and parameter
    /// types) for the type `type_name`, `name` if the attribute gives one,
    /// made from its attribute's values `spec()` on the first call for
    /// that type.
    ///
    /// If the global registry refuses it, the method runs under a keyed
    /// bulkhead of the attribute's values alone (see [`KeyedFn::get`]).
    #[inline]
    pub fn get(
        &'static self,
        type_name: &'static str,
        name: Option<&str>,
        method: &str,
        spec: impl Fn() -> BulkheadConfigBuilder,
    ) -> &'static KeyedBulkhead<K> {
        self.0.get_with(type_name, || {
            let source = format!("{type_name}::{method}");
            of_global(name.unwrap_or(&source), &source, spec())
        })
    }
}

impl<K> fmt::Debug for KeyedMethod<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("KeyedMethod").field(&self.0).finish()
    }
}

impl<K> fmt::Debug for KeyedFn<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedFn")
            .field("bulkhead", &self.bulkhead.get())
            .finish()
    }
}

/// The policies of a wrapper's method whose keyed bulkhead composes with
/// others (`#[retry]`, `#[circuit_breaker]`, ..), in one field: the other
/// policies, built without a bulkhead, and the keyed bulkhead, which each
/// attempt enters innermost for its argument's key ([`call_keyed`],
/// [`call_keyed_async`], [`call_keyed_hedged`]), as
/// `bulkhead_registry::KeyedPipeline` does. (A function with a body keeps
/// them in two `static`s.)
#[derive(Clone)]
pub struct KeyedPolicies<K> {
    policies: Policies,
    keyed: KeyedBulkhead<K>,
}

impl<K> KeyedPolicies<K> {
    /// The keyed bulkhead `keyed` under the other `policies`.
    #[inline]
    pub fn new(keyed: KeyedBulkhead<K>, policies: Policies) -> Self {
        KeyedPolicies { policies, keyed }
    }

    /// The other policies (the fallback asks them).
    #[inline]
    pub fn policies(&self) -> &Policies {
        &self.policies
    }

    /// The keyed bulkhead.
    #[inline]
    pub fn keyed(&self) -> &KeyedBulkhead<K> {
        &self.keyed
    }
}

impl<K> fmt::Debug for KeyedPolicies<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPolicies")
            .field("policies", &self.policies)
            .field("keyed", &self.keyed)
            .finish()
    }
}

/// The method's `retry_if` and `record_if` over its own errors `E`, and
/// whether `E`'s `Pushback` is read, for a call whose keyed bulkhead
/// composes with other policies: the classifier the policies are given is
/// made from them inside the call ([`call_keyed`]), as it judges a keyed
/// bulkhead's refusals too.
pub struct KeyedClassify<'a, E> {
    retry_if: Option<ErrorPredicate<'a, E>>,
    record_if: Option<ErrorPredicate<'a, E>>,
    /// `E`'s `Pushback::retry_after` read through the keyed call's errors.
    retry_after: Option<RetryAfter<E>>,
}

/// When a keyed call's error says it may be tried again.
type RetryAfter<E> = fn(&CallError<E>) -> Option<Duration>;

impl<'a, E> KeyedClassify<'a, E> {
    /// Every error of the call is retried and recorded as a failure.
    #[inline(always)]
    pub const fn new() -> Self {
        KeyedClassify {
            retry_if: None,
            record_if: None,
            retry_after: None,
        }
    }

    /// Lets the retry read when each of the call's errors says it may be
    /// tried again (`Pushback::retry_after`), as `Classifier::pushback`.
    #[inline(always)]
    #[must_use]
    pub const fn pushback(mut self) -> Self
    where
        E: Pushback,
    {
        self.retry_after = Some(retry_after_of::<E>);
        self
    }

    /// The classifier of the keyed call's errors, with `retries` and
    /// `records`, made by [`retries`](Self::retries) and
    /// [`records`](Self::records).
    #[inline(always)]
    fn classifier<'c>(
        &self,
        retries: &'c (dyn Fn(&CallError<E>) -> bool + Send + Sync),
        records: &'c (dyn Fn(&CallError<E>) -> bool + Send + Sync),
    ) -> Classifier<'c, CallError<E>> {
        let classifier = Classifier::new()
            .retry_if(retries)
            .record_if(records)
            .refused_inside(refused_inside::<E>);
        match self.retry_after {
            Some(after) => classifier.retry_after_with(after),
            None => classifier,
        }
    }

    /// Retries only the call's errors `predicate` accepts.
    #[inline(always)]
    #[must_use]
    pub const fn retry_if(mut self, predicate: ErrorPredicate<'a, E>) -> Self {
        self.retry_if = Some(predicate);
        self
    }

    /// Records as failures only the call's errors `predicate` accepts.
    #[inline(always)]
    #[must_use]
    pub const fn record_if(mut self, predicate: ErrorPredicate<'a, E>) -> Self {
        self.record_if = Some(predicate);
        self
    }

    /// [`retries`](Self::retries) and [`records`](Self::records) under
    /// `policies`, for [`classifier`](Self::classifier).
    #[inline(always)]
    fn judges<'s>(
        &'s self,
        policies: &'s Policies,
    ) -> (
        impl Fn(&CallError<E>) -> bool + Send + Sync + 's,
        impl Fn(&CallError<E>) -> bool + Send + Sync + 's,
    ) {
        (
            move |error: &CallError<E>| self.retries(policies, error),
            move |error: &CallError<E>| self.records(policies, error),
        )
    }

    /// Whether the retry tries again after `error`: the call's own errors
    /// as `retry_if` says, a policy's refusal (the keyed bulkhead's) unless
    /// the retry's `abort_on` lists its kind.
    fn retries(&self, policies: &Policies, error: &CallError<E>) -> bool {
        match error {
            CallError::Inner(error) => self.retry_if.is_none_or(|p| p(error)),
            CallError::Rejected(rejection) => policies.retries_rejection(rejection),
        }
    }

    /// Whether the breaker records `error` as a failure: the call's own
    /// errors as `record_if` says, a policy's refusal unless the breaker's
    /// `ignore_on` lists its kind.
    fn records(&self, policies: &Policies, error: &CallError<E>) -> bool {
        match error {
            CallError::Inner(error) => self.record_if.is_none_or(|p| p(error)),
            CallError::Rejected(rejection) => policies.records_rejection(rejection),
        }
    }
}

/// `E`'s `Pushback::retry_after` of a call's own error, nothing of a
/// policy's refusal.
fn retry_after_of<E: Pushback>(error: &CallError<E>) -> Option<Duration> {
    match error {
        CallError::Inner(error) => error.retry_after(),
        CallError::Rejected(_) => None,
    }
}

impl<E> Default for KeyedClassify<'_, E> {
    fn default() -> Self {
        KeyedClassify::new()
    }
}

impl<E> Clone for KeyedClassify<'_, E> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for KeyedClassify<'_, E> {}

impl<E> fmt::Debug for KeyedClassify<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedClassify")
            .field("retry_if", &self.retry_if.is_some())
            .field("record_if", &self.record_if.is_some())
            .field("pushback", &self.retry_after.is_some())
            .finish()
    }
}

/// A call under `policies` whose each attempt takes a slot of `key` in
/// `keyed` (waiting up to its `max_wait`), innermost, and
/// holds it while `attempt` runs: a refusal is the keyed bulkhead's
/// `Rejection::BulkheadFull`, which the other policies see as a plain
/// bulkhead's (retried unless `abort_on` lists it, recorded unless
/// `ignore_on` does), and the call's result if the last attempt's.
///
/// # Errors
///
/// [`CallError::Rejected`] if a policy (the keyed bulkhead included)
/// refused the last attempt, [`CallError::Inner`] if it ran and failed.
#[inline]
pub fn call_keyed<K, Q, T, E, F>(
    policies: &Policies,
    keyed: &KeyedBulkhead<K>,
    key: &Q,
    classify: &KeyedClassify<'_, E>,
    mut attempt: F,
) -> Result<T, CallError<E>>
where
    K: KeyType + Borrow<Q>,
    Q: KeyOf<K> + ?Sized,
    F: FnMut() -> Result<T, E>,
{
    let (retries, records) = classify.judges(policies);
    let classifier = classify.classifier(&retries, &records);
    policies
        .call(&classifier, || keyed.hold(key, &mut attempt))
        .map_err(CallError::flatten)
}

/// As [`call_keyed`], without blocking a thread: each attempt's future
/// (made by `attempt`) waits for a slot of `key` with
/// `KeyedBulkhead::enter_async`, then runs holding it. One attempt at a
/// time (see [`call_keyed_hedged`]).
///
/// # Errors
///
/// As for [`call_keyed`].
pub async fn call_keyed_async<K, Q, T, E, F, Fut>(
    policies: &Policies,
    keyed: &KeyedBulkhead<K>,
    key: &Q,
    classify: &KeyedClassify<'_, E>,
    attempt: &mut F,
) -> Result<T, CallError<E>>
where
    K: KeyType + Borrow<Q>,
    Q: KeyOf<K> + ?Sized,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let (retries, records) = classify.judges(policies);
    let classifier = classify.classifier(&retries, &records);
    policies
        .call_async(&classifier, || keyed.hold_async(key, attempt()))
        .await
        .map_err(CallError::flatten)
}

/// As [`call_keyed_async`], with the policies' hedge: each hedged attempt
/// takes a slot of `key` on its own.
///
/// # Errors
///
/// As for [`call_keyed`].
pub async fn call_keyed_hedged<K, Q, T, E, F, Fut>(
    policies: &Policies,
    keyed: &KeyedBulkhead<K>,
    key: &Q,
    classify: &KeyedClassify<'_, E>,
    attempt: &mut F,
) -> Result<T, CallError<E>>
where
    K: KeyType + Borrow<Q>,
    Q: KeyOf<K> + ?Sized,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let (retries, records) = classify.judges(policies);
    let classifier = classify.classifier(&retries, &records);
    policies
        .call_hedged(&classifier, || keyed.hold_async(key, attempt()))
        .await
        .map_err(CallError::flatten)
}

/// A key's refusal, which the other policies see as the call's own error:
/// for the histograms' outcome labels (`bulkhead_full`, not `error`).
fn refused_inside<E>(error: &CallError<E>) -> Option<bulkhead_core::RejectionKind> {
    error.rejection().map(bulkhead_core::Rejection::kind)
}
