//! The sans-IO node: a deterministic state machine that consumes messages and returns the
//! messages to send. No sockets, threads or clocks.
//!
//! A protocol is written as an `async` program over a [`Ctx`]; the node polls it with a
//! no-op waker whenever a message arrives. The program suspends only inside
//! `Ctx::exchange` (a communication round) and `Ctx::recv_client`, which complete when
//! the messages they wait for are in the node's inbox. All three nodes run the same program
//! and step through the same rounds, so a round number identifies a message.
//!
//! Validation of every incoming message (each failure is an [`MpcError`], never a panic):
//! session, addressee, sender (a node other than this one, or a client of the session),
//! duplicates (same sender and step, pending or already consumed), messages from a node that
//! does not send to this node in that round (reported when the round completes or when the
//! message arrives for a round already over), and payload length (checked by the round that
//! consumes it). The first error poisons the node.
//!
//! Input consistency: a client sends its correction `x_2` to node 1 and to node 2 directly
//! ([`crate::input`]), so a malicious client could send them different values. Nodes 1 and 2
//! keep a SHA-256 digest of the corrections they received since the last check and append
//! it (2 ring elements) to their next message to each other: the first exchange after an
//! input carries it, whatever the protocol (a message is created if that round had none
//! between them). A mismatch is [`MpcError::InconsistentInput`]. Openings
//! ([`crate::input::reveal_to`], [`crate::input::open_to_nodes`]) first run
//! [`crate::input::check_inputs`], so nothing is ever revealed before the check passed.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use sha2::{Digest, Sha256};

use crate::counters::Counters;
use crate::error::MpcError;
use crate::keys::PairSeeds;
use crate::message::{Message, NodeId, Peer, SessionId, HEADER_BYTES};
use crate::prg;

struct Inner {
    /// Next round number.
    step: u64,
    /// Rounds below this are complete: every expected message consumed.
    completed: u64,
    outbox: Vec<Message>,
    inbox: BTreeMap<(Peer, u64), Vec<u128>>,
    consumed: HashSet<(Peer, u64)>,
    counters: Counters,
    stream: u64,
    mask_log: Option<Vec<Vec<u128>>>,
    /// Corrections received since the last consistency check (every node notes that inputs
    /// happened, so all step through the same rounds; nodes 1 and 2 hash what they got).
    input_digest: Option<Sha256>,
}

/// A node's handle on its own state, given to protocol programs.
#[derive(Clone)]
pub struct Ctx {
    id: NodeId,
    session: SessionId,
    clients: u16,
    seeds: Rc<PairSeeds>,
    inner: Rc<RefCell<Inner>>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ctx({})", self.id)
    }
}

impl Ctx {
    /// This node.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The session.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// A fresh PRG stream number. Every node calls this at the same points of the program,
    /// so stream numbers agree across nodes without communication.
    pub(crate) fn next_stream(&self) -> u64 {
        let mut i = self.inner.borrow_mut();
        i.stream += 1;
        i.stream
    }

    /// `F(k_i, stream)` (shared with the previous node).
    pub(crate) fn prg_prev(&self, stream: u64, n: usize) -> Vec<u128> {
        prg::expand(&self.seeds.prev, stream, n)
    }

    /// `F(k_{i+1}, stream)` (shared with the next node).
    pub(crate) fn prg_next(&self, stream: u64, n: usize) -> Vec<u128> {
        prg::expand(&self.seeds.next, stream, n)
    }

    /// `F(k_j, stream)` if this node holds `k_j` (j = i or i + 1), else `None`.
    pub(crate) fn prg_key(&self, j: usize, stream: u64, n: usize) -> Option<Vec<u128>> {
        let i = self.id.index();
        if j % 3 == i {
            Some(self.prg_prev(stream, n))
        } else if j % 3 == (i + 1) % 3 {
            Some(self.prg_next(stream, n))
        } else {
            None
        }
    }

