//! `#[bulkhead]` on functions with a body: each function keeps its bulkhead
//! in a `static`, resolved from [`Registry::global`] on its first call.
//!
//! A method keeps one bulkhead per `Self` type: a `static` in a generic
//! impl or a trait's default method is shared by every type the method runs
//! for, so [`MethodPolicy`] keeps the first type's bulkhead inline (checked
//! with a pointer and string comparison on each call) and the others in a
//! map.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};

use bulkhead_core::{Bulkhead, BulkheadConfigBuilder};
use bulkhead_registry::{Registry, RegistryError};

/// What a function's `#[bulkhead]` declares, made only on its first call.
#[doc(hidden)]
#[derive(Debug)]
pub struct FnDecl {
    name: Option<&'static str>,
    source: String,
    spec: BulkheadConfigBuilder,
}

impl FnDecl {
    /// The declaration of the function `source` (its instance id unless
    /// `name` is given), with the attribute's explicit values in `spec`.
    pub fn new(name: Option<&'static str>, source: String, spec: BulkheadConfigBuilder) -> Self {
        FnDecl { name, source, spec }
    }

    /// The declaration of `method` (`name(param types)`) of `self_type`,
    /// whose source is `<self_type>::<method>`, the type written as
    /// [`std::any::type_name`] writes it.
    pub fn method(
        name: Option<&'static str>,
        self_type: &str,
        method: &str,
        spec: BulkheadConfigBuilder,
    ) -> Self {
        FnDecl::new(name, format!("{self_type}::{method}"), spec)
    }

    fn resolve(self, registry: &Registry) -> Bulkhead {
        let id: Cow<'_, str> = match self.name {
            Some(name) => name.into(),
            None => self.source.as_str().into(),
        };
        match registry.bulkhead_policy(&id, &self.source, &self.spec) {
            Ok(bulkhead) => bulkhead,
            Err(error) => {
                errors().push(error);
                // The attribute's own values were checked at compile time,
                // so building them on the defaults cannot fail.
                let config = self.spec.build().unwrap_or_default();
                Bulkhead::new(&id, config)
            }
        }
    }
}

/// The bulkhead of one function, in a `static` the macro declares in it.
#[doc(hidden)]
pub struct FnPolicy {
    bulkhead: OnceLock<Bulkhead>,
}

impl FnPolicy {
    /// Not resolved yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        FnPolicy {
            bulkhead: OnceLock::new(),
        }
    }

    /// The bulkhead, resolving `declare()` on the first call.
    #[inline]
    pub fn get(&'static self, declare: impl FnOnce() -> FnDecl) -> &'static Bulkhead {
        match self.bulkhead.get() {
            Some(bulkhead) => bulkhead,
            None => self.init(declare),
        }
    }

    #[cold]
    #[inline(never)]
    fn init(&'static self, declare: impl FnOnce() -> FnDecl) -> &'static Bulkhead {
        self.bulkhead
            .get_or_init(|| declare().resolve(Registry::global()))
    }
}

impl fmt::Debug for FnPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPolicy")
            .field("bulkhead", &self.bulkhead.get())
            .finish()
    }
}

/// The bulkheads of one method with a body, one per `Self` type, in a
/// `static` the macro declares in it.
///
/// A method of a non-generic impl only ever runs for one type: its calls
/// load the resolved type name and compare it with `type_name::<Self>()`
/// (equal pointers, or else equal strings), and use the bulkhead next to it.
/// Only a method of a generic impl, or a trait's default method, runs for
/// several types, and only it ever takes the map: each further type is
/// resolved once, under a lock, and looked up in the map (under a read lock)
/// on each call for that type.
#[doc(hidden)]
pub struct MethodPolicy {
    first: OnceLock<ForType>,
    others: RwLock<BTreeMap<&'static str, &'static Bulkhead>>,
}

#[derive(Debug)]
struct ForType {
    type_name: &'static str,
    bulkhead: Bulkhead,
}

