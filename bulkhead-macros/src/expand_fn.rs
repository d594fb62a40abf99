//! Expansion of `#[bulkhead]` on its own: on a function with a body it wraps
//! the body; on a bodiless trait method it can only mean that `#[resilient]`
//! is missing from the trait (ATR-005).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{AttrStyle, Attribute, Ident, ItemFn, TraitItemFn};

use crate::ast::{CallKind, Func};
use crate::attr::BulkheadArgs;
use crate::codes::Errors;
use crate::{codes, expand, fallback, ids, valid};

/// `#[bulkhead(args)]` on `input`.
pub(crate) fn bulkhead(args: TokenStream, input: TokenStream) -> TokenStream {
    let unparsed = match syn::parse2::<ItemFn>(input.clone()) {
        Ok(item) => {
            return match try_expand(args, item.clone()) {
                Ok(expanded) => expanded,
                Err(error) => fallback::function(&item, error),
            };
        }
        Err(error) => error,
    };
    let error = match syn::parse2::<TraitItemFn>(input.clone()) {
        Ok(method) if method.default.is_none() => syn::Error::new(
            Span::call_site(),
            format!(
                "{}: #[bulkhead] on trait method `{}` needs #[resilient] on its trait, which generates the wrapper that applies it; add #[resilient] above the trait (if it is there, write the attribute as `bulkhead` or `bulkhead::bulkhead` so that #[resilient] recognises it)",
                codes::NOT_RESILIENT,
                method.sig.ident
            ),
        ),
        // A function with a syntax error: the parser's error alone.
        Err(_) if fallback::looks_like(&input, "fn") => unparsed,
        _ => syn::Error::new(
            Span::call_site(),
            format!(
                "{}: #[bulkhead] applies to functions and to methods of a #[resilient] trait",
                codes::UNWRAPPABLE
            ),
        ),
    };
    fallback::tokens(input, error)
}

fn try_expand(args: TokenStream, item: ItemFn) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let args = errors.attribute(BulkheadArgs::from_tokens(args));
    let func = Func::new(item, args.unwrap_or_default());
    valid::check_fn(&func, &mut errors);
    errors.finish()?;
    Ok(wrap(&func))
}

/// The function with its body run under the bulkhead, which is resolved
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
    // The body's statements, not its block: `{ Ok(x) }` after our own
    // statements would be `unused_braces`.
    let stmts = &block.stmts;
    let params = ids::params(sig);
    let name = sig.ident.unraw();
    let id = match &func.args.name {
        Some(name) => {
            let name = &name.value;
            quote!(::bulkhead::__private::Some(#name))
        }
        None => quote!(::bulkhead::__private::None),
    };
    let spec = expand::spec(&func.args);
    let policy_static = Ident::new("__BULKHEAD_POLICY", span);
    let self_type = Ident::new("__bulkhead_type", span);
    // `Self` and `module_path!()` keep the call-site span: they name the
    // user's type and module.
    let policy = if sig.receiver().is_some() {
        let method = format!("{name}{params}");
        let type_name = quote!(::bulkhead::__private::type_name::<Self>());
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::MethodPolicy =
                    ::bulkhead::__private::MethodPolicy::new();
                #policy_static.get(#type_name, |#self_type| {
                    ::bulkhead::__private::FnDecl::method(#id, #self_type, #method, #spec)
                })
            }
        }
    } else {
        let suffix = format!("::{name}{params}");
        let source = quote! {
            ::bulkhead::__private::String::from(::bulkhead::__private::concat!(
                ::bulkhead::__private::module_path!(),
                #suffix,
            ))
        };
        quote_spanned! {span=>
            {
                static #policy_static: ::bulkhead::__private::FnPolicy =
                    ::bulkhead::__private::FnPolicy::new();
                #policy_static.get(|| ::bulkhead::__private::FnDecl::new(#id, #source, #spec))
            }
        }
    };
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
        #(#outer)*
        #vis #sig {
            #(#inner)*
            #body
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trait_method_without_resilient_is_atr_005() {
        let out = bulkhead(
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
        let out = bulkhead(
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
        let out = bulkhead(
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
        let out = bulkhead(
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
