//! End-to-end signatures on messages that another role relays.
//!
//! Mutual TLS authenticates each link, but a message that travels party → coordinator →
//! party is only as authentic as the relay: the coordinator terminates both TLS sessions and
//! could change or insert messages. The record alignment's messages must come from the party
//! they name (a relay that could insert blinded candidate ids into one party's set would
//! learn whether another party holds them: `protocols/psi.md`), so each one is signed by its
//! sender's CA-certified key and verified by its addressee:
//!
//! - [`RelaySigner::sign`]: an ECDSA P-256 / SHA-256 signature (ASN.1 DER, as TLS 1.3
//!   writes it) over the [`Purpose`]'s domain tag `||` the payload, with the sender's leaf
//!   certificate beside it ([`RelaySignature`]). The domain tag keeps these signatures apart
//!   from TLS handshake signatures made with the same key (TLS 1.3 signs 64 spaces and its
//!   own context string first, so neither can be taken for the other) and from each other:
//!   alignment messages ([`DOMAIN`]) and a party's sealing channels to the nodes
//!   ([`CHANNEL_DOMAIN`], verified by the nodes: sealing alone is anonymous, and the signed
//!   channel key is what ties a sealed upload to its party).
//! - [`RelayVerifier::verify`]: the certificate must chain to the consortium CA now, for
//!   client authentication (as [`crate::pki::Identity`] checks a loaded certificate), name
//!   exactly one role ([`role_of_certificate`]) and carry the key that made the signature.
//!   It returns the verified role; the caller compares it with the sender the payload
//!   names.
//!
//! The payload must bind everything a replay could change (for alignment messages: the
//! session, the sender, the addressee and the step are in the message itself).
//!
//! Cost: signing is one ECDSA signature (about 0.03 ms on this VM, plus SHA-256 over the
//! payload); verifying parses the certificate, checks one CA signature and one message
//! signature (two ECDSA verifications, about 0.2 ms) plus SHA-256 over the payload. A
//! verifier remembers the certificates whose chain it has checked (exact DER bytes, with
//! their role and validity window): the same certificate again costs the message signature
//! and a time check (about 0.1 ms).
//! The signature adds the certificate (~0.5 KB) and at most 72 bytes to the message.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::SignatureScheme;

use crate::pki::{role_of_certificate, CertRoleError, Identity};
use crate::role::Role;

/// Prefixed to every signed alignment message (ASCII, NUL-terminated).
pub const DOMAIN: &[u8] = b"vtwin relayed psi message v1\0";

/// Prefixed to every signed sealing channel (ASCII, NUL-terminated; since wire version 18).
/// Before it each sealed upload was signed, under the tags `vtwin sealed upload v1` to `v3`.
pub const CHANNEL_DOMAIN: &[u8] = b"vtwin sealing channel v1\0";

/// What a relayed payload is, so that a signature made for one purpose is never accepted for
/// another (the same party key signs both): each purpose has its own domain tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Purpose {
    /// A record alignment message ([`DOMAIN`]).
    Alignment,
    /// A party's sealing channel to a node ([`CHANNEL_DOMAIN`]; the payload is
    /// `vtwin-consortium` `upload::channel_statement`).
    Channel,
}

impl Purpose {
    /// The domain tag signed before the payload.
    pub fn domain(self) -> &'static [u8] {
        match self {
            Purpose::Alignment => DOMAIN,
            Purpose::Channel => CHANNEL_DOMAIN,
        }
    }
}

/// The only scheme the consortium PKI issues keys for (`pki` module docs).
const SCHEME: SignatureScheme = SignatureScheme::ECDSA_NISTP256_SHA256;

