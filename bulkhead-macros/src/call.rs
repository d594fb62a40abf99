//! The pieces of generated code every wrapped call is made of, whether it
//! is a `#[resilient]` wrapper's method (`expand/`, `composed.rs`) or a
//! function with a body (`expand_fn.rs`): the parameters bound to plain
//! names, the rejecter that converts a rejection into the method's error
//! (ATR-004), entering the bulkhead, and when a method returning a future
//! calls its delegate ([`CallTime`]).

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Attribute, FnArg, Ident, Pat, Signature, Type};

use crate::annotations::Named;
use crate::ast::{Flavor, Method, Returns, SelfArg};
use crate::tokens::{binding, local, mixed_ends};

/// A parameter of a function, bound to a plain name by
/// [`rename_parameters`].
pub(crate) struct Parameter {
    /// `__bulkhead_arg<i>`, `i` counting `self`.
    pub(crate) name: Ident,
    /// The pattern the user bound it to.
    pub(crate) pattern: Pat,
    pub(crate) ty: Type,
    /// Its conditions (`#[cfg]`, `#[cfg_attr]`) and lint attributes
    /// (`#[allow(unused_mut)]`), which the statements binding `pattern`
    /// carry too: a parameter compiled out is bound nowhere, a lint
    /// silenced on it stays silenced.
    pub(crate) attrs: Vec<Attribute>,
}

/// The attributes of a parameter that its bindings carry.
const CARRIED: &[&str] = &[
    "cfg", "cfg_attr", "allow", "expect", "warn", "deny", "forbid",
];

/// Binds every parameter of `sig` but `self` to a plain name, whatever
/// pattern it had, so that it can be passed on; gives each, in order.
pub(crate) fn rename_parameters(sig: &mut Signature) -> Vec<Parameter> {
    let mut parameters = Vec::new();
    for (i, input) in sig.inputs.iter_mut().enumerate() {
        if let FnArg::Typed(typed) = input {
            let name = local(&format!("arg{i}"));
            let pattern = std::mem::replace(&mut *typed.pat, binding(name.clone()));
            let attrs = typed
                .attrs
                .iter()
                .filter(|attr| CARRIED.iter().any(|word| attr.path().is_ident(word)))
                .cloned()
                .collect();
            parameters.push(Parameter {
                name,
                pattern,
                ty: (*typed.ty).clone(),
                attrs,
            });
        }
    }
    parameters
}