    /// `F(p_i, stream)`: from this node's private seed, known to no other node.
    pub(crate) fn prg_private(&self, stream: u64, n: usize) -> Vec<u128> {
        prg::expand(&self.seeds.private, stream, n)
    }

    /// Adds to the cost counters.
    pub(crate) fn count(&self, f: impl FnOnce(&mut Counters)) {
        f(&mut self.inner.borrow_mut().counters);
    }

    /// This node's counters so far.
    pub fn counters(&self) -> Counters {
        self.inner.borrow().counters
    }

    /// Records a truncation mask vector, when recording is on (node 0's own view; tests use
    /// it to replay the MPC through the vtwin-fixed reference).
    pub(crate) fn log_masks(&self, masks: &[u128]) {
        if let Some(log) = self.inner.borrow_mut().mask_log.as_mut() {
            log.push(masks.to_vec());
        }
    }

    /// Notes that an input happened (every node, at the same program point): the next
    /// exchange carries nodes 1 and 2's digests.
    pub(crate) fn note_input(&self) {
        self.inner
            .borrow_mut()
            .input_digest
            .get_or_insert_with(Sha256::new);
    }

    /// Nodes 1 and 2: adds client `client`'s correction number `seq` to the digest they
    /// compare before anything is revealed.
    pub(crate) fn digest_correction(&self, client: u16, seq: u64, payload: &[u128]) {
        let mut i = self.inner.borrow_mut();
        let h = i.input_digest.get_or_insert_with(Sha256::new);
        h.update(client.to_le_bytes());
        h.update(seq.to_le_bytes());
        h.update((payload.len() as u64).to_le_bytes());
        for v in payload {
            h.update(v.to_le_bytes());
        }
    }

    /// True when inputs happened since the last consistency check.
    pub(crate) fn inputs_unchecked(&self) -> bool {
        self.inner.borrow().input_digest.is_some()
    }

    fn push(&self, to: Peer, step: u64, payload: Vec<u128>) {
        let msg = Message {
            session: self.session,
            from: Peer::Node(self.id),
            to,
            step,
            payload,
        };
        let mut i = self.inner.borrow_mut();
        let bytes = msg.encoded_len() as u64;
        match to {
            Peer::Node(_) => {
                i.counters.messages += 1;
                i.counters.bytes += bytes;
                i.counters.elements += msg.payload.len() as u64;
            }
            Peer::Client(_) => i.counters.bytes_to_clients += bytes,
        }
        i.outbox.push(msg);
    }

    fn take(&self, from: Peer, step: u64, expected: usize) -> Poll<Result<Vec<u128>, MpcError>> {
        let mut i = self.inner.borrow_mut();
        match i.inbox.remove(&(from, step)) {
            None => Poll::Pending,
            Some(p) => {
                i.consumed.insert((from, step));
                if p.len() == expected {
                    Poll::Ready(Ok(p))
                } else {
                    Poll::Ready(Err(MpcError::Malformed {
                        from,
                        step,
                        expected,
                        got: p.len(),
                    }))
                }
            }
        }
    }

