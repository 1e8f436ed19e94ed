//! The consortium PKI: a CA that issues one certificate per role, and the identity a
//! process loads (its certificate, its key, the CA).
//!
//! - CA: ECDSA P-256, self-signed, `CA:TRUE, pathlen 0`, key usages keyCertSign and
//!   cRLSign, and a name constraint that permits only DNS names under `vtwin.invalid` (so
//!   even a misissued leaf cannot name anything else).
//! - Leaf: ECDSA P-256, exactly one DNS subject alternative name, the role's name
//!   ([`Role::dns_name`], e.g. `node-1.vtwin.invalid`), extended key usages serverAuth and
//!   clientAuth (every role both accepts and connects), digitalSignature.
//! - Validity: from one day before issuance to ten years after (finite, so a leaked key
//!   does not stay valid for ever; re-run keygen to rotate).
//!
//! Keys come from ring's `SystemRandom` (the OS CSPRNG). The peer's role is read from its
//! verified certificate by [`role_of_certificate`].

use std::path::Path;

use rand_chacha::rand_core::SeedableRng;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use zeroize::Zeroizing;

use crate::role::{Role, ROLE_DOMAIN};

/// Validity of issued certificates, in days after issuance.
pub const VALIDITY_DAYS: i64 = 3650;

/// A PKI operation failed; names the file where there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// Certificate or key generation failed.
    #[error("certificate generation: {reason}")]
    Generate {
        /// rcgen's message.
        reason: String,
    },
    /// A file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file does not hold what it should (PEM certificate, PEM private key).
    #[error("{file}: {reason}")]
    Format {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A certificate does not name exactly one role.
    #[error("certificate names no single vtwin role: {reason}")]
    NoRole {
        /// What was found.
        reason: String,
    },
}

/// The consortium certificate authority (held by whoever runs keygen; not needed at run
/// time).
pub struct Ca {
    key: KeyPair,
    params: CertificateParams,
    cert_pem: String,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ca(..)")
    }
}

/// A certificate and its private key, PEM.
pub struct Issued {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The PKCS#8 private key, PEM, zeroized on drop.
    pub key_pem: Zeroizing<String>,
}

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian; Hinnant's
/// civil_from_days), for certificate validity and for dating reports. Exact for every
/// day count whose year fits an i32. Cost O(1).
pub fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

fn validity(params: &mut CertificateParams) {
    let today = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| (d.as_secs() / 86_400) as i64)
        .unwrap_or(0);
    let date = |days: i64| {
        let (y, m, d) = civil_from_days(days);
        rcgen::date_time_ymd(y, m, d)
    };
    params.not_before = date(today - 1);
    params.not_after = date(today + VALIDITY_DAYS);
}

fn gen_err(e: rcgen::Error) -> PkiError {
    PkiError::Generate {
        reason: e.to_string(),
    }
}

impl Ca {
    /// A fresh CA (new P-256 key from the OS CSPRNG). Cost: one key generation and one
    /// signature (well under a millisecond).
    pub fn generate() -> Result<Ca, PkiError> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(gen_err)?;
        let mut dn = DistinguishedName::new();
        // A random suffix gives each consortium's CA its own name, so a certificate from
        // another consortium fails as "unknown issuer", not as a bad signature.
        let mut tag = [0u8; 8];
        rand_core::RngCore::fill_bytes(&mut rand_chacha::ChaCha20Rng::from_os_rng(), &mut tag);
        dn.push(
            DnType::CommonName,
            format!("vtwin consortium CA {}", crate::seal::hex(&tag)),
        );
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: vec![GeneralSubtree::DnsName(ROLE_DOMAIN.to_string())],
            excluded_subtrees: vec![],
        });
        validity(&mut params);
        let cert_pem = params.self_signed(&key).map_err(gen_err)?.pem();
        Ok(Ca {
            key,
            params,
            cert_pem,
        })
    }

    /// The CA certificate, PEM (distributed to every role).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key, PEM (keep offline; only needed to issue more certificates).
    pub fn key_pem(&self) -> Zeroizing<String> {
        Zeroizing::new(self.key.serialize_pem())
    }

    /// Issues a certificate for `role` with a fresh key. Cost: one key generation and one
    /// signature.
    pub fn issue(&self, role: Role) -> Result<Issued, PkiError> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let mut params = CertificateParams::new(vec![role.dns_name()]).map_err(gen_err)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, role.to_string());
        params.distinguished_name = dn;
        params.is_ca = IsCa::NoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params);
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).map_err(gen_err)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: Zeroizing::new(key.serialize_pem()),
        })
    }

    /// Issues a certificate for `role` ([`Ca::issue`]) and loads it as an in-memory
    /// [`Identity`] trusting this CA: for consortia run inside one process (`vtwin demo`),
    /// examples and tests; `vtwin keygen` writes files instead. Cost: one key generation, one
    /// signature and one chain verification.
    pub fn identity(&self, role: Role) -> Result<Identity, PkiError> {
        let issued = self.issue(role)?;
        Identity::from_pem(
            ["in-memory CA", "in-memory certificate", "in-memory key"],
            self.cert_pem.as_bytes(),
            issued.cert_pem.as_bytes(),
            issued.key_pem.as_bytes(),
        )
    }
}