/// `let binding = self.field;`: the wrapper's field (a method's bulkhead or
/// policies) as the call holds it, moved out of a wrapper taken by value,
/// cloned into a future that may not borrow the wrapper
/// ([`Returns::detached`]), borrowed otherwise.
pub(crate) fn take_field(method: &Method, binding: &Ident, field: &Ident) -> TokenStream {
    let span = Span::mixed_site();
    // `self` keeps the call-site span of the signature's receiver.
    let field = quote!(self.#field.0);
    if matches!(method.self_arg, SelfArg::Owned) {
        quote_spanned!(span=> let #binding = #field;)
    } else if method.ret.detached {
        quote_spanned!(span=> let #binding = ::bulkhead::__private::Clone::clone(&#field);)
    } else {
        quote_spanned!(span=> let #binding = &#field;)
    }
}

/// `let permit = match enter(bulkhead, reject) { Ok(permit) => permit,
/// Err(rejected) => return rejected };`: the call takes a slot of `bulkhead`
/// (an expression of a `&Bulkhead`), waiting for it (`enter_async(..).await`)
/// unless the call is [`Flavor::Sync`] (`enter`, which blocks if the
/// bulkhead waits); a rejected call returns its rejection, converted by
/// `reject` (see [`rejecter`]).
pub(crate) fn enter(
    flavor: Flavor,
    bulkhead: &TokenStream,
    reject: &Ident,
    permit: &Ident,
) -> TokenStream {
    let span = Span::mixed_site();
    let rejected = local("rejected");
    let entered = if flavor == Flavor::Sync {
        quote_spanned!(span=> ::bulkhead::__private::enter(#bulkhead, #reject))
    } else {
        quote_spanned!(span=> ::bulkhead::__private::enter_async(#bulkhead, #reject).await)
    };
    quote_spanned! {span=>
        let #permit = match #entered {
            ::bulkhead::__private::Ok(#permit) => #permit,
            ::bulkhead::__private::Err(#rejected) => return #rejected,
        };
    }
}

/// When the wrapper of a method returning a future calls the delegate's
/// method, which makes the delegate's future (running whatever the method
/// does before its `async` part).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CallTime {
    /// Inside the wrapper's future, once it holds a slot: a rejected call
    /// does not call the method (rule B2 in `docs/bulkhead.md`). The future holds the receiver and
    /// the arguments until then.
    InFuture,
    /// As [`CallTime::InFuture`] if the receiver and the arguments are
    /// `Send` in the trait's generic context, so that a future declared
    /// `Send` can hold them; at once otherwise. The type checker picks,
    /// through `__private::Defer`.
    InFutureIfSend,
    /// When the wrapper's method is called: the future may not borrow the
    /// wrapper ([`Returns::detached`]), or it is bound by a lifetime that the
    /// arguments may not outlive ([`Returns::outlives`]).
    AtOnce,
}

impl CallTime {
    pub(crate) fn of(method: &Method) -> Self {
        let ret = &method.ret;
        if ret.detached || (ret.outlives && method.has_arguments()) {
            CallTime::AtOnce
        } else if ret.send.is_some() {
            CallTime::InFutureIfSend
        } else {
            CallTime::InFuture
        }
    }
}

/// The delegate's call made in the future if everything the future would
/// hold is `Send`, else at once, as the type checker decides: `pattern`
/// gathers it into one value, `input`, whose type is tested, and each
/// closure takes it apart again. `in_future` is the future that calls the
/// delegate; the other binds `made` (the delegate's future, made at once)
/// to `binding` and then runs `at_once`.
pub(crate) fn pick_call_time(
    span: Span,
    pattern: &TokenStream,
    in_future: &TokenStream,
    binding: &impl ToTokens,
    made: &TokenStream,
    at_once: &TokenStream,
) -> TokenStream {
    let input = local("input");
    quote_spanned! {span=>
        let #input = #pattern;
        #[allow(unused_imports)]
        use ::bulkhead::__private::{CallAtOnce as _, CallInFutureIfSend as _};
        (&::bulkhead::__private::Defer::of(&#input)).pick(
            #input,
            move |#pattern| #in_future,
            move |#pattern| {
                let #binding = #made;
                #at_once
            },
        )
    }
}

/// `let #reject = ::bulkhead::__private::rejecter_<attribute>();`, the one
/// place the generated code asks that the return type can carry a
/// rejection, through the facade's rejecter whose ATR-004 names `named`.
/// The call starts at the first token of the return type and ends at its
/// last, so that the type checker's ATR-004 covers the whole type.
pub(crate) fn rejecter(reject: &Ident, ret: &Returns, named: Named) -> TokenStream {
    let (first, last) = mixed_ends(ret.written.clone());
    let name = named.item("rejecter_", last);
    let path = quote_spanned!(first=> ::bulkhead::__private::);
    let mut args = Group::new(Delimiter::Parenthesis, TokenStream::new());
    args.set_span(last);
    quote_spanned!(Span::mixed_site()=> let #reject = #path #name #args;)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::{ToTokens, format_ident};
    use syn::parse_quote;

    #[test]
    fn entering_blocks_a_sync_call_and_awaits_an_async_one() {
        let (bulkhead, reject, permit) = (quote!(&b), format_ident!("r"), format_ident!("p"));
        assert_eq!(
            enter(Flavor::Sync, &bulkhead, &reject, &permit).to_string(),
            "let p = match :: bulkhead :: __private :: enter (& b , r) { :: bulkhead :: __private :: Ok (p) => p , :: bulkhead :: __private :: Err (__bulkhead_rejected) => return __bulkhead_rejected , } ;"
        );
        let entered = enter(Flavor::AsyncFn, &bulkhead, &reject, &permit).to_string();
        assert!(
            entered.contains(":: enter_async (& b , r) . await {"),
            "{entered}"
        );
    }

    #[test]
    fn the_rejecter_is_the_one_whose_message_names_the_attributes() {
        let ret = crate::ast::Returns::of(
            &parse_quote!(fn f(&self) -> Result<u8, E>),
            &syn::Generics::default(),
        );
        let reject = format_ident!("r");
        let of = |named| rejecter(&reject, &ret, named).to_string();
        assert_eq!(
            of(Named::Attribute(crate::policies::PolicyKind::RateLimiter)),
            "let r = :: bulkhead :: __private :: rejecter_rate_limiter () ;"
        );
        assert!(of(Named::Policies).contains(":: rejecter_policies ()"));
    }

    #[test]
    fn parameters_get_plain_names_and_keep_their_patterns() {
        let mut sig: Signature = parse_quote!(fn f(&mut self, (a, b): (u8, u8), mut c: u8));
        let parameters = rename_parameters(&mut sig);
        let names: Vec<String> = parameters.iter().map(|p| p.name.to_string()).collect();
        assert_eq!(names, ["__bulkhead_arg1", "__bulkhead_arg2"]);
        let patterns: Vec<String> = parameters
            .iter()
            .map(|p| p.pattern.to_token_stream().to_string())
            .collect();
        assert_eq!(patterns, ["(a , b)", "mut c"]);
        assert_eq!(
            sig.to_token_stream().to_string(),
            "fn f (& mut self , __bulkhead_arg1 : (u8 , u8) , __bulkhead_arg2 : u8)"
        );
    }
}
