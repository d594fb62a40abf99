//! One wrapped method of the generated impl: its signature, the call
//! through its policies, and the call guarded where the delegate may not be
//! called again.

use super::*;

/// One method of the trait implementation.
pub(super) fn method(method: &Method, d: &Ident, delegate: &TokenStream) -> TokenStream {
    let span = Span::mixed_site();
    let cfgs = &method.cfgs;
    let (sig, params) = signature(method, d);
    let ident = &method.sig.ident;
    let turbofish = turbofish(&method.sig);
    let unsafety = matches!(method.sig.safety, Safety::Unsafe(_)).then(|| quote!(unsafe));
    // The delegate's method called on `receiver` with `arguments`.
    let call_with = |receiver: Option<&TokenStream>, arguments: &[TokenStream]| {
        let receiver = receiver.into_iter();
        quote_spanned! {span=>
            #unsafety { #delegate::#ident #turbofish(#(#receiver,)* #(#arguments),*) }
        }
    };
    let plain: Vec<TokenStream> = params.iter().map(ToTokens::to_token_stream).collect();
    // The delegate, borrowed (or moved) from its field; `self` keeps the
    // call-site span of the signature's receiver.
    let own = match method.self_arg {
        SelfArg::Ref => Some(quote!(&self.delegate)),
        SelfArg::RefMut => Some(quote!(&mut self.delegate)),
        SelfArg::Owned => Some(quote!(self.delegate)),
        SelfArg::None | SelfArg::Other(_) => None,
    };
    let mut inlined_whole = false;
    let body = match (method.policies(), &own) {
        // A wrapped method takes `self` (`valid/`).
        (Some(policies), Some(own)) => {
            let field = field(method, policies);
            if policies.bulkhead_alone().is_some() {
                inlined_whole = method.ret.flavor == Flavor::Sync;
                let call = |receiver: &TokenStream| call_with(Some(receiver), &plain);
                match &method.keyed {
                    Some(keyed) => {
                        inlined_whole = false;
                        guarded_keyed(method, keyed, &field, own, &params, call)
                    }
                    None => guarded(method, &field, own, &params, call),
                }
            } else {
                let call_with = |receiver: &TokenStream, arguments: &[TokenStream]| {
                    call_with(Some(receiver), arguments)
                };
                // The fallback method, called like the method (`valid/`
                // checked that it has the same signature).
                let (unsafety, turbofish) = (&unsafety, &turbofish);
                let fallback_with = policies.fallback_method().map(|fallback| {
                    move |receiver: &TokenStream, arguments: &[TokenStream]| {
                        quote_spanned! {span=>
                            #unsafety { #delegate::#fallback #turbofish(#receiver, #(#arguments),*) }
                        }
                    }
                });
                let fallback_with = fallback_with.as_ref().map(|f| f as &composed::CallWith<'_>);
                composed::body(
                    method,
                    policies,
                    method.keyed.as_ref(),
                    &field,
                    own,
                    &params,
                    &call_with,
                    fallback_with,
                )
            }
        }
        _ => call_with(own.as_ref(), &plain),
    };
    // `#[inline]`, as a hand-written wrapper would be: the method is a few
    // instructions around the delegate's call. A sync method with a
    // bulkhead alone is always inlined: what it keeps inline is a
    // semaphore's load, test, compare-exchange and release around the
    // call (and a quiet rejection), its other paths are one call out of
    // line (`__private::enter_then`), and called, it would pay its own
    // frame on every call (docs/benchmarks-history.md, *The wrapper
    // inlined, its slow paths out of line*).
    let inline = if inlined_whole {
        // No `allow(clippy::inline_always)`: clippy leaves generated code
        // alone, and the allow would be an error under a user's `forbid`.
        quote!(#[inline(always)])
    } else {
        quote!(#[inline])
    };
    quote! {
        #(#cfgs)*
        #inline
        #sig {
            #body
        }
    }
}

/// The body of a method with a bulkhead alone, kept in `field`: take a
/// slot, call the delegate (`call` on a receiver: `own`, the delegate
/// borrowed or moved from the wrapper, or what the future holds of it), give
/// the slot back with the call's outcome (`Reject::release`).
pub(super) fn guarded(
    method: &Method,
    field: &Ident,
    own: &TokenStream,
    params: &[Ident],
    call: impl Fn(&TokenStream) -> TokenStream,
) -> TokenStream {
    let span = Span::mixed_site();
    let bulkhead = local("");
    let reject = local("reject");
    let (permit, output) = (local("permit"), local("output"));
    let (future, delegate) = (local("call"), local("delegate"));
    let take = take_field(method, &bulkhead, field);
    // Checks, once, that the return type can carry a rejection (ATR-004).
    let rejecter = rejecter(&reject, &method.ret, method.annotations.named());
    if method.ret.flavor == Flavor::Sync {
        // A free slot and a quiet rejection inline, anything else out of
        // line (`enter_then`). The delegate's call is one closure that
        // captures nothing, given the delegate and the arguments, written
        // once for both paths, so that a mistake in it is reported once.
        let deferred = call(&delegate.to_token_stream());
        let arguments = quote_spanned!(span=> (#(#params,)*));
        return quote_spanned! {span=>
            #take
            #rejecter
            let #future = |#delegate, (#(#params,)*)| #deferred;
            match ::bulkhead::__private::enter_at_once(&#bulkhead, #reject) {
                ::bulkhead::__private::Some(::bulkhead::__private::Ok(#permit)) => {
                    ::bulkhead::__private::call_then_release(
                        #permit, #reject, #own, #arguments, #future,
                    )
                }
                ::bulkhead::__private::Some(::bulkhead::__private::Err(#output)) => #output,
                ::bulkhead::__private::None => ::bulkhead::__private::enter_then(
                    &#bulkhead, #reject, #own, #arguments, #future,
                ),
            }
        };
    }
    let enter = enter(
        method.ret.flavor,
        &quote_spanned!(span=> &#bulkhead),
        &reject,
        &permit,
    );
    // The future that takes a slot, then runs `made`, the delegate's
    // future. With the bulkhead borrowed, `__private::guard_async`, whose
    // first poll decides inline (a rejected call pays no copy of what the
    // future holds: issue 33); a bulkhead the future owns (a wrapper taken
    // by value, a detached future) is borrowed by it, which an `async`
    // block can do and a plain future not.
    let borrowed = !matches!(method.self_arg, SelfArg::Owned) && !method.ret.detached;
    let guard = |made: TokenStream| {
        if borrowed {
            return quote_spanned! {span=>
                ::bulkhead::__private::guard_async(#bulkhead, #reject, async move { #made.await })
            };
        }
        quote_spanned! {span=>
            async move {
                #enter
                let #output = #made.await;
                #reject.release(#permit, &#output);
                #output
            }
        }
    };
    // The delegate as the future holds it until it has a slot (`&D`,
    // `&mut D` or `D`), and the call made from it then.
    let held = quote_spanned!(span=> #delegate);
    let hold = quote_spanned!(span=> let #delegate = #own;);
    let in_future = guard(call(&held));
    let at_once = guard(future.to_token_stream());
    let body = match CallTime::of(method) {
        CallTime::InFuture => quote_spanned! {span=>
            #take
            #hold
            #rejecter
            #in_future
        },
        CallTime::InFutureIfSend => {
            // Everything the future would hold, as one value whose type the
            // type checker tests for `Send`; each closure takes it apart.
            let pattern = quote_spanned!(span=> (#bulkhead, #held, #(#params,)*));
            let made = call(&held);
            let pick = pick_call_time(span, &pattern, &in_future, &future, &made, &at_once);
            quote_spanned! {span=>
                #take
                #hold
                #rejecter
                #pick
            }
        }
        CallTime::AtOnce => {
            let made = call(own);
            quote_spanned! {span=>
                #take
                #rejecter
                let #future = #made;
                #at_once
            }
        }
    };
    if method.ret.flavor == Flavor::BoxedFuture {
        quote_spanned!(span=> ::bulkhead::__private::Box::pin({ #body }))
    } else {
        body
    }
}

/// The body of a method with a keyed bulkhead alone, kept in `field`, keyed
/// by the argument `keyed`: take a slot of the argument's key, call the
/// delegate (`call` on a receiver, as for [`guarded`]), give the slot back
/// with the call's outcome.
///
/// A sync call borrows its key to enter (`__private::enter_keyed`); the
/// permit borrows the bulkhead only, so the argument then moves into the
/// call. The future of an async one keeps what it enters with apart from
/// the arguments it moves into the call: a reference key copied, a key
/// taken by value cloned (the permit of `KeyedBulkhead::enter_async`
/// borrows the key it was given).
pub(super) fn guarded_keyed(
    method: &Method,
    keyed: &KeyArg,
    field: &Ident,
    own: &TokenStream,
    params: &[Ident],
    call: impl Fn(&TokenStream) -> TokenStream,
) -> TokenStream {
    let span = Span::mixed_site();
    let bulkhead = local("");
    let reject = local("reject");
    let (permit, output, rejected) = (local("permit"), local("output"), local("rejected"));
    let (future, delegate, key) = (local("call"), local("delegate"), local("key"));
    let take = take_field(method, &bulkhead, field);
    let rejecter = rejecter(&reject, &method.ret, method.annotations.named());
    let argument = &params[keyed.position];
    // The type checker's errors about the key (ATR-021) point at the
    // parameter's type.
    let key_type = keyed.key_type();
    let (enter_keyed, enter_keyed_async) = (
        quote_spanned!(keyed.span()=> ::bulkhead::__private::enter_keyed::<#key_type, _, _>),
        quote_spanned!(keyed.span()=> ::bulkhead::__private::enter_keyed_async::<#key_type, _, _>),
    );
    let awaited = quote_spanned!(keyed.span()=> .await);
    if method.ret.flavor == Flavor::Sync {
        let passed = keyed.passed(argument);
        let made = call(own);
        return quote_spanned! {span=>
            #take
            #rejecter
            match #enter_keyed(&#bulkhead, #passed, #reject) {
                ::bulkhead::__private::Ok(#permit) => {
                    let #output = #made;
                    #reject.release(#permit, &#output);
                    #output
                }
                ::bulkhead::__private::Err(#output) => #output,
            }
        };
    }
    let held_key = keyed.held(argument);
    let passed = keyed.passed(&key);
    // The future that takes a slot of the key, then runs `made`, the
    // delegate's future.
    let guard = |made: TokenStream| {
        quote_spanned! {span=>
            async move {
                let #permit = match #enter_keyed_async(&#bulkhead, #passed, #reject) #awaited {
                    ::bulkhead::__private::Ok(#permit) => #permit,
                    ::bulkhead::__private::Err(#rejected) => return #rejected,
                };
                let #output = #made.await;
                #reject.release(#permit, &#output);
                #output
            }
        }
    };
    let held = quote_spanned!(span=> #delegate);
    let hold = quote_spanned!(span=> let #delegate = #own; let #key = #held_key;);
    let in_future = guard(call(&held));
    let at_once = guard(future.to_token_stream());
    let body = match CallTime::of(method) {
        CallTime::InFuture => quote_spanned! {span=>
            #take
            #hold
            #rejecter
            #in_future
        },
        CallTime::InFutureIfSend => {
            let pattern = quote_spanned!(span=> (#bulkhead, #held, #key, #(#params,)*));
            let made = call(&held);
            let pick = pick_call_time(span, &pattern, &in_future, &future, &made, &at_once);
            quote_spanned! {span=>
                #take
                #hold
                #rejecter
                #pick
            }
        }
        CallTime::AtOnce => {
            let made = call(own);
            quote_spanned! {span=>
                #take
                let #key = #held_key;
                #rejecter
                let #future = #made;
                #at_once
            }
        }
    };
    if method.ret.flavor == Flavor::BoxedFuture {
        quote_spanned!(span=> ::bulkhead::__private::Box::pin({ #body }))
    } else {
        body
    }
}

/// The signature of the wrapper's method: the trait's, with each parameter
/// bound to a plain identifier (whatever pattern a default method used), so
/// that it can be passed on, and `async fn` written as `fn -> impl Future`.
pub(super) fn signature(method: &Method, delegate: &Ident) -> (Signature, Vec<Ident>) {
    let mut sig = method.sig.clone();
    CapturesOfSelf(delegate).visit_return_type_mut(&mut sig.output);
    let params = rename_parameters(&mut sig)
        .into_iter()
        .map(|parameter| parameter.name)
        .collect();
    if let Some(FnArg::Receiver(receiver)) = sig.inputs.first_mut() {
        receiver.mutability = None;
    }
    if sig.asyncness.take().is_some() {
        let value = &method.ret.value;
        sig.output = ReturnType::Type(
            Default::default(),
            Box::new(parse_quote!(impl ::bulkhead::__private::Future<Output = #value>)),
        );
    }
    (sig, params)
}

/// Rewrites `Self` in the `use<..>` bounds of a return type to the
/// delegate's type parameter: the trait must list `Self`, an impl may not
/// (it is an alias there) and must list its type parameters instead; the
/// wrapper's future captures the wrapper, and so `D`.
pub(super) struct CapturesOfSelf<'a>(&'a Ident);

impl VisitMut for CapturesOfSelf<'_> {
    fn visit_precise_capture_mut(&mut self, capture: &mut syn::PreciseCapture) {
        for param in &mut capture.params {
            if let syn::CapturedParam::Ident(ident) = param
                && ident == "Self"
            {
                *ident = Ident::new(&self.0.to_string(), ident.span());
            }
        }
    }
}

/// `::<T, N>` for a generic method, so that type parameters the arguments
/// do not mention are still passed on (next to `impl Trait` arguments too,
/// which is allowed since Rust 1.63); empty when there are none.
pub(super) fn turbofish(sig: &Signature) -> TokenStream {
    let params: Vec<&Ident> = sig
        .generics
        .params
        .iter()
        .filter_map(|param| match param {
            GenericParam::Type(t) => Some(&t.ident),
            GenericParam::Const(c) => Some(&c.ident),
            GenericParam::Lifetime(_) => None,
        })
        .collect();
    if params.is_empty() {
        TokenStream::new()
    } else {
        quote!(::<#(#params),*>)
    }
}
