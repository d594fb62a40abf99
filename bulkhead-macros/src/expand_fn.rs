//! Expansion of a policy attribute on its own (`#[bulkhead]`, `#[retry]`,
//! ...): on a function with a body it wraps the body, under that attribute
//! and the other policy attributes of the function; on a bodiless trait
//! method it can only mean that `#[resilient]` is missing from the trait
//! (ATR-005).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{AttrStyle, Attribute, ForeignItem, Ident, ItemFn, Signature, Stmt, TraitItemFn};

use crate::ast::{Flavor, Func, conditions};
use crate::attr::Written;
use crate::call::{Parameter, enter, rejecter, rename_parameters};
use crate::codes::{self, Errors};
use crate::declare;
use crate::keyed::KeyArg;
use crate::krate::Krate;
use crate::policies::{Policy, PolicyAttribute, PolicyKind, PolicySet};
use crate::symbol::APPLIED;
use crate::tokens::local;
use crate::{composed, soft, valid};

/// `#[kind(args)]` on `input`.
pub(crate) fn policy(kind: PolicyKind, args: TokenStream, input: TokenStream) -> TokenStream {
    if is_applied(&args) && soft::was_applied(&input) {
        return input;
    }
    let krate = Krate::new(written_crate(kind, &args).as_ref());
    let unparsed = match syn::parse2::<ItemFn>(input.clone()) {
        Ok(item) => {
            return match try_expand(kind, args, item.clone(), &krate) {
                Ok(expanded) => expanded,
                Err(error) => soft::function(item, &krate, error),
            };
        }
        Err(error) => error,
    };
    let name = kind.attribute();
    let bodiless = |ident: &Ident| {
        syn::Error::new(
            Span::call_site(),
            format!(
                "{}: #[{name}] cannot wrap `{ident}`: it has no body to run under the policy, and no `self` (a foreign function, or an associated function of a trait); policy attributes apply to functions with a body, and to methods of a #[resilient] trait that take `self`",
                codes::UNWRAPPABLE
            ),
        )
    };
    let error = match syn::parse2::<TraitItemFn>(input.clone()) {
        Ok(method) if method.default.is_none() && method.sig.receiver().is_none() => {
            bodiless(&method.sig.ident)
        }
        // Arguments that are not ours (`#[retry(3)]`), which #[resilient]
        // leaves on the method, are reported as such.
        Ok(method) if method.default.is_none() => match kind.read(Written::Args(args)) {
            Err(error) => error,
            Ok(_) => syn::Error::new(
                Span::call_site(),
                format!(
                    "{}: #[{name}] on trait method `{}` needs #[resilient] on its trait, which generates the wrapper that applies it; add #[resilient] above the trait (if it is there, write the attribute as `{name}` or `bulkhead::{name}` so that #[resilient] recognises it)",
                    codes::NOT_RESILIENT,
                    method.sig.ident
                ),
            ),
        },
        _ => match syn::parse2::<ForeignItem>(input.clone()) {
            Ok(ForeignItem::Fn(function)) => bodiless(&function.sig.ident),
            // A function with a syntax error: the parser's error alone.
            _ if soft::looks_like(&input, "fn") && !is_foreign_fn(&input) => unparsed,
            _ if soft::looks_like(&input, "fn") => syn::Error::new(
                Span::call_site(),
                format!(
                    "{}: #[{name}] cannot wrap a foreign function: it has no body to run under the policy; wrap a function that calls it",
                    codes::UNWRAPPABLE
                ),
            ),
            _ => syn::Error::new(
                Span::call_site(),
                format!(
                    "{}: #[{name}] applies to functions and to methods of a #[resilient] trait",
                    codes::UNWRAPPABLE
                ),
            ),
        },
    };
    soft::tokens(input, error)
}

/// Whether `input` is a function declaration without a body (`safe fn
/// f();` in an `unsafe extern` block, which syn does not parse).
fn is_foreign_fn(input: &TokenStream) -> bool {
    matches!(
        input.clone().into_iter().last(),
        Some(proc_macro2::TokenTree::Punct(punct)) if punct.as_char() == ';'
    )
}

/// The `crate = "..."` of the arguments, read ahead of the rest so that
/// the other policy attributes of the function are recognised from that
/// path too.
fn written_crate(kind: PolicyKind, args: &TokenStream) -> Option<syn::Path> {
    kind.read(Written::Args(args.clone()))
        .ok()
        .and_then(|policy| policy.keys.krate().map(|path| path.value.clone()))
}

