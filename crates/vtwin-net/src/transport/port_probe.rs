//! The connect probe: whether a peer's host says that nothing listens on its UDP port
//! ([`super::Endpoint::connect`] runs it beside each attempt but the last).

use std::net::SocketAddr;

/// Resolves `true` when `addr`'s host answers that nothing accepts datagrams on that UDP
/// port (ICMP port unreachable: no service there, or a firewall that rejects); otherwise it
/// resolves `false` at once (the probe could not be sent) or never (a live endpoint drops
/// the probe; a silent host; ICMP filtered), and the QUIC attempt it runs beside decides.
/// QUIC's own socket is unconnected, so the kernel drops such an answer to its Initial and a
/// peer that is not running would cost the whole attempt timeout; a connected socket gets
/// it as `ConnectionRefused`. The probe is one 1-byte datagram, too short for a QUIC packet,
/// sent from the endpoint's own address (so a firewall that filters by source address treats
/// it as it treats the QUIC packets; one that filters by source port may not). Cost: one
/// socket and one datagram per attempt.
pub(super) async fn port_closed(local: Option<SocketAddr>, addr: SocketAddr) -> bool {
    let ip = match local.map(|a| a.ip()) {
        Some(ip) if !ip.is_unspecified() && ip.is_ipv4() == addr.is_ipv4() => ip,
        _ if addr.is_ipv4() => std::net::Ipv4Addr::UNSPECIFIED.into(),
        _ => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let refused = |e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionRefused;
    let Ok(socket) = tokio::net::UdpSocket::bind((ip, 0)).await else {
        return false;
    };
    if socket.connect(addr).await.is_err() {
        return false;
    }
    if let Err(e) = socket.send(&[0]).await {
        return refused(&e);
    }
    let mut buf = [0u8; 1];
    loop {
        match socket.recv(&mut buf).await {
            Err(e) if refused(&e) => return true,
            Err(_) => return false,
            // Nothing answers a 1-byte datagram; ignore whatever does.
            Ok(_) => {}
        }
    }
}
