//! The parties' sealing channels a node has verified (`protocols/sealing.md`, "Origin"): by
//! channel key, the party that signed it and the last second (Unix time) its signature and
//! the party's certificate both hold. A later blob on a kept channel, from the same party's
//! link and in time, skips the signature check; its unsealing authenticates it.

use std::collections::HashMap;

use vtwin_net::RelayVerifier;

/// Most channels kept (each party makes one per node at a job's start and every 30 minutes);
/// a full table drops its lapsed entries, and is emptied if none has lapsed, so that no party
/// can grow it.
pub(crate) const CHANNELS_KEPT: usize = 256;

/// Until when a channel whose signature expires at `expires` and whose party's certificate
/// is the DER `certificate` is kept: the earlier of the two (Unix seconds), or `None`, not
/// kept, if the certificate's expiry cannot be read. Cost: one DER parse.
pub(crate) fn kept_until(expires: u64, certificate: &[u8]) -> Option<u64> {
    RelayVerifier::certificate_expiry(certificate).map(|c| c.min(expires))
}

/// Verified channels by key (module docs).
#[derive(Debug, Default)]
pub(crate) struct VerifiedChannels {
    by_key: HashMap<[u8; 32], (u16, u64)>,
}

impl VerifiedChannels {
    /// Whether `channel` was kept for `party` and still holds at `now` (Unix seconds).
    /// Cost: one hash lookup.
    pub(crate) fn holds(&self, channel: &[u8; 32], party: u16, now: u64) -> bool {
        matches!(self.by_key.get(channel), Some(&(p, until)) if p == party && now <= until)
    }

    /// Keeps `channel` for `party` until the Unix second `until` (inclusive), at the clock
    /// `now`.
    pub(crate) fn keep(&mut self, channel: [u8; 32], party: u16, until: u64, now: u64) {
        if self.by_key.len() >= CHANNELS_KEPT && !self.by_key.contains_key(&channel) {
            self.by_key.retain(|_, &mut (_, until)| now <= until);
            if self.by_key.len() >= CHANNELS_KEPT {
                self.by_key.clear();
            }
        }
        self.by_key.insert(channel, (party, until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_channel_holds_for_its_party_until_its_last_second() {
        let mut v = VerifiedChannels::default();
        assert!(!v.holds(&[1; 32], 0, 10));
        v.keep([1; 32], 0, 100, 10);
        assert!(v.holds(&[1; 32], 0, 10) && v.holds(&[1; 32], 0, 100));
        assert!(!v.holds(&[1; 32], 0, 101), "lapsed");
        assert!(!v.holds(&[1; 32], 1, 10), "another party's link");
        assert!(!v.holds(&[2; 32], 0, 10), "another channel");
    }

    /// A channel is kept while both its signature and its party's certificate hold, and
    /// not at all when the certificate's expiry cannot be read.
    #[test]
    fn a_channel_is_kept_until_its_signature_or_its_certificate_lapses() {
        let ca = vtwin_net::pki::Ca::generate().unwrap();
        let signer =
            vtwin_net::RelaySigner::new(&ca.identity(vtwin_net::Role::Party(0)).unwrap()).unwrap();
        let der = signer
            .sign(vtwin_net::relay_signature::Purpose::Channel, b"x")
            .unwrap()
            .certificate;
        let cert = RelayVerifier::certificate_expiry(&der).unwrap();
        assert_eq!(kept_until(cert - 5, &der), Some(cert - 5));
        assert_eq!(kept_until(cert + 5, &der), Some(cert));
        assert_eq!(kept_until(u64::MAX, &der), Some(cert));
        assert_eq!(kept_until(100, b"not a certificate"), None);
    }

    #[test]
    fn a_full_table_drops_its_lapsed_entries_or_else_empties_before_a_new_channel() {
        let key = |i: usize| {
            let mut k = [0u8; 32];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            k
        };
        let mut v = VerifiedChannels::default();
        for i in 0..CHANNELS_KEPT {
            // Every other entry lapses at 100, the rest at 300.
            v.keep(key(i), 0, if i % 2 == 0 { 100 } else { 300 }, 10);
        }
        assert_eq!(v.by_key.len(), CHANNELS_KEPT);
        // Renewing a kept channel drops nothing.
        v.keep(key(1), 0, 400, 150);
        assert_eq!(v.by_key.len(), CHANNELS_KEPT);
        // At 150 half have lapsed: they go, the live ones stay.
        v.keep([0xFF; 32], 0, 400, 150);
        assert_eq!(v.by_key.len(), CHANNELS_KEPT / 2 + 1);
        assert!(v.holds(&key(3), 0, 150) && v.holds(&[0xFF; 32], 0, 150));
        // Full of live entries: emptied.
        let mut v = VerifiedChannels::default();
        for i in 0..CHANNELS_KEPT {
            v.keep(key(i), 0, 300, 10);
        }
        v.keep([0xFF; 32], 0, 300, 10);
        assert_eq!(v.by_key.len(), 1);
        assert!(v.holds(&[0xFF; 32], 0, 50) && !v.holds(&key(0), 0, 50));
    }
}
