//! How the generated code declares the policies of a method or function to
//! the registry: each policy's config builder ([`builder`]), holding only the
//! values the attribute gives (the registry lays them over the named
//! configuration), and [`declaration`], the one function that writes the
//! registry calls declaring a set of policies, wherever it is declared
//! ([`Site`]), with the type they give ([`declared_type`]): in a wrapper's
//! `new`, within a [`batch`], or in a function's static ([`in_static`]).
//! Every call the generated code makes to the registry is written here
//! (the wrapper's `new` only names `Registry` and `RegistryError` in its
//! signature).
//!
//! The registry names its declaration methods after the attributes
//! (`.retry(..)`, `.with_retry(..)`), so that a policy needs nothing here.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{Ident, Signature};

use crate::ids;
use crate::policies::{Policy, PolicySet};
use crate::tokens::local;

/// `let mut declarations = registry.declare();` and
/// `declarations.commit();`: the batch a wrapper's `new` declares every
/// method's policies in, so that if one cannot be resolved none is
/// registered.
pub(crate) fn batch(registry: &Ident, declarations: &Ident) -> (TokenStream, TokenStream) {
    (
        quote!(let mut #declarations = #registry.declare();),
        quote!(#declarations.commit();),
    )
}

/// The policies of the function `sig`, declared to `Registry::global()` by
/// its first call (for a method, the first for its `Self` type) and kept in
/// a `static`: an expression of a `&` [`declared_type`].
pub(crate) fn in_static(policies: &PolicySet, sig: &Signature) -> TokenStream {
    let span = Span::mixed_site();
    let declared_type = declared_type(policies);
    let policy_static = Ident::new("__BULKHEAD_POLICY", span);
    // `Self` and `module_path!()` keep the call-site span: they name the
    // user's type and module.
    if sig.receiver().is_some() {
        let self_type = local("type");
        let type_name = quote!(::bulkhead::__private::type_name::<Self>());
        let method = ids::method(sig);
        let source = quote!(#self_type, #method);
        let declared = declaration(policies, Site::Method { source });
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::MethodPolicy<#declared_type> =
                    ::bulkhead::__private::MethodPolicy::new();
                #policy_static.get(#type_name, |#self_type| #declared)
            }
        }
    } else {
        let source = ids::function(sig);
        let declared = declaration(policies, Site::Function { source });
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::FnPolicy<#declared_type> =
                    ::bulkhead::__private::FnPolicy::new();
                #policy_static.get(|| #declared)
            }
        }
    }
}

/// Where a set of policies is declared.
pub(crate) enum Site<'a> {
    /// In a wrapper's `new`, in the batch `declarations` (from
    /// `registry.declare()`), which the wrapper commits once every method's
    /// policies are declared; `source` is the method's id.
    Wrapper {
        declarations: &'a Ident,
        registry: &'a Ident,
        source: &'a TokenStream,
    },
    /// A free function, on its first call; `source` is its id.
    Function { source: TokenStream },
    /// A method with a body, on its first call for its self type; `source`
    /// is that type's and the method's id.
    Method { source: TokenStream },
}

/// The type `policies` are declared as: `Bulkhead` for a bulkhead alone,
/// which the call enters itself, `Policies` for anything more.
pub(crate) fn declared_type(policies: &PolicySet) -> TokenStream {
    if policies.bulkhead_alone().is_some() {
        quote!(::bulkhead::__private::Bulkhead)
    } else {
        quote!(::bulkhead::__private::Policies)
    }
}

