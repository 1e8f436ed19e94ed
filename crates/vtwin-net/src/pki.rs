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
//! - A node's certificate also binds the node's X25519 seal public key: its subject carries
//!   a `description` attribute (2.5.4.13) `vtwin-seal-x25519:<64 hex digits>`
//!   ([`seal_public_of_certificate`]), so the CA's signature vouches for the seal key as for
//!   the TLS key, and a party refuses a seal key that no node certificate under its CA binds
//!   ([`node_seal_publics`]).
//!
//! Certificate requests ([`CertRequest`]): each role makes its own key and a PKCS#10 request
//! whose subject names the role (`coordinator`, `node-I`, `party-NAME`) and, for a node, its
//! seal public key; the request is signed by the role's key, so a changed byte fails
//! verification. The CA ([`Ca::sign_request`]) takes only the public key, the seal key and
//! the role from a verified request and sets every other field itself.
//!
//! Keys come from ring's `SystemRandom` (the OS CSPRNG). The peer's role is read from its
//! verified certificate by [`role_of_certificate`].

use std::path::{Path, PathBuf};

use rand_chacha::rand_core::SeedableRng;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, DnValue, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, NameConstraints, PublicKeyData,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::role::{Role, NODES, ROLE_DOMAIN};
use crate::seal::{hex, SealKey};

/// Validity of issued certificates, in days after issuance.
pub const VALIDITY_DAYS: i64 = 3650;

