//! The in-memory simulator: three [`Node`]s and a message queue, with a deterministic
//! scheduler (FIFO) or a seeded random one (each step delivers a uniformly chosen in-flight
//! message, which realises arbitrary reordering and delays).
//!
//! Every message travels encoded ([`Message::encode`]) and is decoded by the receiving
//! node, so byte counts are real wire sizes. Messages to clients are collected for them.

use std::collections::VecDeque;
use std::future::Future;

use rand_chacha::rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::counters::Counters;
use crate::error::MpcError;
use crate::keys::{simulated_seeds, PairSeeds};
use crate::message::{Message, NodeId, Peer, SessionId};
use crate::runtime::{Ctx, Node};

/// Delivery order of in-flight messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// First in, first out.
    Fifo,
    /// A uniformly random in-flight message at each step, from a ChaCha20 RNG with this seed.
    Random(u64),
}

/// What a simulation produced.
#[derive(Debug)]
pub struct SimReport<T> {
    /// The three nodes' program results, by node.
    pub outputs: [T; 3],
    /// The three nodes' counters.
    pub counters: [Counters; 3],
    /// Messages the nodes sent to clients, in delivery order.
    pub to_clients: Vec<Message>,
    /// Encoded messages each node received (only when views are recorded).
    pub views: [Vec<Vec<u8>>; 3],
    /// Node 0's truncation masks (only when recorded), one vector per truncation layer.
    pub masks: Vec<Vec<u128>>,
    /// Bytes clients uploaded to nodes.
    pub client_bytes: u64,
}

impl<T> SimReport<T> {
    /// The sum of the three nodes' counters (rounds: the maximum).
    pub fn total(&self) -> Counters {
        self.counters[0]
            .plus(self.counters[1])
            .plus(self.counters[2])
    }
}

/// A configured simulation.
#[derive(Debug)]
pub struct Simulation {
    session: SessionId,
    seeds: [PairSeeds; 3],
    clients: u16,
    delivery: Delivery,
    record_views: bool,
    record_masks: bool,
    injected: Vec<Message>,
}

impl Simulation {
    /// Three nodes with keys generated from `key_seed` (X25519 + HKDF as in production, but
    /// from a seeded RNG), FIFO delivery, no clients.
    pub fn new(session: SessionId, key_seed: u64) -> Result<Simulation, MpcError> {
        Self::from_rng(session, &mut ChaCha20Rng::seed_from_u64(key_seed))
    }

    /// Three nodes with fresh keys from a CSPRNG (`OsRng`-seeded in production runs).
    pub fn from_rng<R: RngCore + CryptoRng>(
        session: SessionId,
        rng: &mut R,
    ) -> Result<Simulation, MpcError> {
        let mut rng = rng;
        Ok(Simulation {
            session,
            seeds: simulated_seeds(&mut rng, session)?,
            clients: 0,
            delivery: Delivery::Fifo,
            record_views: false,
            record_masks: false,
            injected: Vec::new(),
        })
    }

    /// Accept client ids `0..clients`.
    pub fn clients(mut self, clients: u16) -> Simulation {
        self.clients = clients;
        self
    }

    /// Delivery order.
    pub fn delivery(mut self, d: Delivery) -> Simulation {
        self.delivery = d;
        self
    }

    /// Record every message each node receives.
    pub fn record_views(mut self) -> Simulation {
        self.record_views = true;
        self
    }

    /// Record node 0's truncation masks (for replay through vtwin-fixed).
    pub fn record_masks(mut self) -> Simulation {
        self.record_masks = true;
        self
    }

    /// Messages from clients, delivered like node messages.
    pub fn inject(mut self, msgs: impl IntoIterator<Item = Message>) -> Simulation {
        self.injected.extend(msgs);
        self
    }

    /// The session.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Runs `program` on all three nodes to completion.
    pub fn run<T, F, Fut>(self, program: F) -> Result<SimReport<T>, MpcError>
    where
        T: 'static,
        F: Fn(Ctx) -> Fut,
        Fut: Future<Output = Result<T, MpcError>> + 'static,
    {
        let [s0, s1, s2] = self.seeds;
        let mk = |id: NodeId, seeds: PairSeeds| {
            Node::new(id, self.session, seeds, self.clients, &program)
        };
        let mut nodes = [
            mk(NodeId::ALL[0], s0),
            mk(NodeId::ALL[1], s1),
            mk(NodeId::ALL[2], s2),
        ];
        if self.record_masks {
            nodes[0].record_truncation_masks();
        }
        drive(nodes, self.injected, self.delivery, self.record_views)
    }
}

