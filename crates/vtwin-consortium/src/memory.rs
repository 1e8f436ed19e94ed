//! An in-memory consortium: one [`CoordinatorJob`], three [`NodeSession`]s and P
//! [`PartyResponder`]s wired by a FIFO queue of frames, with explicit time. Frames are
//! encoded and decoded with the wire format on the way ([`vtwin_net::frame`]), so sizes are
//! real, and bytes are counted per (sender, receiver).
//!
//! For tests (a full run must equal the in-memory mpc backend bit for bit) and for the byte
//! counts of `protocols/consortium.md`. [`MemoryConsortium::cut`] silences a peer (every frame
//! to or from it is dropped), which models a killed process without a link-loss signal, so
//! only the coordinator's deadline can detect it.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Instant;

use vtwin_model::opening_log::OpeningRecord;
use vtwin_net::frame::{decode, encode, LENGTH_PREFIX_BYTES};
use vtwin_net::{Frame, Role};

use crate::coordinator::{CoordinatorJob, JobEvent};
use crate::node::NodeSession;
use crate::outgoing::Outgoing;
use crate::party::{failure, PartyResponder};

/// A test hook on every delivered frame: (sender, receiver, frame); false drops it.
pub type Intercept = Box<dyn FnMut(Role, Role, &mut Frame) -> bool>;

/// A test hook on every opening to charge (the driver's durable record); an error refuses it.
pub type ChargeHook = Box<dyn FnMut(OpeningRecord) -> Result<(), crate::coordinator::HookError>>;

/// The wired consortium.
pub struct MemoryConsortium {
    /// The coordinator.
    pub job: CoordinatorJob,
    /// The three nodes.
    pub nodes: Vec<NodeSession>,
    /// The parties.
    pub parties: Vec<PartyResponder>,
    queue: VecDeque<(Role, Role, Vec<u8>)>,
    cut: HashSet<Role>,
    /// Wire bytes (length prefix included) per (sender, receiver), since the last reset.
    pub bytes: BTreeMap<(Role, Role), u64>,
    /// Frames per (sender, receiver), since the last reset.
    pub frames: BTreeMap<(Role, Role), u64>,
    /// Every coordinator event so far.
    pub events: Vec<JobEvent>,
    intercept: Option<Intercept>,
    on_charge: Option<ChargeHook>,
}

impl std::fmt::Debug for MemoryConsortium {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConsortium")
            .field("job", &self.job)
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl MemoryConsortium {
    /// Wires the machines; `hello` are the frames [`CoordinatorJob::new`] returned.
    pub fn new(
        job: CoordinatorJob,
        hello: Vec<Outgoing>,
        nodes: Vec<NodeSession>,
        parties: Vec<PartyResponder>,
    ) -> MemoryConsortium {
        let mut c = MemoryConsortium {
            job,
            nodes,
            parties,
            queue: VecDeque::new(),
            cut: HashSet::new(),
            bytes: BTreeMap::new(),
            frames: BTreeMap::new(),
            events: Vec::new(),
            intercept: None,
            on_charge: None,
        };
        c.post(Role::Coordinator, hello);
        c
    }

    /// Drops every frame to or from `role` from now on.
    pub fn cut(&mut self, role: Role) {
        self.cut.insert(role);
    }

    /// Calls `f` on every frame before it is delivered (tests: tamper with or drop frames).
    pub fn intercept(&mut self, f: Intercept) {
        self.intercept = Some(f);
    }

    /// Calls `f` on every opening due for charging (tests: record the openings, or refuse
    /// one); without a hook every opening is confirmed at once (recorded in memory only).
    pub fn on_charge(&mut self, f: ChargeHook) {
        self.on_charge = Some(f);
    }

    /// Clears the byte and frame counts.
    pub fn reset_counts(&mut self) {
        self.bytes.clear();
        self.frames.clear();
    }

    /// Queues frames from `from`.
    pub fn post(&mut self, from: Role, out: Vec<Outgoing>) {
        for o in out {
            if self.cut.contains(&from) || self.cut.contains(&o.to) {
                continue;
            }
            let mut f = o.frame;
            f.sender = from;
            // Frames built by the machines always encode (they are far below the limit).
            let bytes = encode(&f).expect("a machine's frame encodes");
            *self.bytes.entry((from, o.to)).or_default() += bytes.len() as u64;
            *self.frames.entry((from, o.to)).or_default() += 1;
            self.queue.push_back((from, o.to, bytes));
        }
    }

    /// Delivers one queued frame; false when the queue is empty.
    pub fn step(&mut self, now: Instant) -> bool {
        let Some((from, to, bytes)) = self.queue.pop_front() else {
            return false;
        };
        let mut f: Frame = decode(&bytes[LENGTH_PREFIX_BYTES..]).expect("an encoded frame decodes");
        if let Some(hook) = self.intercept.as_mut() {
            if !hook(from, to, &mut f) {
                return true;
            }
        }
        let out = match to {
            Role::Coordinator => {
                let o = self.job.handle(from, f, now);
                self.coordinator_events(o, now)
            }
            Role::Node(i) => {
                let o = self.nodes[usize::from(i)].handle(from, f);
                o.send
            }
            Role::Party(p) => {
                let party = &mut self.parties[usize::from(p)];
                let mut out = match party.handle(from, &f) {
                    Ok(o) => o,
                    Err(e) => vec![failure(p, &f, &e)],
                };
                // As the party service does: the first part of an upload is queued before the
                // rest is sealed, then the next share is sampled ahead of time.
                let rest = party
                    .upload_rest()
                    .unwrap_or_else(|e| vec![failure(p, &f, &e)]);
                out.extend(rest);
                party.prepare_noise();
                out
            }
        };
        self.post(to, out);
        true
    }

    /// Delivers frames until none is left.
    pub fn run(&mut self, now: Instant) {
        while self.step(now) {}
    }

    /// Records the coordinator's events, answering each [`JobEvent::ChargeDue`] (through the
    /// charge hook); returns every frame to send.
    fn coordinator_events(
        &mut self,
        o: crate::coordinator::JobOutput,
        now: Instant,
    ) -> Vec<Outgoing> {
        let mut send = o.send;
        let mut events = std::collections::VecDeque::from(o.events);
        while let Some(ev) = events.pop_front() {
            if let JobEvent::ChargeDue(record) = &ev {
                let answer = match self.on_charge.as_mut().map_or(Ok(()), |f| f(*record)) {
                    Ok(()) => self.job.charged(now),
                    Err(source) => self.job.charge_failed(source),
                };
                send.extend(answer.send);
                events.extend(answer.events);
            }
            self.events.push(ev);
        }
        send
    }

    /// Sends the coordinator's frames of `begin`/`tick` and records its events.
    pub fn coordinator_output(&mut self, o: crate::coordinator::JobOutput) {
        let send = self.coordinator_events(o, Instant::now());
        self.post(Role::Coordinator, send);
    }
}