    /// One communication round: sends `sends` (to other nodes or to clients), then waits for
    /// one message from each node in `recvs` with the given payload length, and returns the
    /// payloads in the order of `recvs`. Every node must call it at the same point of the
    /// program (possibly with nothing to send or receive) so that round numbers agree.
    pub(crate) async fn exchange(
        &self,
        mut sends: Vec<(Peer, Vec<u128>)>,
        recvs: &[(NodeId, usize)],
    ) -> Result<Vec<Vec<u128>>, MpcError> {
        let (step, digest) = {
            let mut i = self.inner.borrow_mut();
            let s = i.step;
            i.step += 1;
            i.counters.rounds += 1;
            (s, i.input_digest.take())
        };
        // Nodes 1 and 2 append their digest of the corrections to their message to each
        // other (module docs).
        let mut recvs = recvs.to_vec();
        let mut check: Option<(NodeId, [u128; 2], bool)> = None;
        if let (Some(h), 1 | 2) = (digest, self.id.index()) {
            let d = h.finalize();
            let mut lo = [0u8; 16];
            let mut hi = [0u8; 16];
            lo.copy_from_slice(&d[..16]);
            hi.copy_from_slice(&d[16..]);
            let words = [u128::from_le_bytes(lo), u128::from_le_bytes(hi)];
            let other = if self.id.index() == 1 {
                NodeId::ALL[2]
            } else {
                NodeId::ALL[1]
            };
            match sends.iter_mut().find(|(to, _)| *to == Peer::Node(other)) {
                Some((_, p)) => p.extend_from_slice(&words),
                None => sends.push((Peer::Node(other), words.to_vec())),
            }
            let added = match recvs.iter_mut().find(|(f, _)| *f == other) {
                Some(r) => {
                    r.1 += 2;
                    false
                }
                None => {
                    recvs.push((other, 2));
                    true
                }
            };
            check = Some((other, words, added));
        }
        for (to, payload) in sends {
            self.push(to, step, payload);
        }
        let mut out = Vec::with_capacity(recvs.len());
        for &(from, len) in &recvs {
            let p = std::future::poll_fn(|_| self.take(Peer::Node(from), step, len)).await?;
            out.push(p);
        }
        if let Some((other, words, added)) = check {
            let at = recvs.iter().position(|(f, _)| *f == other).unwrap_or(0);
            let p = &mut out[at];
            let theirs = p.split_off(p.len() - 2);
            if theirs != words {
                return Err(MpcError::InconsistentInput {
                    peer: Peer::Node(other),
                });
            }
            if added {
                out.remove(at);
            }
        }
        let mut i = self.inner.borrow_mut();
        i.completed = step + 1;
        if let Some((&(from, s), _)) = i
            .inbox
            .iter()
            .find(|((p, s), _)| matches!(p, Peer::Node(_)) && *s <= step)
        {
            return Err(MpcError::Unexpected { from, step: s });
        }
        Ok(out)
    }

    /// Waits for client `client`'s message number `seq` with `len` elements.
    pub(crate) async fn recv_client(
        &self,
        client: u16,
        seq: u64,
        len: usize,
    ) -> Result<Vec<u128>, MpcError> {
        std::future::poll_fn(|_| self.take(Peer::Client(client), seq, len)).await
    }

    /// Number of clients in the session (client ids are `0..clients`).
    pub fn clients(&self) -> u16 {
        self.clients
    }
}

type Program<T> = Pin<Box<dyn Future<Output = Result<T, MpcError>>>>;

/// A compute node running one program to completion.
pub struct Node<T> {
    ctx: Ctx,
    program: Option<Program<T>>,
    output: Option<T>,
    finished: bool,
    poisoned: bool,
}

impl<T> std::fmt::Debug for Node<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({}, done: {})", self.ctx.id, self.output.is_some())
    }
}