/// A PKI operation failed; names the file (or in-memory label) where there is one. The
/// underlying cause, if any, is the error's [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// Certificate, key or request generation failed.
    #[error("certificate generation")]
    Generate(#[source] rcgen::Error),
    /// A file could not be read.
    #[error("cannot read {file}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A private key file is not a PEM private key.
    #[error("{file}: not a PEM private key")]
    NotPemKey {
        /// The key file.
        file: String,
        /// The PEM parser's error.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// A PEM private key that the signing library cannot use.
    #[error("{file}: unusable private key")]
    UnusableKey {
        /// The key file.
        file: String,
        /// rustls' refusal.
        #[source]
        source: rustls::Error,
    },
    /// The CA's private key file is not a PEM private key the CA can sign with.
    #[error("{file}: not a PEM private key the CA can sign with")]
    CaKey {
        /// The key file.
        file: String,
        /// rcgen's refusal.
        #[source]
        source: rcgen::Error,
    },
    /// A certificate file is not PEM.
    #[error("{file}: not a PEM certificate")]
    NotPemCertificate {
        /// The certificate file.
        file: String,
        /// The PEM parser's error.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// A certificate file holds no certificate.
    #[error("{file}: no PEM certificate")]
    NoCertificate {
        /// The certificate file.
        file: String,
    },
    /// The CA certificate file holds more than one certificate.
    #[error("{file}: expected one CA certificate, found {found}")]
    CaCount {
        /// The CA certificate file.
        file: String,
        /// How many certificates it holds.
        found: usize,
    },
    /// The CA certificate cannot serve as a trust anchor.
    #[error("{file}: not a usable CA certificate")]
    UnusableCa {
        /// The CA certificate file.
        file: String,
        /// webpki's refusal.
        #[source]
        source: webpki::Error,
    },
    /// The CA certificate cannot sign (rcgen refuses it as an issuer).
    #[error("{file}: not a usable CA certificate")]
    CaIssuer {
        /// The CA certificate file.
        file: String,
        /// rcgen's refusal.
        #[source]
        source: rcgen::Error,
    },
    /// A role's certificate where the CA's was expected.
    #[error("{file}: a role's certificate, not the CA's")]
    RoleCertificateAsCa {
        /// The certificate file.
        file: String,
    },
    /// A certificate does not parse as X.509.
    #[error("{file}: unparsable certificate")]
    Unparsable {
        /// The certificate file.
        file: String,
        /// The X.509 parser's error.
        #[source]
        source: x509_parser::nom::Err<x509_parser::error::X509Error>,
    },
    /// A certificate does not parse as an end-entity certificate.
    #[error("{file}: unparsable certificate")]
    EndEntity {
        /// The certificate file.
        file: String,
        /// webpki's refusal.
        #[source]
        source: webpki::Error,
    },
    /// A certificate names no single vtwin role.
    #[error("{file}: certificate names no single vtwin role")]
    NoRole {
        /// The certificate file.
        file: String,
        /// What was found.
        #[source]
        source: CertRoleError,
    },
    /// A certificate names another role than the one expected in its place.
    #[error("{file}: the certificate is for {found}, expected {expected}")]
    WrongRole {
        /// The certificate file.
        file: String,
        /// The role it names.
        found: Role,
        /// The role expected.
        expected: Role,
    },
    /// A certificate is not valid now under the CA (another CA, expired, wrong usage).
    #[error("{file}: not valid under {ca}")]
    NotValidUnder {
        /// The certificate file.
        file: String,
        /// The CA certificate file.
        ca: String,
        /// webpki's verdict.
        #[source]
        source: webpki::Error,
    },
    /// A private key is not the one whose public key a certificate carries.
    #[error("{key}: this private key is not the key of the certificate {cert} (keep each role's key with the certificate signed from its own request)")]
    KeyMismatch {
        /// The key file.
        key: String,
        /// The certificate file.
        cert: String,
    },
    /// A subject attribute of a certificate is not a string.
    #[error("{file}: a subject attribute is not a string")]
    AttributeEncoding {
        /// The certificate file.
        file: String,
        /// The X.509 parser's error.
        #[source]
        source: x509_parser::error::X509Error,
    },
    /// A seal attribute whose value is not `vtwin-seal-x25519:` and 64 hex digits.
    #[error("{file}: seal attribute {value:?} is not {SEAL_PREFIX}<64 hex>")]
    SealAttribute {
        /// The certificate or request file.
        file: String,
        /// The attribute's value.
        value: String,
    },
    /// A certificate binds two seal keys.
    #[error("{file}: the certificate binds two seal keys")]
    TwoSealKeys {
        /// The certificate file.
        file: String,
    },
    /// A node's certificate binds no seal key.
    #[error("{file}: the certificate binds no seal key; a node's certificate must (have the CA sign the node's request)")]
    NoSealKey {
        /// The certificate file.
        file: String,
    },
    /// A node's seal key is not the one its certificate binds.
    #[error(
        "{seal}: this seal key ({found}) is not the one the certificate {cert} binds ({bound})"
    )]
    SealMismatch {
        /// The seal key file.
        seal: String,
        /// The certificate file.
        cert: String,
        /// [`fingerprint`] of the bound key.
        bound: String,
        /// [`fingerprint`] of the key found.
        found: String,
    },
    /// A certificate request whose signature does not verify.
    #[error("{file}: the request's signature does not verify: it was changed after it was made (or damaged); ask its role for a new one")]
    RequestSignature {
        /// The request file.
        file: String,
    },
    /// A file that is not a certificate request.
    #[error("{file}: not a certificate request")]
    NotARequest {
        /// The request file.
        file: String,
        /// rcgen's refusal.
        #[source]
        source: rcgen::Error,
    },
    /// A request whose key is not ECDSA P-256.
    #[error("{file}: the request's key is not ECDSA P-256")]
    RequestKey {
        /// The request file.
        file: String,
    },
    /// A request that asks for extensions.
    #[error("{file}: the request asks for extensions; vtwin requests carry none")]
    RequestExtensions {
        /// The request file.
        file: String,
    },
    /// A request subject attribute that is not a UTF-8 string.
    #[error("{file}: a subject attribute is not a UTF-8 string")]
    RequestAttributeEncoding {
        /// The request file.
        file: String,
    },
    /// A request subject attribute other than one common name and one seal key.
    #[error("{file}: unexpected subject attribute {attribute:?}; a request names its role and at most one seal key")]
    RequestAttribute {
        /// The request file.
        file: String,
        /// The attribute's type.
        attribute: DnType,
    },
    /// A request that names no role (no common name).
    #[error("{file}: the request names no role")]
    RequestNoRole {
        /// The request file.
        file: String,
    },
}

