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
//! Input consistency: a client sends its correction `x_2` to node 1 and to node 2 directly,
//! and its seed `s_0` to nodes 0 and 2, `s_1` to nodes 0 and 1 ([`crate::input`]), so a
//! malicious client could send two nodes different values. The first exchange after inputs
//! or seeds carries the check, whatever the protocol (a message is created only if that
//! round had none on that link): node 0 appends `[H(s_1), H(s_0)]` (its SHA-256 digests of
//! the seeds accepted since the last check, 4 ring elements) to its message to node 1 and
//! `[H(s_0), H(s_1)]` to its message to node 2; node j in {1, 2} compares node 0's digest of
//! the seed it holds with its own, and appends
//! `SHA-256("vtwin-mpc/v1 input-check" || D || H(own seed))` (2 elements; `D` its BLAKE3
//! digest of the corrections received since the last check: a quarter of SHA-256's time on
//! the megabytes of corrections per iteration) to its message to the other, which
//! recomputes it from its own `D` and node 0's digest of the other's seed. So both nodes 1
//! and 2 catch a different correction and a different copy of either seed. A mismatch is
//! [`MpcError::InconsistentInput`]. Openings ([`crate::input::reveal_to`],
//! [`crate::input::open_to_nodes`]) first run [`crate::input::check_inputs`], so nothing is
//! ever revealed before the check passed, and a program that returns with inputs unchecked
//! is an error ([`MpcError::UncheckedInput`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use sha2::{Digest, Sha256};

use crate::counters::Counters;
use crate::error::MpcError;
use crate::input::words;
use crate::keys::PairSeeds;
use crate::le_bytes::with_le_bytes;
use crate::message::{Message, NodeId, Peer, SessionId, HEADER_BYTES};
use crate::packing::Packing;
use crate::prg;
use zeroize::Zeroizing;

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
    mask_log: Option<Vec<Zeroizing<Vec<u128>>>>,
    /// Corrections received since the last consistency check (every node notes that inputs
    /// happened, so all step through the same rounds; nodes 1 and 2 hash what they got).
    input_digest: Option<blake3::Hasher>,
    /// Clients' seeds accepted since the last consistency check, hashed by share index
    /// (`[s_0 digest, s_1 digest]`; every node notes them, each hashes the seeds it holds).
    seed_digests: Option<[Sha256; 2]>,
    /// Every PRG draw (global key, stream, round the stream was allocated in, `u64::MAX`
    /// for a stream never allocated), for the crate's privacy unit tests.
    #[cfg(test)]
    prg_log: Vec<(PrgKey, u64, u64)>,
    /// The round in which each stream number was allocated.
    #[cfg(test)]
    stream_round: BTreeMap<u64, u64>,
}