/// Drives three nodes built by the caller (indexed by node id, not yet started; e.g.
/// `vtwin_iteration::node::iteration_node`) to completion in memory: injects the clients'
/// messages, then starts the nodes and delivers every message in `delivery` order, encoded
/// and decoded as on a wire. Errors: the first node error, or a node that did not finish
/// ([`MpcError::Stalled`]). The report's views are empty; its masks are node 0's if the
/// caller turned recording on. `nodes[i]` must be node i (else [`MpcError::Misrouted`] naming
/// the node and the slot). Cost: the nodes' work plus one encode/decode per message.
pub fn run_nodes<T: 'static>(
    nodes: [Node<T>; 3],
    injected: impl IntoIterator<Item = Message>,
    delivery: Delivery,
) -> Result<SimReport<T>, MpcError> {
    drive(nodes, injected.into_iter().collect(), delivery, false)
}

fn drive<T: 'static>(
    mut nodes: [Node<T>; 3],
    injected: Vec<Message>,
    delivery: Delivery,
    record_views: bool,
) -> Result<SimReport<T>, MpcError> {
    for (i, n) in nodes.iter().enumerate() {
        if n.id().index() != i {
            return Err(MpcError::Misrouted {
                from: Peer::Node(n.id()),
                to: Peer::Node(NodeId::ALL[i]),
            });
        }
    }
    let mut rng = ChaCha20Rng::seed_from_u64(match delivery {
        Delivery::Fifo => 0,
        Delivery::Random(s) => s,
    });
    let mut queue: VecDeque<(Peer, Vec<u8>)> = VecDeque::new();
    let mut client_bytes = 0u64;
    for m in injected {
        let bytes = m.encode();
        client_bytes += bytes.len() as u64;
        queue.push_back((m.to, bytes));
    }
    for node in nodes.iter_mut() {
        for m in node.start()? {
            queue.push_back((m.to, m.encode()));
        }
    }
    let mut to_clients = Vec::new();
    let mut views: [Vec<Vec<u8>>; 3] = Default::default();
    loop {
        let next = match delivery {
            Delivery::Fifo => queue.pop_front(),
            Delivery::Random(_) if queue.is_empty() => None,
            Delivery::Random(_) => {
                let k = (rng.next_u64() % queue.len() as u64) as usize;
                queue.swap_remove_back(k)
            }
        };
        let Some((to, bytes)) = next else { break };
        match to {
            Peer::Node(id) => {
                if record_views {
                    views[id.index()].push(bytes.clone());
                }
                for m in nodes[id.index()].handle_bytes(&bytes)? {
                    queue.push_back((m.to, m.encode()));
                }
            }
            Peer::Client(_) => to_clients.push(Message::decode(&bytes)?),
        }
    }
    for node in &nodes {
        if !node.is_done() {
            return Err(MpcError::Stalled {
                node: node.id().index() as u8,
            });
        }
    }
    let counters = [
        nodes[0].counters(),
        nodes[1].counters(),
        nodes[2].counters(),
    ];
    let masks = nodes[0].truncation_masks();
    let [mut a, mut b, mut c] = nodes;
    let outputs = match (a.take_output(), b.take_output(), c.take_output()) {
        (Some(a), Some(b), Some(c)) => [a, b, c],
        _ => return Err(MpcError::Stalled { node: 0 }),
    };
    Ok(SimReport {
        outputs,
        counters,
        to_clients,
        views,
        masks,
        client_bytes,
    })
}

/// Reconstructs a shared vector from the three nodes' shares (simulation and tests only).
pub fn reconstruct(shares: &[crate::Shared; 3]) -> Vec<u128> {
    (0..shares[0].len())
        .map(|k| {
            shares[0].own()[k]
                .wrapping_add(shares[1].own()[k])
                .wrapping_add(shares[2].own()[k])
        })
        .collect()
}