/// Why a certificate names no single vtwin role ([`role_of_certificate`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertRoleError {
    /// The certificate does not parse as an end-entity certificate.
    #[error("unparsable certificate")]
    Unparsable(#[source] webpki::Error),
    /// Not exactly one DNS subject alternative name.
    #[error("{} DNS names {names:?}", names.len())]
    DnsNames {
        /// The DNS names it carries.
        names: Vec<String>,
    },
    /// The one DNS name is not a role's name.
    #[error("DNS name {name:?} is not a role name")]
    NotARole {
        /// The DNS name.
        name: String,
    },
    /// The role's name is not a valid server name.
    #[error("role name {name:?} is not a valid DNS name")]
    ServerName {
        /// The role's DNS name.
        name: String,
        /// The parser's refusal.
        #[source]
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// webpki does not find the certificate valid for its own role name.
    #[error("DNS name {name:?} is not valid for the certificate")]
    Subject {
        /// The DNS name.
        name: String,
        /// webpki's refusal.
        #[source]
        source: webpki::Error,
    },
}

/// The consortium certificate authority (held by the CA operator; not needed at run time).
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
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

fn validity(params: &mut CertificateParams) {
    params.not_before = vtwin_host::clock::utc_midnight_in(-1);
    params.not_after = vtwin_host::clock::utc_midnight_in(VALIDITY_DAYS);
}

fn gen_err(e: rcgen::Error) -> PkiError {
    PkiError::Generate(e)
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
            issuer: Issuer::new(params, key),
            cert_pem,
        })
    }

    /// The CA from its certificate and key (PEM); `names` are (certificate, key) labels for
    /// errors. Refuses a key that is not the certificate's and a certificate that is not a
    /// CA certificate. Cost: two PEM parses and one comparison.
    pub fn from_pem(names: [&str; 2], cert_pem: &str, key_pem: &str) -> Result<Ca, PkiError> {
        let [cert_name, key_name] = names;
        let key = KeyPair::from_pem(key_pem).map_err(|source| PkiError::CaKey {
            file: key_name.to_string(),
            source,
        })?;
        let der = certs_from_pem(cert_name, cert_pem.as_bytes())?.remove(0);
        webpki::anchor_from_trusted_cert(&der).map_err(|source| PkiError::UnusableCa {
            file: cert_name.to_string(),
            source,
        })?;
        if role_of_certificate(&der).is_ok() {
            return Err(PkiError::RoleCertificateAsCa {
                file: cert_name.to_string(),
            });
        }
        if spki_of_certificate(cert_name, &der)? != key.subject_public_key_info() {
            return Err(PkiError::KeyMismatch {
                key: key_name.to_string(),
                cert: cert_name.to_string(),
            });
        }
        let issuer = Issuer::from_ca_cert_der(&der, key).map_err(|source| PkiError::CaIssuer {
            file: cert_name.to_string(),
            source,
        })?;
        Ok(Ca {
            issuer,
            cert_pem: cert_pem.to_string(),
        })
    }

    /// Loads the CA certificate and key files ([`Ca::from_pem`]); errors name the file.
    /// Cost: two small reads.
    pub fn load(cert: &Path, key: &Path) -> Result<Ca, PkiError> {
        let cert_pem = read_text(cert)?;
        let key_pem = read_text(key)?;
        Ca::from_pem(
            [&cert.display().to_string(), &key.display().to_string()],
            &cert_pem,
            &key_pem,
        )
    }

    /// The CA certificate, PEM (distributed to every role).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key, PEM (keep offline; only needed to issue more certificates).
    pub fn key_pem(&self) -> Zeroizing<String> {
        Zeroizing::new(self.issuer.key().serialize_pem())
    }

    /// Issues a certificate for `role` with a fresh key, binding no seal key. Cost: one key
    /// generation and one signature.
    pub fn issue(&self, role: Role) -> Result<Issued, PkiError> {
        self.issue_sealed(role, None)
    }

    /// Issues a certificate for `role` with a fresh key, binding `seal_public` (a node's
    /// seal public key) if given. Cost: one key generation and one signature.
    pub fn issue_sealed(
        &self,
        role: Role,
        seal_public: Option<&[u8; 32]>,
    ) -> Result<Issued, PkiError> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let cert = leaf_params(role, seal_public)?
            .signed_by(&key, &self.issuer)
            .map_err(gen_err)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: Zeroizing::new(key.serialize_pem()),
        })
    }

    /// Signs a verified request as `role`'s certificate: the certificate takes the request's
    /// public key and seal key, every other field (name, usages, validity) is the CA's
    /// choice. The caller checks that the request names `role`. Cost: one signature.
    pub fn sign_request(&self, request: &CertRequest, role: Role) -> Result<String, PkiError> {
        let cert = leaf_params(role, request.seal_public.as_ref())?
            .signed_by(&request.csr.public_key, &self.issuer)
            .map_err(gen_err)?;
        Ok(cert.pem())
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

/// The subject attribute that binds a node's seal key: `description` (2.5.4.13).
const SEAL_ATTRIBUTE: [u64; 4] = [2, 5, 4, 13];
/// The prefix of its value (64 hex digits follow).
const SEAL_PREFIX: &str = "vtwin-seal-x25519:";

fn seal_dn_type() -> DnType {
    DnType::CustomDnType(SEAL_ATTRIBUTE.to_vec())
}

fn parse_seal_value(value: &str) -> Option<[u8; 32]> {
    value
        .strip_prefix(SEAL_PREFIX)
        .and_then(crate::seal::parse_hex32)
        .map(|k| *k)
}

fn leaf_params(role: Role, seal_public: Option<&[u8; 32]>) -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::new(vec![role.dns_name()]).map_err(gen_err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, role.to_string());
    if let Some(public) = seal_public {
        dn.push(seal_dn_type(), format!("{SEAL_PREFIX}{}", hex(public)));
    }
    params.distinguished_name = dn;
    params.is_ca = IsCa::NoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params);
    Ok(params)
}