/// What a process authenticates with: its certificate chain and key, the CA it trusts,
/// and the role its certificate names.
pub struct Identity {
    role: Role,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    ca: CertificateDer<'static>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Identity({})", self.role)
    }
}

impl Clone for Identity {
    fn clone(&self) -> Identity {
        Identity {
            role: self.role,
            chain: self.chain.clone(),
            key: self.key.clone_key(),
            ca: self.ca.clone(),
        }
    }
}

fn certs_from_pem(file: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, PkiError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::Format {
            file: file.to_string(),
            reason: format!("not a PEM certificate: {e}"),
        })?;
    if certs.is_empty() {
        return Err(PkiError::Format {
            file: file.to_string(),
            reason: "no PEM certificate".into(),
        });
    }
    Ok(certs)
}

impl Identity {
    /// An identity from PEM text; `names` are (ca, cert, key) labels for errors (file
    /// names). The certificate must be valid now under the CA (chain, signature, validity,
    /// clientAuth usage) and name exactly one role, which becomes the identity's role.
    pub fn from_pem(
        names: [&str; 3],
        ca_pem: &[u8],
        cert_pem: &[u8],
        key_pem: &[u8],
    ) -> Result<Identity, PkiError> {
        let [ca_name, cert_name, key_name] = names;
        let mut cas = certs_from_pem(ca_name, ca_pem)?;
        if cas.len() != 1 {
            return Err(PkiError::Format {
                file: ca_name.to_string(),
                reason: format!("expected one CA certificate, found {}", cas.len()),
            });
        }
        let chain = certs_from_pem(cert_name, cert_pem)?;
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| PkiError::Format {
            file: key_name.to_string(),
            reason: format!("not a PEM private key: {e}"),
        })?;
        let role = role_of_certificate(&chain[0]).map_err(|e| PkiError::Format {
            file: cert_name.to_string(),
            reason: e.to_string(),
        })?;
        // Refuse a certificate the CA did not issue (or that has expired) here, with the
        // file named, rather than as an alert at the peer on the first handshake.
        let anchor = webpki::anchor_from_trusted_cert(&cas[0]).map_err(|e| PkiError::Format {
            file: ca_name.to_string(),
            reason: format!("not a usable CA certificate: {e}"),
        })?;
        let ee = webpki::EndEntityCert::try_from(&chain[0]).map_err(|e| PkiError::Format {
            file: cert_name.to_string(),
            reason: e.to_string(),
        })?;
        ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &chain[1..],
            rustls::pki_types::UnixTime::now(),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .map_err(|e| PkiError::Format {
            file: cert_name.to_string(),
            reason: format!("not valid under {ca_name}: {e}"),
        })?;
        Ok(Identity {
            role,
            chain,
            key,
            ca: cas.remove(0),
        })
    }

    /// Loads the CA certificate, the certificate and the key from PEM files. Errors name
    /// the file. Cost: three small reads.
    pub fn load(ca: &Path, cert: &Path, key: &Path) -> Result<Identity, PkiError> {
        let read = |p: &Path| {
            std::fs::read(p)
                .map(Zeroizing::new)
                .map_err(|source| PkiError::Io {
                    file: p.display().to_string(),
                    source,
                })
        };
        let (ca_pem, cert_pem, key_pem) = (read(ca)?, read(cert)?, read(key)?);
        Identity::from_pem(
            [
                &ca.display().to_string(),
                &cert.display().to_string(),
                &key.display().to_string(),
            ],
            &ca_pem,
            &cert_pem,
            &key_pem,
        )
    }

    /// The role this identity's certificate names.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The certificate chain presented to peers.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// The private key.
    pub fn key(&self) -> PrivateKeyDer<'static> {
        self.key.clone_key()
    }

    /// The private key's DER bytes, borrowed (no copy to wipe).
    pub(crate) fn key_der(&self) -> &[u8] {
        self.key.secret_der()
    }

    /// The trusted CA certificate.
    pub fn ca(&self) -> &CertificateDer<'static> {
        &self.ca
    }
}

