//! Input sharing by a client (a party or a noise contributor) and opening to one client.
//!
//! **Input, PRG-compressed.** A client draws two 32-byte seeds from its CSPRNG: `s_0` for
//! share index 0 (sent to nodes 0 and 2, which hold `x_0`) and `s_1` for share index 1
//! (nodes 0 and 1), once per session (message number 0). For its input number `q >= 1` of
//! `n` values it derives `x_0 = F(s_0, q)`, `x_1 = F(s_1, q)` ([`crate::prg`]) and uploads
//! only the correction `x_2 = v - x_0 - x_1`, to node 1 and to node 2 (its two holders).
//! Upload: 2 n ring elements (+ 128 seed bytes per session); between nodes: only the
//! consistency check below, no round of its own. Each node's pair of shares is uniform:
//! every pair misses one of `x_0, x_1, x_2`, and the missing one is either a PRG output
//! under a seed the node lacks or the correction masked by such an output.
//!
//! **Consistency.** A malicious client could send node 1 and node 2 different corrections,
//! or give node 0 and node 2 different copies of `s_0` (node 0 and node 1 of `s_1`). Every
//! node notes the seeds it accepts and the inputs it receives; the first exchange after
//! them carries the check (the runtime does it, [`crate::runtime`]): node 0 sends its
//! SHA-256 digests of both seeds (`[H(s_1), H(s_0)]` to node 1, `[H(s_0), H(s_1)]` to node
//! 2, over client and seed, 4 elements each); nodes 1 and 2 compare node 0's digest of the
//! seed they hold with their own, and exchange a (BLAKE3) digest of the corrections they
//! received (client, input number, length, elements) together with the digest of the seed
//! they hold (2 elements each way), which the other recomputes with node 0's digest in its
//! place.
//! Both nodes 1 and 2 thus catch any of the three inconsistencies, in the same round. No
//! extra round in a circuit that computes anything, and no extra message where that round
//! already has the four messages between node 0 and nodes 1, 2 and between nodes 1 and 2
//! (any truncation layer). A mismatch is [`MpcError::InconsistentInput`]; every opening
//! first makes sure the check happened ([`check_inputs`]), and a program that returns with
//! unchecked inputs is refused ([`MpcError::UncheckedInput`]). Node 1 learns `H(s_0)`, node
//! 2 `H(s_1)`: digests of 256-bit uniform seeds, which reveal nothing of them. Until
//! 2026-11-24 node 2 forwarded the corrections to node 1 instead, in a round of its own.
//!
//! The client validates every value before sharing ([`InputRange`]); an out-of-range,
//! non-finite or unencodable value is rejected and nothing is sent.
//!
//! **Opening to one receiver.** Each node sends its share `x_i` to the receiving client,
//! and no other node ever sees it: 1 round, 3 n elements, all to the receiver.

use rand_core::{CryptoRng, RngCore};
use vtwin_fixed::Fx;
use zeroize::Zeroizing;

use crate::error::MpcError;
use crate::message::{Message, NodeId, Peer, SessionId};
use crate::packing::Packing;
use crate::prg::{self, Seed};
use crate::runtime::Ctx;
use crate::share::Shared;

const N0: NodeId = NodeId::ALL[0];
const N1: NodeId = NodeId::ALL[1];
const N2: NodeId = NodeId::ALL[2];

/// The closed interval a client's input must lie in (public, from the schema or protocol).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputRange {
    /// Smallest allowed value.
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
}

/// A client refused to share its input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Element `index` is NaN/infinite or outside the declared range.
    #[error("input element {index} = {value} is outside [{min}, {max}] (or not finite)")]
    OutOfRange {
        /// Position in the input vector.
        index: usize,
        /// The value.
        value: f64,
        /// Range minimum.
        min: f64,
        /// Range maximum.
        max: f64,
    },
    /// The range itself is invalid (not finite, min > max, or beyond the encoding limit).
    #[error("invalid input range [{min}, {max}]")]
    BadRange {
        /// Range minimum.
        min: f64,
        /// Range maximum.
        max: f64,
    },
    /// The client already shared an input, so the input numbers the nodes expect are taken.
    #[error("the next input number is {got}, the protocol expects {want}")]
    Sequence {
        /// The client's next input number.
        got: u64,
        /// The one the protocol expects.
        want: u64,
    },
}

