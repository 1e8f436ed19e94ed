//! A buffer of secret noise that is wiped when dropped.

use zeroize::{Zeroize, ZeroizeOnDrop};

/// One contributor's pre-sampled noise for one iteration: secret integers (at the fixed-point
/// scale the caller chose), zeroized on drop.
///
/// Sample it with [`DiscreteGaussian::sample_share`](crate::DiscreteGaussian::sample_share)
/// before the iteration's data phase; read it with [`NoiseShare::as_slice`]. It deliberately
/// implements neither `Clone` nor `Debug`-with-contents, so copies of the secret are explicit.
#[derive(Zeroize, ZeroizeOnDrop, Default)]
pub struct NoiseShare {
    values: Vec<i128>,
}

impl NoiseShare {
    /// Wraps `values`; they are zeroized when the share is dropped.
    pub fn new(values: Vec<i128>) -> Self {
        NoiseShare { values }
    }

    /// The noise values.
    pub fn as_slice(&self) -> &[i128] {
        &self.values
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the share holds no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl std::fmt::Debug for NoiseShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secret noise.
        write!(f, "NoiseShare({} values, redacted)", self.values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroize_clears_and_debug_redacts() {
        let mut s = NoiseShare::new(vec![5, -7, 9]);
        assert_eq!(format!("{s:?}"), "NoiseShare(3 values, redacted)");
        s.zeroize();
        assert!(s.as_slice().iter().all(|&v| v == 0));
    }
}