fn read_text(file: &Path) -> Result<Zeroizing<String>, PkiError> {
    std::fs::read_to_string(file)
        .map(Zeroizing::new)
        .map_err(|source| PkiError::Io {
            file: file.display().to_string(),
            source,
        })
}

/// `SHA256:` and the 64 hex digits of SHA-256 over `bytes`: what keygen prints for an
/// out-of-band comparison. Over a certificate's DER it equals
/// `openssl x509 -outform DER | sha256sum`; over a SubjectPublicKeyInfo,
/// `openssl pkey -pubin -outform DER | sha256sum`. Cost: one hash.
pub fn fingerprint(bytes: &[u8]) -> String {
    format!("SHA256:{}", hex(&Sha256::digest(bytes)))
}

/// A certificate request, its signature verified: the role name it asks for
/// (`coordinator`, `node-I` or `party-NAME`; the caller interprets it), its public key and,
/// for a node, the seal public key it asks the CA to bind.
pub struct CertRequest {
    name: String,
    seal_public: Option<[u8; 32]>,
    csr: CertificateSigningRequestParams,
}

impl std::fmt::Debug for CertRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CertRequest({})", self.name)
    }
}

impl CertRequest {
    /// A fresh P-256 key (OS CSPRNG) and a request signed by it for the role `name`,
    /// binding `seal_public` if given: (request PEM, private key PEM). Cost: one key
    /// generation and one signature.
    pub fn generate(
        name: &str,
        seal_public: Option<&[u8; 32]>,
    ) -> Result<(String, Zeroizing<String>), PkiError> {
        let key = KeyPair::generate().map_err(gen_err)?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        if let Some(public) = seal_public {
            dn.push(seal_dn_type(), format!("{SEAL_PREFIX}{}", hex(public)));
        }
        params.distinguished_name = dn;
        let csr = params.serialize_request(&key).map_err(gen_err)?;
        Ok((
            csr.pem().map_err(gen_err)?,
            Zeroizing::new(key.serialize_pem()),
        ))
    }