/// 32 bytes (a seed, a SHA-256 digest) as two ring elements, little endian.
pub(crate) fn words(seed: &[u8; 32]) -> [u128; 2] {
    let mut a = [0u8; 16];
    let mut b = [0u8; 16];
    a.copy_from_slice(&seed[..16]);
    b.copy_from_slice(&seed[16..]);
    [u128::from_le_bytes(a), u128::from_le_bytes(b)]
}

fn seed_from(words: &[u128]) -> Seed {
    let mut s = Zeroizing::new([0u8; 32]);
    s[..16].copy_from_slice(&words[0].to_le_bytes());
    s[16..].copy_from_slice(&words[1].to_le_bytes());
    s
}

/// A client that inputs secret values (party or noise contributor).
pub struct InputClient {
    client: u16,
    session: SessionId,
    seed0: Seed,
    seed1: Seed,
    seq: u64,
}

impl std::fmt::Debug for InputClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InputClient({}, next input {})", self.client, self.seq)
    }
}

impl InputClient {
    /// A client with fresh seeds from `rng` (a CSPRNG), and its setup messages (seeds to the
    /// nodes, message number 0), to send once before any input.
    pub fn new<R: RngCore + CryptoRng>(
        client: u16,
        session: SessionId,
        rng: &mut R,
    ) -> (InputClient, Vec<Message>) {
        let mut seed0 = Zeroizing::new([0u8; 32]);
        let mut seed1 = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed0.as_mut());
        rng.fill_bytes(seed1.as_mut());
        let me = InputClient {
            client,
            session,
            seed0,
            seed1,
            seq: 1,
        };
        let w0 = words(&me.seed0);
        let w1 = words(&me.seed1);
        let msgs = vec![
            me.message(N0, 0, vec![w0[0], w0[1], w1[0], w1[1]]),
            me.message(N1, 0, w1.to_vec()),
            me.message(N2, 0, w0.to_vec()),
        ];
        (me, msgs)
    }

    fn message(&self, to: NodeId, step: u64, payload: Vec<u128>) -> Message {
        Message {
            session: self.session,
            from: Peer::Client(self.client),
            to: Peer::Node(to),
            step,
            payload,
            packing: Packing::whole(),
        }
    }

    /// The number the next input will carry (the nodes' program must expect it).
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Validates, encodes (scale 2^32) and shares `values`: returns the two messages (to nodes
    /// 1 and 2) carrying the corrections. Nothing is produced if any value is outside `range`.
    pub fn share(&mut self, values: &[f64], range: InputRange) -> Result<Vec<Message>, InputError> {
        let limit = vtwin_fixed::ENCODE_LIMIT / 2.0;
        if !(range.min.is_finite()
            && range.max.is_finite()
            && range.min <= range.max
            && range.min.abs() < limit
            && range.max.abs() < limit)
        {
            return Err(InputError::BadRange {
                min: range.min,
                max: range.max,
            });
        }
        let mut raw = Vec::with_capacity(values.len());
        for (index, &value) in values.iter().enumerate() {
            // `!(a <= b)` also rejects NaN.
            if !(range.min <= value && value <= range.max) {
                return Err(InputError::OutOfRange {
                    index,
                    value,
                    min: range.min,
                    max: range.max,
                });
            }
            let fx = Fx::from_f64(value).map_err(|_| InputError::OutOfRange {
                index,
                value,
                min: range.min,
                max: range.max,
            })?;
            raw.push(fx.raw());
        }
        Ok(self.share_raw(&raw))
    }

    /// Validates encoded values against the public closed range `[min, max]` (signed
    /// comparison) and shares them; nothing is produced if one is outside.
    pub fn share_fx(
        &mut self,
        values: &[Fx],
        min: Fx,
        max: Fx,
    ) -> Result<Vec<Message>, InputError> {
        if min.signed() > max.signed() {
            return Err(InputError::BadRange {
                min: min.to_f64(),
                max: max.to_f64(),
            });
        }
        if let Some(index) = values
            .iter()
            .position(|v| v.signed() < min.signed() || v.signed() > max.signed())
        {
            return Err(InputError::OutOfRange {
                index,
                value: values[index].to_f64(),
                min: min.to_f64(),
                max: max.to_f64(),
            });
        }
        let raw: Vec<u128> = values.iter().map(|v| v.raw()).collect();
        Ok(self.share_raw(&raw))
    }

    /// Shares ring elements as they are (e.g. integer noise already scaled); the caller has
    /// validated them. Returns the two messages carrying the correction, to node 1 and to
    /// node 2 (its two holders).
    pub fn share_raw(&mut self, values: &[u128]) -> Vec<Message> {
        let q = self.seq;
        self.seq += 1;
        let x0 = prg::expand(&self.seed0, q, values.len());
        let x1 = prg::expand(&self.seed1, q, values.len());
        let x2: Vec<u128> = (0..values.len())
            .map(|k| values[k].wrapping_sub(x0[k]).wrapping_sub(x1[k]))
            .collect();
        vec![self.message(N1, q, x2.clone()), self.message(N2, q, x2)]
    }
}