/// A relayed message's signature failed to be made or to verify.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelaySignatureError {
    /// The identity's key cannot make ECDSA P-256 / SHA-256 signatures (the consortium PKI
    /// issues only such keys).
    #[error("the key of {role} cannot sign with ECDSA P-256 / SHA-256")]
    UnsupportedKey {
        /// The identity's role.
        role: Role,
    },
    /// The signing library failed.
    #[error("signing failed")]
    Sign(#[source] rustls::Error),
    /// The CA certificate is unusable as a trust anchor.
    #[error("the CA certificate is unusable")]
    Anchor(#[source] webpki::Error),
    /// The sender's certificate does not parse.
    #[error("the sender's certificate does not parse")]
    Certificate(#[source] webpki::Error),
    /// The sender's certificate is not valid now under the consortium CA (another CA,
    /// expired, wrong usage).
    #[error("the sender's certificate is not valid under the consortium CA")]
    NotUnderCa(#[source] webpki::Error),
    /// The sender's certificate names no single role.
    #[error("the sender's certificate names no role")]
    Role(#[source] CertRoleError),
    /// The signature is not the certificate key's signature of this payload.
    #[error("the signature does not verify under {role}'s certificate")]
    BadSignature {
        /// The role the certificate names.
        role: Role,
    },
}

/// A signature and the certificate that verifies it, as carried beside a relayed payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelaySignature {
    /// The signer's leaf certificate, DER.
    pub certificate: Vec<u8>,
    /// ECDSA P-256 / SHA-256 over [`DOMAIN`] `||` payload, ASN.1 DER.
    pub signature: Vec<u8>,
}

/// Signs payloads with a role's certified key.
pub struct RelaySigner {
    role: Role,
    signer: Box<dyn rustls::sign::Signer>,
    certificate: CertificateDer<'static>,
}

impl std::fmt::Debug for RelaySigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RelaySigner({})", self.role)
    }
}

impl RelaySigner {
    /// A signer with `identity`'s key and leaf certificate. Fails if the key is not an
    /// ECDSA P-256 key.
    pub fn new(identity: &Identity) -> Result<RelaySigner, RelaySignatureError> {
        let role = identity.role();
        let key: Arc<dyn rustls::sign::SigningKey> =
            rustls::crypto::ring::sign::any_supported_type(&identity.key())
                .map_err(|_| RelaySignatureError::UnsupportedKey { role })?;
        let signer = key
            .choose_scheme(&[SCHEME])
            .ok_or(RelaySignatureError::UnsupportedKey { role })?;
        Ok(RelaySigner {
            role,
            signer,
            certificate: identity.chain()[0].clone(),
        })
    }

    /// The role whose key signs.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Signs the purpose's domain tag `||` `payload` (randomised ECDSA from the OS CSPRNG,
    /// through ring).
    pub fn sign(
        &self,
        purpose: Purpose,
        payload: &[u8],
    ) -> Result<RelaySignature, RelaySignatureError> {
        let signature = self
            .signer
            .sign(&signed_bytes(purpose, payload))
            .map_err(RelaySignatureError::Sign)?;
        Ok(RelaySignature {
            certificate: self.certificate.to_vec(),
            signature,
        })
    }
}

/// Verifies relayed payloads against the consortium CA.
#[derive(Clone)]
pub struct RelayVerifier {
    ca: CertificateDer<'static>,
    /// Certificates whose chain this verifier (or a clone) has checked under `ca`.
    checked: Arc<Mutex<CheckedCertificates>>,
}

/// What a successful chain check established about one certificate (keyed by its exact DER
/// bytes): everything in it but the time, which [`ValidityWindow`] keeps to be checked again.
#[derive(Debug, Default)]
struct CheckedCertificates(HashMap<Vec<u8>, (Role, ValidityWindow)>);

/// At most this many certificates are remembered (a consortium has a few dozen roles); a
/// full table is emptied, so that no sender can grow it.
const CHECKED_CAPACITY: usize = 256;

/// A certificate's validity period in Unix seconds, inclusive at both ends as webpki checks
/// it (not valid before `not_before`, expired after `not_after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ValidityWindow {
    not_before: i64,
    not_after: i64,
}

impl ValidityWindow {
    /// The window of `der`, or `None` if x509-parser cannot read it (then nothing is cached).
    fn of(der: &[u8]) -> Option<ValidityWindow> {
        use x509_parser::prelude::FromDer;
        let (_, x509) = x509_parser::certificate::X509Certificate::from_der(der).ok()?;
        let v = x509.validity();
        Some(ValidityWindow {
            not_before: v.not_before.timestamp(),
            not_after: v.not_after.timestamp(),
        })
    }

    fn contains(&self, now: UnixTime) -> bool {
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        self.not_before <= now && now <= self.not_after
    }
}

impl std::fmt::Debug for RelayVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let checked = self.checked.lock().map_or(0, |c| c.0.len());
        write!(f, "RelayVerifier({checked} certificates checked)")
    }
}

impl RelayVerifier {
    /// A verifier trusting `identity`'s CA (the consortium's).
    pub fn new(identity: &Identity) -> RelayVerifier {
        RelayVerifier {
            ca: identity.ca().clone(),
            checked: Arc::default(),
        }
    }

