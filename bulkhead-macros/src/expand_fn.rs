//! Expansion of a policy attribute on its own (`#[bulkhead]`, `#[retry]`,
//! ...): on a function with a body it wraps the body, under that attribute
//! and the other policy attributes of the function; on a bodiless trait
//! method it can only mean that `#[resilient]` is missing from the trait
//! (ATR-005).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{AttrStyle, Attribute, FnArg, Ident, ItemFn, Pat, Signature, Stmt, TraitItemFn};

use crate::ast::{CallKind, Func};
use crate::attr::{BulkheadArgs, Id};
use crate::codes::Errors;
use crate::policies::{Kind, PolicyArgs};
use crate::{codes, composed, expand, fallback, ids, specs, valid};

/// `#[kind(args)]` on `input`.
pub(crate) fn policy(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    if is_applied(&args) {
        return input;
    }
    let unparsed = match syn::parse2::<ItemFn>(input.clone()) {
        Ok(item) => {
            return match try_expand(kind, args, item.clone()) {
                Ok(expanded) => expanded,
                Err(error) => fallback::function(&applied(item), error),
            };
        }
        Err(error) => error,
    };
    let name = kind.name();
    let error = match syn::parse2::<TraitItemFn>(input.clone()) {
        Ok(method) if method.default.is_none() => syn::Error::new(
            Span::call_site(),
            format!(
                "{}: #[{name}] on trait method `{}` needs #[resilient] on its trait, which generates the wrapper that applies it; add #[resilient] above the trait (if it is there, write the attribute as `{name}` or `bulkhead::{name}` so that #[resilient] recognises it)",
                codes::NOT_RESILIENT,
                method.sig.ident
            ),
        ),
        // A function with a syntax error: the parser's error alone.
        Err(_) if fallback::looks_like(&input, "fn") => unparsed,
        _ => syn::Error::new(
            Span::call_site(),
            format!(
                "{}: #[{name}] applies to functions and to methods of a #[resilient] trait",
                codes::UNWRAPPABLE
            ),
        ),
    };
    fallback::tokens(input, error)
}