/// The seeds a node received from one client (zeroized on drop).
pub struct ClientSeeds {
    client: u16,
    seed0: Option<Seed>,
    seed1: Option<Seed>,
}

impl std::fmt::Debug for ClientSeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientSeeds({})", self.client)
    }
}

/// Waits for client `client`'s setup message and keeps the seeds this node holds. No round;
/// the seeds are compared at the next exchange ([`check_inputs`]).
pub async fn accept_client(ctx: &Ctx, client: u16) -> Result<ClientSeeds, MpcError> {
    let len = if ctx.id() == N0 { 4 } else { 2 };
    let w = Zeroizing::new(ctx.recv_client(client, 0, len).await?);
    let (seed0, seed1) = match ctx.id().index() {
        0 => (Some(seed_from(&w[..2])), Some(seed_from(&w[2..]))),
        1 => (None, Some(seed_from(&w))),
        _ => (Some(seed_from(&w)), None),
    };
    ctx.note_seeds(client, seed0.as_deref(), seed1.as_deref());
    Ok(ClientSeeds {
        client,
        seed0,
        seed1,
    })
}

/// Receives input number `seq` (n values) of the client whose seeds are `seeds`, as a
/// replicated sharing. No round: nodes 1 and 2 both receive the correction from the client;
/// they compare digests of what they received in their next exchange ([`check_inputs`]).
pub async fn input(ctx: &Ctx, seeds: &ClientSeeds, seq: u64, n: usize) -> Result<Shared, MpcError> {
    Ok(input_many(ctx, &[(seeds, seq, n)])
        .await?
        .pop()
        .unwrap_or_default())
}

/// Receives several inputs (possibly of several clients), no round: nodes 1 and 2 each wait
/// for every correction (the client sends it to both), node 0 expands its two seeds.
/// `inputs` lists (the client's seeds, input number, length); results in the same order.
/// Nodes 1 and 2 hash the corrections; the digests travel on their next exchange, before
/// anything is revealed ([`check_inputs`]).
pub async fn input_many(
    ctx: &Ctx,
    inputs: &[(&ClientSeeds, u64, usize)],
) -> Result<Vec<Shared>, MpcError> {
    let expand = |s: &Option<Seed>, seq: u64, n: usize| {
        s.as_ref()
            .map(|s| prg::expand(s, seq, n))
            .unwrap_or_default()
    };
    let mut out = Vec::with_capacity(inputs.len());
    ctx.note_input();
    for &(s, seq, n) in inputs {
        let shared = match ctx.id().index() {
            0 => Shared {
                own: expand(&s.seed0, seq, n),
                next: expand(&s.seed1, seq, n),
            },
            1 => {
                let x2 = ctx.recv_client(s.client, seq, n).await?;
                ctx.digest_correction(s.client, seq, &x2);
                Shared {
                    own: expand(&s.seed1, seq, n),
                    next: x2,
                }
            }
            _ => {
                let x2 = ctx.recv_client(s.client, seq, n).await?;
                ctx.digest_correction(s.client, seq, &x2);
                Shared {
                    own: x2,
                    next: expand(&s.seed0, seq, n),
                }
            }
        };
        out.push(shared);
    }
    Ok(out)
}

