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
//! A set of policies is declared as one `PolicySpecs`, whose methods are
//! named after the attributes (`.retry(name, builder)`), so that a policy
//! needs nothing here.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Ident, Signature};

use crate::ids;
use crate::keyed::KeyArg;
use crate::policies::{Policy, PolicyAttribute, PolicyKind, PolicySet};
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
    let declared_type = declared_type(policies, None);
    let policy_static = Ident::new(crate::symbol::POLICY_STATIC.as_str(), span);
    // `Self` and `module_path!()` keep the call-site span: they name the
    // user's type and module.
    if sig.receiver().is_some() {
        let self_type = local("type");
        let type_name = quote!(::bulkhead::__private::type_name::<Self>());
        let method = ids::method(sig);
        let declared = declaration(
            policies,
            Site::Method {
                self_type: &self_type,
                method,
            },
        );
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
        source: &'a TokenStream,
        /// The registry `new` is given, which a keyed bulkhead is declared
        /// to (`keyed`, its key).
        registry: &'a Ident,
        keyed: Option<&'a KeyArg>,
    },
    /// A free function, on its first call; `source` is its id.
    Function { source: TokenStream },
    /// A method with a body, on its first call for its self type, named by
    /// the closure parameter `self_type`; `method` is its name and
    /// parameter types.
    Method {
        self_type: &'a Ident,
        method: String,
    },
}

