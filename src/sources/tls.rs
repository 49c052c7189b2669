//! TLS for the scrape client: the system's root certificates read at the first handshake that
//! needs them, not when the client is built.
//!
//! reqwest's own rustls set-up reads and parses every root certificate the system has while the
//! client is built, that is before the console's first frame, even though vLLM engines are
//! scraped over plain HTTP: on Debian 144 certificates, from the 220 KB bundle and again from
//! the 145 files of `/etc/ssl/certs` (about 7 ms of CPU; 84 KB kept). The first HTTPS handshake
//! now waits for that instead.
//! [`LazyPlatformVerifier`] verifies exactly as reqwest's verifier does (the same
//! `rustls-platform-verifier`, the same crypto provider) and builds it on first use; a system
//! without root certificates makes the HTTPS targets fail with that reason and leaves the
//! plain ones working, instead of stopping the console at start.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// A client configuration equal to the one reqwest builds for `ClientBuilder::build` with its
/// `rustls` feature and default settings (rustls' default TLS versions, ALPN for HTTP/1.1), but
/// whose certificate verifier loads the system's roots on first use. Fails only if rustls'
/// own provider disagreed with its own default versions.
pub(crate) fn scrape_tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(LazyPlatformVerifier::new(provider.clone()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform verifier, built when the first certificate is to be verified.
#[derive(Debug)]
pub(crate) struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    inner: OnceLock<Result<Verifier, rustls::Error>>,
}

impl LazyPlatformVerifier {
    pub(crate) fn new(provider: Arc<CryptoProvider>) -> Self {
        LazyPlatformVerifier {
            provider,
            inner: OnceLock::new(),
        }
    }

    /// True once the system's roots have been read (whether or not that succeeded).
    #[cfg(test)]
    fn is_loaded(&self) -> bool {
        self.inner.get().is_some()
    }

    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.inner
            .get_or_init(|| Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    // The signatures over the handshake need no roots: checked with the provider's algorithms,
    // as the platform verifier itself does on Linux.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> LazyPlatformVerifier {
        LazyPlatformVerifier::new(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
    }

    #[test]
    fn roots_are_read_only_when_a_certificate_is_verified() {
        let lazy = verifier();
        let schemes = lazy.supported_verify_schemes();
        assert!(schemes.contains(&SignatureScheme::ECDSA_NISTP256_SHA256));
        assert!(!lazy.is_loaded());
        // Garbage is refused, by the real verifier: building it read the system's roots.
        let name = ServerName::try_from("example.invalid").unwrap();
        let result = lazy.verify_server_cert(
            &CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]),
            &[],
            &name,
            &[],
            UnixTime::now(),
        );
        assert!(result.is_err());
        assert!(lazy.is_loaded());
    }

    #[test]
    fn the_configuration_is_reqwests_for_http1() {
        let config = scrape_tls_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert!(config.enable_sni);
    }
}