/// `item` with its policy attributes marked as applied (see
/// [`crate::ast::APPLIED`]): this expansion reported their errors already.
fn applied(mut item: ItemFn) -> ItemFn {
    let marker = Ident::new(crate::ast::APPLIED, Span::call_site());
    for attr in &mut item.attrs {
        if Kind::of(attr.path()).is_some() {
            let path = attr.path().clone();
            attr.meta = syn::parse_quote!(#path(#marker));
        }
    }
    item
}

/// Whether `args` is `__bulkhead_applied`: the attribute was applied by
/// another policy attribute of the function, which left it to mark its
/// import as used.
fn is_applied(args: &TokenStream) -> bool {
    let mut tokens = args.clone().into_iter();
    matches!(
        (tokens.next(), tokens.next()),
        (Some(proc_macro2::TokenTree::Ident(ident)), None) if ident == crate::ast::APPLIED
    )
}

fn try_expand(kind: Kind, args: TokenStream, item: ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let func = Func::from_syn(kind, args, item, &mut errors);
    valid::check_fn(&func, &mut errors);
    errors.finish()?;
    Ok(wrap(&func))
}

/// `Some("name")` or `None`, for a declaration.
fn name(name: &Option<Id>) -> TokenStream {
    match name {
        Some(name) => {
            let name = &name.value;
            quote!(::bulkhead::__private::Some(#name))
        }
        None => quote!(::bulkhead::__private::None),
    }
}

/// The `PoliciesDecl` of a function with more than a bulkhead, from `start`
/// (`PoliciesDecl::new(source)` or `PoliciesDecl::method(type, method)`).
fn declaration(policy: &PolicyArgs, start: TokenStream) -> TokenStream {
    let retry = policy.retry.as_ref().map(|a| {
        let (id, spec) = (name(&a.name), specs::retry(a));
        quote!(.retry(#id, #spec))
    });
    let breaker = policy.circuit_breaker.as_ref().map(|a| {
        let (id, spec) = (name(&a.name), specs::circuit_breaker(a));
        quote!(.circuit_breaker(#id, #spec))
    });
    let limiter = policy.rate_limiter.as_ref().map(|a| {
        let (id, spec) = (name(&a.name), specs::rate_limiter(a));
        quote!(.rate_limiter(#id, #spec))
    });
    let timeout = policy.timeout.as_ref().map(|a| {
        let (id, spec) = (name(&a.name), specs::timeout(a));
        quote!(.timeout(#id, #spec))
    });
    let bulkhead = policy.bulkhead.as_ref().map(|a| {
        let (id, spec) = (name(&a.name), specs::bulkhead(a));
        quote!(.bulkhead(#id, #spec))
    });
    quote!(#start #retry #breaker #limiter #timeout #bulkhead)
}

/// The declaration of the function's policies from `source` (the
/// function's id, or for a `method` its self type and signature): a
/// `FnDecl` for a bulkhead alone, a `PoliciesDecl` otherwise.
fn declared(policy: &PolicyArgs, source: TokenStream, method: bool) -> TokenStream {
    if policy.only_bulkhead() {
        let default = BulkheadArgs::default();
        let bulkhead = policy.bulkhead.as_ref().unwrap_or(&default);
        let (id, spec) = (name(&bulkhead.name), specs::bulkhead(bulkhead));
        if method {
            quote!(::bulkhead::__private::FnDecl::method(#id, #source, #spec))
        } else {
            quote!(::bulkhead::__private::FnDecl::new(#id, #source, #spec))
        }
    } else if method {
        declaration(
            policy,
            quote!(::bulkhead::__private::PoliciesDecl::method(#source)),
        )
    } else {
        declaration(
            policy,
            quote!(::bulkhead::__private::PoliciesDecl::new(#source)),
        )
    }
}

/// The function with its body run under its policies, which are resolved
/// from `Registry::global()` on the first call and kept in a `static`.
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
    let applied = Ident::new(crate::ast::APPLIED, Span::call_site());
    let applied = func.applied.iter().map(|path| quote!(#[#path(#applied)]));
    let outer = quote!(#(#applied)* #(#outer)*);
    // The body's statements, not its block: `{ Ok(x) }` after our own
    // statements would be `unused_braces`.
    let stmts = &block.stmts;
    let params = ids::params(sig);
    let fn_name = sig.ident.unraw();
    let default = PolicyArgs::default();
    let policy = func.policy().unwrap_or(&default);
    let only_bulkhead = policy.only_bulkhead();
    let policy_type = if only_bulkhead {
        quote!(::bulkhead::__private::Bulkhead)
    } else {
        quote!(::bulkhead::__private::Policies)
    };
    let declare = |source: TokenStream, method: bool| declared(policy, source, method);
    let policy_static = Ident::new("__BULKHEAD_POLICY", span);
    let self_type = Ident::new("__bulkhead_type", span);
    // `Self` and `module_path!()` keep the call-site span: they name the
    // user's type and module.
    let resolved = if sig.receiver().is_some() {
        let method = format!("{fn_name}{params}");
        let type_name = quote!(::bulkhead::__private::type_name::<Self>());
        let declared = declare(quote!(#self_type, #method), true);
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::MethodPolicy<#policy_type> =
                    ::bulkhead::__private::MethodPolicy::new();
                #policy_static.get(#type_name, |#self_type| #declared)
            }
        }
    } else {
        let suffix = format!("::{fn_name}{params}");
        let source = quote! {
            ::bulkhead::__private::String::from(::bulkhead::__private::concat!(
                ::bulkhead::__private::module_path!(),
                #suffix,
            ))
        };
        let declared = declare(source, false);
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::FnPolicy<#policy_type> =
                    ::bulkhead::__private::FnPolicy::new();
                #policy_static.get(|| #declared)
            }
        }
    };
    if !only_bulkhead {
        let (sig, body) = composed_body(func, policy, &resolved, stmts);
        return quote! {
            #outer
            #vis #sig {
                #(#inner)*
                #body
            }
        };
    }
    let policy = resolved;
    let bulkhead = Ident::new("__bulkhead", span);
    let reject = Ident::new("__bulkhead_reject", span);
    let (permit, rejected) = (
        Ident::new("__bulkhead_permit", span),
        Ident::new("__bulkhead_rejected", span),
    );
    let call = Ident::new("__bulkhead_call", span);
    let rejecter = expand::rejecter(&reject, &func.ret);
    let enter = |which: &str| {
        let which = Ident::new(which, span);
        let entered = quote_spanned!(span=> ::bulkhead::__private::#which(#bulkhead, #reject));
        let entered = if which == "enter" {
            entered
        } else {
            quote_spanned!(span=> #entered.await)
        };
        quote_spanned! {span=>
            #rejecter
            let #permit = match #entered {
                ::bulkhead::__private::Ok(#permit) => #permit,
                ::bulkhead::__private::Err(#rejected) => return #rejected,
            };
        }
    };
    // The body's locals are declared after the permit, so they are dropped
    // before it: the slot is held until the body is done.
    let body = match func.ret.kind {
        CallKind::Sync => {
            let enter = enter("enter");
            quote_spanned!(span=> let #bulkhead = #policy; #enter #(#stmts)*)
        }
        CallKind::AsyncFn => {
            let enter = enter("enter_async");
            quote_spanned!(span=> let #bulkhead = #policy; #enter #(#stmts)*)
        }
        kind @ (CallKind::ImplFuture | CallKind::BoxedFuture) => {
            let enter = enter("enter_async");
            let future = quote_spanned! {span=>
                async move {
                    #enter
                    #call.await
                }
            };
            let future = if kind == CallKind::BoxedFuture {
                quote_spanned!(span=> ::bulkhead::__private::Box::pin(#future))
            } else {
                future
            };
            // The body runs in a closure so that a `return` in it still
            // returns the future to be wrapped.
            quote_spanned! {span=>
                let #bulkhead = #policy;
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

/// The signature and body of a function whose policies include more than a
/// bulkhead: the body runs once per attempt, from a closure `Policies`
/// calls (see `composed.rs` for wrappers).
///
/// A sync function or `async fn` gets its parameters renamed
/// (`__bulkhead_arg<i>`); each attempt binds the original patterns again,
/// to clones with `#[retry]` (ATR-012 for an argument that is not `Clone`),
/// or to the arguments themselves, taken out of a `__private::Once`,
/// without. A function returning a future runs its body once, at once (it
/// makes the future), and the future that runs it under the policies takes
/// it out of a `Once` (`#[retry]` is refused there, ATR-007).
fn composed_body(
    func: &Func,
    policy: &PolicyArgs,
    resolved: &TokenStream,
    stmts: &[Stmt],
) -> (Signature, TokenStream) {
    let span = Span::mixed_site();
    let local = expand::local;
    let (policies, once, call) = (local("policies"), local("once"), local("call"));
    let frame = composed::Frame::new(policy, &func.ret);
    let (setup, classify) = (&frame.setup, &frame.classify);
    let value = composed::inferable(&func.ret.value);
    let mut sig = func.item.sig.clone();
    if matches!(func.ret.kind, CallKind::ImplFuture | CallKind::BoxedFuture) {
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
        let future = if func.ret.kind == CallKind::BoxedFuture {
            quote_spanned!(span=> ::bulkhead::__private::Box::pin(#future))
        } else {
            future
        };
        // The body runs in a closure so that a `return` in it still
        // returns the future to be wrapped.
        let body = quote_spanned! {span=>
            let #policies = #resolved;
            #setup
            #[allow(clippy::redundant_closure_call)]
            let #call = (move || { #(#stmts)* })();
            #future
        };
        return (sig, body);
    }
    // The parameters, renamed, and the patterns they were bound to.
    let mut args = Vec::new();
    let mut patterns = Vec::new();
    let mut cloned = Vec::new();
    for (i, input) in sig.inputs.iter_mut().enumerate() {
        if let FnArg::Typed(typed) = input {
            let arg = local(&format!("arg{i}"));
            let pattern = std::mem::replace(
                &mut *typed.pat,
                Pat::Ident(syn::PatIdent {
                    attrs: Vec::new(),
                    by_ref: None,
                    mutability: None,
                    ident: arg.clone(),
                    subpat: None,
                }),
            );
            cloned.push(composed::again(&arg, &typed.ty));
            patterns.push(pattern);
            args.push(arg);
        }
    }
    let retry = policy.retry.is_some();
    let bind = if retry {
        quote_spanned!(span=> #(let #patterns = #cloned;)*)
    } else {
        quote_spanned!(span=> let (#(#patterns,)*) = #once.take();)
    };
    let hold = (!retry).then(
        || quote_spanned!(span=> let mut #once = ::bulkhead::__private::Once::new((#(#args,)*));),
    );
    // Each attempt's result type is spelled out for the body's `?`.
    let body = if func.ret.kind == CallKind::Sync {
        let made = frame.split(&quote_spanned! {span=>
            ::bulkhead::__private::attempt::<#value>(|| {
                #bind
                #(#stmts)*
            })
        });
        let outcome = frame.call(
            &policies.to_token_stream(),
            &quote_spanned!(span=> || #made),
        );
        quote_spanned! {span=>
            let #policies = #resolved;
            #setup
            #hold
            #classify
            #outcome
        }
    } else {
        let made = frame.split_future(&quote_spanned! {span=>
            ::bulkhead::__private::attempt_async::<#value, _>(async move { #(#stmts)* })
        });
        let outcome = frame.call_async(
            &policies.to_token_stream(),
            &quote_spanned!(span=> || { #bind #made }),
        );
        quote_spanned! {span=>
            let #policies = #resolved;
            #setup
            #hold
            #classify
            #outcome
        }
    };
    (sig, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trait_method_without_resilient_is_atr_005() {
        let out = policy(
            Kind::Bulkhead,
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
            Kind::Bulkhead,
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
            Kind::Bulkhead,
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
            Kind::Bulkhead,
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
        assert!(
            out.contains("fn render () -> (u8 , u8) { (1 , 2) }"),
            "{out}"
        );
        assert!(!out.contains("POLICY"), "{out}");
    }
}