/// Which seed a PRG draw used (test instrumentation): the pair seed `k_j` or the private
/// seed `p_i`.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum PrgKey {
    /// `k_j`, shared by nodes j-1 and j.
    Pair(usize),
    /// `p_i`, node i's alone.
    Private(usize),
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
        #[cfg(test)]
        {
            let (s, r) = (i.stream, i.step);
            i.stream_round.insert(s, r);
        }
        i.stream
    }

    /// `F(k_i, stream)` (shared with the previous node).
    pub(crate) fn prg_prev(&self, stream: u64, n: usize) -> Vec<u128> {
        #[cfg(test)]
        self.log_prg(PrgKey::Pair(self.id.index()), stream);
        prg::expand(&self.seeds.prev, stream, n)
    }

    /// `F(k_{i+1}, stream)` (shared with the next node).
    pub(crate) fn prg_next(&self, stream: u64, n: usize) -> Vec<u128> {
        #[cfg(test)]
        self.log_prg(PrgKey::Pair((self.id.index() + 1) % 3), stream);
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
        #[cfg(test)]
        self.log_prg(PrgKey::Private(self.id.index()), stream);
        prg::expand(&self.seeds.private, stream, n)
    }

    #[cfg(test)]
    fn log_prg(&self, key: PrgKey, stream: u64) {
        let mut i = self.inner.borrow_mut();
        let round = i.stream_round.get(&stream).copied().unwrap_or(u64::MAX);
        i.prg_log.push((key, stream, round));
    }

    /// Every PRG draw so far: (seed, stream, round in which the stream was allocated, i.e.
    /// the round of the layer that uses it; `u64::MAX` if never allocated).
    #[cfg(test)]
    pub(crate) fn prg_log(&self) -> Vec<(PrgKey, u64, u64)> {
        self.inner.borrow().prg_log.clone()
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
            log.push(Zeroizing::new(masks.to_vec()));
        }
    }

    /// Notes that an input happened (every node, at the same program point): the next
    /// exchange carries nodes 1 and 2's digests.
    pub(crate) fn note_input(&self) {
        self.inner
            .borrow_mut()
            .input_digest
            .get_or_insert_with(blake3::Hasher::new);
    }

    /// Nodes 1 and 2: adds client `client`'s correction number `seq` to the digest they
    /// compare before anything is revealed.
    pub(crate) fn digest_correction(&self, client: u16, seq: u64, payload: &[u128]) {
        let mut i = self.inner.borrow_mut();
        let h = i.input_digest.get_or_insert_with(blake3::Hasher::new);
        h.update(&client.to_le_bytes());
        h.update(&seq.to_le_bytes());
        h.update(&(payload.len() as u64).to_le_bytes());
        with_le_bytes(payload, |b| {
            h.update(b);
        });
    }

    /// Notes that client `client`'s seeds were accepted (every node, at the same program
    /// point): the next exchange carries node 0's digests of them. Each node hashes the
    /// seeds it holds (`seed0` = `s_0`, `seed1` = `s_1`).
    pub(crate) fn note_seeds(
        &self,
        client: u16,
        seed0: Option<&[u8; 32]>,
        seed1: Option<&[u8; 32]>,
    ) {
        let mut i = self.inner.borrow_mut();
        let h = i.seed_digests.get_or_insert_with(|| {
            [0u8, 1].map(|j| {
                let mut h = Sha256::new();
                h.update(SEED_CHECK);
                h.update([j]);
                h
            })
        });
        for (h, s) in h.iter_mut().zip([seed0, seed1]) {
            if let Some(s) = s {
                h.update(client.to_le_bytes());
                h.update(s);
            }
        }
    }

    /// True when inputs or clients' seeds arrived since the last consistency check.
    pub(crate) fn inputs_unchecked(&self) -> bool {
        let i = self.inner.borrow();
        i.input_digest.is_some() || i.seed_digests.is_some()
    }

    fn push(&self, to: Peer, step: u64, payload: Vec<u128>, packing: Packing) {
        let msg = Message {
            session: self.session,
            from: Peer::Node(self.id),
            to,
            step,
            payload,
            packing,
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
        sends: Vec<(Peer, Vec<u128>)>,
        recvs: &[(NodeId, usize)],
    ) -> Result<Vec<Vec<u128>>, MpcError> {
        let sends = sends
            .into_iter()
            .map(|(to, payload)| (to, payload, Packing::whole()))
            .collect();
        self.exchange_packed(sends, recvs).await
    }

    /// [`Ctx::exchange`] with each message's [`Packing`] (its elements' public widths on
    /// the wire).
    pub(crate) async fn exchange_packed(
        &self,
        mut sends: Vec<(Peer, Vec<u128>, Packing)>,
        recvs: &[(NodeId, usize)],
    ) -> Result<Vec<Vec<u128>>, MpcError> {
        let (step, digest, seeds) = {
            let mut i = self.inner.borrow_mut();
            let s = i.step;
            i.step += 1;
            i.counters.rounds += 1;
            (s, i.input_digest.take(), i.seed_digests.take())
        };
        // The input consistency check rides on this round (module docs of `crate::input`):
        // node 0 appends its digests of the clients' seeds to its messages to nodes 1 and 2;
        // nodes 1 and 2 append a digest of their corrections and of the seed they hold to
        // their messages to each other.
        let mut recvs = recvs.to_vec();
        let pending = digest.is_some() || seeds.is_some();
        let seed_words = seeds.map(|[h0, h1]| [digest_words(h0), digest_words(h1)]);
        // (peer, extra elements expected at the end of its message, message added for them)
        let mut extras: Vec<(NodeId, usize, bool)> = Vec::new();
        let mut mine = None;
        match self.id.index() {
            0 => {
                if let Some([w0, w1]) = seed_words {
                    attach(&mut sends, NodeId::ALL[1], &[w1[0], w1[1], w0[0], w0[1]]);
                    attach(&mut sends, NodeId::ALL[2], &[w0[0], w0[1], w1[0], w1[1]]);
                }
            }
            me if pending => {
                // Node 1 holds s_1, node 2 holds s_0.
                let (other, held) = if me == 1 { (2, 1) } else { (1, 0) };
                let other = NodeId::ALL[other];
                let corr: [u8; 32] = digest.unwrap_or_default().finalize().into();
                let own_seed = seed_words.map(|w| w[held]);
                attach(&mut sends, other, &check_word(&corr, own_seed.as_ref()));
                extras.push((other, 2, expect(&mut recvs, other, 2)));
                if seed_words.is_some() {
                    let n0 = NodeId::ALL[0];
                    extras.push((n0, 4, expect(&mut recvs, n0, 4)));
                }
                mine = Some((other, corr, own_seed));
            }
            _ => {}
        }
        for (to, payload, packing) in sends {
            self.push(to, step, payload, packing);
        }
        let mut out = Vec::with_capacity(recvs.len());
        for &(from, len) in &recvs {
            let p = std::future::poll_fn(|_| self.take(Peer::Node(from), step, len)).await?;
            out.push(p);
        }
        let mut tails: Vec<(NodeId, Vec<u128>)> = Vec::new();
        for &(from, n, _) in &extras {
            let at = recvs.iter().position(|(f, _)| *f == from).unwrap_or(0);
            let p = &mut out[at];
            tails.push((from, p.split_off(p.len() - n)));
        }
        let mut added: Vec<usize> = extras
            .iter()
            .filter(|e| e.2)
            .filter_map(|e| recvs.iter().position(|(f, _)| *f == e.0))
            .collect();
        added.sort_unstable_by(|a, b| b.cmp(a));
        for at in added {
            out.remove(at);
        }
        if let Some((other, corr, own_seed)) = mine {
            let tail = |from: NodeId| {
                tails
                    .iter()
                    .find(|(f, _)| *f == from)
                    .map(|(_, t)| t.as_slice())
                    .unwrap_or(&[])
            };
            // Node 0's digest of the seed this node holds must be this node's own; its
            // digest of the other seed enters the comparison with the other node.
            let claimed_other = match own_seed {
                Some(own) => {
                    let claim = tail(NodeId::ALL[0]);
                    if claim.get(..2) != Some(&own[..]) {
                        return Err(MpcError::InconsistentInput {
                            peer: Peer::Node(NodeId::ALL[0]),
                        });
                    }
                    claim.get(2..4).and_then(|c| <[u128; 2]>::try_from(c).ok())
                }
                None => None,
            };
            if tail(other) != check_word(&corr, claimed_other.as_ref()) {
                return Err(MpcError::InconsistentInput {
                    peer: Peer::Node(other),
                });
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

/// Domain label of the seed digests.
const SEED_CHECK: &[u8] = b"vtwin-mpc/v1 seed-check";
/// Domain label of the digest nodes 1 and 2 exchange.
const INPUT_CHECK: &[u8] = b"vtwin-mpc/v1 input-check";

/// A SHA-256 digest as two ring elements.
fn digest_words(h: Sha256) -> [u128; 2] {
    words(&h.finalize().into())
}

/// What node 1 or 2 sends the other: `SHA-256(label || corrections digest || seed digest)`,
/// the seed digest (of the seeds it holds, or node 0's claim of the other node's) present
/// when seeds arrived since the last check.
fn check_word(corr: &[u8], seed: Option<&[u128; 2]>) -> [u128; 2] {
    let mut h = Sha256::new();
    h.update(INPUT_CHECK);
    h.update(corr);
    if let Some(s) = seed {
        h.update(s[0].to_le_bytes());
        h.update(s[1].to_le_bytes());
    }
    digest_words(h)
}

/// Appends `words` to this round's message to `to` (whole: a packing's runs cover only the
/// elements it was made for), or sends them alone.
fn attach(sends: &mut Vec<(Peer, Vec<u128>, Packing)>, to: NodeId, words: &[u128]) {
    match sends.iter_mut().find(|(p, _, _)| *p == Peer::Node(to)) {
        Some((_, p, _)) => p.extend_from_slice(words),
        None => sends.push((Peer::Node(to), words.to_vec(), Packing::whole())),
    }
}

/// Expects `n` more elements at the end of this round's message from `from`; true when
/// the message exists only for them.
fn expect(recvs: &mut Vec<(NodeId, usize)>, from: NodeId, n: usize) -> bool {
    match recvs.iter_mut().find(|(f, _)| *f == from) {
        Some(r) => {
            r.1 += n;
            false
        }
        None => {
            recvs.push((from, n));
            true
        }
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
                seed_digests: None,
                #[cfg(test)]
                prg_log: Vec::new(),
                #[cfg(test)]
                stream_round: BTreeMap::new(),
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
        self.ctx
            .inner
            .borrow()
            .mask_log
            .iter()
            .flatten()
            .map(|m| m.to_vec())
            .collect()
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
                // Inputs must never stay unchecked: a program that ends after inputs with no
                // later exchange or opening would skip the consistency check.
                if self.ctx.inputs_unchecked() {
                    return Err(MpcError::UncheckedInput);
                }
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

/// Bytes of one message carrying `n` ring elements in the plain form (16 bytes each; a
/// packed message's are [`Message::encoded_len`]).
pub const fn message_bytes(n: usize) -> usize {
    HEADER_BYTES + 16 * n
}

#[cfg(test)]
mod tests {
    use crate::message::SessionId;
    use crate::sim::Simulation;

    /// The corrections' digest `D` hashes, per correction in arrival order, the client
    /// (u16 LE), the input number (u64 LE), the length (u64 LE) and the elements (16 bytes LE
    /// each) under BLAKE3 (`protocols/mpc-sharing.md`): pinned against BLAKE3 of that byte
    /// string written out here, so a change of the framing or the hash shows.
    #[test]
    fn the_corrections_digest_hashes_the_documented_bytes() {
        let corrections: [(u16, u64, &[u128]); 3] = [
            (2, 1, &[1, u128::MAX, 1 << 64]),
            (0, 7, &[]),
            (1, 2, &[0x0123_4567_89ab_cdef]),
        ];
        let report = Simulation::new(SessionId(*b"vtwin-mpc-digest"), 3)
            .expect("sim")
            .run(|ctx| async move {
                for (client, seq, payload) in corrections {
                    ctx.digest_correction(client, seq, payload);
                }
                let h = ctx
                    .inner
                    .borrow_mut()
                    .input_digest
                    .take()
                    .expect("a digest");
                Ok(<[u8; 32]>::from(h.finalize()))
            })
            .expect("run");
        let mut bytes = Vec::new();
        for (client, seq, payload) in corrections {
            bytes.extend(client.to_le_bytes());
            bytes.extend(seq.to_le_bytes());
            bytes.extend((payload.len() as u64).to_le_bytes());
            for e in payload {
                bytes.extend(e.to_le_bytes());
            }
        }
        assert_eq!(report.outputs[1], *blake3::hash(&bytes).as_bytes());
        assert_eq!(report.outputs[1], report.outputs[2]);
    }
}
