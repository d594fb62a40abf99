//! The `static`s a function with a body keeps its policies in, made from
//! its [`PolicySpecs`] on its first call: [`FnPolicy`] for a function,
//! [`MethodPolicy`] (one per `Self` type) for a method.
//!
//! A method keeps one set of policies per `Self` type: a `static` in a
//! generic impl or a trait's default method is shared by every type the
//! method runs for, so [`MethodPolicy`] keeps the first type's policies
//! inline (checked with a pointer and string comparison on each call) and
//! the others in a map.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{OnceLock, PoisonError, RwLock};

use super::policy::FunctionPolicy;
use crate::registry::Registry;
use crate::specs::PolicySpecs;

/// The policy `specs` declare, from [`Registry::global`].
fn of_global<P: FunctionPolicy>(specs: PolicySpecs) -> P {
    P::of_function(&specs, Registry::global())
}

/// The policy of one function, in a `static` the macro declares in it.
pub struct FnPolicy<P> {
    policy: OnceLock<P>,
}

impl<P> FnPolicy<P> {
    /// No policy yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        FnPolicy {
            policy: OnceLock::new(),
        }
    }
}

impl<P: FunctionPolicy> FnPolicy<P> {
    /// The policy, made from `specs()` on the first call.
    #[inline]
    pub fn get(&'static self, specs: impl FnOnce() -> PolicySpecs) -> &'static P {
        match self.policy.get() {
            Some(policy) => policy,
            None => self.init(specs),
        }
    }

    #[cold]
    #[inline(never)]
    fn init(&'static self, specs: impl FnOnce() -> PolicySpecs) -> &'static P {
        self.policy.get_or_init(|| of_global(specs()))
    }
}

impl<P: fmt::Debug> fmt::Debug for FnPolicy<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPolicy")
            .field("policy", &self.policy.get())
            .finish()
    }
}

/// The policies of one method with a body, one per `Self` type, in a
/// `static` the macro declares in it.
///
/// A method of a non-generic impl only ever runs for one type: its calls
/// load the type name of the first call and compare it with
/// `type_name::<Self>()` (equal pointers, or else equal strings), and use
/// the policy next to it. Only a method of a generic impl, or a trait's
/// default method, runs for several types, and only it ever takes the map:
/// each further type gets its policy once, under a lock, and looks it up in
/// the map (under a read lock) on each call.
pub struct MethodPolicy<P: 'static> {
    first: OnceLock<ForType<P>>,
    others: RwLock<BTreeMap<&'static str, &'static P>>,
}

#[derive(Debug)]
struct ForType<P> {
    type_name: &'static str,
    policy: P,
}

impl<P> ForType<P> {
    #[inline]
    fn is(&self, type_name: &'static str) -> bool {
        std::ptr::eq(self.type_name, type_name) || self.type_name == type_name
    }
}

impl<P: 'static> MethodPolicy<P> {
    /// No policy for any type yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        MethodPolicy {
            first: OnceLock::new(),
            others: RwLock::new(BTreeMap::new()),
        }
    }
}

impl<P: FunctionPolicy> MethodPolicy<P> {
    /// The policy of the method for the type `type_name`, made from
    /// `specs(type_name)` on the first call for that type.
    #[inline]
    pub fn get(
        &'static self,
        type_name: &'static str,
        specs: impl Fn(&'static str) -> PolicySpecs,
    ) -> &'static P {
        self.get_with(type_name, || of_global(specs(type_name)))
    }
}

impl<P: 'static> MethodPolicy<P> {
    /// The value kept for the type `type_name`, made by `make` on the first
    /// call for that type (what [`get`](Self::get) does with a set of
    /// policies; a keyed bulkhead is kept the same way).
    #[inline]
    pub fn get_with(&'static self, type_name: &'static str, make: impl Fn() -> P) -> &'static P {
        match self.first.get() {
            Some(first) if first.is(type_name) => &first.policy,
            _ => self.slow(type_name, make),
        }
    }

    #[cold]
    #[inline(never)]
    fn slow(&'static self, type_name: &'static str, make: impl Fn() -> P) -> &'static P {
        let first = self.first.get_or_init(|| ForType {
            type_name,
            policy: make(),
        });
        if first.is(type_name) {
            return &first.policy;
        }
        let found = self
            .others
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(type_name)
            .copied();
        if let Some(policy) = found {
            return policy;
        }
        let mut others = self.others.write().unwrap_or_else(PoisonError::into_inner);
        others.entry(type_name).or_insert_with(|| {
            // One per type the method runs for, kept for the program's
            // life like the `static` that holds the first.
            Box::leak(Box::new(make()))
        })
    }
}

impl<P: fmt::Debug> fmt::Debug for MethodPolicy<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodPolicy")
            .field("first", &self.first.get())
            .field("others", &self.others.read().map(|m| m.len()).ok())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use bulkhead_core::{Bulkhead, BulkheadConfig};

    use super::*;

    static POLICY: MethodPolicy<Bulkhead> = MethodPolicy::new();

    fn specs(type_name: &'static str) -> PolicySpecs {
        PolicySpecs::method(type_name, "render()").bulkhead(None, BulkheadConfig::builder())
    }

    #[test]
    fn a_method_has_one_bulkhead_per_self_type() {
        let a = POLICY.get("tests::A", specs);
        let b = POLICY.get("tests::B<(u8, u16)>", specs);
        assert_eq!(a.instance(), "tests::A::render()");
        assert_eq!(b.instance(), "tests::B<(u8, u16)>::render()");
        // The same type, named by another string: compared by value.
        let again = POLICY.get(String::from("tests::B<(u8, u16)>").leak(), specs);
        assert!(std::ptr::eq(b, again));
        assert!(std::ptr::eq(a, POLICY.get("tests::A", specs)));
    }

    static FUNCTION: FnPolicy<Bulkhead> = FnPolicy::new();

    #[test]
    fn a_function_resolves_its_policy_once() {
        let first = FUNCTION.get(|| PolicySpecs::new("tests::render()"));
        let again = FUNCTION.get(|| -> PolicySpecs { unreachable!("resolved once") });
        assert!(std::ptr::eq(first, again));
        assert_eq!(first.instance(), "tests::render()");
    }
}
