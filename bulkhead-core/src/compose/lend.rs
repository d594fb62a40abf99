//! [`Lend`]: a `&mut` value lent to the attempts of one call, one at a
//! time.

use std::sync::{Mutex, PoisonError};

/// A `&mut` value lent to the attempts of one call through [`Policies`],
/// one at a time: each attempt's future holds it (not a borrow of the
/// closure that made the future, which it could not outlive) and gives it
/// back when it completes or is dropped, before the next attempt starts.
/// The wrapper of an async method taking `&mut self` with `#[retry]` lends
/// its delegate this way.
///
/// [`Policies`]: crate::Policies
///
/// # Examples
///
/// ```
/// use bulkhead_core::Lend;
///
/// let mut count = 0;
/// let lend = Lend::new(&mut count);
/// for _ in 0..3 {
///     *lend.lend() += 1; // one attempt at a time
/// }
/// assert_eq!(*lend.into_inner(), 3);
/// ```
#[derive(Debug)]
pub struct Lend<'a, T: ?Sized>(Mutex<Option<&'a mut T>>);

impl<'a, T: ?Sized> Lend<'a, T> {
    /// Lends `value` to the attempts.
    #[inline]
    pub fn new(value: &'a mut T) -> Self {
        Lend(Mutex::new(Some(value)))
    }

    /// `value`, for one attempt.
    ///
    /// # Panics
    ///
    /// If another attempt holds it, which never happens: `Policies` drops an
    /// attempt's future before it makes the next.
    #[inline]
    pub fn lend(&self) -> Lent<'_, 'a, T> {
        let value = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        match value {
            Some(value) => Lent {
                home: &self.0,
                value: Some(value),
            },
            None => lent_twice(),
        }
    }
}

impl<'a, T: ?Sized> Lend<'a, T> {
    /// The value, once the attempts are over (for the fallback).
    ///
    /// # Panics
    ///
    /// If an attempt still holds it, which never happens: `Policies` has
    /// dropped every attempt's future when it returns.
    #[inline]
    pub fn into_inner(self) -> &'a mut T {
        match self.0.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

/// `&mut T` lent by a [`Lend`] to one attempt, given back on drop.
#[derive(Debug)]
pub struct Lent<'l, 'a, T: ?Sized> {
    home: &'l Mutex<Option<&'a mut T>>,
    value: Option<&'a mut T>,
}

impl<T: ?Sized> std::ops::Deref for Lent<'_, '_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match &self.value {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

impl<T: ?Sized> std::ops::DerefMut for Lent<'_, '_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.value {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

impl<T: ?Sized> Drop for Lent<'_, '_, T> {
    fn drop(&mut self) {
        *self.home.lock().unwrap_or_else(PoisonError::into_inner) = self.value.take();
    }
}

#[cold]
#[inline(never)]
fn lent_twice() -> ! {
    unreachable!("two attempts of one call held the delegate at once")
}