/// Whether `args` is `__bulkhead_applied`: the attribute was applied by
/// another policy attribute of the function, which left it to mark its
/// import as used.
fn is_applied(args: &TokenStream) -> bool {
    let mut tokens = args.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(proc_macro2::TokenTree::Ident(ident)), None) if ident == APPLIED
    )
}

fn try_expand(
    kind: PolicyKind,
    args: TokenStream,
    item: ItemFn,
    krate: &Krate,
) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let func = Func::from_syn(kind, args, item, krate, &mut errors);
    valid::check_fn(&func, &mut errors);
    errors.finish()?;
    Ok(func.krate.retarget(wrap(&func)))
}

/// The function with its body run under its policies, which are declared
/// to `Registry::global()` on the first call and kept in a `static`.
fn wrap(func: &Func) -> TokenStream {
    let span = Span::mixed_site();
    let ItemFn {
        attrs, sig, block, ..
    } = &func.item;
    let vis = func.vis();
    // Inner attributes (`#![allow(..)]`) open the generated body, as they
    // opened the user's.
    let (inner, outer): (Vec<&Attribute>, Vec<&Attribute>) = attrs
        .iter()
        .partition(|attr| matches!(attr.style, AttrStyle::Inner(_)));
    let applied = Ident::new(APPLIED.as_str(), Span::call_site());
    let applied = func.applied.iter().map(|path| quote!(#[#path(#applied)]));
    let outer = quote!(#(#applied)* #(#outer)*);
    // The body's statements, not its block: `{ Ok(x) }` after our own
    // statements would be `unused_braces`.
    let stmts = &block.stmts;
    let policies = func.policies();
    if let (Some(policy), Some(key)) = (policies.bulkhead_alone(), policies.key())
        && let Ok(keyed) = KeyArg::find(sig, &syn::Generics::default(), key)
    {
        let body = keyed_body(func, policy, &keyed, stmts);
        return quote! {
            #outer
            #vis #sig {
                #(#inner)*
                #body
            }
        };
    }
    let stored = declare::in_static(policies, sig);
    if policies.bulkhead_alone().is_none() {
        // A keyed bulkhead under the other policies: kept in a `static`
        // of its own (the others' `PolicySpecs` leave it out).
        let keyed = policies
            .get(PolicyKind::Bulkhead)
            .zip(policies.key())
            .and_then(|(policy, key)| {
                let keyed = KeyArg::find(sig, &syn::Generics::default(), key).ok()?;
                Some((keyed_static(func, policy, &keyed), keyed))
            });
        let (sig, body) = composed_body(func, policies, &stored, keyed.as_ref(), stmts);
        return quote! {
            #outer
            #vis #sig {
                #(#inner)*
                #body
            }
        };
    }
    let bulkhead = local("");
    let (reject, permit, call) = (local("reject"), local("permit"), local("call"));
    let rejecter = rejecter(&reject, &func.ret, func.annotations.named());
    let enter = enter(
        func.ret.flavor,
        &bulkhead.to_token_stream(),
        &reject,
        &permit,
    );
    let enter = quote_spanned!(span=> #rejecter #enter);
    // The body runs as one attempt (its result type spelled out for its
    // `?`), so that its result tells an adaptive bulkhead how the call
    // ended; the slot is held until the body is done.
    let value = composed::inferable(&func.ret.value);
    let output = local("output");
    let body = match func.ret.flavor {
        Flavor::Sync => quote_spanned! {span=>
            let #bulkhead = #stored;
            #enter
            let #output = ::bulkhead::__private::attempt::<#value>(|| { #(#stmts)* });
            #reject.release(#permit, &#output);
            #output
        },
        Flavor::AsyncFn => quote_spanned! {span=>
            let #bulkhead = #stored;
            #enter
            let #output =
                ::bulkhead::__private::attempt_async::<#value, _>(async move { #(#stmts)* }).await;
            #reject.release(#permit, &#output);
            #output
        },
        flavor @ (Flavor::ImplFuture | Flavor::BoxedFuture) => {
            let future = quote_spanned! {span=>
                async move {
                    #enter
                    let #output = #call.await;
                    #reject.release(#permit, &#output);
                    #output
                }
            };
            let future = boxed(flavor, future);
            // The body runs in a closure so that a `return` in it still
            // returns the future to be wrapped.
            quote_spanned! {span=>
                let #bulkhead = #stored;
                #[allow(clippy::redundant_closure_call)]
                let #call = (move || { #(#stmts)* })();
                #future
            }
        }
    };
    quote! {
        #outer
        #vis #sig {
            #(#inner)*
            #body
        }
    }
}

/// The body of a free function with a keyed bulkhead alone, keyed by its
/// parameter `keyed`: the bulkhead is made on the first call, from
/// `Registry::global()`, and kept in a `static` (`__private::KeyedFn`);
/// each call takes a slot of its argument's key, then runs the body as
/// one attempt (as for a bulkhead alone), the slot held until it is done.
/// The key a future enters with is kept apart from the arguments the
/// body takes: a reference copied, a key taken by value cloned.
fn keyed_body(func: &Func, policy: &Policy, keyed: &KeyArg, stmts: &[Stmt]) -> TokenStream {
    let span = Span::mixed_site();
    let (bulkhead, reject, permit) = (local(""), local("reject"), local("permit"));
    let (output, rejected, call, key) = (
        local("output"),
        local("rejected"),
        local("call"),
        local("key"),
    );
    let key_type = keyed.key_type();
    let stored = keyed_static(func, policy, keyed);
    let rejecter = rejecter(&reject, &func.ret, func.annotations.named());
    let value = composed::inferable(&func.ret.value);
    let awaited = quote_spanned!(keyed.span()=> .await);
    let (enter_keyed, enter_keyed_async) = (
        quote_spanned!(keyed.span()=> ::bulkhead::__private::enter_keyed::<#key_type, _, _>),
        quote_spanned!(keyed.span()=> ::bulkhead::__private::enter_keyed_async::<#key_type, _, _>),
    );
    let held_key = keyed.held(&keyed.name);
    let enter_async = {
        let passed = keyed.passed(&key);
        quote_spanned! {span=>
            #rejecter
            let #permit = match #enter_keyed_async(#bulkhead, #passed, #reject) #awaited {
                ::bulkhead::__private::Ok(#permit) => #permit,
                ::bulkhead::__private::Err(#rejected) => return #rejected,
            };
        }
    };
    match func.ret.flavor {
        Flavor::Sync => {
            let passed = keyed.passed(&keyed.name);
            quote_spanned! {span=>
                let #bulkhead = #stored;
                #rejecter
                let #permit = match #enter_keyed(#bulkhead, #passed, #reject) {
                    ::bulkhead::__private::Ok(#permit) => #permit,
                    ::bulkhead::__private::Err(#rejected) => return #rejected,
                };
                let #output = ::bulkhead::__private::attempt::<#value>(|| { #(#stmts)* });
                #reject.release(#permit, &#output);
                #output
            }
        }
        Flavor::AsyncFn => quote_spanned! {span=>
            let #bulkhead = #stored;
            let #key = #held_key;
            #enter_async
            let #output =
                ::bulkhead::__private::attempt_async::<#value, _>(async move { #(#stmts)* }).await;
            #reject.release(#permit, &#output);
            #output
        },
        flavor @ (Flavor::ImplFuture | Flavor::BoxedFuture) => {
            let future = boxed(
                flavor,
                quote_spanned! {span=>
                    async move {
                        #enter_async
                        let #output = #call.await;
                        #reject.release(#permit, &#output);
                        #output
                    }
                },
            );
            quote_spanned! {span=>
                let #bulkhead = #stored;
                let #key = #held_key;
                #[allow(clippy::redundant_closure_call)]
                let #call = (move || { #(#stmts)* })();
                #future
            }
        }
    }
}

/// The keyed bulkhead of the function `func`, its `policy` keyed by its
/// parameter `keyed`, made on the first call from `Registry::global()`
/// and kept in a `static` (`__private::KeyedFn`; for a method, one per
/// `Self` type, `__private::KeyedMethod`): an expression of a
/// `&'static KeyedBulkhead<K>`.
fn keyed_static(func: &Func, policy: &Policy, keyed: &KeyArg) -> TokenStream {
    let span = Span::mixed_site();
    let sig = &func.item.sig;
    let config = declare::builder(policy);
    let key_type = keyed.key_type();
    let policy_static = Ident::new(crate::symbol::POLICY_STATIC.as_str(), span);
    if sig.receiver().is_some() {
        // `Self` keeps the call-site span: it names the user's type.
        let type_name = quote!(::bulkhead::__private::type_name::<Self>());
        let method = crate::ids::method(sig);
        let name = match policy.keys.name() {
            Some(name) => {
                let name = &name.value;
                quote_spanned!(span=> ::bulkhead::__private::Some(#name))
            }
            None => quote_spanned!(span=> ::bulkhead::__private::None),
        };
        return quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::KeyedMethod<#key_type> =
                    ::bulkhead::__private::KeyedMethod::new();
                #policy_static.get(#type_name, #name, #method, || #config)
            }
        };
    }
    let source = crate::ids::function(sig);
    let id = match policy.keys.name() {
        Some(name) => name.value.to_token_stream(),
        None => source.clone(),
    };
    quote_spanned! {span=>
        {
            static #policy_static: ::bulkhead::__private::KeyedFn<#key_type> =
                ::bulkhead::__private::KeyedFn::new();
            #policy_static.get(#id, #source, || #config)
        }
    }
}

/// The signature and body of a function whose policies include more than a
/// bulkhead: the body runs once per attempt, from a closure `Policies`
/// calls (see `composed.rs` for wrappers).
///
/// A sync function or `async fn` gets its parameters renamed
/// (`__bulkhead_arg<i>`); each attempt binds the original patterns again,
/// to clones with `#[retry]` (ATR-012 for an argument that is not `Clone`),
/// or to the arguments themselves, each taken out of its own
/// `__private::Once`, without; each binding carries the parameter's
/// `#[cfg]` and lint attributes. A function returning a future runs its body once, at once (it
/// makes the future), and the future that runs it under the policies takes
/// it out of a `Once` (`#[retry]` is refused there, ATR-007).
///
/// With a keyed bulkhead (`keyed`: the expression of its `static`, and
/// its key), each attempt takes a slot of the argument's key innermost
/// (`__private::call_keyed`). The key is the argument itself where the
/// attempts are given clones; otherwise the call keeps it apart from the
/// arguments the body takes (a reference copied, a key taken by value
/// cloned).
fn composed_body(
    func: &Func,
    set: &PolicySet,
    stored: &TokenStream,
    keyed: Option<&(TokenStream, KeyArg)>,
    stmts: &[Stmt],
) -> (Signature, TokenStream) {
    let span = Span::mixed_site();
    let calls_again = func.annotations.named_calling_again();
    let (policies, once, call) = (local("policies"), local("once"), local("call"));
    let (key, bulkhead) = (local("key"), local(""));
    let mut sig = func.item.sig.clone();
    // The parameters, renamed (but for a function returning a future,
    // whose body runs at once in a closure that takes them).
    let at_once = matches!(func.ret.flavor, Flavor::ImplFuture | Flavor::BoxedFuture);
    let parameters = if at_once {
        Vec::new()
    } else {
        rename_parameters(&mut sig)
    };
    // The keyed bulkhead and the key as the call keeps them, and how the
    // frame's call enters it.
    let (hold_key, keyed_call) = match keyed {
        Some((stored, keyed)) => {
            let argument = match parameters.get(keyed.position) {
                Some(parameter) => &parameter.name,
                None => &keyed.name,
            };
            let (held, passed) = if calls_again.is_some() {
                (None, keyed.passed(argument))
            } else {
                let held = keyed.held(argument);
                (
                    Some(quote_spanned!(span=> let #key = #held;)),
                    keyed.passed(&key),
                )
            };
            let hold = quote_spanned!(span=> let #bulkhead = #stored; #held);
            let call = composed::KeyedCall {
                passed,
                bulkhead: Some(bulkhead.to_token_stream()),
                key_type: keyed.key_type(),
                span: keyed.span(),
            };
            (Some(hold), Some(call))
        }
        None => (None, None),
    };
    let frame = composed::Frame::new(set, func.annotations.named(), &func.ret, keyed_call);
    let (setup, classify) = (&frame.setup, &frame.classify);
    let value = composed::inferable(&func.ret.value);
    if at_once {
        let taken = frame.split_future(&quote_spanned!(span=> #once.take()));
        let outcome = frame.call_async(
            &policies.to_token_stream(),
            &quote_spanned!(span=> || #taken),
        );
        let future = quote_spanned! {span=>
            async move {
                let mut #once = ::bulkhead::__private::Once::new(#call);
                #classify
                #outcome
            }
        };
        let future = boxed(func.ret.flavor, future);
        // The body runs in a closure so that a `return` in it still
        // returns the future to be wrapped.
        let body = quote_spanned! {span=>
            let #policies = #stored;
            #hold_key
            #setup
            #[allow(clippy::redundant_closure_call)]
            let #call = (move || { #(#stmts)* })();
            #future
        };
        return (sig, body);
    }
    // The patterns the parameters were bound to, each bound by a
    // statement of its own that carries the parameter's conditions and
    // lint attributes.
    let once_of = |name: &Ident| {
        local(&format!(
            "once_{}",
            name.to_string().trim_start_matches("__bulkhead_")
        ))
    };
    let bind: Vec<TokenStream> = parameters
        .iter()
        .map(
            |Parameter {
                 name,
                 pattern,
                 ty,
                 attrs,
             }| {
                if let Some(named) = calls_again {
                    let cloned = composed::again(name, ty, named);
                    quote_spanned!(span=> #(#attrs)* let #pattern = #cloned;)
                } else {
                    let once = once_of(name);
                    quote_spanned!(span=> #(#attrs)* let #pattern = #once.take();)
                }
            },
        )
        .collect();
    let bind = quote!(#(#bind)*);
    let hold = calls_again.is_none().then(|| {
        let each = parameters.iter().map(|Parameter { name, attrs, .. }| {
            let once = once_of(name);
            let conditions = conditions(attrs);
            quote_spanned!(span=> #(#conditions)* let mut #once = ::bulkhead::__private::Once::new(#name);)
        });
        quote!(#(#each)*)
    });
    // Each attempt's result type is spelled out for the body's `?`.
    let outcome = if func.ret.flavor == Flavor::Sync {
        let made = frame.split(&quote_spanned! {span=>
            ::bulkhead::__private::attempt::<#value>(|| {
                #bind
                #(#stmts)*
            })
        });
        frame.call(
            &policies.to_token_stream(),
            &quote_spanned!(span=> || #made),
        )
    } else {
        let made = frame.split_future(&quote_spanned! {span=>
            ::bulkhead::__private::attempt_async::<#value, _>(async move { #(#stmts)* })
        });
        frame.call_async(
            &policies.to_token_stream(),
            &quote_spanned!(span=> || { #bind #made }),
        )
    };
    let body = quote_spanned! {span=>
        let #policies = #stored;
        #hold_key
        #setup
        #hold
        #classify
        #outcome
    };
    (sig, body)
}

/// `future`, boxed if the function returns a `Pin<Box<dyn Future>>`.
fn boxed(flavor: Flavor, future: TokenStream) -> TokenStream {
    if flavor == Flavor::BoxedFuture {
        quote_spanned!(Span::mixed_site()=> ::bulkhead::__private::Box::pin(#future))
    } else {
        future
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trait_method_without_resilient_is_atr_005() {
        let out = policy(
            PolicyKind::Bulkhead,
            quote!(max_concurrent = 2),
            quote!(
                fn thumbnail(&self) -> Result<(), E>;
            ),
        )
        .to_string();
        assert!(
            out.contains("ATR-005: #[bulkhead] on trait method `thumbnail` needs #[resilient]"),
            "{out}"
        );
        assert!(
            out.contains("fn thumbnail (& self) -> Result < () , E > ;"),
            "{out}"
        );
    }

    #[test]
    fn a_free_function_gets_a_static_policy_and_its_id() {
        let out = policy(
            PolicyKind::Bulkhead,
            quote!(max_concurrent = 2),
            quote!(
                pub fn render(id: &str, width: u32) -> Result<(), E> {
                    Ok(())
                }
            ),
        )
        .to_string();
        assert!(out.contains("static __BULKHEAD_POLICY"), "{out}");
        assert!(out.contains("\"::render(&str, u32)\""), "{out}");
        assert!(out.contains(". max_concurrent (2u32)"), "{out}");
    }

    #[test]
    fn a_method_names_its_self_type_at_run_time() {
        let out = policy(
            PolicyKind::Bulkhead,
            TokenStream::new(),
            quote!(
                fn render(&self) -> Result<(), E> {
                    Ok(())
                }
            ),
        )
        .to_string();
        assert!(out.contains("type_name :: < Self >"), "{out}");
        assert!(out.contains("\"render()\""), "{out}");
    }

    #[test]
    fn errors_keep_the_function_unchanged() {
        let out = policy(
            PolicyKind::Bulkhead,
            quote!(max_wait = "25Oms"),
            quote!(
                fn render() -> (u8, u8) {
                    (1, 2)
                }
            ),
        )
        .to_string();
        assert!(out.contains("ATR-001"), "{out}");
        assert!(out.contains("ATR-004"), "{out}");
        assert!(out.contains("fn render () -> (u8 , u8) {"), "{out}");
        assert!(
            out.ends_with("(1 , 2) }"),
            "the errors open the body: {out}"
        );
        assert!(!out.contains("POLICY"), "{out}");
    }
}
