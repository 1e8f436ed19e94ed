//! The byte widths in which a message's elements travel, fixed by the sender's public
//! layout.
//!
//! A binary layer of a window below 128 bits sends words that are zero above the window in
//! every share (`crate::binary`), so each can travel in its window's bytes. The widths come
//! from the layer's public masks, never from the words themselves: a width chosen from the
//! values would tell whoever sees a message's length (a node, or an observer of encrypted
//! links) something about them.

/// The narrowest width, in bytes: with it a decoder holds at most twice the bytes it
/// received (16 bytes per element in memory).
pub const MIN_WIDTH: u8 = 8;

/// Runs of elements over a prefix of a payload and the bytes each element of a run takes on
/// the wire; the elements after the last run take 16. Kept normalised, so that each packing
/// has one encoding: every run holds at least one element, adjacent runs differ in width,
/// every width is in `8..=16` and the last is below 16. The empty packing (every element
/// whole) is the plain form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packing {
    runs: Vec<(u32, u8)>,
}

/// Bytes a word restricted to `mask` takes: its mask's byte length, at least [`MIN_WIDTH`].
pub fn width_of_mask(mask: u128) -> u8 {
    let bytes = (128 - mask.leading_zeros()).div_ceil(8) as u8;
    bytes.max(MIN_WIDTH)
}

impl Packing {
    /// Every element in 16 bytes.
    pub fn whole() -> Packing {
        Packing::default()
    }

    /// The packing of words restricted to `masks` (one per element, public), each at
    /// [`width_of_mask`]. Cost O(n).
    pub fn for_masks(masks: &[u128]) -> Packing {
        let mut p = Packing::whole();
        for &m in masks {
            p.push(1, width_of_mask(m));
        }
        p.normalise_end();
        p
    }

    /// Runs from the wire, checked to be normalised (`None` otherwise).
    pub(crate) fn from_runs(runs: Vec<(u32, u8)>) -> Option<Packing> {
        let widths_ok = runs
            .iter()
            .all(|&(n, w)| n > 0 && (MIN_WIDTH..=16).contains(&w));
        let adjacent_differ = runs.windows(2).all(|r| r[0].1 != r[1].1);
        let last_narrow = runs.last().is_none_or(|&(_, w)| w < 16);
        (widths_ok && adjacent_differ && last_narrow).then_some(Packing { runs })
    }

    /// The runs, `(elements, bytes per element)`.
    pub fn runs(&self) -> &[(u32, u8)] {
        &self.runs
    }

    /// True when every element travels whole (the plain form).
    pub fn is_whole(&self) -> bool {
        self.runs.is_empty()
    }

    /// Elements the runs cover (saturating: a table from the wire is checked against the
    /// message's length, which is below 2^32).
    pub fn covered(&self) -> usize {
        self.runs
            .iter()
            .fold(0usize, |acc, &(n, _)| acc.saturating_add(n as usize))
    }

    /// This packing over a payload of `n` elements: runs past `n` cut off, then normalised.
    pub fn fit(&self, n: usize) -> Packing {
        let mut p = Packing::whole();
        let mut left = n;
        for &(count, w) in &self.runs {
            let take = (count as usize).min(left);
            if take == 0 {
                break;
            }
            p.push(take as u32, w);
            left -= take;
        }
        p.normalise_end();
        p
    }

    /// Bytes of a payload of `n` elements: `None` if the runs cover more than `n` or the
    /// sum overflows (a table from the wire is checked with it before anything is
    /// allocated).
    pub fn payload_bytes(&self, n: usize) -> Option<usize> {
        self.segments(n)?.try_fold(0usize, |total, (count, w)| {
            total.checked_add(count.checked_mul(usize::from(w))?)
        })
    }

    /// The runs and then the rest of a payload of `n` elements as one whole segment:
    /// `(elements, bytes per element)`, `None` if the runs cover more than `n`.
    pub(crate) fn segments(&self, n: usize) -> Option<impl Iterator<Item = (usize, u8)> + '_> {
        let rest = n.checked_sub(self.covered())?;
        let runs = self.runs.iter().map(|&(c, w)| (c as usize, w));
        Some(runs.chain(std::iter::once((rest, 16))))
    }

    fn push(&mut self, n: u32, w: u8) {
        match self.runs.last_mut() {
            Some(last) if last.1 == w => last.0 += n,
            _ => self.runs.push((n, w)),
        }
    }

    fn normalise_end(&mut self) {
        while self.runs.last().is_some_and(|&(_, w)| w == 16) {
            self.runs.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_give_their_byte_lengths_in_normalised_runs() {
        assert_eq!(width_of_mask(0), 8);
        assert_eq!(width_of_mask((1 << 64) - 1), 8);
        assert_eq!(width_of_mask((1 << 65) - 1), 9);
        assert_eq!(width_of_mask((1 << 80) - 1), 10);
        assert_eq!(width_of_mask(u128::MAX), 16);
        let m80 = (1u128 << 80) - 1;
        let p = Packing::for_masks(&[m80, m80, u128::MAX, m80, u128::MAX, u128::MAX]);
        assert_eq!(p.runs(), &[(2, 10), (1, 16), (1, 10)]);
        assert_eq!(p.payload_bytes(6), Some(2 * 10 + 16 + 10 + 2 * 16));
        assert_eq!(p.payload_bytes(3), None);
        assert!(Packing::for_masks(&[u128::MAX; 3]).is_whole());
        assert_eq!(p.fit(2).runs(), &[(2, 10)]);
        // Cut after a whole run: the trailing whole run goes (the plain tail covers it).
        assert_eq!(p.fit(3).runs(), &[(2, 10)]);
        assert!(p.fit(0).is_whole());
        assert_eq!(p.fit(9), p);
        assert_eq!(Packing::from_runs(p.runs().to_vec()), Some(p));
        for bad in [
            vec![(0, 10)],
            vec![(1, 7)],
            vec![(1, 17)],
            vec![(1, 10), (1, 10)],
            vec![(1, 10), (1, 16)],
        ] {
            assert_eq!(Packing::from_runs(bad.clone()), None, "{bad:?}");
        }
    }
}
