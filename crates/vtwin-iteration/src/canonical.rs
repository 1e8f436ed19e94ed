//! The circuit's canonical output order: `[weights (K); for each party p, (k, j) row-major]`
//! (`protocols/mpc-gradient.md`). The noise shares go in, and the opened G + Z comes out, in
//! this order; the model maps it to and from its own parameter layout through the positions
//! given here.

/// Why a canonical order was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OrderError {
    /// The positions are not a permutation of `0..len`.
    #[error("canonical position {index} is {position}: not a permutation of 0..{len}")]
    NotPermutation {
        /// Index in the canonical order.
        index: usize,
        /// The layout position given for it (out of range or repeated).
        position: usize,
        /// d, the number of positions.
        len: usize,
    },
}

/// For each canonical output position, the model's layout position (a permutation of
/// `0..d`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonicalOrder {
    positions: Vec<usize>,
}

impl CanonicalOrder {
    /// The order whose canonical element `i` is layout element `positions[i]`. Errors unless
    /// `positions` is a permutation of `0..positions.len()`. Cost O(d).
    pub fn new(positions: Vec<usize>) -> Result<CanonicalOrder, OrderError> {
        let len = positions.len();
        let mut seen = vec![false; len];
        for (index, &position) in positions.iter().enumerate() {
            if position >= len || std::mem::replace(&mut seen[position], true) {
                return Err(OrderError::NotPermutation {
                    index,
                    position,
                    len,
                });
            }
        }
        Ok(CanonicalOrder { positions })
    }

    /// d, the gradient's length.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether d = 0.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The layout position of every canonical element.
    pub fn positions(&self) -> &[usize] {
        &self.positions
    }

    /// Raw signed integers at scale 2^32 in layout order (a noise share) to ring elements in
    /// canonical order. Panics if `layout_order` is shorter than d. Cost O(d).
    pub fn to_canonical(&self, layout_order: &[i128]) -> Vec<u128> {
        self.positions
            .iter()
            .map(|&i| layout_order[i] as u128)
            .collect()
    }

    /// The opened G + Z (canonical order, raw ring elements at scale 2^32) decoded into
    /// layout order; elements beyond d are ignored, missing ones stay 0. Cost O(d).
    pub fn decode(&self, opened: &[u128]) -> Vec<f64> {
        let mut g = vec![0.0; self.len()];
        for (&i, &v) in self.positions.iter().zip(opened) {
            g[i] = vtwin_fixed::Fx::from_raw(v).to_f64();
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_only_and_round_trip() {
        assert!(CanonicalOrder::new(vec![0, 0]).is_err());
        assert!(CanonicalOrder::new(vec![0, 2]).is_err());
        let o = CanonicalOrder::new(vec![2, 0, 1]).expect("permutation");
        let canon = o.to_canonical(&[10 << 32, 20 << 32, -(30 << 32)]);
        assert_eq!(canon[0], (-(30i128 << 32)) as u128);
        assert_eq!(o.decode(&canon), vec![10.0, 20.0, -30.0]);
    }
}
