//! rustls configurations for mutual TLS against the consortium CA (TLS 1.3 only, ring
//! provider only).
//!
//! - Server side: a client certificate is mandatory; it must chain to the CA (webpki, with
//!   the clientAuth usage) and name exactly one role that this endpoint accepts, else the
//!   handshake fails with a TLS alert.
//! - Client side: the server certificate must chain to the CA (serverAuth) and be valid
//!   for the DNS name of the role the caller expects (`node-1.vtwin.invalid`), so a server
//!   holding another role's certificate is refused by the handshake itself.
//!
//! ALPN `vtwin/1` is required on both sides.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use crate::pki::{role_of_certificate, Identity};
use crate::role::Accept;

/// The ALPN protocol id of this wire version.
pub const ALPN: &[u8] = b"vtwin/1";

/// A TLS configuration could not be built; the cause is the error's source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The CA certificate cannot be a root of trust.
    #[error("TLS configuration: the CA certificate is not a usable root")]
    Root(#[source] rustls::Error),
    /// The certificate verifier could not be built.
    #[error("TLS configuration: certificate verifier")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
    /// rustls refused the protocol versions, the certificate chain or the key.
    #[error("TLS configuration")]
    Config(#[source] rustls::Error),
    /// The configuration offers no cipher suite QUIC can use.
    #[error("TLS configuration: no cipher suite usable by QUIC")]
    Quic(#[source] quinn::crypto::rustls::NoInitialCipherSuite),
}

/// The ring crypto provider (the only one compiled in).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(identity: &Identity) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(identity.ca().clone()).map_err(TlsError::Root)?;
    Ok(Arc::new(roots))
}

/// Verifies a client certificate with webpki against the CA, then requires that it names
/// one of the accepted roles.
#[derive(Debug)]
struct RoleClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    accept: Vec<Accept>,
}

impl ClientCertVerifier for RoleClientVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let role = role_of_certificate(end_entity).map_err(|e| {
            rustls::Error::General(format!(
                "client certificate: {}",
                vtwin_host::error_chain::chain(&e)
            ))
        })?;
        if !self.accept.iter().any(|a| a.admits(role)) {
            return Err(rustls::Error::General(format!(
                "client certificate is for {role}, a role this endpoint does not accept"
            )));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Server configuration: present `identity`, require a client certificate from the CA
/// that one of `accept` admits.
pub fn server_config(
    identity: &Identity,
    accept: &[Accept],
) -> Result<rustls::ServerConfig, TlsError> {
    let provider = provider();
    let webpki = WebPkiClientVerifier::builder_with_provider(roots(identity)?, provider.clone())
        .build()
        .map_err(TlsError::Verifier)?;
    let verifier = Arc::new(RoleClientVerifier {
        inner: webpki,
        accept: accept.to_vec(),
    });
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.chain().to_vec(), identity.key())
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(config)
}

/// Client configuration: present `identity`, require a server certificate from the CA
/// (the expected role's name is checked per connection through the server name).
pub fn client_config(identity: &Identity) -> Result<rustls::ClientConfig, TlsError> {
    let provider = provider();
    let verifier = WebPkiServerVerifier::builder_with_provider(roots(identity)?, provider.clone())
        .build()
        .map_err(TlsError::Verifier)?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .with_webpki_verifier(verifier)
        .with_client_auth_cert(identity.chain().to_vec(), identity.key())
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(config)
}