/// The type `policies` are declared as: `Bulkhead` for a bulkhead alone,
/// which the call enters itself, `KeyedBulkhead<K>` for a keyed one alone
/// (`keyed`, its key), `KeyedPolicies<K>` for a keyed one under other
/// policies, `Policies` for anything more.
pub(crate) fn declared_type(policies: &PolicySet, keyed: Option<&KeyArg>) -> TokenStream {
    if let Some(keyed) = keyed {
        let key_type = keyed.key_type();
        if policies.bulkhead_alone().is_some() {
            quote!(::bulkhead::__private::KeyedBulkhead<#key_type>)
        } else {
            quote!(::bulkhead::__private::KeyedPolicies<#key_type>)
        }
    } else if policies.bulkhead_alone().is_some() {
        quote!(::bulkhead::__private::Bulkhead)
    } else {
        quote!(::bulkhead::__private::Policies)
    }
}

/// The declaration of `policies` at `site`, each policy under its `name` or
/// the id of the method or function, in the order of the composition: an
/// expression of the [`declared_type`] (in a wrapper, one that `?` returns
/// the registry's error from).
///
/// Everywhere but for a wrapper's bulkhead alone, which the wrapper keeps
/// as a `Bulkhead` and declares with `Declarations::bulkhead`, the policies
/// are one [`specs`] expression: the wrapper declares it in its batch with
/// `Declarations::policies`, a function's `static` takes it as it is.
pub(crate) fn declaration(policies: &PolicySet, site: Site<'_>) -> TokenStream {
    match site {
        Site::Wrapper {
            declarations,
            source,
            registry,
            keyed,
        } => match (
            policies.bulkhead_alone(),
            keyed,
            policies.get(PolicyKind::Bulkhead),
        ) {
            (Some(bulkhead), Some(keyed), _) => {
                let (id, builder) = (id(bulkhead, source), builder(bulkhead));
                let key_type = keyed.key_type();
                // The type checker's errors about the key (ATR-021) point
                // at the parameter's type.
                let made = quote_spanned!(keyed.span()=> ::bulkhead::__private::keyed_bulkhead::<#key_type>);
                quote!(#made(#registry, #id, #source, &#builder)?)
            }
            (Some(bulkhead), None, _) => {
                let (id, builder) = (id(bulkhead, source), builder(bulkhead));
                quote!(#declarations.bulkhead(#id, #source, &#builder)?)
            }
            // The keyed bulkhead from the registry (made there even if the
            // batch of the other policies is then refused, as a keyed
            // pipeline's is), the other policies in the batch, without a
            // bulkhead.
            (None, Some(keyed), Some(bulkhead)) => {
                let (id, builder) = (id(bulkhead, source), builder(bulkhead));
                let key_type = keyed.key_type();
                let made = quote_spanned!(keyed.span()=> ::bulkhead::__private::keyed_bulkhead::<#key_type>);
                let specs = specs(policies, quote!(new(#source)));
                quote! {
                    ::bulkhead::__private::KeyedPolicies::new(
                        #made(#registry, #id, #source, &#builder)?,
                        #declarations.policies(&#specs)?,
                    )
                }
            }
            (None, _, _) => {
                let specs = specs(policies, quote!(new(#source)));
                quote!(#declarations.policies(&#specs)?)
            }
        },
        Site::Function { source } => specs(policies, quote!(new(#source))),
        Site::Method { self_type, method } => specs(policies, quote!(method(#self_type, #method))),
    }
}

/// `PolicySpecs::#start` and `.retry(name, builder)` for each policy, in
/// the order of the composition: a method of `PolicySpecs` per attribute,
/// named after it.
///
/// A keyed bulkhead is not one of them: it is the registry's keyed
/// bulkhead, made apart (`__private::keyed_bulkhead`, `KeyedFn`), which
/// each attempt enters under the others (`__private::call_keyed`).
fn specs(policies: &PolicySet, start: TokenStream) -> TokenStream {
    let keyed = policies.key().is_some();
    let each = policies
        .iter()
        .filter(|policy| !(keyed && policy.kind == PolicyKind::Bulkhead))
        .map(|policy| {
            let (method, name, builder) = (method(policy), name(policy), builder(policy));
            quote!(.#method(#name, #builder))
        });
    quote!(::bulkhead::__private::PolicySpecs::#start #(#each)*)
}

/// The config builder of `policy`: `__private::RetryConfig::builder()` and
/// a setting for each key the attribute gives.
pub(crate) fn builder(policy: &Policy) -> TokenStream {
    let config_type = Ident::new(policy.kind.config_type(), Span::call_site());
    let settings = policy.keys.settings();
    quote!(::bulkhead::__private::#config_type::builder() #settings)
}

/// The method of `PolicySpecs` (and of `Declarations`) adding the policy:
/// named after its attribute.
fn method(policy: &Policy) -> Ident {
    Ident::new(policy.kind.attribute().as_str(), Span::call_site())
}

/// The instance id of a wrapper's bulkhead alone: its `name`, or the
/// method's id.
fn id(policy: &Policy, source: &TokenStream) -> TokenStream {
    match policy.keys.name() {
        Some(name) => name.value.to_token_stream(),
        None => source.clone(),
    }
}

/// `Some("name")` or `None`: a policy of a `PolicySpecs` without a name
/// has the set's id.
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
    use quote::format_ident;

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
                source: &source,
                registry: &registry,
                keyed: None,
            },
        )
        .to_string()
    }

    #[test]
    fn a_bulkhead_alone_is_declared_as_a_bulkhead() {
        let alone = set(&[(PolicyKind::Bulkhead, quote!(name = "n", max_concurrent = 2))]);
        assert_eq!(
            declared_type(&alone, None).to_string(),
            ":: bulkhead :: __private :: Bulkhead"
        );
        assert_eq!(
            wrapper(&alone),
            "d . bulkhead (\"n\" , ID , & :: bulkhead :: __private :: BulkheadConfig :: builder () . max_concurrent (2u32)) ?"
        );
        let function = declaration(&alone, Site::Function { source: quote!(ID) });
        assert_eq!(
            function.to_string(),
            ":: bulkhead :: __private :: PolicySpecs :: new (ID) \
             . bulkhead (:: bulkhead :: __private :: Some (\"n\") , :: bulkhead :: __private :: BulkheadConfig :: builder () . max_concurrent (2u32))"
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
            declared_type(&policies, None).to_string(),
            ":: bulkhead :: __private :: Policies"
        );
        assert_eq!(
            wrapper(&policies),
            "d . policies (& :: bulkhead :: __private :: PolicySpecs :: new (ID) \
             . retry (:: bulkhead :: __private :: Some (\"r\") , :: bulkhead :: __private :: RetryConfig :: builder ()) \
             . timeout (:: bulkhead :: __private :: None , :: bulkhead :: __private :: TimeoutConfig :: builder () . duration (:: bulkhead :: __private :: Duration :: new (1u64 , 0u32))) \
             . bulkhead (:: bulkhead :: __private :: None , :: bulkhead :: __private :: BulkheadConfig :: builder ())) ?"
        );
        let self_type = format_ident!("T");
        let method = declaration(
            &policies,
            Site::Method {
                self_type: &self_type,
                method: "m()".to_owned(),
            },
        );
        assert_eq!(
            method.to_string(),
            ":: bulkhead :: __private :: PolicySpecs :: method (T , \"m()\") \
             . retry (:: bulkhead :: __private :: Some (\"r\") , :: bulkhead :: __private :: RetryConfig :: builder ()) \
             . timeout (:: bulkhead :: __private :: None , :: bulkhead :: __private :: TimeoutConfig :: builder () . duration (:: bulkhead :: __private :: Duration :: new (1u64 , 0u32))) \
             . bulkhead (:: bulkhead :: __private :: None , :: bulkhead :: __private :: BulkheadConfig :: builder ())"
        );
    }
}