    /// The role that signed `payload`: `signature` must verify under the key of a
    /// certificate valid now under the CA that names exactly one role. The caller checks
    /// that role against the sender the payload claims.
    ///
    /// A certificate whose chain this verifier has checked before (the same DER bytes) is
    /// not checked under the CA again: only its validity window against the clock, then the
    /// message signature. Outside its window it takes the full check, which refuses it.
    pub fn verify(
        &self,
        purpose: Purpose,
        payload: &[u8],
        signature: &RelaySignature,
    ) -> Result<Role, RelaySignatureError> {
        self.verify_at(purpose, payload, signature, UnixTime::now())
    }

    /// [`RelayVerifier::verify`] at time `now` (a caller that dates other checks by its own
    /// clock passes the same reading, so one time decides them all).
    pub fn verify_at(
        &self,
        purpose: Purpose,
        payload: &[u8],
        signature: &RelaySignature,
        now: UnixTime,
    ) -> Result<Role, RelaySignatureError> {
        let der = CertificateDer::from(signature.certificate.as_slice());
        let ee = webpki::EndEntityCert::try_from(&der).map_err(RelaySignatureError::Certificate)?;
        let known = self.checked_role(&signature.certificate, now);
        let role = match known {
            Some(role) => role,
            None => {
                let anchor = webpki::anchor_from_trusted_cert(&self.ca)
                    .map_err(RelaySignatureError::Anchor)?;
                ee.verify_for_usage(
                    webpki::ALL_VERIFICATION_ALGS,
                    &[anchor],
                    &[],
                    now,
                    webpki::KeyUsage::client_auth(),
                    None,
                    None,
                )
                .map_err(RelaySignatureError::NotUnderCa)?;
                let role = role_of_certificate(&der).map_err(RelaySignatureError::Role)?;
                self.remember(&signature.certificate, role);
                role
            }
        };
        ee.verify_signature(
            webpki::ring::ECDSA_P256_SHA256,
            &signed_bytes(purpose, payload),
            &signature.signature,
        )
        .map_err(|_| RelaySignatureError::BadSignature { role })?;
        Ok(role)
    }

    /// The last second (Unix time) at which the certificate `der` is valid, or `None` if it
    /// does not parse. Says nothing of its chain: for a certificate [`RelayVerifier::verify`]
    /// accepted, so that a caller that keeps what it verified can stop trusting it when the
    /// certificate lapses. Cost: one DER parse.
    pub fn certificate_expiry(der: &[u8]) -> Option<u64> {
        ValidityWindow::of(der).and_then(|w| u64::try_from(w.not_after).ok())
    }

    /// The role of `der` if its chain was checked before and `now` is inside its window.
    fn checked_role(&self, der: &[u8], now: UnixTime) -> Option<Role> {
        let checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        match checked.0.get(der) {
            Some((role, window)) if window.contains(now) => Some(*role),
            _ => None,
        }
    }

    /// Records that `der`'s chain checked out under the CA and names `role`.
    fn remember(&self, der: &[u8], role: Role) {
        let Some(window) = ValidityWindow::of(der) else {
            return;
        };
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if checked.0.len() >= CHECKED_CAPACITY {
            checked.0.clear();
        }
        checked.0.insert(der.to_vec(), (role, window));
    }
}

