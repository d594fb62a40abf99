//! The body of a wrapper's method whose policies include more than a
//! bulkhead: the call goes through the method's `Policies`, which compose
//! them in the fixed order `Fallback( Retry( Hedge( CircuitBreaker(
//! RateLimiter( Timeout( Bulkhead( call ) ) ) ) ) ) )`, and the
//! `Result<T, CallError<E>>` it gives becomes the method's own
//! `Result<T, E>`: a rejection through `E: From<Rejection>`
//! (`__private::Via`, see [`Frame`]), unless the fallback answers: the
//! wrapper then returns the delegate's fallback method, called with the
//! arguments themselves, outside every policy (`__private::falls_back`).
//!
//! `Policies` takes a closure it may call once per attempt:
//!
//! - with a policy that calls the method again or calls another with its
//!   arguments (`#[retry]`, `#[hedge]`, `#[fallback]`, see
//!   `PolicyKind::calls_again`), each attempt calls the delegate with its
//!   own clone of every argument (`__private::again_retry` and the like,
//!   ATR-012 for an argument that is not `Clone`, naming the attribute),
//!   keeping them for the fallback; an async method taking `&mut self`
//!   lends the delegate to one attempt's future at a time
//!   (`__private::Lend`), and takes it back for the fallback;
//! - without, the one attempt takes the receiver and the arguments (or, for
//!   a future that cannot hold them, the delegate's future made at once) out
//!   of a `__private::Once`, so nothing is cloned and nothing needs `Clone`.
//!
//! When an async method calls its delegate (inside its future, or at once)
//! follows the same rules as for a bulkhead alone ([`CallTime`]); with
//! `#[retry]` it is always inside the future, where each attempt happens.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::visit_mut::VisitMut;
use syn::{FnArg, Ident, Type};

use crate::annotations::Named;
use crate::ast::{Flavor, Method, Returns, SelfArg};
use crate::call::{CallTime, pick_call_time, rejecter, take_field};
use crate::keyed::KeyArg;
use crate::policies::{PolicyKind, PolicySet};
use crate::tokens::{local, mixed_ends};

/// The delegate's method called on a receiver with arguments.
pub(crate) type CallWith<'a> = dyn Fn(&TokenStream, &[TokenStream]) -> TokenStream + 'a;

/// What every call through `Policies` starts with, and the names it binds:
/// the rejecter (ATR-004, once, over the return type), the `Via` of the
/// result type, and the classifier with the `retry_if` / `record_if`
/// functions.
pub(crate) struct Frame {
    /// `let __bulkhead_reject = ..; use ..; let __bulkhead_via = ..;`
    pub(crate) setup: TokenStream,
    /// `let __bulkhead_classifier = ..;`, where the calls are made (inside
    /// the future of an async method).
    pub(crate) classify: TokenStream,
    pub(crate) reject: Ident,
    pub(crate) via: Ident,
    pub(crate) classifier: Ident,
    /// `call_hedged` with a hedge, `call_async` without: a method without
    /// `#[hedge]` does not carry the larger future of hedged attempts.
    call_async: Ident,
    /// How the call enters its keyed bulkhead, if the policies have one:
    /// each attempt then goes through `__private::call_keyed` (and its
    /// async forms) instead of `Policies::call`.
    key: Option<KeyedCall>,
}

/// How a call enters its keyed bulkhead.
pub(crate) struct KeyedCall {
    /// What it passes to enter it (a `&Q` or a `&K`).
    pub(crate) passed: TokenStream,
    /// The keyed bulkhead (a `&KeyedBulkhead<K>`) if the policies the
    /// call is given are the others alone (a function's), `None` if they
    /// are a `__private::KeyedPolicies` that holds it (a wrapper's).
    pub(crate) bulkhead: Option<TokenStream>,
    /// `K`, the type of its keys, named in the call so that the type
    /// checker's errors about the key (ATR-021) point at `span`, the
    /// parameter's type.
    pub(crate) key_type: TokenStream,
    pub(crate) span: Span,
}

