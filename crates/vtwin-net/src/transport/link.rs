//! A link to one authenticated peer: length-prefixed frames on one bidirectional QUIC stream,
//! sequence-checked on receipt, with an optional receive delay line ([`super::delay_line`]).

use super::delay_line::delay_line;
use super::*;

/// Why reading one raw frame stopped.
pub(super) enum RawError {
    /// The length prefix was refused (oversized or empty).
    Frame(FrameError),
    /// The stream or connection failed, or ended inside a frame.
    Stream(LinkClosed),
}

/// Reads one length-prefixed frame body: `Ok(None)` on a clean end of stream between
/// frames. The length is checked before the body buffer is allocated.
pub(super) async fn read_raw(stream: &mut RecvStream) -> Result<Option<Vec<u8>>, RawError> {
    let mut prefix = [0u8; LENGTH_PREFIX_BYTES];
    match stream.read_exact(&mut prefix).await {
        Ok(()) => {}
        Err(quinn::ReadExactError::FinishedEarly(0)) => return Ok(None),
        Err(e) => return Err(RawError::Stream(LinkClosed::Read(e))),
    }
    let len = body_len(prefix).map_err(RawError::Frame)?;
    // Chunks appended to a reserved buffer: `read_exact` into `vec![0; len]` zeroed every
    // body first (a memset of up to a megabyte per upload, 1% of a loopback iteration).
    let mut body = Vec::with_capacity(len);
    while body.len() < len {
        let chunk = stream.read_chunk(len - body.len(), true).await;
        let source = match chunk {
            // quinn returns at most the bytes asked for, in order; the bound is kept here
            // too, so a frame can never grow past its checked length.
            Ok(Some(chunk)) if chunk.bytes.len() <= len - body.len() => {
                body.extend_from_slice(&chunk.bytes);
                continue;
            }
            // A longer chunk than asked for (never from quinn), or the end of the stream.
            Ok(_) => quinn::ReadExactError::FinishedEarly(body.len()),
            Err(e) => quinn::ReadExactError::ReadError(e),
        };
        return Err(RawError::Stream(LinkClosed::ReadBody { len, source }));
    }
    Ok(Some(body))
}

/// What [`read_raw`] returns.
pub(super) type RawFrame = Result<Option<Vec<u8>>, RawError>;

enum Source {
    Direct(RecvStream),
    /// Frames released by the delay line's timer thread at arrival + delay.
    Delayed(mpsc::Receiver<RawFrame>),
}

/// The sending half of a link.
pub struct LinkSender {
    conn: quinn::Connection,
    stream: SendStream,
    own: Role,
    peer: Role,
    counter: SeqCounter,
    bytes: u64,
}

/// The receiving half of a link.
pub struct LinkReceiver {
    conn: quinn::Connection,
    source: Source,
    guard: SeqGuard,
    bytes: u64,
}

/// A link to one authenticated peer: one bidirectional QUIC stream.
pub struct Link {
    tx: LinkSender,
    rx: LinkReceiver,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Link({} at {})", self.peer(), self.remote_address())
    }
}

impl Link {
    pub(super) fn new(
        conn: quinn::Connection,
        send: SendStream,
        recv: RecvStream,
        own: Role,
        peer: Role,
        options: &TransportOptions,
    ) -> Link {
        let source = match options.receive_delay {
            Some(delay) if !delay.is_zero() => Source::Delayed(delay_line(recv, delay)),
            _ => Source::Direct(recv),
        };
        Link {
            tx: LinkSender {
                conn: conn.clone(),
                stream: send,
                own,
                peer,
                counter: SeqCounter::new(),
                bytes: 0,
            },
            rx: LinkReceiver {
                conn,
                source,
                guard: SeqGuard::new(peer),
                bytes: 0,
            },
        }
    }

    /// The authenticated peer.
    pub fn peer(&self) -> Role {
        self.tx.peer
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.tx.conn.remote_address()
    }

    /// Sends `frame` (see [`LinkSender::send`]).
    pub async fn send(&mut self, frame: Frame) -> Result<(), TransportError> {
        self.tx.send(frame).await
    }

    /// Receives the next frame (see [`LinkReceiver::recv`]).
    pub async fn recv(&mut self) -> Result<Frame, TransportError> {
        self.rx.recv().await
    }

