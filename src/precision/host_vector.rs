//! How a vector of a working precision is laid out in host memory: the CPU backend's vectors.
//!
//! Most precisions are stored as an array of their values ([`Vec<P>`]). Triple precision is
//! the thesis's structure of arrays (section 2.3.4): `n` doubles (`hi`) and `n` 32-bit integers
//! (the top of `lo`), [`TdVector`], as on the GPU. Kernels are written once against the views
//! below: [`HostSlice`] (read) and [`HostSliceMut`] (write), which split into disjoint pieces for
//! the thread pool, and hand out contiguous `&[P]` where the layout has it (the SIMD
//! double-double kernels need that).

use super::{Precision, Td};
use rayon::prelude::*;
use std::borrow::Cow;
use std::fmt::Debug;

/// `n` copies of `value`, each written, by the thread pool. Not `vec![value; n]`: for a zero
/// double that takes zeroed pages from the system lazily (calloc), so the first pass writing the
/// vector would pay the page faults inside a solve's timed loop, while a double-double vector,
/// written element by element, pays them in setup: both precisions should pay them in setup
/// (`benches/results/cpu.md`).
fn written<T: Clone + Send + Sync>(n: usize, value: &T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(value.clone(), n));
    v
}

/// A vector of `P` in host memory.
pub trait HostVector<P: Precision>: Clone + Debug + Send + Sync + 'static {
    type Slice<'a>: HostSlice<'a, P>
    where
        Self: 'a;
    type SliceMut<'a>: HostSliceMut<'a, P>
    where
        Self: 'a;

    fn from_values(values: Vec<P>) -> Self;
    fn filled(n: usize, value: &P) -> Self;
    fn to_values(&self) -> Vec<P>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn as_host_slice(&self) -> Self::Slice<'_>;
    fn as_host_slice_mut(&mut self) -> Self::SliceMut<'_>;
    /// A write view read back (a fused kernel reads what it has just written).
    fn read_back<'b>(s: &'b Self::SliceMut<'_>) -> Self::Slice<'b>;
    /// A write view lent out for a while (to a kernel that consumes its view).
    fn lend<'b>(s: &'b mut Self::SliceMut<'_>) -> Self::SliceMut<'b>;
}

/// Read access to (part of) a host vector.
pub trait HostSlice<'a, P: Precision>: Copy + Send + Sync + 'a {
    fn len(self) -> usize;
    fn split_at(self, mid: usize) -> (Self, Self);
    /// Element `i` (borrowed where the layout stores `P` values).
    fn get(self, i: usize) -> Cow<'a, P>;
    /// Element `i` without a bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn get_unchecked(self, i: usize) -> Cow<'a, P>;
    /// The elements as one contiguous `&[P]`, where the layout stores them so.
    fn as_slice(self) -> Option<&'a [P]>;
    /// The elements as td's two arrays, where the layout is that (so `P` is td).
    fn as_td(self) -> Option<TdSlice<'a>> {
        None
    }

    fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to the kernels' compute type ([`Precision::to_acc`]).
    #[inline(always)]
    fn load(self, i: usize) -> Cow<'a, P::Acc> {
        widen(self.get(i))
    }
    /// [`load`](HostSlice::load) without a bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    unsafe fn load_unchecked(self, i: usize) -> Cow<'a, P::Acc> {
        // SAFETY: forwarded from the caller.
        widen(unsafe { self.get_unchecked(i) })
    }
    /// Consecutive pieces of `size` elements (the last may be shorter).
    fn chunks(self, size: usize) -> Vec<Self> {
        assert!(size > 0, "chunks: size 0");
        let mut pieces = Vec::with_capacity(self.len().div_ceil(size));
        let mut rest = self;
        while !rest.is_empty() {
            let (piece, tail) = rest.split_at(size.min(rest.len()));
            pieces.push(piece);
            rest = tail;
        }
        pieces
    }
}