fn signed_bytes(purpose: Purpose, payload: &[u8]) -> Vec<u8> {
    let domain = purpose.domain();
    let mut m = Vec::with_capacity(domain.len() + payload.len());
    m.extend_from_slice(domain);
    m.extend_from_slice(payload);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::Ca;

    fn party(ca: &Ca, p: u16) -> Identity {
        ca.identity(Role::Party(p)).unwrap()
    }

    #[test]
    fn a_signature_verifies_and_names_its_signer() {
        let ca = Ca::generate().unwrap();
        let signer = RelaySigner::new(&party(&ca, 1)).unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        let s = signer.sign(Purpose::Alignment, b"blinded set").unwrap();
        assert_eq!(
            verifier
                .verify(Purpose::Alignment, b"blinded set", &s)
                .unwrap(),
            Role::Party(1)
        );
    }

    #[test]
    fn a_changed_payload_or_signature_fails() {
        let ca = Ca::generate().unwrap();
        let signer = RelaySigner::new(&party(&ca, 1)).unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        let s = signer.sign(Purpose::Alignment, b"blinded set").unwrap();
        // The genuine signature verifies; each changed one below does not.
        verifier
            .verify(Purpose::Alignment, b"blinded set", &s)
            .unwrap();
        assert!(matches!(
            verifier.verify(Purpose::Alignment, b"blinded sez", &s),
            Err(RelaySignatureError::BadSignature { role }) if role == Role::Party(1)
        ));
        let mut bad = s.clone();
        let last = bad.signature.len() - 1;
        bad.signature[last] ^= 1;
        assert!(matches!(
            verifier.verify(Purpose::Alignment, b"blinded set", &bad),
            Err(RelaySignatureError::BadSignature { .. })
        ));
        // Without the domain tag the same key's signature is not accepted.
        let raw = RelaySigner::new(&party(&ca, 1))
            .unwrap()
            .signer
            .sign(b"blinded set")
            .unwrap();
        let no_domain = RelaySignature {
            certificate: s.certificate.clone(),
            signature: raw,
        };
        assert!(verifier
            .verify(Purpose::Alignment, b"blinded set", &no_domain)
            .is_err());
        // A signature for one purpose is not accepted for another.
        assert!(matches!(
            verifier.verify(Purpose::Channel, b"blinded set", &s),
            Err(RelaySignatureError::BadSignature { .. })
        ));
    }

    /// A party's signature under the per-upload tags of earlier wire versions (v1 to v3,
    /// before 18) is not accepted as a channel signature.
    #[test]
    fn a_channel_signed_under_an_old_tag_is_refused() {
        assert_eq!(CHANNEL_DOMAIN, b"vtwin sealing channel v1\0");
        let ca = Ca::generate().unwrap();
        let signer = RelaySigner::new(&party(&ca, 1)).unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        let payload = b"party, node, channel key, node key";
        let good = signer.sign(Purpose::Channel, payload).unwrap();
        verifier.verify(Purpose::Channel, payload, &good).unwrap();
        for tag in [
            &b"vtwin sealed upload v1\0"[..],
            b"vtwin sealed upload v2\0",
            b"vtwin sealed upload v3\0",
        ] {
            let old = [tag, payload].concat();
            let old = RelaySignature {
                certificate: good.certificate.clone(),
                signature: signer.signer.sign(&old).unwrap(),
            };
            assert!(matches!(
                verifier.verify(Purpose::Channel, payload, &old),
                Err(RelaySignatureError::BadSignature { .. })
            ));
        }
    }

    /// A certificate's expiry is the last second of its window; an unreadable one has none.
    #[test]
    fn a_certificates_expiry_is_the_end_of_its_window() {
        let ca = Ca::generate().unwrap();
        let s = RelaySigner::new(&party(&ca, 1))
            .unwrap()
            .sign(Purpose::Channel, b"x")
            .unwrap();
        let window = ValidityWindow::of(&s.certificate).unwrap();
        assert_eq!(
            RelayVerifier::certificate_expiry(&s.certificate),
            Some(window.not_after as u64)
        );
        assert!(window.not_after > 1_790_000_000, "{window:?}");
        assert_eq!(
            RelayVerifier::certificate_expiry(b"not a certificate"),
            None
        );
    }

    /// A certificate's chain is checked once; later its window is checked against the clock
    /// each time (refused outside it, as the full check would), and the message signature
    /// always.
    #[test]
    fn a_checked_certificate_keeps_its_window_and_its_signature_check() {
        let ca = Ca::generate().unwrap();
        let signer = RelaySigner::new(&party(&ca, 1)).unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        let s = signer.sign(Purpose::Channel, b"blob").unwrap();
        let now = UnixTime::now();
        assert_eq!(verifier.checked_role(&s.certificate, now), None);
        assert_eq!(
            verifier
                .verify_at(Purpose::Channel, b"blob", &s, now)
                .unwrap(),
            Role::Party(1)
        );
        assert_eq!(
            verifier.checked_role(&s.certificate, now),
            Some(Role::Party(1))
        );
        // A clone shares what was checked.
        assert_eq!(
            verifier.clone().checked_role(&s.certificate, now),
            Some(Role::Party(1))
        );
        // Remembered: a changed payload or signature still fails.
        assert!(matches!(
            verifier.verify_at(Purpose::Channel, b"blub", &s, now),
            Err(RelaySignatureError::BadSignature { .. })
        ));
        let window = ValidityWindow::of(&s.certificate).unwrap();
        assert!(window.not_before < window.not_after);
        let at =
            |secs: i64| UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs as u64));
        // Inside the window at both ends, outside just beyond them: the cached role is not
        // used, and the full check refuses the certificate.
        for (secs, inside) in [
            (window.not_before, true),
            (window.not_after, true),
            (window.not_before - 1, false),
            (window.not_after + 1, false),
        ] {
            assert_eq!(
                verifier.checked_role(&s.certificate, at(secs)).is_some(),
                inside,
                "{secs}"
            );
            let got = verifier.verify_at(Purpose::Channel, b"blob", &s, at(secs));
            if inside {
                assert_eq!(got.unwrap(), Role::Party(1));
            } else {
                assert!(
                    matches!(got, Err(RelaySignatureError::NotUnderCa(_))),
                    "{got:?}"
                );
            }
        }
        // A certificate of another CA is never taken for a remembered one.
        let other = Ca::generate().unwrap();
        let forged = RelaySigner::new(&party(&other, 1))
            .unwrap()
            .sign(Purpose::Channel, b"blob")
            .unwrap();
        assert!(matches!(
            verifier.verify_at(Purpose::Channel, b"blob", &forged, now),
            Err(RelaySignatureError::NotUnderCa(_))
        ));
        assert_eq!(verifier.checked_role(&forged.certificate, now), None);
    }

    /// The table of checked certificates is bounded: once full it is emptied.
    #[test]
    fn the_checked_certificates_are_bounded() {
        let ca = Ca::generate().unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        let cert = RelaySigner::new(&party(&ca, 1))
            .unwrap()
            .sign(Purpose::Channel, b"x")
            .unwrap()
            .certificate;
        for i in 0..CHECKED_CAPACITY {
            // Distinct keys standing for distinct certificates (the DER is only the key).
            let mut der = cert.clone();
            der.extend_from_slice(&(i as u32).to_le_bytes());
            let mut checked = verifier.checked.lock().unwrap();
            checked
                .0
                .insert(der, (Role::Party(1), ValidityWindow::of(&cert).unwrap()));
        }
        assert_eq!(verifier.checked.lock().unwrap().0.len(), CHECKED_CAPACITY);
        verifier.remember(&cert, Role::Party(1));
        assert_eq!(verifier.checked.lock().unwrap().0.len(), 1);
        assert!(verifier.checked_role(&cert, UnixTime::now()).is_some());
    }

    #[test]
    fn the_relay_cannot_sign_for_a_party() {
        let ca = Ca::generate().unwrap();
        let verifier = RelayVerifier::new(&party(&ca, 0));
        // The coordinator's own certified key: verifies, but as the coordinator.
        let coordinator = RelaySigner::new(&ca.identity(Role::Coordinator).unwrap()).unwrap();
        let s = coordinator
            .sign(Purpose::Alignment, b"blinded set")
            .unwrap();
        assert_eq!(
            verifier
                .verify(Purpose::Alignment, b"blinded set", &s)
                .unwrap(),
            Role::Coordinator
        );
        // Party 1's certificate beside the coordinator's signature.
        let p1 = RelaySigner::new(&party(&ca, 1))
            .unwrap()
            .sign(Purpose::Alignment, b"x")
            .unwrap();
        let swapped = RelaySignature {
            certificate: p1.certificate,
            signature: s.signature,
        };
        assert!(matches!(
            verifier.verify(Purpose::Alignment, b"blinded set", &swapped),
            Err(RelaySignatureError::BadSignature { role }) if role == Role::Party(1)
        ));
        // A party certificate from another CA.
        let other = Ca::generate().unwrap();
        let forged = RelaySigner::new(&party(&other, 1))
            .unwrap()
            .sign(Purpose::Alignment, b"blinded set")
            .unwrap();
        assert!(matches!(
            verifier.verify(Purpose::Alignment, b"blinded set", &forged),
            Err(RelaySignatureError::NotUnderCa(_))
        ));
        // Garbage in place of a certificate.
        let garbage = RelaySignature {
            certificate: vec![0x30, 0x03, 1, 2, 3],
            signature: forged.signature,
        };
        assert!(matches!(
            verifier.verify(Purpose::Alignment, b"blinded set", &garbage),
            Err(RelaySignatureError::Certificate(_))
        ));
    }
}