impl ForType {
    #[inline]
    fn is(&self, type_name: &'static str) -> bool {
        std::ptr::eq(self.type_name, type_name) || self.type_name == type_name
    }
}

impl MethodPolicy {
    /// Not resolved for any type yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        MethodPolicy {
            first: OnceLock::new(),
            others: RwLock::new(BTreeMap::new()),
        }
    }

    /// The bulkhead of the method for the type `type_name`, resolving
    /// `declare(type_name)` on the first call for that type.
    #[inline]
    pub fn get(
        &'static self,
        type_name: &'static str,
        declare: impl Fn(&'static str) -> FnDecl,
    ) -> &'static Bulkhead {
        match self.first.get() {
            Some(first) if first.is(type_name) => &first.bulkhead,
            _ => self.slow(type_name, declare),
        }
    }

    #[cold]
    #[inline(never)]
    fn slow(
        &'static self,
        type_name: &'static str,
        declare: impl Fn(&'static str) -> FnDecl,
    ) -> &'static Bulkhead {
        let first = self.first.get_or_init(|| ForType {
            type_name,
            bulkhead: declare(type_name).resolve(Registry::global()),
        });
        if first.is(type_name) {
            return &first.bulkhead;
        }
        let found = self
            .others
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(type_name)
            .copied();
        if let Some(bulkhead) = found {
            return bulkhead;
        }
        let mut others = self.others.write().unwrap_or_else(PoisonError::into_inner);
        others.entry(type_name).or_insert_with(|| {
            // One per type the method runs for, kept for the program's
            // life like the `static` that holds the first.
            Box::leak(Box::new(declare(type_name).resolve(Registry::global())))
        })
    }
}

impl fmt::Debug for MethodPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodPolicy")
            .field("first", &self.first.get())
            .field("others", &self.others.read().map(|m| m.len()).ok())
            .finish()
    }
}

static ERRORS: Mutex<Vec<RegistryError>> = Mutex::new(Vec::new());

fn errors() -> std::sync::MutexGuard<'static, Vec<RegistryError>> {
    ERRORS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The errors met so far resolving the bulkheads of functions with a body
/// (`#[bulkhead]` outside a `#[resilient]` trait) from
/// [`Registry::global`].
///
/// Such a function resolves its bulkhead on its first call and cannot return
/// a registry error from it. If resolution fails (REG-004: its `config` is
/// not defined in the global registry; REG-008: it shares a `name` with a
/// differently configured bulkhead), the function still runs, under a
/// bulkhead of its own built from the attribute's values over the built-in
/// defaults and left out of the registry, and the error is kept here. Check
/// this list at startup after a first call, or in a test.
///
/// # Examples
///
/// ```
/// use bulkhead::{bulkhead, Rejection};
///
/// #[bulkhead(config = "no-such-config")]
/// fn render() -> Result<(), Rejection> {
///     Ok(())
/// }
///
/// assert!(render().is_ok()); // runs, on a fallback bulkhead
/// let errors = bulkhead::function_policy_errors();
/// assert_eq!(errors[0].code(), "REG-004");
/// ```
pub fn function_policy_errors() -> Vec<RegistryError> {
    errors().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    static POLICY: MethodPolicy = MethodPolicy::new();

    fn declare(type_name: &'static str) -> FnDecl {
        FnDecl::method(
            None,
            type_name,
            "render()",
            BulkheadConfigBuilder::default(),
        )
    }

    #[test]
    fn a_method_has_one_bulkhead_per_self_type() {
        let a = POLICY.get("tests::A", declare);
        let b = POLICY.get("tests::B<(u8, u16)>", declare);
        assert_eq!(a.instance(), "tests::A::render()");
        assert_eq!(b.instance(), "tests::B<(u8, u16)>::render()");
        // The same type, named by another string: compared by value.
        let again = POLICY.get(String::from("tests::B<(u8, u16)>").leak(), declare);
        assert!(std::ptr::eq(b, again));
        assert!(std::ptr::eq(a, POLICY.get("tests::A", declare)));
    }
}