/// Write access to (part of) a host vector.
pub trait HostSliceMut<'a, P: Precision>: Send + Sized + 'a {
    fn len(&self) -> usize;
    fn split_at_mut(self, mid: usize) -> (Self, Self);
    /// Element `i` as stored now.
    fn get(&self, i: usize) -> Cow<'_, P>;
    fn set(&mut self, i: usize, value: P);
    /// The elements as one contiguous `&mut [P]` where the layout stores them so, else `self`.
    fn into_slice(self) -> Result<&'a mut [P], Self>;
    /// The elements as td's two arrays where the layout is that (so `P` is td), else `self`.
    fn into_td(self) -> Result<TdSliceMut<'a>, Self> {
        Err(self)
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i` widened to the kernels' compute type.
    #[inline(always)]
    fn load(&self, i: usize) -> Cow<'_, P::Acc> {
        widen(self.get(i))
    }
    /// Consecutive pieces of `size` elements (the last may be shorter).
    fn chunks_mut(self, size: usize) -> Vec<Self> {
        assert!(size > 0, "chunks_mut: size 0");
        let mut pieces = Vec::with_capacity(self.len().div_ceil(size));
        let mut rest = self;
        while !rest.is_empty() {
            let take = size.min(rest.len());
            let (piece, tail) = rest.split_at_mut(take);
            pieces.push(piece);
            rest = tail;
        }
        pieces
    }
}

#[inline(always)]
fn widen<P: Precision>(value: Cow<'_, P>) -> Cow<'_, P::Acc> {
    match value {
        Cow::Borrowed(v) => v.to_acc(),
        Cow::Owned(v) => Cow::Owned(v.to_acc().into_owned()),
    }
}

// An array of values: every precision but td.

impl<P: Precision> HostVector<P> for Vec<P> {
    type Slice<'a> = &'a [P];
    type SliceMut<'a> = &'a mut [P];

    fn from_values(values: Vec<P>) -> Self {
        values
    }
    fn filled(n: usize, value: &P) -> Self {
        written(n, value)
    }
    fn to_values(&self) -> Vec<P> {
        self.clone()
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn as_host_slice(&self) -> &[P] {
        self
    }
    fn as_host_slice_mut(&mut self) -> &mut [P] {
        self
    }
    fn read_back<'b>(s: &'b &mut [P]) -> &'b [P] {
        s
    }
    fn lend<'b>(s: &'b mut &mut [P]) -> &'b mut [P] {
        s
    }
}

impl<'a, P: Precision> HostSlice<'a, P> for &'a [P] {
    #[inline(always)]
    fn len(self) -> usize {
        <[P]>::len(self)
    }
    #[inline(always)]
    fn split_at(self, mid: usize) -> (Self, Self) {
        <[P]>::split_at(self, mid)
    }
    #[inline(always)]
    fn get(self, i: usize) -> Cow<'a, P> {
        Cow::Borrowed(&self[i])
    }
    #[inline(always)]
    unsafe fn get_unchecked(self, i: usize) -> Cow<'a, P> {
        // SAFETY: the caller guarantees `i < len`.
        Cow::Borrowed(unsafe { <[P]>::get_unchecked(self, i) })
    }
    #[inline(always)]
    fn as_slice(self) -> Option<&'a [P]> {
        Some(self)
    }
}

impl<'a, P: Precision> HostSliceMut<'a, P> for &'a mut [P] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[P]>::len(self)
    }
    #[inline(always)]
    fn split_at_mut(self, mid: usize) -> (Self, Self) {
        <[P]>::split_at_mut(self, mid)
    }
    #[inline(always)]
    fn get(&self, i: usize) -> Cow<'_, P> {
        Cow::Borrowed(&self[i])
    }
    #[inline(always)]
    fn set(&mut self, i: usize, value: P) {
        self[i] = value;
    }
    #[inline(always)]
    fn into_slice(self) -> Result<&'a mut [P], Self> {
        Ok(self)
    }
}

// Triple precision: D+I as a structure of arrays.

/// A td vector as the thesis stores it: the doubles `hi[i]`, and `lo[i]`, the upper 32 bits of
/// the low double's encoding ([`Td::parts`]); 12 bytes per element in two arrays, the layout of
/// the GPU's td vectors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TdVector {
    pub hi: Vec<f64>,
    pub lo: Vec<i32>,
}

/// Read view of a [`TdVector`]: the same range of both arrays.
#[derive(Clone, Copy, Debug)]
pub struct TdSlice<'a> {
    pub hi: &'a [f64],
    pub lo: &'a [i32],
}

/// Write view of a [`TdVector`].
#[derive(Debug)]
pub struct TdSliceMut<'a> {
    pub hi: &'a mut [f64],
    pub lo: &'a mut [i32],
}

impl HostVector<Td> for TdVector {
    type Slice<'a> = TdSlice<'a>;
    type SliceMut<'a> = TdSliceMut<'a>;

    fn from_values(values: Vec<Td>) -> Self {
        let (hi, lo) = values.into_iter().map(Td::parts).unzip();
        TdVector { hi, lo }
    }
    fn filled(n: usize, value: &Td) -> Self {
        let (hi, lo) = value.parts();
        TdVector {
            hi: written(n, &hi),
            lo: written(n, &lo),
        }
    }
    fn to_values(&self) -> Vec<Td> {
        let hi = self.hi.iter();
        hi.zip(&self.lo)
            .map(|(&h, &l)| Td::from_parts(h, l))
            .collect()
    }
    fn len(&self) -> usize {
        self.hi.len()
    }
    fn as_host_slice(&self) -> TdSlice<'_> {
        TdSlice {
            hi: &self.hi,
            lo: &self.lo,
        }
    }
    fn as_host_slice_mut(&mut self) -> TdSliceMut<'_> {
        TdSliceMut {
            hi: &mut self.hi,
            lo: &mut self.lo,
        }
    }
    fn read_back<'b>(s: &'b TdSliceMut<'_>) -> TdSlice<'b> {
        TdSlice { hi: s.hi, lo: s.lo }
    }
    fn lend<'b>(s: &'b mut TdSliceMut<'_>) -> TdSliceMut<'b> {
        TdSliceMut { hi: s.hi, lo: s.lo }
    }
}

impl<'a> HostSlice<'a, Td> for TdSlice<'a> {
    #[inline(always)]
    fn len(self) -> usize {
        self.hi.len()
    }
    #[inline(always)]
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (h0, h1) = self.hi.split_at(mid);
        let (l0, l1) = self.lo.split_at(mid);
        (TdSlice { hi: h0, lo: l0 }, TdSlice { hi: h1, lo: l1 })
    }
    #[inline(always)]
    fn get(self, i: usize) -> Cow<'a, Td> {
        Cow::Owned(Td::from_parts(self.hi[i], self.lo[i]))
    }
    #[inline(always)]
    unsafe fn get_unchecked(self, i: usize) -> Cow<'a, Td> {
        // SAFETY: the caller guarantees `i < len`, and both arrays have `len` elements (every
        // constructor keeps them equal).
        let (hi, lo) = unsafe { (*self.hi.get_unchecked(i), *self.lo.get_unchecked(i)) };
        Cow::Owned(Td::from_parts(hi, lo))
    }
    #[inline(always)]
    fn as_slice(self) -> Option<&'a [Td]> {
        None
    }
    #[inline(always)]
    fn as_td(self) -> Option<TdSlice<'a>> {
        Some(self)
    }
}

impl<'a> HostSliceMut<'a, Td> for TdSliceMut<'a> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.hi.len()
    }
    #[inline(always)]
    fn split_at_mut(self, mid: usize) -> (Self, Self) {
        let (h0, h1) = self.hi.split_at_mut(mid);
        let (l0, l1) = self.lo.split_at_mut(mid);
        (TdSliceMut { hi: h0, lo: l0 }, TdSliceMut { hi: h1, lo: l1 })
    }
    #[inline(always)]
    fn get(&self, i: usize) -> Cow<'_, Td> {
        Cow::Owned(Td::from_parts(self.hi[i], self.lo[i]))
    }
    #[inline(always)]
    fn set(&mut self, i: usize, value: Td) {
        (self.hi[i], self.lo[i]) = value.parts();
    }
    #[inline(always)]
    fn into_slice(self) -> Result<&'a mut [Td], Self> {
        Err(self)
    }
    #[inline(always)]
    fn into_td(self) -> Result<TdSliceMut<'a>, Self> {
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precision::Dd;

    fn td(i: usize) -> Td {
        Td::from_dd(Dd::from_f64(i as f64 + 1.0).div(Dd::from_f64(3.0)))
    }

    #[test]
    fn td_vectors_are_two_arrays_and_round_trip() {
        let values: Vec<Td> = (0..37).map(td).collect();
        let v = TdVector::from_values(values.clone());
        assert_eq!((v.hi.len(), v.lo.len()), (37, 37));
        assert_eq!(v.hi[5], values[5].parts().0);
        assert_eq!(v.lo[5], values[5].parts().1);
        assert_eq!(v.to_values(), values);
        let s = v.as_host_slice();
        assert_eq!(*s.get(36), values[36]);
        assert_eq!(*s.load(7), values[7].to_dd());
        let pieces = s.chunks(10);
        assert_eq!(
            pieces.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [10, 10, 10, 7]
        );
        assert_eq!(*pieces[3].get(0), values[30]);
        assert!(s.as_slice().is_none());
    }

    #[test]
    fn writes_through_pieces_land_in_both_arrays() {
        let mut v = TdVector::filled(25, &Td::ZERO);
        for (c, mut piece) in v.as_host_slice_mut().chunks_mut(8).into_iter().enumerate() {
            for i in 0..piece.len() {
                piece.set(i, td(c * 8 + i));
            }
        }
        assert_eq!(v.to_values(), (0..25).map(td).collect::<Vec<_>>());
        let mut a: Vec<f64> = vec![1.0; 5];
        let (mut head, tail) = a.as_host_slice_mut().split_at_mut(2);
        head.set(1, 4.0);
        assert_eq!(tail.len(), 3);
        assert_eq!(a, [1.0, 4.0, 1.0, 1.0, 1.0]);
    }
}