impl KeyedCall {
    /// `::bulkhead::__private::<function>::<K, _, ..>(policies, keyed,
    /// key, rest)`, with `inferred` more types to infer: the other policies
    /// and the keyed bulkhead from `policies`, the key, then `rest`.
    fn call(
        &self,
        function: &str,
        inferred: usize,
        policies: &TokenStream,
        rest: TokenStream,
    ) -> TokenStream {
        let key_type = &self.key_type;
        let function = Ident::new(function, self.span);
        let inferred = (0..inferred).map(|_| quote_spanned!(self.span=> _));
        let path = quote_spanned! {self.span=>
            ::bulkhead::__private::#function::<#key_type, #(#inferred),*>
        };
        let passed = &self.passed;
        let span = Span::mixed_site();
        match &self.bulkhead {
            Some(bulkhead) => quote_spanned!(span=> #path(#policies, #bulkhead, #passed, #rest)),
            None => quote_spanned! {span=>
                #path(
                    ::bulkhead::__private::KeyedPolicies::policies(#policies),
                    ::bulkhead::__private::KeyedPolicies::keyed(#policies),
                    #passed,
                    #rest
                )
            },
        }
    }
}

impl Frame {
    /// The frame of a call under `policies`, which the type checker's
    /// messages call `named`, returning `ret`; `key` is how a call whose
    /// bulkhead is keyed enters it.
    pub(crate) fn new(
        policies: &PolicySet,
        named: Named,
        ret: &Returns,
        key: Option<KeyedCall>,
    ) -> Self {
        let span = Span::mixed_site();
        let (reject, via, classifier) = (local("reject"), local("via"), local("classifier"));
        let checked = rejecter(&reject, ret, named);
        let value = inferable(&ret.value);
        let setup = quote_spanned! {span=>
            #checked
            #[allow(unused_imports)]
            use ::bulkhead::__private::{
                JudgeFits as _, JudgeMisfits as _, NoPushback as _, PushbackOf as _, ViaOther as _,
                ViaResult as _,
            };
            let #via = ::bulkhead::__private::Via::<#value>::NEW;
        };
        let classify = classifier_of(policies, &via, &classifier, key.is_some());
        let hedged = policies.get(PolicyKind::Hedge).is_some();
        let call_async = match (hedged, key.is_some()) {
            (true, false) => Ident::new("call_hedged", span),
            (false, false) => Ident::new("call_async", span),
            (true, true) => Ident::new("call_keyed_hedged", span),
            (false, true) => Ident::new("call_keyed_async", span),
        };
        Frame {
            setup,
            classify,
            reject,
            via,
            classifier,
            call_async,
            key,
        }
    }

    /// `(&via).split(made)`: an attempt's result as the policies take it.
    pub(crate) fn split(&self, made: &TokenStream) -> TokenStream {
        let via = &self.via;
        quote_spanned!(Span::mixed_site()=> (&#via).split(#made))
    }

    /// `(&via).split_future(made)`: an attempt's future as the policies
    /// take it.
    pub(crate) fn split_future(&self, made: &TokenStream) -> TokenStream {
        let via = &self.via;
        quote_spanned!(Span::mixed_site()=> (&#via).split_future(#made))
    }

    /// The method's result from the policies' `outcome`.
    pub(crate) fn finish(&self, outcome: &TokenStream) -> TokenStream {
        let (via, reject) = (&self.via, &self.reject);
        quote_spanned!(Span::mixed_site()=> (&#via).finish(#outcome, #reject))
    }

    /// `policies.call(&classifier, attempt)`, finished.
    pub(crate) fn call(&self, policies: &TokenStream, attempt: &TokenStream) -> TokenStream {
        self.finish(&self.raw_call(policies, attempt))
    }

    /// `policies.call_async(&classifier, &mut attempt).await` (`call_hedged` with
    /// a hedge), finished.
    pub(crate) fn call_async(&self, policies: &TokenStream, attempt: &TokenStream) -> TokenStream {
        self.finish(&self.raw_call_async(policies, attempt))
    }

    /// `policies.call(..)` or `policies.call_async(..).await` (`call` is
    /// one of them), finished unless the fallback answers: then `answer`,
    /// the fallback method's call, is returned instead.
    pub(crate) fn or_fallback(
        &self,
        policies: &TokenStream,
        call: &TokenStream,
        answer: &TokenStream,
    ) -> TokenStream {
        let span = Span::mixed_site();
        let outcome = local("outcome");
        let finished = self.finish(&outcome.to_token_stream());
        let policies = if self.key.is_some() {
            quote_spanned!(span=> ::bulkhead::__private::KeyedPolicies::policies(#policies))
        } else {
            policies.clone()
        };
        quote_spanned! {span=>
            let #outcome = #call;
            if ::bulkhead::__private::falls_back(#policies, &#outcome) {
                return #answer;
            }
            #finished
        }
    }

    /// `Policies::call(policies, &classifier, attempt)` (`call_keyed` with
    /// the key for a keyed bulkhead), unfinished.
    fn raw_call(&self, policies: &TokenStream, attempt: &TokenStream) -> TokenStream {
        let classifier = &self.classifier;
        match &self.key {
            Some(key) => key.call(
                "call_keyed",
                4,
                policies,
                quote_spanned!(Span::mixed_site()=> &#classifier, #attempt),
            ),
            None => quote_spanned! {Span::mixed_site()=>
                ::bulkhead::__private::Policies::call(#policies, &#classifier, #attempt)
            },
        }
    }

    /// `Policies::call_async(policies, &classifier, &mut attempt).await` (or
    /// `call_hedged`), unfinished. The attempt's closure is a local of the
    /// method's future, made in place there, and lent: moved into the
    /// policies' future, its captures, just written one by one, would be
    /// copied by wider loads that stall on store forwarding (BENCHMARKS.md).
    fn raw_call_async(&self, policies: &TokenStream, attempt: &TokenStream) -> TokenStream {
        let (classifier, call_async) = (&self.classifier, &self.call_async);
        let lent = local("attempt");
        let call = match &self.key {
            Some(key) => key.call(
                &call_async.to_string(),
                5,
                policies,
                quote_spanned!(Span::mixed_site()=> &#classifier, &mut #lent),
            ),
            None => quote_spanned! {Span::mixed_site()=>
                ::bulkhead::__private::Policies::#call_async(#policies, &#classifier, &mut #lent)
            },
        };
        quote_spanned! {Span::mixed_site()=>
            {
                let mut #lent = #attempt;
                #call.await
            }
        }
    }
}

/// The body of `method`, run under `policies` (more than a bulkhead), kept
/// in the wrapper's `field`; `own` is the delegate borrowed or moved from
/// the wrapper, `params` the wrapper's parameters, `call_with` the call of
/// the delegate's method and `fallback_with` that of its fallback method
/// (if `policies` have a fallback).
///
/// With a keyed bulkhead (`keyed`, its key), the field is a
/// `__private::KeyedPolicies` and each attempt takes a slot of the
/// argument's key innermost (`__private::call_keyed`). The key is the
/// argument itself where the attempts are given clones of the arguments;
/// otherwise the call keeps it apart from the arguments it moves into the
/// attempt, as a call with a keyed bulkhead alone does (a reference key
/// copied, a key taken by value cloned).
#[allow(clippy::too_many_arguments)]
pub(crate) fn body(
    method: &Method,
    policies: &PolicySet,
    keyed: Option<&KeyArg>,
    field: &Ident,
    own: &TokenStream,
    params: &[Ident],
    call_with: &CallWith<'_>,
    fallback_with: Option<&CallWith<'_>>,
) -> TokenStream {
    let span = Span::mixed_site();
    let calls_again = policies.calling_again().is_some();
    let key = local("key");
    // The key as the call keeps it (if not the argument itself), and as
    // it passes it to enter the keyed bulkhead.
    let (held_key, passed) = match keyed {
        Some(keyed) if calls_again => (None, Some(keyed.passed(&params[keyed.position]))),
        Some(keyed) => {
            let held = keyed.held(&params[keyed.position]);
            (
                Some(quote_spanned!(span=> let #key = #held;)),
                Some(keyed.passed(&key)),
            )
        }
        None => (None, None),
    };
    let keyed_call = keyed.zip(passed).map(|(keyed, passed)| KeyedCall {
        passed,
        bulkhead: None,
        key_type: keyed.key_type(),
        span: keyed.span(),
    });
    let frame = Frame::new(
        policies,
        method.annotations.named(),
        &method.ret,
        keyed_call,
    );
    let setup = &frame.setup;
    let classify = &frame.classify;
    let (policies, delegate) = (local("policies"), local("delegate"));
    let (once, call, lend, lent) = (local("once"), local("call"), local("lend"), local("lent"));
    let plain: Vec<TokenStream> = params.iter().map(ToTokens::to_token_stream).collect();
    // The clones each attempt is given, if the policies call the method
    // again.
    let cloned: Vec<TokenStream> = match method.annotations.named_calling_again() {
        Some(named) => params
            .iter()
            .zip(argument_types(method))
            .map(|(param, ty)| again(param, ty, named))
            .collect(),
        None => Vec::new(),
    };

    if method.ret.flavor == Flavor::Sync {
        let attempt = if calls_again {
            let made = frame.split(&call_with(own, &cloned));
            quote_spanned!(span=> || #made)
        } else {
            let made = frame.split(&call_with(&delegate.to_token_stream(), &plain));
            quote_spanned! {span=>
                || {
                    let (#delegate, #(#params,)*) = #once.take();
                    #made
                }
            }
        };
        let hold = (!calls_again).then(|| {
            quote_spanned! {span=>
                #held_key
                let mut #once = ::bulkhead::__private::Once::new((#own, #(#params,)*));
            }
        });
        let call = match fallback_with {
            // The attempts hold clones: the arguments are the fallback's.
            Some(fallback_with) if calls_again => frame.or_fallback(
                &policies.to_token_stream(),
                &frame.raw_call(&policies.to_token_stream(), &attempt),
                &fallback_with(own, &plain),
            ),
            _ => frame.call(&policies.to_token_stream(), &attempt),
        };
        // `self` keeps the call-site span of the signature's receiver.
        let slots = quote!(self.#field.0);
        return quote_spanned! {span=>
            #setup
            let #policies = &#slots;
            #hold
            #classify
            #call
        };
    }

    // The policies as the future holds them, and as it uses them.
    let owned = matches!(method.self_arg, SelfArg::Owned) || method.ret.detached;
    let take = take_field(method, &policies, field);
    let used = if owned {
        quote_spanned!(span=> &#policies)
    } else {
        policies.to_token_stream()
    };
    // The future that runs the attempts, each made by `attempt`, after
    // `prepare`, and then `answer`s with the fallback if there is one and
    // it takes the call.
    let run_or = |prepare: TokenStream, attempt: TokenStream, answer: Option<TokenStream>| {
        let call = match answer {
            Some(answer) => {
                frame.or_fallback(&used, &frame.raw_call_async(&used, &attempt), &answer)
            }
            None => frame.call_async(&used, &attempt),
        };
        quote_spanned! {span=>
            async move {
                #prepare
                #classify
                #call
            }
        }
    };
    let run = |prepare: TokenStream, attempt: TokenStream| run_or(prepare, attempt, None);
    let hold = quote_spanned!(span=> let #delegate = #own; #held_key);
    let in_future_once = || {
        let made = frame.split_future(&call_with(&delegate.to_token_stream(), &plain));
        run(
            quote_spanned! {span=>
                let mut #once = ::bulkhead::__private::Once::new((#delegate, #(#params,)*));
            },
            quote_spanned! {span=>
                || {
                    let (#delegate, #(#params,)*) = #once.take();
                    #made
                }
            },
        )
    };
    let at_once = {
        let taken = frame.split_future(&quote_spanned!(span=> #once.take()));
        run(
            quote_spanned!(span=> let mut #once = ::bulkhead::__private::Once::new(#call);),
            quote_spanned!(span=> || #taken),
        )
    };
    let body = if calls_again && matches!(method.self_arg, SelfArg::RefMut) {
        let made = call_with(&quote_spanned!(span=> &mut *#lent), &plain);
        let made = frame.split_future(&quote_spanned!(span=> async move { #made.await }));
        // The delegate, given back by the lend once the attempts are over.
        let answer = fallback_with.map(|fallback_with| {
            let back = quote_spanned!(span=> ::bulkhead::__private::Lend::into_inner(#lend));
            let answer = fallback_with(&back, &plain);
            quote_spanned!(span=> #answer.await)
        });
        let future = run_or(
            quote_spanned!(span=> let #lend = ::bulkhead::__private::Lend::new(#delegate);),
            quote_spanned! {span=>
                || {
                    let mut #lent = #lend.lend();
                    let (#(#params,)*) = (#(#cloned,)*);
                    #made
                }
            },
            answer,
        );
        let future = attempts_if_send(method, &policies, &delegate, params, future);
        quote_spanned!(span=> #setup #take #hold #future)
    } else if calls_again {
        let made = frame.split_future(&call_with(&delegate.to_token_stream(), &cloned));
        let answer = fallback_with.map(|fallback_with| {
            let answer = fallback_with(&delegate.to_token_stream(), &plain);
            quote_spanned!(span=> #answer.await)
        });
        let future = run_or(TokenStream::new(), quote_spanned!(span=> || #made), answer);
        let future = attempts_if_send(method, &policies, &delegate, params, future);
        quote_spanned!(span=> #setup #take #hold #future)
    } else {
        match CallTime::of(method) {
            CallTime::InFuture => {
                let future = in_future_once();
                quote_spanned!(span=> #setup #take #hold #future)
            }
            CallTime::AtOnce => {
                let made = call_with(own, &plain);
                quote_spanned! {span=>
                    #setup
                    #take
                    #held_key
                    let #call = #made;
                    #at_once
                }
            }
            CallTime::InFutureIfSend => {
                // Everything the future would hold, as one value whose type
                // the type checker tests for `Send`; each closure takes it
                // apart.
                let kept = held_key.as_ref().map(|_| quote_spanned!(span=> #key,));
                let pattern = quote_spanned!(span=> (#policies, #delegate, #kept #(#params,)*));
                let made = call_with(&delegate.to_token_stream(), &plain);
                let in_future = in_future_once();
                let pick = pick_call_time(span, &pattern, &in_future, &call, &made, &at_once);
                quote_spanned! {span=>
                    #setup
                    #take
                    #hold
                    #pick
                }
            }
        }
    };
    if method.ret.flavor == Flavor::BoxedFuture {
        quote_spanned!(span=> ::bulkhead::__private::Box::pin({ #body }))
    } else {
        body
    }
}

/// `future`, the future of a method with `#[retry]` (or `#[hedge]`,
/// `#[fallback]`), which holds the policies, the delegate and the arguments
/// across its attempts: as it is if the method's future is not declared
/// `Send`; else, if all it holds is `Send` (the type checker decides,
/// through `__private::Defer`), as it is, and otherwise a future that never
/// completes, picked beside a check (`held_by_retry` and the like, naming
/// the attributes that call the method again) whose bound reports ATR-007
/// over the future's `Send` bound, with the fix: so that the one error says
/// why, instead of the type checker's about the generated `async` block and
/// its `D`.
fn attempts_if_send(
    method: &Method,
    policies: &Ident,
    delegate: &Ident,
    params: &[Ident],
    future: TokenStream,
) -> TokenStream {
    let (Some(named), Some(send)) = (method.annotations.named_calling_again(), &method.ret.send)
    else {
        return future;
    };
    let span = Span::mixed_site();
    // The check is spanned on the `Send` bound (its last token, the
    // trait's name), where its error is reported.
    let (_, at) = mixed_ends(send.clone());
    let (held, attempts) = (named.item("held_by_", at), Ident::new("attempts", at));
    let input = local("input");
    let input_at = Ident::new(&input.to_string(), at);
    let pattern = quote_spanned!(span=> (#policies, #delegate, #(#params,)*));
    let check = quote_spanned!(at=> (&::bulkhead::__private::Defer::of(&#input_at)).#held(););
    quote_spanned! {span=>
        let #input = #pattern;
        #[allow(unused_imports)]
        use ::bulkhead::__private::{AttemptsHeldSend as _, AttemptsHeldNotSend as _};
        #check
        (&::bulkhead::__private::Defer::of(&#input)).#attempts(#input, move |#pattern| #future)
    }
}

/// The types of the method's parameters, without the receiver.
fn argument_types(method: &Method) -> impl Iterator<Item = &Type> {
    method.sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(typed) => Some(&*typed.ty),
        FnArg::Receiver(_) => None,
    })
}

/// `ty` as it can be written inside a body: each `impl Trait` in it
/// replaced by `_`, which the type checker infers.
pub(crate) fn inferable(ty: &Type) -> Type {
    struct Infer;
    impl VisitMut for Infer {
        fn visit_type_mut(&mut self, ty: &mut Type) {
            if let Type::ImplTrait(imp) = ty {
                let underscore = syn::Token![_](imp.impl_token.span);
                *ty = syn::parse_quote!(#underscore);
                return;
            }
            syn::visit_mut::visit_type_mut(self, ty);
        }
    }
    let mut ty = ty.clone();
    Infer.visit_type_mut(&mut ty);
    ty
}

/// `::bulkhead::__private::again_<attribute>(&arg)`: the clone of `arg` an
/// attempt gets, covering `ty` in the error of an argument that is not
/// `Clone` (ATR-012, naming `named`, the attributes that call the method
/// again).
pub(crate) fn again(arg: &Ident, ty: &Type, named: Named) -> TokenStream {
    let (first, last) = mixed_ends(ty.to_token_stream());
    let arg = Ident::new(&arg.to_string(), last);
    let again = named.item("again_", first);
    quote_spanned!(first=> ::bulkhead::__private::#again(&#arg))
}

/// `let #classifier = (&#via).pushback((&#via).classifier()..);`, with the
/// functions the policies' keys name (`retry_if`, `record_if`), in the
/// order of the composition, each bound to a local first and passed to the
/// classifier's method of the key's name; a function that is not a
/// `fn(&E) -> bool` is reported over its path (ATR-011). `pushback` makes
/// the classifier read `E`'s `Pushback::retry_after` when the method's
/// error type implements it (`__private::PushbackOf`).
///
/// With a keyed bulkhead (`keyed`), the functions go to a
/// `__private::KeyedClassify` instead (`keyed_pushback` for `Pushback`),
/// from which `call_keyed` makes the classifier of its attempts.
fn classifier_of(
    policies: &PolicySet,
    via: &Ident,
    classifier: &Ident,
    keyed: bool,
) -> TokenStream {
    let span = Span::mixed_site();
    let mut bindings = TokenStream::new();
    let mut calls = TokenStream::new();
    let predicates = policies.iter().flat_map(|policy| policy.keys.predicates());
    for (key, path) in predicates {
        let (first, last) = mixed_ends(path.to_token_stream());
        let local = Ident::new(&format!("__bulkhead_{key}"), span);
        bindings.extend(quote_spanned!(span=> let #local = #path;));
        let method = Ident::new(key, span);
        let used = Ident::new(&local.to_string(), last);
        let via = Ident::new(&via.to_string(), first);
        let fits = Ident::new("fits", last);
        let wrapped = quote_spanned!(first=> (&(&#via).judge(&#used)).#fits());
        calls.extend(quote_spanned!(span=> .#method(#wrapped)));
    }
    if keyed {
        return quote_spanned! {span=>
            #bindings
            let #classifier = (&#via).keyed_pushback((&#via).keyed_classifier() #calls);
        };
    }
    quote_spanned! {span=>
        #bindings
        let #classifier = (&#via).pushback((&#via).classifier() #calls);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn impl_trait_in_a_result_type_is_inferred_inside_the_body() {
        let ty: Type = parse_quote!(Result<impl Iterator<Item = u8>, Vec<impl Sized>>);
        assert_eq!(
            inferable(&ty).to_token_stream().to_string(),
            "Result < _ , Vec < _ > >"
        );
    }
}
