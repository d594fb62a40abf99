//! Expansion of `#[resilient]`: the wrapper struct, its constructor, and its
//! implementation of the trait, whose methods call the delegate directly,
//! under a bulkhead alone (here), or under `Policies` (`composed.rs`).
//!
//! Every path the generated code names is absolute (`::bulkhead::__private`),
//! so that a `mod core {}` or `mod std {}` beside the trait changes nothing.
//! Every binding it makes is named `__bulkhead_..` and has a mixed-site
//! span, so that it can neither clash with the user's variables nor be read
//! as a unit struct or const of theirs (`struct permit;`).

mod method;

use method::*;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::visit_mut::VisitMut;
use syn::{FnArg, GenericParam, Ident, ItemTrait, ReturnType, Safety, Signature, parse_quote};

use darling::ast::NestedMeta;
use syn::Token;
use syn::parse::Parser;
use syn::punctuated::Punctuated;

use crate::ast::{Flavor, Method, SelfArg, Trait, conditions};
use crate::attr;
use crate::call::{CallTime, enter, pick_call_time, rejecter, rename_parameters, take_field};
use crate::codes::{self, Errors};
use crate::declare::{self, Site};
use crate::keyed::KeyArg;
use crate::krate::{Krate, Origin};
use crate::policies::PolicySet;
use crate::symbol::RESILIENT;
use crate::tokens::local;
use crate::{composed, ids, order, soft, valid};

