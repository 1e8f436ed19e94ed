//! QUIC stateless resets that survive a restart: the endpoint's reset key and connection-id
//! key are derived from its long-term TLS key.
//!
//! Why: an endpoint that lost a connection's state (a restarted process) can tell the peer at
//! once by answering the peer's next packet with a stateless reset, which carries
//! `HMAC(reset key, connection id)`; the peer checks it against the token the old process gave
//! it for that connection id. quinn draws both keys at random per process: the restarted
//! process dropped the peer's packets as carrying connection ids it never issued, and had it
//! answered, the token would not have matched. So a restarted node's peers kept the dead link
//! until their idle timeout (60 s by default then, 15 s now) before redialling. With both keys derived from
//! the role's private key, the restarted process recognises the old ids and its tokens equal
//! the old process's: the peer drops the stale link on its next packet (a keep-alive, at most
//! [`crate::transport::KEEP_ALIVE_MAX`] away) and redials.
//!
//! `HKDF-SHA256(ikm = PKCS#8 DER of the TLS private key, salt = none, info = label)`, with
//! label `"vtwin/v1 quic stateless reset key"` (32 bytes, an HMAC-SHA256 key) and
//! `"vtwin/v1 quic connection id key"` (8 bytes, the key of quinn's hashed connection-id
//! generator, a cheap filter, not a MAC).
//!
//! Security: the keys are as secret as the private key (HKDF is a PRF keyed by it, and the
//! labels separate these uses from any other); a token reveals nothing about the reset key
//! (HMAC). Whoever knew the reset key could forge resets, that is end this endpoint's links: a
//! denial of service that anyone on the path can already cause by dropping packets. Cost: two
//! HKDF expansions at bind time.

use std::sync::Arc;

use hkdf::Hkdf;
use quinn_proto::HashedConnectionIdGenerator;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::pki::Identity;

/// HKDF info of the reset key (versioned).
const RESET_LABEL: &[u8] = b"vtwin/v1 quic stateless reset key";
/// HKDF info of the connection-id key (versioned).
const CID_LABEL: &[u8] = b"vtwin/v1 quic connection id key";

fn derive<const N: usize>(identity: &Identity, label: &[u8]) -> Zeroizing<[u8; N]> {
    let mut okm = Zeroizing::new([0u8; N]);
    Hkdf::<Sha256>::new(None, identity.key_der())
        .expand(label, okm.as_mut())
        .expect("8 and 32 bytes are valid HKDF-SHA256 output lengths");
    okm
}

/// The endpoint's stateless-reset key (module docs).
fn reset_key(identity: &Identity) -> ring::hmac::Key {
    ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        derive::<32>(identity, RESET_LABEL).as_ref(),
    )
}

/// quinn's endpoint configuration with both keys derived from `identity` (module docs).
pub(crate) fn endpoint_config(identity: &Identity) -> quinn::EndpointConfig {
    let mut config = quinn::EndpointConfig::new(Arc::new(reset_key(identity)));
    let cid_key = u64::from_le_bytes(*derive::<8>(identity, CID_LABEL));
    config.cid_generator(move || Box::new(HashedConnectionIdGenerator::from_key(cid_key)));
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Ca;
    use crate::role::Role;
    use quinn::crypto::HmacKey;
    use quinn::ConnectionIdGenerator;

    fn token(key: &ring::hmac::Key, cid: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; key.signature_len()];
        key.sign(cid, &mut out);
        out
    }

    fn identity(ca: &Ca, role: Role) -> Identity {
        ca.identity(role).unwrap()
    }

    #[test]
    fn a_restarted_identity_keeps_its_tokens_and_recognises_its_ids() {
        let ca = Ca::generate().unwrap();
        let a = identity(&ca, Role::Node(1));
        let cid = [7u8; 8];
        // A restarted process derives the same reset key from the same identity.
        let t = token(&reset_key(&a), &cid);
        assert_eq!(t, token(&reset_key(&a.clone()), &cid));
        assert_eq!(t.len(), 32);
        assert_ne!(t, token(&reset_key(&a), &[8u8; 8]));
        // Another key (another role, or the same role issued again) gives other tokens.
        assert_ne!(t, token(&reset_key(&identity(&ca, Role::Node(2))), &cid));
        assert_ne!(t, token(&reset_key(&identity(&ca, Role::Node(1))), &cid));
        // Ids issued by the old process pass the new process's filter; a random generator's
        // ids almost never do (16-bit check: at most a few of 64 here).
        let cid_key = |i: &Identity| u64::from_le_bytes(*derive::<8>(i, CID_LABEL));
        let mut old = HashedConnectionIdGenerator::from_key(cid_key(&a));
        let new = HashedConnectionIdGenerator::from_key(cid_key(&a));
        let other = HashedConnectionIdGenerator::from_key(cid_key(&identity(&ca, Role::Node(2))));
        let ids: Vec<_> = (0..64).map(|_| old.generate_cid()).collect();
        assert!(ids.iter().all(|c| new.validate(c).is_ok()));
        assert!(ids.iter().filter(|c| other.validate(c).is_ok()).count() <= 4);
    }
}