    /// Parses a request (PEM) and verifies its signature; `file` names it in errors. Refuses
    /// a changed byte (the signature fails), a key other than ECDSA P-256, a subject other
    /// than one common name and at most one seal attribute, and requested extensions.
    /// Cost: one signature verification.
    pub fn from_pem(file: &str, pem: &str) -> Result<CertRequest, PkiError> {
        let file = || file.to_string();
        let csr = CertificateSigningRequestParams::from_pem(pem).map_err(|e| match e {
            rcgen::Error::InvalidCertificationRequestSignature => {
                PkiError::RequestSignature { file: file() }
            }
            source => PkiError::NotARequest {
                file: file(),
                source,
            },
        })?;
        if csr.public_key.algorithm() != &rcgen::PKCS_ECDSA_P256_SHA256 {
            return Err(PkiError::RequestKey { file: file() });
        }
        let p = &csr.params;
        if !(p.subject_alt_names.is_empty()
            && p.key_usages.is_empty()
            && p.extended_key_usages.is_empty()
            && matches!(p.is_ca, IsCa::NoCa))
        {
            return Err(PkiError::RequestExtensions { file: file() });
        }
        let (mut name, mut seal) = (None, None);
        for (ty, value) in p.distinguished_name.iter() {
            let text = match value {
                DnValue::Utf8String(s) => s.as_str(),
                DnValue::PrintableString(s) => s.as_str(),
                _ => return Err(PkiError::RequestAttributeEncoding { file: file() }),
            };
            match ty {
                DnType::CommonName if name.is_none() => name = Some(text.to_string()),
                t if *t == seal_dn_type() && seal.is_none() => {
                    seal = Some(
                        parse_seal_value(text).ok_or_else(|| PkiError::SealAttribute {
                            file: file(),
                            value: text.to_string(),
                        })?,
                    )
                }
                _ => {
                    return Err(PkiError::RequestAttribute {
                        file: file(),
                        attribute: ty.clone(),
                    })
                }
            }
        }
        let name = name.ok_or_else(|| PkiError::RequestNoRole { file: file() })?;
        Ok(CertRequest {
            name,
            seal_public: seal,
            csr,
        })
    }

    /// Loads a request file ([`CertRequest::from_pem`]). Cost: one small read.
    pub fn load(file: &Path) -> Result<CertRequest, PkiError> {
        CertRequest::from_pem(&file.display().to_string(), &read_text(file)?)
    }

    /// The role name it asks for, as written by its role (unvalidated).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The seal public key it asks the CA to bind (nodes only).
    pub fn seal_public(&self) -> Option<&[u8; 32]> {
        self.seal_public.as_ref()
    }

    /// [`fingerprint`] of its public key (SubjectPublicKeyInfo DER), equal to that of the
    /// certificate the CA signs for it.
    pub fn key_fingerprint(&self) -> String {
        fingerprint(&self.csr.public_key.subject_public_key_info())
    }
}

/// The SubjectPublicKeyInfo DER of a certificate. Cost: one DER parse.
fn spki_of_certificate(file: &str, cert: &CertificateDer<'_>) -> Result<Vec<u8>, PkiError> {
    use x509_parser::prelude::FromDer;
    let (_, x509) =
        x509_parser::certificate::X509Certificate::from_der(cert).map_err(|source| {
            PkiError::Unparsable {
                file: file.to_string(),
                source,
            }
        })?;
    Ok(x509.public_key().raw.to_vec())
}

/// The public facts of a certificate that keygen prints for an out-of-band check.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertSummary {
    /// The role it names, or `None` for the CA certificate.
    pub role: Option<Role>,
    /// [`fingerprint`] of the certificate (DER).
    pub cert: String,
    /// [`fingerprint`] of its public key (SubjectPublicKeyInfo DER).
    pub key: String,
    /// [`fingerprint`] of the seal public key it binds, if any.
    pub seal: Option<String>,
}

