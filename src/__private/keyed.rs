//! A keyed bulkhead: what a method or function whose `#[bulkhead(..,
//! key = tenant)]` names a parameter calls. A wrapper's `new` gets the
//! bulkhead from [`keyed_bulkhead`], the one place generated code reaches
//! the registry for it, and a function with a body through the `static`
//! it keeps it in ([`KeyedFn`]), from [`Registry::global`]; each call
//! takes a slot of its argument's key with [`enter_keyed`] or
//! [`enter_keyed_async`], a rejection being its result.

use std::borrow::Borrow;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, OnceLock};

use bulkhead_core::{BulkheadConfigBuilder, BulkheadPermit, KeyedBulkhead, PolicyContext};
use bulkhead_registry::{BulkheadKey, Registry, RegistryError};

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
        self.bulkhead.get_or_init(|| {
            let spec = spec();
            let registry = Registry::global();
            // Not kept for `Registry::function_policy_errors` (as a
            // function's other policies' errors are): a known gap.
            keyed_bulkhead(registry, id, source, &spec).unwrap_or_else(|_| {
                let context = PolicyContext::new(Arc::clone(registry.clock()));
                // An attribute's values were checked when it compiled.
                KeyedBulkhead::with_context(id, spec.build().unwrap_or_default(), context)
            })
        })
    }
}

impl<K> fmt::Debug for KeyedFn<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedFn")
            .field("bulkhead", &self.bulkhead.get())
            .finish()
    }
}