/// `#[resilient]` on `input`: the trait, without its policy attributes, and
/// its wrapper; on error, the errors too, after the trait and (if the trait
/// can be wrapped at all) a wrapper in which the methods in error simply
/// delegate, so that one mistake does not cascade into errors about
/// everything that uses the trait.
pub(crate) fn resilient(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let written = arguments(args.clone(), &mut errors);
    let krate = Krate::new(written.as_ref());
    let mut item = match syn::parse2::<ItemTrait>(input.clone()) {
        Ok(item) => item,
        Err(error) if soft::looks_like(&input, "trait") => {
            return soft::unparsed_trait(input, &krate, error);
        }
        Err(_) => {
            // An implementation (with `#[async_trait]` on it, say) needs
            // nothing: the wrapper implements the trait around it.
            let hint = if soft::looks_like(&input, "impl") {
                "; put it on the trait's declaration: an implementation stays as it is (with #[async_trait] if the trait has it), and the generated `Resilient<Trait>::new` wraps it"
            } else {
                ""
            };
            let error = syn::Error::new(
                Span::call_site(),
                format!(
                    "{}: #[resilient] applies to a trait, whose wrapper it generates{hint}",
                    codes::UNWRAPPABLE
                ),
            );
            return soft::tokens(input, error);
        }
    };
    if let Some(again) = order::after_rewriters(&args, &item, &krate) {
        return again;
    }
    let trait_name = item.ident.clone();
    item.attrs.retain(|attr| {
        if !is_resilient(attr.path(), &krate) {
            return true;
        }
        errors.spanned(
            attr,
            format!(
                "{}: #[resilient] is given twice on trait `{trait_name}`; once generates its wrapper",
                codes::MALFORMED
            ),
        );
        false
    });
    let mut model = Trait::from_syn(item, &krate, &mut errors);
    valid::check_trait(&mut model, &mut errors);
    let wrapper = model.wrappable.then(|| wrapper(&model));
    let item = &model.item;
    let expanded = krate.retarget(quote!(#item #wrapper));
    match errors.finish() {
        Ok(()) => expanded,
        Err(error) => soft::tokens(expanded, error),
    }
}

/// The arguments of `#[resilient]`: only `crate = "..."`, the path of the
/// facade (see `krate.rs`), which is returned.
fn arguments(args: TokenStream, errors: &mut Errors) -> Option<syn::Path> {
    if args.is_empty() {
        return None;
    }
    let refused = format!(
        "{}: #[resilient] takes no arguments but `crate = \"..\"`; put the policies on the methods, as in #[bulkhead(max_concurrent = 4)]",
        codes::MALFORMED
    );
    let items = match Punctuated::<NestedMeta, Token![,]>::parse_terminated.parse2(args.clone()) {
        Ok(items) => items,
        Err(_) => {
            errors.spanned(&args, refused);
            return None;
        }
    };
    let mut path = None;
    for item in &items {
        let is_crate =
            matches!(item, NestedMeta::Meta(meta) if meta.path().is_ident(attr::CRATE_KEY));
        if !is_crate || path.is_some() {
            errors.spanned(item, refused.clone());
            continue;
        }
        match attr::crate_path(RESILIENT, item) {
            Ok(written) => path = Some(written.value),
            Err(error) => errors.push(attr::coded(error, RESILIENT)),
        }
    }
    path
}

/// Whether `path` names `#[resilient]`: alone, or from the crate.
fn is_resilient(path: &syn::Path, krate: &Krate) -> bool {
    krate
        .origin(path)
        .is_some_and(|(word, origin)| word == RESILIENT.as_str() && origin != Origin::Other)
}

/// The wrapper of `model`: the struct, `new` / `delegate` / `into_inner`,
/// `Clone` and `Debug`, and the trait implementation.
fn wrapper(model: &Trait) -> TokenStream {
    let item = &model.item;
    let vis = &item.vis;
    let wrapper = &model.wrapper;
    let d = &model.delegate;
    let trait_name = &item.ident;
    let wrapper_name = wrapper.to_string();

    // Everything generated for a method carries its conditions, so that a
    // method compiled out has no field, no bulkhead and no Debug entry.
    let wrapped: Vec<(&Method, &PolicySet)> = model
        .methods
        .iter()
        .filter_map(|m| m.policies().map(|policies| (m, policies)))
        .collect();
    let cfgs: Vec<&[syn::Attribute]> = wrapped.iter().map(|(m, _)| &m.cfgs[..]).collect();
    let fields: Vec<Ident> = wrapped
        .iter()
        .map(|(m, policies)| field(m, policies))
        .collect();
    let types = wrapped
        .iter()
        .map(|(m, policies)| declare::declared_type(policies, m.keyed.as_ref()));
    let (delegate, registry) = (local("delegate"), local("registry"));
    let declarations = local("declarations");
    let (open, commit) = declare::batch(&registry, &declarations);
    let inits = wrapped.iter().map(|(m, policies)| {
        let source = ids::trait_method(&model.item.ident, &m.sig);
        let site = Site::Wrapper {
            declarations: &declarations,
            source: &source,
            registry: &registry,
            keyed: m.keyed.as_ref(),
        };
        declare::declaration(policies, site)
    });
    let names = wrapped.iter().map(|(m, _)| m.sig.ident.unraw().to_string());
    let (this, f, debug) = (local("wrapper"), local("f"), local("debug"));

    let doc = format!(
        " [`{trait_name}`] around a delegate implementation, running each method that has policy attributes under its policies; generated by `#[resilient]`.\n\n Build it with [`{wrapper_name}::new`]; methods without a policy attribute call the delegate directly."
    );
    let trait_impl = trait_impl(model);
    quote! {
        #[doc = #doc]
        #[allow(dead_code, unreachable_pub, non_snake_case)]
        #vis struct #wrapper<#d> {
            delegate: #d,
            #(#(#cfgs)* #fields: ::bulkhead::__private::Unwind<#types>,)*
        }

        #[allow(dead_code, unreachable_pub)]
        impl<#d> #wrapper<#d> {
            /// Wraps the delegate, resolving the policy of every annotated
            /// method from the registry now, so that no call ever looks one up.
            ///
            /// The policies are declared together: if one cannot be resolved,
            /// none is registered.
            ///
            /// # Errors
            ///
            /// The registry's error if a policy cannot be resolved: REG-004 for
            /// an unknown `config`, REG-008 if a shared `name` resolves to a
            /// different configuration elsewhere, or the code of an invalid
            /// configured value.
            #[allow(unused_variables, unused_mut)]
            #vis fn new(
                #delegate: #d,
                #registry: &::bulkhead::__private::Registry,
            ) -> ::bulkhead::__private::Result<Self, ::bulkhead::__private::RegistryError> {
                #open
                let #this = Self {
                    #(#(#cfgs)* #fields: ::bulkhead::__private::Unwind(#inits),)*
                    delegate: #delegate,
                };
                #commit
                ::bulkhead::__private::Ok(#this)
            }

            /// The wrapped implementation.
            #vis fn delegate(&self) -> &#d {
                &self.delegate
            }

            /// Unwraps the implementation. The registry keeps the policy
            /// instances, shared with other wrappers of the same ids.
            #vis fn into_inner(self) -> #d {
                self.delegate
            }
        }

        impl<#d: ::bulkhead::__private::Clone> ::bulkhead::__private::Clone for #wrapper<#d> {
            /// A wrapper around a clone of the delegate, sharing the same
            /// policy instances (and so the same bulkhead slots).
            fn clone(&self) -> Self {
                Self {
                    delegate: ::bulkhead::__private::Clone::clone(&self.delegate),
                    #(#(#cfgs)* #fields: ::bulkhead::__private::Clone::clone(&self.#fields),)*
                }
            }
        }

        impl<#d: ::bulkhead::__private::fmt::Debug> ::bulkhead::__private::fmt::Debug for #wrapper<#d> {
            fn fmt(
                &self,
                #f: &mut ::bulkhead::__private::fmt::Formatter<'_>,
            ) -> ::bulkhead::__private::fmt::Result {
                let mut #debug = #f.debug_struct(#wrapper_name);
                #debug.field("delegate", &self.delegate);
                #(#(#cfgs)* #debug.field(#names, &self.#fields);)*
                #debug.finish()
            }
        }

        #trait_impl
    }
}

