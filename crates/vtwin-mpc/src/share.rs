//! Replicated 2-out-of-3 shares and the local (communication-free) operations on them.
//!
//! A vector `x` is split as `x = x_0 + x_1 + x_2 mod 2^128` (arithmetic) or
//! `x = x_0 ^ x_1 ^ x_2` (binary, 128 bits packed per element); node i holds
//! `(x_i, x_{i+1})`, so any two nodes can reconstruct and any single node's pair is uniform
//! when the sharing is fresh. Share index j is held by nodes j and j-1.
//!
//! Shares are not zeroized on drop (they are large, short-lived and individually
//! uniform); seeds are.

use crate::error::MpcError;
use crate::message::NodeId;

/// A node's arithmetic shares of a vector: `own[k] = x_i[k]`, `next[k] = x_{i+1}[k]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Shared {
    pub(crate) own: Vec<u128>,
    pub(crate) next: Vec<u128>,
}

/// A node's arithmetic shares of part of a vector, borrowed from a [`Shared`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SharedView<'a> {
    pub(crate) own: &'a [u128],
    pub(crate) next: &'a [u128],
}

/// A node's binary (XOR) shares of a vector of 128-bit words.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BitShared {
    pub(crate) own: Vec<u128>,
    pub(crate) next: Vec<u128>,
}

pub(crate) fn check_len(protocol: &'static str, a: usize, b: usize) -> Result<(), MpcError> {
    if a == b {
        Ok(())
    } else {
        Err(MpcError::LengthMismatch {
            protocol,
            left: a,
            right: b,
        })
    }
}

impl Shared {
    /// Builds from the two share vectors (`own` = x_i, `next` = x_{i+1}).
    pub fn from_parts(own: Vec<u128>, next: Vec<u128>) -> Result<Shared, MpcError> {
        check_len("Shared::from_parts", own.len(), next.len())?;
        Ok(Shared { own, next })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// `x_i` (this node's first share).
    pub fn own(&self) -> &[u128] {
        &self.own
    }

    /// `x_{i+1}` (this node's second share).
    pub fn next(&self) -> &[u128] {
        &self.next
    }

    /// The sharing of a public vector: share index 0 carries the value (nodes 0 and 2).
    pub fn public(me: NodeId, values: &[u128]) -> Shared {
        Self::known_at(me, 0, values)
    }

    /// The sharing whose share index `j` is `values` and the others 0; valid when `values` is
    /// known to nodes j and j-1 (they hold share j). Other nodes pass anything.
    pub(crate) fn known_at(me: NodeId, j: usize, values: &[u128]) -> Shared {
        let n = values.len();
        let i = me.index();
        let own = if i == j { values.to_vec() } else { vec![0; n] };
        let next = if (i + 1) % 3 == j {
            values.to_vec()
        } else {
            vec![0; n]
        };
        Shared { own, next }
    }

    /// `x + y`. Local.
    pub fn add(&self, y: &Shared) -> Result<Shared, MpcError> {
        check_len("add", self.len(), y.len())?;
        Ok(Shared {
            own: zip(&self.own, &y.own, u128::wrapping_add),
            next: zip(&self.next, &y.next, u128::wrapping_add),
        })
    }

    /// `x - y`. Local.
    pub fn sub(&self, y: &Shared) -> Result<Shared, MpcError> {
        check_len("sub", self.len(), y.len())?;
        Ok(Shared {
            own: zip(&self.own, &y.own, u128::wrapping_sub),
            next: zip(&self.next, &y.next, u128::wrapping_sub),
        })
    }

    /// Applies the public linear map `f` (repeat, regroup, sum, scale by public values) to
    /// both share vectors: the result shares `f(x)` because `f` commutes with the sum of
    /// shares. Local; only correct for maps linear over the ring.
    pub(crate) fn map_linear(&self, f: impl Fn(&[u128]) -> Vec<u128>) -> Shared {
        Shared {
            own: f(&self.own),
            next: f(&self.next),
        }
    }

    /// `c * x` for a public ring constant. Local.
    pub fn mul_public(&self, c: u128) -> Shared {
        self.map_linear(|x| x.iter().map(|v| v.wrapping_mul(c)).collect())
    }

    /// `c - x` element-wise, `c` public. Local.
    pub fn public_minus(&self, me: NodeId, c: u128) -> Shared {
        let mut r = self.mul_public(u128::MAX); // -x
        r.add_public_in_place(me, c);
        r
    }

    /// `x + c` for a public constant. Local (share index 0 absorbs it).
    pub fn add_public(&self, me: NodeId, c: u128) -> Shared {
        let mut r = self.clone();
        r.add_public_in_place(me, c);
        r
    }

    fn add_public_in_place(&mut self, me: NodeId, c: u128) {
        match me.index() {
            0 => self.own.iter_mut().for_each(|v| *v = v.wrapping_add(c)),
            2 => self.next.iter_mut().for_each(|v| *v = v.wrapping_add(c)),
            _ => {}
        }
    }

    /// Elements `range` of the vector, borrowed (no copy).
    pub(crate) fn view(&self, range: std::ops::Range<usize>) -> SharedView<'_> {
        SharedView {
            own: &self.own[range.clone()],
            next: &self.next[range],
        }
    }