/// The declaration of `policies` at `site`, each policy under its `name` or
/// the id of the method or function, in the order of the composition: an
/// expression of the [`declared_type`] (in a wrapper, one that `?` returns
/// the registry's error from).
pub(crate) fn declaration(policies: &PolicySet, site: Site<'_>) -> TokenStream {
    if let Some(bulkhead) = policies.bulkhead_alone() {
        let builder = builder(bulkhead);
        return match site {
            Site::Wrapper {
                declarations,
                source,
                ..
            } => {
                let (method, id) = (method(bulkhead), id(bulkhead, source));
                quote!(#declarations.#method(#id, #source, &#builder)?)
            }
            Site::Function { source } => {
                let name = name(bulkhead);
                quote!(::bulkhead::__private::FnDecl::new(#name, #source, #builder))
            }
            Site::Method { source } => {
                let name = name(bulkhead);
                quote!(::bulkhead::__private::FnDecl::method(#name, #source, #builder))
            }
        };
    }
    match site {
        Site::Wrapper {
            declarations,
            registry,
            source,
        } => {
            let each = policies.iter().map(|policy| {
                let (method, id, builder) = (method(policy), id(policy, source), builder(policy));
                let with = format_ident!("with_{}", method);
                quote!(.#with(#declarations.#method(#id, #source, &#builder)?))
            });
            quote! {
                ::bulkhead::__private::policies(#registry)
                    #(#each)*
            }
        }
        Site::Function { source } => {
            let each = in_order(policies);
            quote!(::bulkhead::__private::PoliciesDecl::new(#source) #(#each)*)
        }
        Site::Method { source } => {
            let each = in_order(policies);
            quote!(::bulkhead::__private::PoliciesDecl::method(#source) #(#each)*)
        }
    }
}

/// `.retry(name, config)` for each policy, as a function's `PoliciesDecl`
/// takes them.
fn in_order(policies: &PolicySet) -> impl Iterator<Item = TokenStream> + '_ {
    policies.iter().map(|policy| {
        let (method, name, builder) = (method(policy), name(policy), builder(policy));
        quote!(.#method(#name, #builder))
    })
}

/// The config builder of `policy`: `__private::RetryConfig::builder()` and
/// a setting for each key the attribute gives.
fn builder(policy: &Policy) -> TokenStream {
    let config_type = Ident::new(policy.kind.config_type(), Span::call_site());
    let settings = policy.keys.settings();
    quote!(::bulkhead::__private::#config_type::builder() #settings)
}

/// The registry's method declaring the policy: named after its attribute.
fn method(policy: &Policy) -> Ident {
    Ident::new(policy.kind.attribute().as_str(), Span::call_site())
}

/// The instance id of a policy in a wrapper: its `name`, or the method's id.
fn id(policy: &Policy, source: &TokenStream) -> TokenStream {
    match policy.keys.name() {
        Some(name) => name.value.to_token_stream(),
        None => source.clone(),
    }
}

/// `Some("name")` or `None`, for a function's declaration, which falls back
/// on the function's id itself.
fn name(policy: &Policy) -> TokenStream {
    match policy.keys.name() {
        Some(name) => {
            let name = &name.value;
            quote!(::bulkhead::__private::Some(#name))
        }
        None => quote!(::bulkhead::__private::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::Written;
    use crate::policies::PolicyKind;

    fn set(policies: &[(PolicyKind, TokenStream)]) -> PolicySet {
        let mut set = PolicySet::default();
        for (kind, tokens) in policies {
            set.insert(kind.read(Written::Args(tokens.clone())).unwrap());
        }
        set
    }

    fn wrapper(policies: &PolicySet) -> String {
        let (declarations, registry) = (format_ident!("d"), format_ident!("r"));
        let source = quote!(ID);
        declaration(
            policies,
            Site::Wrapper {
                declarations: &declarations,
                registry: &registry,
                source: &source,
            },
        )
        .to_string()
    }

    #[test]
    fn a_bulkhead_alone_is_declared_as_a_bulkhead() {
        let alone = set(&[(PolicyKind::Bulkhead, quote!(name = "n", max_concurrent = 2))]);
        assert_eq!(
            declared_type(&alone).to_string(),
            ":: bulkhead :: __private :: Bulkhead"
        );
        assert_eq!(
            wrapper(&alone),
            "d . bulkhead (\"n\" , ID , & :: bulkhead :: __private :: BulkheadConfig :: builder () . max_concurrent (2u32)) ?"
        );
        let function = declaration(&alone, Site::Function { source: quote!(ID) });
        assert_eq!(
            function.to_string(),
            ":: bulkhead :: __private :: FnDecl :: new (:: bulkhead :: __private :: Some (\"n\") , ID , :: bulkhead :: __private :: BulkheadConfig :: builder () . max_concurrent (2u32))"
        );
    }

    #[test]
    fn more_policies_are_declared_in_the_order_of_the_composition() {
        let policies = set(&[
            (PolicyKind::Bulkhead, TokenStream::new()),
            (PolicyKind::Timeout, quote!(duration = "1s")),
            (PolicyKind::Retry, quote!(name = "r")),
        ]);
        assert_eq!(
            declared_type(&policies).to_string(),
            ":: bulkhead :: __private :: Policies"
        );
        assert_eq!(
            wrapper(&policies),
            ":: bulkhead :: __private :: policies (r) \
             . with_retry (d . retry (\"r\" , ID , & :: bulkhead :: __private :: RetryConfig :: builder ()) ?) \
             . with_timeout (d . timeout (ID , ID , & :: bulkhead :: __private :: TimeoutConfig :: builder () . duration (:: bulkhead :: __private :: Duration :: new (1u64 , 0u32))) ?) \
             . with_bulkhead (d . bulkhead (ID , ID , & :: bulkhead :: __private :: BulkheadConfig :: builder ()) ?)"
        );
        let method = declaration(
            &policies,
            Site::Method {
                source: quote!(T, M),
            },
        );
        assert_eq!(
            method.to_string(),
            ":: bulkhead :: __private :: PoliciesDecl :: method (T , M) \
             . retry (:: bulkhead :: __private :: Some (\"r\") , :: bulkhead :: __private :: RetryConfig :: builder ()) \
             . timeout (:: bulkhead :: __private :: None , :: bulkhead :: __private :: TimeoutConfig :: builder () . duration (:: bulkhead :: __private :: Duration :: new (1u64 , 0u32))) \
             . bulkhead (:: bulkhead :: __private :: None , :: bulkhead :: __private :: BulkheadConfig :: builder ())"
        );
    }
}
