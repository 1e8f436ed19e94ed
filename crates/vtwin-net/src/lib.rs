//! QUIC transport (quinn + rustls, mutual TLS against the consortium CA), the versioned
//! wire format, and sealing of input shares to a compute node.