impl<T: 'static> Node<T> {
    /// A node `id` of `session` with its pairwise seeds, accepting client ids `0..clients`,
    /// that will run `program`. Nothing happens until [`Node::start`].
    pub fn new<F, Fut>(
        id: NodeId,
        session: SessionId,
        seeds: PairSeeds,
        clients: u16,
        program: F,
    ) -> Node<T>
    where
        F: FnOnce(Ctx) -> Fut,
        Fut: Future<Output = Result<T, MpcError>> + 'static,
    {
        let ctx = Ctx {
            id,
            session,
            clients,
            seeds: Rc::new(seeds),
            inner: Rc::new(RefCell::new(Inner {
                step: 0,
                completed: 0,
                outbox: Vec::new(),
                inbox: BTreeMap::new(),
                consumed: HashSet::new(),
                counters: Counters::default(),
                stream: 0,
                mask_log: None,
                input_digest: None,
            })),
        };
        let program = Box::pin(program(ctx.clone()));
        Node {
            ctx,
            program: Some(program),
            output: None,
            finished: false,
            poisoned: false,
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.ctx.id
    }

    /// Records every truncation mask this node knows (only node 0 knows them, from its
    /// private seed; the other nodes record nothing). Test instrumentation: the log is part
    /// of this node's own view.
    pub fn record_truncation_masks(&mut self) {
        self.ctx.inner.borrow_mut().mask_log = Some(Vec::new());
    }

    /// The recorded masks, one vector per truncation layer, in program order.
    pub fn truncation_masks(&self) -> Vec<Vec<u128>> {
        self.ctx.inner.borrow().mask_log.clone().unwrap_or_default()
    }

    /// Runs the program until it first waits; returns the messages to send.
    pub fn start(&mut self) -> Result<Vec<Message>, MpcError> {
        self.poll()
    }

    /// Decodes and handles one encoded message.
    pub fn handle_bytes(&mut self, bytes: &[u8]) -> Result<Vec<Message>, MpcError> {
        match Message::decode(bytes) {
            Ok(m) => self.handle(m),
            Err(e) => {
                self.poisoned = true;
                Err(e.into())
            }
        }
    }

    /// Handles one message: validates it, runs the program as far as it can go, and
    /// returns the messages to send. Any error poisons the node.
    pub fn handle(&mut self, msg: Message) -> Result<Vec<Message>, MpcError> {
        let r = self.accept(msg).and_then(|()| self.poll());
        if r.is_err() {
            self.poisoned = true;
            self.program = None;
        }
        r
    }

    fn accept(&mut self, msg: Message) -> Result<(), MpcError> {
        if self.poisoned || self.finished {
            return Err(MpcError::Poisoned);
        }
        let from = msg.from;
        if msg.session != self.ctx.session {
            return Err(MpcError::WrongSession { from });
        }
        if msg.to != Peer::Node(self.ctx.id) {
            return Err(MpcError::Misrouted { from, to: msg.to });
        }
        match from {
            Peer::Node(n) if n == self.ctx.id => return Err(MpcError::UnknownPeer { from }),
            Peer::Client(c) if c >= self.ctx.clients => return Err(MpcError::UnknownPeer { from }),
            _ => {}
        }
        let key = (from, msg.step);
        let mut i = self.ctx.inner.borrow_mut();
        if i.inbox.contains_key(&key) || i.consumed.contains(&key) {
            return Err(MpcError::Duplicate {
                from,
                step: msg.step,
            });
        }
        if matches!(from, Peer::Node(_)) && msg.step < i.completed {
            return Err(MpcError::Unexpected {
                from,
                step: msg.step,
            });
        }
        i.inbox.insert(key, msg.payload);
        Ok(())
    }

    fn poll(&mut self) -> Result<Vec<Message>, MpcError> {
        if self.poisoned {
            return Err(MpcError::Poisoned);
        }
        if let Some(p) = self.program.as_mut() {
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(r) = p.as_mut().poll(&mut cx) {
                self.program = None;
                let out = r?;
                if let Some((&(from, step), _)) = self.ctx.inner.borrow().inbox.iter().next() {
                    return Err(MpcError::Unexpected { from, step });
                }
                self.output = Some(out);
                self.finished = true;
            }
        }
        Ok(std::mem::take(&mut self.ctx.inner.borrow_mut().outbox))
    }

    /// True once the program has returned.
    pub fn is_done(&self) -> bool {
        self.finished
    }

    /// The program's result, once done.
    pub fn output(&self) -> Option<&T> {
        self.output.as_ref()
    }

    /// Takes the result.
    pub fn take_output(&mut self) -> Option<T> {
        self.output.take()
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.ctx.counters()
    }
}

/// Bytes of one message carrying `n` ring elements.
pub const fn message_bytes(n: usize) -> usize {
    HEADER_BYTES + 16 * n
}
