//! Wiping secret byte buffers at word speed.
//!
//! `zeroize` wipes a `Vec<u8>` one volatile byte store at a time (its `volatile_set` loops per
//! element): about 0.25 ms per MiB on this project's 2-core VM, and a party's upload plaintexts
//! and the nodes' unsealed copies are several MiB per iteration. [`wipe_bytes`] gives the same
//! guarantee (volatile stores the compiler may neither remove nor merge; `zeroize` 1.9.1 adds
//! no fence, and neither does this) with 8-byte stores over the aligned middle of the buffer
//! (`zeroize` on `[u64]`) and byte stores on its unaligned ends: about 0.04 ms per MiB
//! (`docs/network-results.md`, tenth session).

use std::ops::{Deref, DerefMut};

use zeroize::Zeroize;

/// Overwrites every byte of `buf` with zero through volatile stores. Cost: about `len / 8`
/// word stores and a few byte stores at the unaligned ends.
pub fn wipe_bytes(buf: &mut [u8]) {
    let (head, words, tail) = bytemuck::pod_align_to_mut::<u8, u64>(buf);
    head.zeroize();
    words.zeroize();
    tail.zeroize();
}

/// Wipes `buf`'s contents and its spare capacity (as `zeroize` does for a `Vec`), then
/// empties it. Cost: [`wipe_bytes`] over the capacity.
pub fn wipe_vec(buf: &mut Vec<u8>) {
    // The spare capacity is made initialised (zeros) so that the wipe covers it too.
    buf.resize(buf.capacity(), 0);
    wipe_bytes(buf);
    buf.clear();
}

/// A byte buffer wiped by [`wipe_vec`] when dropped: `zeroize::Zeroizing<Vec<u8>>` at word
/// speed. `Debug` prints the length only.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct WipedBytes(Vec<u8>);

impl WipedBytes {
    /// An empty buffer with room for `n` bytes (so that filling it up to `n` never leaves an
    /// unwiped copy behind in a reallocation).
    pub fn with_capacity(n: usize) -> WipedBytes {
        WipedBytes(Vec::with_capacity(n))
    }

    /// Hands the bytes out without wiping them: only for a buffer that no longer holds a
    /// secret (e.g. once encrypted in place); the caller owns whatever is left in it.
    #[must_use]
    pub fn into_unwiped(mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

impl From<Vec<u8>> for WipedBytes {
    fn from(v: Vec<u8>) -> WipedBytes {
        WipedBytes(v)
    }
}

impl Deref for WipedBytes {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl DerefMut for WipedBytes {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl Drop for WipedBytes {
    fn drop(&mut self) {
        wipe_vec(&mut self.0);
    }
}

impl std::fmt::Debug for WipedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WipedBytes({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte is zero afterwards, whatever the alignment and length (the unaligned ends
    /// and the word middle).
    #[test]
    fn wipe_bytes_zeroes_every_byte_at_every_offset_and_length() {
        let mut backing = vec![0xa5u8; 256];
        for start in 0..9 {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200] {
                backing.iter_mut().for_each(|b| *b = 0xa5);
                wipe_bytes(&mut backing[start..start + len]);
                assert!(
                    backing[start..start + len].iter().all(|&b| b == 0),
                    "{start} {len}"
                );
                // Nothing outside the slice is touched.
                assert!(backing[..start].iter().all(|&b| b == 0xa5));
                assert!(backing[start + len..].iter().all(|&b| b == 0xa5));
            }
        }
    }

    /// `wipe_vec` empties the buffer and keeps its allocation (so its spare capacity, which
    /// it wiped with the contents, is not freed unwiped); `WipedBytes` prints no bytes and
    /// hands them out on request. (Safe code cannot read spare capacity back; the byte-level
    /// check is the test above, over the same `wipe_bytes`.)
    #[test]
    fn wipe_vec_empties_and_keeps_the_allocation() {
        let mut v = Vec::with_capacity(100);
        v.extend_from_slice(&[0x5au8; 100]);
        v.truncate(10);
        let cap = v.capacity();
        wipe_vec(&mut v);
        assert!(v.is_empty());
        assert_eq!(v.capacity(), cap);
        let w = WipedBytes::from(vec![1u8, 2, 3]);
        assert_eq!(format!("{w:?}"), "WipedBytes(3 bytes)");
        assert_eq!(w.into_unwiped(), vec![1, 2, 3]);
    }
}
