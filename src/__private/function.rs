//! What a function with a body calls: the `static` its policies are kept
//! in ([`FnPolicy`], [`MethodPolicy`]) and their declaration, as the
//! generators write it today ([`FnDecl`], [`PoliciesDecl`]): shims over
//! [`PolicySpecs`], which `FnPolicy::get` and `MethodPolicy::get` take
//! directly.

use bulkhead_core::BulkheadConfigBuilder;
use bulkhead_registry::PolicySpecs;

pub use bulkhead_registry::{FnPolicy, MethodPolicy};

/// The declaration of a function whose only policy is `#[bulkhead]`: its
/// [`PolicySpecs`] with that bulkhead.
#[derive(Debug)]
pub struct FnDecl(PolicySpecs);

impl FnDecl {
    /// The bulkhead of the function `source` (its instance id unless
    /// `name` is given), with the attribute's explicit values in `spec`.
    #[inline]
    pub fn new(name: Option<&'static str>, source: String, spec: BulkheadConfigBuilder) -> Self {
        FnDecl(PolicySpecs::new(source).bulkhead(name, spec))
    }

    /// The bulkhead of `method` (`name(param types)`) of `self_type`; see
    /// [`PolicySpecs::method`].
    #[inline]
    pub fn method(
        name: Option<&'static str>,
        self_type: &str,
        method: &str,
        spec: BulkheadConfigBuilder,
    ) -> Self {
        FnDecl(PolicySpecs::method(self_type, method).bulkhead(name, spec))
    }
}

impl From<FnDecl> for PolicySpecs {
    #[inline]
    fn from(declaration: FnDecl) -> Self {
        declaration.0
    }
}

/// The declaration of a function with more than a bulkhead:
/// `PoliciesDecl::new(source)` or `PoliciesDecl::method(self_type,
/// method)`, then one call per policy attribute.
pub type PoliciesDecl = PolicySpecs;