/// The wrapper's field holding the policies of `method`: its `Bulkhead`
/// when that is its only policy (`bulkhead_<method>`), its `Policies`
/// otherwise (`policies_<method>`).
fn field(method: &Method, policies: &PolicySet) -> Ident {
    if policies.bulkhead_alone().is_some() {
        format_ident!("bulkhead_{}", method.sig.ident.unraw())
    } else {
        format_ident!("policies_{}", method.sig.ident.unraw())
    }
}

/// `impl<..., D> Trait<...> for Wrapper<D> where D: Trait<...>`.
fn trait_impl(model: &Trait) -> TokenStream {
    let item = &model.item;
    let wrapper = &model.wrapper;
    let d = &model.delegate;
    let trait_name = &item.ident;
    let (_, trait_generics, _) = item.generics.split_for_impl();
    let trait_path = quote!(#trait_name #trait_generics);

    let mut generics = item.generics.clone();
    generics.params.push(GenericParam::Type(parse_quote!(#d)));
    generics
        .make_where_clause()
        .predicates
        .push(parse_quote!(#d: #trait_path));
    // The wrapper meets its supertraits when its delegate does; saying so
    // in the impl keeps a supertrait that is not the standard library's
    // (reported by `supertrait_checks`) from failing here too.
    for bound in valid::supertraits(item) {
        generics
            .make_where_clause()
            .predicates
            .push(parse_quote!(#wrapper<#d>: #bound));
    }
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    let checks = supertrait_checks(item);

    let delegate = quote!(<#d as #trait_path>);
    let types = model.types.iter().map(|ty| {
        let cfgs = conditions(&ty.attrs);
        let name = &ty.ident;
        let (params, args, where_clause) = ty.generics.split_for_impl();
        quote! {
            #(#cfgs)*
            type #name #params = #delegate::#name #args #where_clause;
        }
    });
    let consts = model.consts.iter().map(|constant| {
        let cfgs = conditions(&constant.attrs);
        let name = &constant.ident;
        let ty = &constant.ty;
        quote! {
            #(#cfgs)*
            const #name: #ty = #delegate::#name;
        }
    });
    let methods = model.methods.iter().map(|m| method(m, d, &delegate));
    quote! {
        #checks

        #[allow(deprecated, unused_unsafe)]
        impl #impl_generics #trait_path for #wrapper<#d> #where_clause {
            #(#types)*
            #(#consts)*
            #(#methods)*
        }
    }
}

/// For each supertrait, a check that it is the standard library's trait of
/// that name, the one the wrapper implements (`valid/` accepts them by
/// name: a local `trait Debug` would pass): a type that implements only the
/// standard traits must implement it, or ATR-007 says so over the bound.
fn supertrait_checks(item: &ItemTrait) -> TokenStream {
    let trait_name = &item.ident;
    valid::supertraits(item)
        .filter(|bound| !valid::is_standard_path(bound))
        .map(|bound| {
            let written = ids::render(bound.to_token_stream());
            let message = format!(
                "{}: cannot wrap trait `{trait_name}`: its supertrait `{written}` is not the standard library's trait of that name; the wrapper implements only the standard library's {}",
                codes::UNWRAPPABLE,
                valid::SUPERTRAITS.join(", ")
            );
            let label = format!("a supertrait other than the standard library's `{written}`");
            let (first, _) = crate::tokens::mixed_ends(bound.to_token_stream());
            let (std, check) = (local("Std"), local("check"));
            let call = quote_spanned!(first=> #check::<::bulkhead::__private::SupertraitProbe>());
            quote! {
                const _: () = {
                    #[diagnostic::on_unimplemented(message = #message, label = #label)]
                    trait #std {}
                    #[diagnostic::do_not_recommend]
                    impl<T: #bound> #std for T {}
                    fn #check<T: #std>() {}
                    const _: fn() = || #call;
                };
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(item: syn::ItemTrait) -> String {
        let mut errors = Errors::default();
        let mut model = Trait::from_syn(item, &crate::krate::Krate::plain(), &mut errors);
        valid::check_trait(&mut model, &mut errors);
        errors.finish().unwrap();
        wrapper(&model).to_string()
    }

    #[test]
    fn the_wrapper_declares_ids_and_values_in_new() {
        let out = expand(parse_quote! {
            pub trait ThumbnailService {
                #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
                fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, E>;
                #[bulkhead(config = "slow", enabled = false)]
                fn resize(&self, image_id: &str, width: u32) -> Result<(), E>;
                fn name(&self) -> String;
            }
        });
        assert!(
            out.contains("pub struct ResilientThumbnailService < D >"),
            "{out}"
        );
        assert!(
            out.contains(
                "bulkhead_thumbnail : :: bulkhead :: __private :: Unwind (__bulkhead_declarations . bulkhead (\"thumbnails\" , :: bulkhead :: __private :: concat ! (:: bulkhead :: __private :: module_path ! () , \"::ThumbnailService#thumbnail(&str)\")"
            ),
            "{out}"
        );
        assert!(out.contains(". max_concurrent (4u32) . max_wait (:: bulkhead :: __private :: Duration :: new (0u64 , 250000000u32))"), "{out}");
        assert!(
            out.contains("\"::ThumbnailService#resize(&str, u32)\") , & :: bulkhead :: __private :: BulkheadConfig :: builder () . config (\"slow\") . enabled (false)"),
            "{out}"
        );
        assert!(!out.contains("bulkhead_name"), "{out}");
    }

    #[test]
    fn policies_are_declared_in_the_order_of_the_composition_whatever_the_attribute_order() {
        let out = expand(parse_quote! {
            trait Shop {
                #[bulkhead(max_concurrent = 2)]
                #[timeout(duration = "1s")]
                #[rate_limiter]
                #[circuit_breaker]
                #[retry(name = "shop-retry")]
                fn buy(&self, item: &str) -> Result<(), E>;
                #[bulkhead]
                fn sell(&self) -> Result<(), E>;
            }
        });
        assert!(
            out.contains("policies_buy : :: bulkhead :: __private :: Unwind < :: bulkhead :: __private :: Policies >"),
            "{out}"
        );
        assert!(
            out.contains("bulkhead_sell : :: bulkhead :: __private :: Unwind < :: bulkhead :: __private :: Bulkhead >"),
            "{out}"
        );
        let order: Vec<usize> = [
            "__bulkhead_declarations . policies (& :: bulkhead :: __private :: PolicySpecs :: new (",
            ". retry (:: bulkhead :: __private :: Some (\"shop-retry\")",
            ". circuit_breaker (:: bulkhead :: __private :: None",
            ". rate_limiter (",
            ". timeout (",
            ". bulkhead (",
        ]
        .iter()
        .map(|needle| {
            out.find(needle)
                .unwrap_or_else(|| panic!("{needle} in {out}"))
        })
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }

    #[test]
    fn generic_methods_pass_their_type_parameters_on() {
        let sig: Signature =
            parse_quote!(fn f<'a, T: Default, const N: usize>(&'a self) -> Result<T, E>);
        assert_eq!(turbofish(&sig).to_string(), ":: < T , N >");
        let sig: Signature = parse_quote!(fn f<T>(&self, s: impl AsRef<str>));
        assert_eq!(
            turbofish(&sig).to_string(),
            ":: < T >",
            "allowed next to `impl Trait` arguments since Rust 1.63"
        );
        let sig: Signature = parse_quote!(fn f<'a>(&'a self));
        assert!(turbofish(&sig).is_empty());
    }

    #[test]
    fn async_fns_become_fns_returning_futures() {
        let mut errors = Errors::default();
        let model = Trait::from_syn(
            parse_quote!(
                trait T {
                    async fn f(&self, mut x: u8) -> Result<u8, E>;
                }
            ),
            &crate::krate::Krate::plain(),
            &mut errors,
        );
        errors.finish().unwrap();
        let (sig, params) = signature(&model.methods[0], &format_ident!("D"));
        assert_eq!(
            sig.to_token_stream().to_string(),
            "fn f (& self , __bulkhead_arg1 : u8) -> impl :: bulkhead :: __private :: Future < Output = Result < u8 , E > >"
        );
        assert_eq!(params.len(), 1);
    }

    #[test]
    fn an_async_method_borrowing_its_bulkhead_decides_on_first_poll_in_guard_async() {
        let out = expand(parse_quote! {
            trait Shop {
                #[bulkhead(max_concurrent = 2)]
                async fn buy(&self, item: u8) -> Result<(), E>;
                #[bulkhead(max_concurrent = 2)]
                fn sell(self, item: u8) -> impl Future<Output = Result<(), E>>;
            }
        });
        // `buy`: the future borrows the bulkhead; no `async` block awaits
        // `enter_async` (issue 33: its copies were most of a rejection).
        let buy = &out[out.find("fn buy").unwrap()..out.find("fn sell").unwrap()];
        assert!(buy.contains(":: guard_async (__bulkhead ,"), "{buy}");
        assert!(!buy.contains("enter_async"), "{buy}");
        // `sell`: a wrapper taken by value, whose future owns the bulkhead.
        let sell = &out[out.find("fn sell").unwrap()..];
        assert!(sell.contains(":: enter_async (& __bulkhead"), "{sell}");
        assert!(!sell.contains("guard_async"), "{sell}");
    }
}