/// Summarises a certificate (first certificate of `pem`); `file` names it in errors. Does
/// not verify the chain. Cost: two DER parses and three hashes.
pub fn summarise_certificate(file: &str, pem: &[u8]) -> Result<CertSummary, PkiError> {
    let der = certs_from_pem(file, pem)?.remove(0);
    Ok(CertSummary {
        role: role_of_certificate(&der).ok(),
        cert: fingerprint(&der),
        key: fingerprint(&spki_of_certificate(file, &der)?),
        seal: seal_public_of_certificate(file, &der)?.map(|k| fingerprint(&k)),
    })
}

/// The seal public key a certificate binds (its subject's `vtwin-seal-x25519:` description
/// attribute), `None` if it binds none; `file` names it in errors. Does not verify the chain.
/// Cost: one DER parse.
pub fn seal_public_of_certificate(
    file: &str,
    cert: &CertificateDer<'_>,
) -> Result<Option<[u8; 32]>, PkiError> {
    use x509_parser::prelude::FromDer;
    let file = || file.to_string();
    let (_, x509) =
        x509_parser::certificate::X509Certificate::from_der(cert).map_err(|source| {
            PkiError::Unparsable {
                file: file(),
                source,
            }
        })?;
    let mut found = None;
    for attr in x509
        .subject()
        .iter_by_oid(&x509_parser::oid_registry::OID_X509_DESCRIPTION)
    {
        let text = attr
            .as_str()
            .map_err(|source| PkiError::AttributeEncoding {
                file: file(),
                source,
            })?;
        let key = parse_seal_value(text).ok_or_else(|| PkiError::SealAttribute {
            file: file(),
            value: text.to_string(),
        })?;
        if found.replace(key).is_some() {
            return Err(PkiError::TwoSealKeys { file: file() });
        }
    }
    Ok(found)
}

/// Checks that a node's seal key is the one its certificate binds (`cert_file` and
/// `seal_file` name them in errors). Cost: one DER parse.
pub fn check_seal_binding(
    identity: &Identity,
    cert_file: &Path,
    seal: &SealKey,
    seal_file: &Path,
) -> Result<(), PkiError> {
    let cert_name = cert_file.display().to_string();
    match seal_public_of_certificate(&cert_name, &identity.chain[0])? {
        None => Err(PkiError::NoSealKey { file: cert_name }),
        Some(bound) if bound != seal.public() => Err(PkiError::SealMismatch {
            seal: seal_file.display().to_string(),
            cert: cert_name,
            bound: fingerprint(&bound),
            found: fingerprint(&seal.public()),
        }),
        Some(_) => Ok(()),
    }
}

/// The three nodes' seal public keys, each read from node i's certificate `certs[i]`, which
/// must be valid under the CA certificate `ca`, name node i and bind a seal key: a party
/// seals only to keys its CA bound to that node. Errors name the file. Cost: four small
/// reads, three chain verifications.
pub fn node_seal_publics(ca: &Path, certs: &[PathBuf; 3]) -> Result<[[u8; 32]; 3], PkiError> {
    let ca_name = ca.display().to_string();
    let ca_pem = read_text(ca)?;
    let ca_der = certs_from_pem(&ca_name, ca_pem.as_bytes())?.remove(0);
    let mut out = [[0u8; 32]; 3];
    for (i, (o, file)) in out.iter_mut().zip(certs).enumerate() {
        let name = file.display().to_string();
        let chain = certs_from_pem(&name, read_text(file)?.as_bytes())?;
        let role = role_of_certificate(&chain[0]).map_err(|source| PkiError::NoRole {
            file: name.clone(),
            source,
        })?;
        let want = Role::Node(i as u8);
        if role != want {
            return Err(PkiError::WrongRole {
                file: name,
                found: role,
                expected: want,
            });
        }
        verify_leaf(&ca_name, &ca_der, &name, &chain)?;
        *o = seal_public_of_certificate(&name, &chain[0])?
            .ok_or_else(|| PkiError::NoSealKey { file: name.clone() })?;
    }
    debug_assert_eq!(out.len(), usize::from(NODES));
    Ok(out)
}