    /// Elements `range` of the vector.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Shared {
        Shared {
            own: self.own[range.clone()].to_vec(),
            next: self.next[range].to_vec(),
        }
    }

    /// Concatenation.
    pub fn concat(parts: &[&Shared]) -> Shared {
        Shared {
            own: parts.iter().flat_map(|p| p.own.iter().copied()).collect(),
            next: parts.iter().flat_map(|p| p.next.iter().copied()).collect(),
        }
    }
}

impl BitShared {
    /// `x_i` (this node's first share word vector).
    pub fn own(&self) -> &[u128] {
        &self.own
    }

    /// `x_{i+1}`.
    pub fn next(&self) -> &[u128] {
        &self.next
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// `x ^ y`. Local.
    pub fn xor(&self, y: &BitShared) -> BitShared {
        BitShared {
            own: zip(&self.own, &y.own, |a, b| a ^ b),
            next: zip(&self.next, &y.next, |a, b| a ^ b),
        }
    }

    /// Applies a bitwise-linear map (XOR-homomorphic: shifts, masks, permutations, parities)
    /// to each share word. Local.
    pub(crate) fn map(&self, f: impl Fn(u128) -> u128) -> BitShared {
        BitShared {
            own: self.own.iter().map(|&v| f(v)).collect(),
            next: self.next.iter().map(|&v| f(v)).collect(),
        }
    }

    /// `x ^ c` for a public word `c` (folded into share index 0). Local.
    pub(crate) fn xor_public(&self, me: NodeId, c: u128) -> BitShared {
        self.xor(&BitShared::known_at(me, 0, &vec![c; self.len()]))
    }

    /// The sharing whose share index `j` is `values` (see [`Shared::known_at`]).
    pub(crate) fn known_at(me: NodeId, j: usize, values: &[u128]) -> BitShared {
        let s = Shared::known_at(me, j, values);
        BitShared {
            own: s.own,
            next: s.next,
        }
    }

    /// Concatenation.
    pub(crate) fn concat(parts: &[&BitShared]) -> BitShared {
        BitShared {
            own: parts.iter().flat_map(|p| p.own.iter().copied()).collect(),
            next: parts.iter().flat_map(|p| p.next.iter().copied()).collect(),
        }
    }

    /// Elements `range`.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> BitShared {
        BitShared {
            own: self.own[range.clone()].to_vec(),
            next: self.next[range].to_vec(),
        }
    }
}

/// Repeats each element of `x` `times` times (local).
pub(crate) fn repeat_each(x: &Shared, times: usize) -> Shared {
    let rep = |v: &[u128]| {
        v.iter()
            .flat_map(|&e| std::iter::repeat_n(e, times))
            .collect()
    };
    x.map_linear(rep)
}

pub(crate) fn zip(a: &[u128], b: &[u128], f: impl Fn(u128, u128) -> u128) -> Vec<u128> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}