/// Runs the consistency check of the seeds and corrections received since the last check
/// (module docs) in a round of its own (4 elements from node 0 to each of nodes 1 and 2 if
/// seeds arrived, 2 elements each way between nodes 1 and 2), or does nothing (no round)
/// when there is nothing to check. Errors: [`MpcError::InconsistentInput`] when a client
/// sent two nodes different corrections or seeds. Every opening calls it first; a protocol
/// that exchanges anything after its inputs has already checked them for free.
pub async fn check_inputs(ctx: &Ctx) -> Result<(), MpcError> {
    if ctx.inputs_unchecked() {
        ctx.exchange(Vec::new(), &[]).await?;
    }
    Ok(())
}

/// Opens `x` to client `receiver` only: each node sends it its share `x_i`. 1 round (after
/// [`check_inputs`], which costs a round only if no exchange followed the last input).
pub async fn reveal_to(ctx: &Ctx, x: &Shared, receiver: u16) -> Result<(), MpcError> {
    check_inputs(ctx).await?;
    ctx.exchange(vec![(Peer::Client(receiver), x.own.clone())], &[])
        .await?;
    Ok(())
}

/// Opens `x` to every node (only for values public by design). Node i misses
/// `x_{i+2} = x_{i-1}`, which node i-1 holds as its own share: each node sends its own share
/// to the next. 1 round, n elements per node (after [`check_inputs`]).
pub async fn open_to_nodes(ctx: &Ctx, x: &Shared) -> Result<Vec<u128>, MpcError> {
    check_inputs(ctx).await?;
    let me = ctx.id();
    let n = x.len();
    let got = ctx
        .exchange(
            vec![(Peer::Node(me.next()), x.own.clone())],
            &[(me.prev(), n)],
        )
        .await?;
    let missing = got.into_iter().next().unwrap_or_default();
    Ok((0..n)
        .map(|k| x.own[k].wrapping_add(x.next[k]).wrapping_add(missing[k]))
        .collect())
}

/// The receiving side of [`reveal_to`]: collects the three shares.
#[derive(Debug)]
pub struct Opening {
    session: SessionId,
    client: u16,
    n: usize,
    step: Option<u64>,
    parts: [Option<Vec<u128>>; 3],
}

impl Opening {
    /// Client `client` expects an opening of `n` values in `session`.
    pub fn new(session: SessionId, client: u16, n: usize) -> Opening {
        Opening {
            session,
            client,
            n,
            step: None,
            parts: [None, None, None],
        }
    }

    /// Accepts one node's share; errors on a wrong session, addressee, sender, step,
    /// length, or a duplicate.
    pub fn handle(&mut self, msg: Message) -> Result<(), MpcError> {
        let from = msg.from;
        if msg.session != self.session {
            return Err(MpcError::WrongSession { from });
        }
        if msg.to != Peer::Client(self.client) {
            return Err(MpcError::Misrouted { from, to: msg.to });
        }
        let Peer::Node(node) = from else {
            return Err(MpcError::UnknownPeer { from });
        };
        if *self.step.get_or_insert(msg.step) != msg.step {
            return Err(MpcError::Unexpected {
                from,
                step: msg.step,
            });
        }
        if msg.payload.len() != self.n {
            return Err(MpcError::Malformed {
                from,
                step: msg.step,
                expected: self.n,
                got: msg.payload.len(),
            });
        }
        let slot = &mut self.parts[node.index()];
        if slot.is_some() {
            return Err(MpcError::Duplicate {
                from,
                step: msg.step,
            });
        }
        *slot = Some(msg.payload);
        Ok(())
    }

    /// The opened values once all three shares arrived.
    pub fn result(&self) -> Option<Vec<u128>> {
        let [Some(a), Some(b), Some(c)] = &self.parts else {
            return None;
        };
        Some(
            (0..self.n)
                .map(|k| a[k].wrapping_add(b[k]).wrapping_add(c[k]))
                .collect(),
        )
    }
}