/// The role named by a certificate: it must carry exactly one DNS subject alternative
/// name, and that name must be a role name ([`Role::from_dns_name`]). Does not verify the
/// chain (the TLS verifier does that first). Cost: one DER parse.
pub fn role_of_certificate(cert: &CertificateDer<'_>) -> Result<Role, PkiError> {
    let ee = webpki::EndEntityCert::try_from(cert).map_err(|e| PkiError::NoRole {
        reason: format!("unparsable certificate: {e}"),
    })?;
    let names: Vec<&str> = ee.valid_dns_names().collect();
    let [name] = names.as_slice() else {
        return Err(PkiError::NoRole {
            reason: format!("{} DNS names {:?}", names.len(), names),
        });
    };
    let role = Role::from_dns_name(name).ok_or_else(|| PkiError::NoRole {
        reason: format!("DNS name {name:?} is not a role name"),
    })?;
    // Belt and braces: the name matching rules of webpki agree.
    let server_name = ServerName::try_from(role.dns_name()).map_err(|e| PkiError::NoRole {
        reason: e.to_string(),
    })?;
    ee.verify_is_valid_for_subject_name(&server_name)
        .map_err(|e| PkiError::NoRole {
            reason: format!("{name:?}: {e}"),
        })?;
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 2000-02-29 (leap century) and 2026-11-21.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_778), (2026, 11, 21));
    }

    #[test]
    fn issued_certificates_name_their_role() {
        let ca = Ca::generate().unwrap();
        for role in [Role::Coordinator, Role::Node(2), Role::Party(7)] {
            let issued = ca.issue(role).unwrap();
            let id = Identity::from_pem(
                ["ca", "cert", "key"],
                ca.cert_pem().as_bytes(),
                issued.cert_pem.as_bytes(),
                issued.key_pem.as_bytes(),
            )
            .unwrap();
            assert_eq!(id.role(), role);
        }
        // The CA certificate itself names no role.
        let ca_der = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap();
        assert!(role_of_certificate(&ca_der).is_err());
    }

    #[test]
    fn bad_pem_names_the_file() {
        let ca = Ca::generate().unwrap();
        let issued = ca.issue(Role::Node(0)).unwrap();
        let err = Identity::from_pem(
            ["ca.pem", "node-0.pem", "node-0.key"],
            ca.cert_pem().as_bytes(),
            issued.cert_pem.as_bytes(),
            b"garbage",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("node-0.key:"), "{err}");
        let err = Identity::from_pem(
            ["ca.pem", "node-0.pem", "node-0.key"],
            b"",
            issued.cert_pem.as_bytes(),
            issued.key_pem.as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("ca.pem:"), "{err}");
        let other = Ca::generate().unwrap();
        let err = Identity::from_pem(
            ["ca.pem", "node-0.pem", "node-0.key"],
            other.cert_pem().as_bytes(),
            issued.cert_pem.as_bytes(),
            issued.key_pem.as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("node-0.pem: not valid under ca.pem") && err.contains("UnknownIssuer"),
            "{err}"
        );
    }
}