    /// The two halves, to send and receive from different tasks.
    pub fn split(self) -> (LinkSender, LinkReceiver) {
        (self.tx, self.rx)
    }

    /// Closes the connection with [`CLOSE_NORMAL`] and `reason` (frames not yet
    /// delivered to the peer may be lost: close after the protocol's last exchange).
    pub fn close(&self, reason: &str) {
        self.tx.close(reason);
    }
}

impl LinkSender {
    /// Stamps `frame` with the wire version, this endpoint's role as sender and the next
    /// sequence number, and writes it. Errors: [`TransportError::Encode`] (too large;
    /// nothing sent), [`TransportError::Closed`]. Cost: one encode, one stream write
    /// (waits for flow control).
    pub async fn send(&mut self, mut frame: Frame) -> Result<(), TransportError> {
        let addr = self.conn.remote_address();
        frame.version = WIRE_VERSION;
        frame.sender = self.own;
        let mut counter = self.counter.clone();
        counter.stamp(&mut frame);
        let bytes = encode(&frame).map_err(|source| TransportError::Encode {
            peer: self.peer,
            addr,
            source,
        })?;
        let len = bytes.len() as u64;
        // Handed over whole: quinn keeps the buffer instead of copying it into its own.
        self.stream
            .write_chunk(bytes::Bytes::from(bytes))
            .await
            .map_err(|e| TransportError::Closed {
                peer: self.peer,
                addr,
                reason: Box::new(LinkClosed::Write(e)),
            })?;
        self.counter = counter;
        self.bytes += len;
        Ok(())
    }

    /// The peer.
    pub fn peer(&self) -> Role {
        self.peer
    }

    /// Bytes sent on this link so far (frames with their prefixes).
    pub fn bytes_sent(&self) -> u64 {
        self.bytes
    }

    /// Closes the connection with [`CLOSE_NORMAL`] and `reason`.
    pub fn close(&self, reason: &str) {
        self.conn
            .close(VarInt::from_u32(CLOSE_NORMAL), reason.as_bytes());
    }
}

impl LinkReceiver {
    /// The next frame from the peer, after the length check, decoding and the
    /// [`SeqGuard`] (version, sender = authenticated peer, sequence = previous + 1). With a
    /// receive delay, not before arrival + delay. A bad frame closes the connection with
    /// [`CLOSE_BAD_FRAME`] and returns [`TransportError::BadFrame`] (also logged at
    /// `warn`); a closed or lost connection returns [`TransportError::Closed`].
    pub async fn recv(&mut self) -> Result<Frame, TransportError> {
        let addr = self.conn.remote_address();
        let peer = self.guard.peer();
        let raw = match &mut self.source {
            Source::Direct(stream) => read_raw(stream).await,
            Source::Delayed(queue) => match queue.recv().await {
                Some(raw) => raw,
                None => Err(RawError::Stream(LinkClosed::DelayLine)),
            },
        };
        let closed = |reason: LinkClosed| TransportError::Closed {
            peer,
            addr,
            reason: Box::new(reason),
        };
        let bytes = match raw {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(closed(LinkClosed::Finished)),
            Err(RawError::Stream(reason)) => {
                return Err(closed(match self.conn.close_reason() {
                    Some(why) => LinkClosed::Connection(why),
                    None => reason,
                }))
            }
            Err(RawError::Frame(e)) => return Err(self.refuse(e)),
        };
        self.bytes += (LENGTH_PREFIX_BYTES + bytes.len()) as u64;
        let frame = decode(&bytes).map_err(|e| self.refuse(e))?;
        self.guard.check(&frame).map_err(|e| self.refuse(e))?;
        Ok(frame)
    }

    fn refuse(&self, source: FrameError) -> TransportError {
        let addr = self.conn.remote_address();
        let peer = self.guard.peer();
        let reason = vtwin_host::error_chain::chain(&source);
        tracing::warn!(%peer, %addr, %reason, "bad frame, closing the connection");
        self.conn
            .close(VarInt::from_u32(CLOSE_BAD_FRAME), reason.as_bytes());
        TransportError::BadFrame { peer, addr, source }
    }

    /// The peer.
    pub fn peer(&self) -> Role {
        self.guard.peer()
    }

    /// Bytes received on this link so far (frames with their prefixes, as delivered).
    pub fn bytes_received(&self) -> u64 {
        self.bytes
    }
}