/// Verifies `chain` (leaf first) under the CA certificate `ca_der` now, for client auth.
fn verify_leaf(
    ca_name: &str,
    ca_der: &CertificateDer<'_>,
    cert_name: &str,
    chain: &[CertificateDer<'static>],
) -> Result<(), PkiError> {
    // Refuse a certificate the CA did not issue (or that has expired) here, with the
    // file named, rather than as an alert at the peer on the first handshake.
    let anchor =
        webpki::anchor_from_trusted_cert(ca_der).map_err(|source| PkiError::UnusableCa {
            file: ca_name.to_string(),
            source,
        })?;
    let ee = webpki::EndEntityCert::try_from(&chain[0]).map_err(|source| PkiError::EndEntity {
        file: cert_name.to_string(),
        source,
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
    .map_err(|source| PkiError::NotValidUnder {
        file: cert_name.to_string(),
        ca: ca_name.to_string(),
        source,
    })?;
    Ok(())
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
        .map_err(|source| PkiError::NotPemCertificate {
            file: file.to_string(),
            source,
        })?;
    if certs.is_empty() {
        return Err(PkiError::NoCertificate {
            file: file.to_string(),
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
            return Err(PkiError::CaCount {
                file: ca_name.to_string(),
                found: cas.len(),
            });
        }
        let chain = certs_from_pem(cert_name, cert_pem)?;
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| PkiError::NotPemKey {
            file: key_name.to_string(),
            source,
        })?;
        let role = role_of_certificate(&chain[0]).map_err(|source| PkiError::NoRole {
            file: cert_name.to_string(),
            source,
        })?;
        verify_leaf(ca_name, &cas[0], cert_name, &chain)?;
        // rustls would refuse a key that is not the certificate's only when the endpoint is
        // built, as "keys may not be consistent"; name both files here instead.
        let signer = rustls::crypto::ring::sign::any_supported_type(&key).map_err(|source| {
            PkiError::UnusableKey {
                file: key_name.to_string(),
                source,
            }
        })?;
        if rustls::sign::CertifiedKey::new(chain.clone(), signer)
            .keys_match()
            .is_err()
        {
            return Err(PkiError::KeyMismatch {
                key: key_name.to_string(),
                cert: cert_name.to_string(),
            });
        }
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
pub fn role_of_certificate(cert: &CertificateDer<'_>) -> Result<Role, CertRoleError> {
    let ee = webpki::EndEntityCert::try_from(cert).map_err(CertRoleError::Unparsable)?;
    let names: Vec<&str> = ee.valid_dns_names().collect();
    let [name] = names.as_slice() else {
        return Err(CertRoleError::DnsNames {
            names: names.iter().map(|n| n.to_string()).collect(),
        });
    };
    let role = Role::from_dns_name(name).ok_or_else(|| CertRoleError::NotARole {
        name: name.to_string(),
    })?;
    // Belt and braces: the name matching rules of webpki agree.
    let server_name =
        ServerName::try_from(role.dns_name()).map_err(|source| CertRoleError::ServerName {
            name: role.dns_name(),
            source,
        })?;
    ee.verify_is_valid_for_subject_name(&server_name)
        .map_err(|source| CertRoleError::Subject {
            name: name.to_string(),
            source,
        })?;
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn seal_keys_round_trip_through_requests_and_certificates() {
        let ca = Ca::generate().unwrap();
        let der = |pem: &str| CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        let key = [0x5a; 32];
        let sealed = ca.issue_sealed(Role::Node(1), Some(&key)).unwrap();
        assert_eq!(
            seal_public_of_certificate("c", &der(&sealed.cert_pem)).unwrap(),
            Some(key)
        );
        let bare = ca.issue(Role::Node(1)).unwrap();
        assert_eq!(
            seal_public_of_certificate("c", &der(&bare.cert_pem)).unwrap(),
            None
        );
        // Through a request: the certificate binds the requested key and carries the
        // request's public key, whatever name the request asked for.
        let (csr, _key) = CertRequest::generate("node-2", Some(&key)).unwrap();
        let req = CertRequest::from_pem("r", &csr).unwrap();
        assert_eq!((req.name(), req.seal_public()), ("node-2", Some(&key)));
        let cert = der(&ca.sign_request(&req, Role::Node(2)).unwrap());
        assert_eq!(role_of_certificate(&cert).unwrap(), Role::Node(2));
        assert_eq!(seal_public_of_certificate("c", &cert).unwrap(), Some(key));
        assert_eq!(
            fingerprint(&spki_of_certificate("c", &cert).unwrap()),
            req.key_fingerprint()
        );
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
        .unwrap_err();
        let text = vtwin_host::error_chain::chain(&err);
        assert!(
            matches!(err, PkiError::NotValidUnder { .. })
                && text.starts_with("node-0.pem: not valid under ca.pem: ")
                && text.contains("UnknownIssuer"),
            "{text}"
        );
    }

    /// Writes `files` (name, content) into a fresh directory.
    fn files(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn a_key_that_is_not_the_certificates_names_both_files() {
        let ca = Ca::generate().unwrap();
        let (a, b) = (
            ca.issue(Role::Node(0)).unwrap(),
            ca.issue(Role::Node(1)).unwrap(),
        );
        let dir = files(&[
            ("ca.pem", ca.cert_pem()),
            ("node-0.pem", &a.cert_pem),
            ("node-1.key", &b.key_pem),
        ]);
        let p = |f: &str| dir.path().join(f);
        let err = Identity::load(&p("ca.pem"), &p("node-0.pem"), &p("node-1.key")).unwrap_err();
        let (cert, key) = (p("node-0.pem"), p("node-1.key"));
        match &err {
            PkiError::KeyMismatch { key: k, cert: c } => {
                assert_eq!(
                    (k.as_str(), c.as_str()),
                    (&*key.to_string_lossy(), &*cert.to_string_lossy())
                )
            }
            other => panic!("{other:?}"),
        }
        let text = vtwin_host::error_chain::chain(&err);
        assert!(
            text.contains(&*cert.to_string_lossy())
                && text.contains(&*key.to_string_lossy())
                && text.contains("is not the key of the certificate")
                && !text.contains("consistent"),
            "{text}"
        );
        // The CA's key checked the same way.
        let dir = files(&[("ca.pem", ca.cert_pem()), ("other.key", &b.key_pem)]);
        let p = |f: &str| dir.path().join(f);
        let text =
            vtwin_host::error_chain::chain(&Ca::load(&p("ca.pem"), &p("other.key")).unwrap_err());
        assert!(
            text.contains(&*p("ca.pem").to_string_lossy())
                && text.contains(&*p("other.key").to_string_lossy()),
            "{text}"
        );
    }

    #[test]
    fn a_missing_certificate_is_one_line_naming_the_file() {
        let ca = Ca::generate().unwrap();
        let a = ca.issue(Role::Node(0)).unwrap();
        let dir = files(&[("ca.pem", ca.cert_pem()), ("node-0.key", &a.key_pem)]);
        let p = |f: &str| dir.path().join(f);
        let missing = p("node-0.pem");
        let err = Identity::load(&p("ca.pem"), &missing, &p("node-0.key")).unwrap_err();
        assert!(matches!(err, PkiError::Io { .. }), "{err:?}");
        let os = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
        let text = vtwin_host::error_chain::chain(&err);
        assert_eq!(
            err.to_string(),
            format!("cannot read {}", missing.display())
        );
        assert!(
            text.starts_with(&format!("cannot read {}: ", missing.display())),
            "{text}"
        );
        // The OS error once, not twice.
        let cause = std::error::Error::source(&err).unwrap().to_string();
        assert_eq!(text.matches(&cause).count(), 1, "{text} ({os})");
        assert!(!text.contains('\n'), "{text}");
    }
}
