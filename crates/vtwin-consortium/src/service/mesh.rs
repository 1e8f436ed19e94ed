//! The links of one process: a reader and a writer task per link, all feeding one inbox.
//!
//! The process's state machine runs in one task (a node's: on a thread of its own,
//! [`Hub::blocking_next`]) that owns a [`Mesh`]: frames from every link
//! arrive in order per link as [`Inbound::Frame`], a link that fails (peer gone, bad frame,
//! which vtwin-net answers by closing that connection) arrives as [`Inbound::Down`], and
//! [`Mesh::send`] queues a frame for a peer's writer. A newer link to the same role replaces
//! the older one (a restarted peer); events of a replaced link are recognised by its id and
//! ignored.
//!
//! Peers declared with [`Mesh::expect`] (a node's fellow nodes) may be sent to while they
//! have no link (the node-to-node links form, or re-form after a restart, while the
//! coordinator already starts a session): their frames wait, at most [`PENDING_FRAMES`], and
//! go out when the link comes up. The queue of a peer is emptied when its link goes down and
//! whenever the node has no open session ([`Mesh::clear_pending`]), so frames of a dead
//! session never reach the peer's next process.
//!
//! A [`Hub`] is the mesh of a serving process with its inputs: it takes over the links its
//! acceptor and diallers hand it (on a channel of their own, or through the inbox in order
//! with the frames, [`LinkTo`]) and turns the inbox into [`Event`]s of current links only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::{mpsc, Notify};
use vtwin_net::transport::{Backoff, Endpoint, Link, LinkSender, TransportError};
use vtwin_net::{Frame, Role};

use super::{ServiceError, StopCause};
use vtwin_host::error_chain::Chain;

/// What the links deliver to the state machine's task.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A frame from the authenticated peer of link `id`.
    Frame(Role, u64, Frame),
    /// Link `id` to the peer failed or closed.
    Down(Role, u64, TransportError),
    /// A new link, from an acceptor or dialler that delivers through the inbox
    /// ([`LinkTo::Inbox`]).
    Link(Link),
    /// The acceptor delivering through the inbox ended (the endpoint closed): no link can
    /// be accepted any more.
    AcceptorEnded,
    /// The serving process is being dropped: [`Hub::blocking_next`] returns `None`.
    Stop,
}

/// Where an acceptor or dialler hands its links.
#[derive(Clone, Debug)]
pub(crate) enum LinkTo {
    /// The hub's link channel ([`Hub::next`] fails once every such sender is gone).
    // Only the party's service uses it (absent from a node-only build).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    Links(mpsc::UnboundedSender<Link>),
    /// The hub's inbox, in order with the frames (a hub read by [`Hub::blocking_next`]).
    Inbox(mpsc::UnboundedSender<Inbound>),
}

impl LinkTo {
    /// Hands `link` over; false if the hub is gone.
    pub(crate) fn send(&self, link: Link) -> bool {
        match self {
            LinkTo::Links(tx) => tx.send(link).is_ok(),
            LinkTo::Inbox(tx) => tx.send(Inbound::Link(link)).is_ok(),
        }
    }
}

enum Out {
    Frame(Box<Frame>),
    Close(CloseReason),
}

/// Why this side closes a link (sent to the peer as the QUIC close reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CloseReason {
    /// A newer link to the same peer took its place.
    Replaced,
    /// The job is over.
    // Only the coordinator's service finishes a job (absent from a node-only build).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    JobFinished,
}

impl CloseReason {
    /// The text the peer sees.
    fn as_str(self) -> &'static str {
        match self {
            CloseReason::Replaced => "replaced by a newer link",
            CloseReason::JobFinished => "job finished",
        }
    }
}

/// Most frames waiting for a peer's first link.
pub(crate) const PENDING_FRAMES: usize = 4096;

/// Writer handles by peer role.
#[derive(Debug)]
pub(crate) struct Mesh {
    writers: HashMap<Role, (u64, mpsc::UnboundedSender<Out>)>,
    /// Frames for expected peers that have no link now.
    pending: HashMap<Role, Vec<Frame>>,
    next_id: u64,
    inbox: mpsc::UnboundedSender<Inbound>,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Out")
    }
}

async fn write_loop(
    mut sender: LinkSender,
    mut rx: mpsc::UnboundedReceiver<Out>,
    id: u64,
    inbox: mpsc::UnboundedSender<Inbound>,
) {
    let peer = sender.peer();
    while let Some(out) = rx.recv().await {
        match out {
            Out::Frame(f) => {
                if let Err(e) = sender.send(*f).await {
                    let _ = inbox.send(Inbound::Down(peer, id, e));
                    return;
                }
            }
            Out::Close(reason) => {
                sender.close(reason.as_str());
                return;
            }
        }
    }
}

impl Mesh {
    /// A mesh whose links deliver to `inbox`.
    pub(crate) fn new(inbox: mpsc::UnboundedSender<Inbound>) -> Mesh {
        Mesh {
            writers: HashMap::new(),
            pending: HashMap::new(),
            next_id: 0,
            inbox,
        }
    }

    /// Frames to `peer` may be queued while it has no link.
    pub(crate) fn expect(&mut self, peer: Role) {
        self.pending.entry(peer).or_default();
    }

    /// Takes over `link` (spawns its reader and writer); returns its id. A previous link to
    /// the same role is closed; frames waiting for the peer's first link go out first.
    pub(crate) fn attach(&mut self, link: Link) -> u64 {
        let peer = link.peer();
        let id = self.next_id;
        self.next_id += 1;
        let (sender, mut receiver) = link.split();
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(q) = self.pending.get_mut(&peer) {
            for f in q.drain(..) {
                let _ = tx.send(Out::Frame(Box::new(f)));
            }
        }
        if let Some((_, old)) = self.writers.insert(peer, (id, tx)) {
            let _ = old.send(Out::Close(CloseReason::Replaced));
        }
        tokio::spawn(write_loop(sender, rx, id, self.inbox.clone()));
        let inbox = self.inbox.clone();
        tokio::spawn(async move {
            loop {
                match receiver.recv().await {
                    Ok(f) => {
                        if inbox.send(Inbound::Frame(peer, id, f)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = inbox.send(Inbound::Down(peer, id, e));
                        return;
                    }
                }
            }
        });
        id
    }

    /// Whether link `id` is the current link to `peer`.
    pub(crate) fn is_current(&self, peer: Role, id: u64) -> bool {
        self.writers.get(&peer).is_some_and(|(cur, _)| *cur == id)
    }

    /// Forgets link `id` to `peer` after it went down (and the frames waiting for it); true
    /// if it was the current one.
    pub(crate) fn down(&mut self, peer: Role, id: u64) -> bool {
        if self.is_current(peer, id) {
            self.writers.remove(&peer);
            if let Some(q) = self.pending.get_mut(&peer) {
                q.clear();
            }
            true
        } else {
            false
        }
    }

    /// Queues `frame` for `to`; false if there is no link to `to` (and `to` is not an
    /// expected peer waiting for its first link, with room in its queue).
    pub(crate) fn send(&mut self, to: Role, frame: Frame) -> bool {
        if let Some((_, tx)) = self.writers.get(&to) {
            return tx.send(Out::Frame(Box::new(frame))).is_ok();
        }
        match self.pending.get_mut(&to) {
            Some(q) if q.len() < PENDING_FRAMES => {
                q.push(frame);
                true
            }
            _ => false,
        }
    }

    /// Drops every frame waiting for a link (the session they belonged to is over).
    pub(crate) fn clear_pending(&mut self) {
        for q in self.pending.values_mut() {
            q.clear();
        }
    }

    /// Closes every link after the frames already queued.
    // Only the coordinator's service closes every link (absent from a node-only build).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    pub(crate) fn close_all(&mut self, reason: CloseReason) {
        for (_, (_, tx)) in self.writers.drain() {
            let _ = tx.send(Out::Close(reason));
        }
    }
}

/// What a serving process acts on: a frame of a current link, or the loss of a current link.
#[derive(Debug)]
pub(crate) enum Event {
    /// A frame from the authenticated peer.
    Frame(Role, Frame),
    /// The current link to the peer failed or closed (already forgotten by the mesh).
    Down(Role, TransportError),
}

/// A serving process's [`Mesh`] with its two inputs: new links, and the links' inbox.
#[derive(Debug)]
pub(crate) struct Hub {
    /// The links (send to peers through it).
    pub(crate) mesh: Mesh,
    me: Role,
    // Read by `next` only (absent from a node-only build, whose hub is read by
    // `blocking_next`).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    links: mpsc::UnboundedReceiver<Link>,
    inbox: mpsc::UnboundedReceiver<Inbound>,
}

impl Hub {
    /// A hub for the process `me`, and where to hand it new links (an acceptor, diallers).
    /// [`Hub::next`] fails once every such sender is gone.
    pub(crate) fn new(me: Role) -> (Hub, mpsc::UnboundedSender<Link>) {
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        let (links_tx, links) = mpsc::unbounded_channel();
        let hub = Hub {
            mesh: Mesh::new(inbox_tx),
            me,
            links,
            inbox,
        };
        (hub, links_tx)
    }

    /// Hands every link `endpoint` accepts to `links`, until the endpoint closes (a task).
    /// An endpoint that closes ends the task: dropping a [`LinkTo::Links`] sender, or with
    /// [`Inbound::AcceptorEnded`] through the inbox, so the hub fails with `NoMoreLinks`.
    pub(crate) fn accept_from(endpoint: Arc<Endpoint>, links: LinkTo) {
        tokio::spawn(async move {
            while let Ok(link) = endpoint.accept().await {
                if !links.send(link) {
                    return;
                }
            }
            if let LinkTo::Inbox(tx) = links {
                let _ = tx.send(Inbound::AcceptorEnded);
            }
        });
    }

    /// Dials `peer` at `addr` and hands the link to `links`, then waits for `redial` (the
    /// owner's notice that this link went down) and dials again after `backoff.initial`; a
    /// failed round of `backoff` is logged and retried after `backoff.max` (a task; it ends
    /// when the hub is gone). A node dials the higher nodes this way, a party the three
    /// nodes.
    pub(crate) fn dial(
        endpoint: Arc<Endpoint>,
        links: LinkTo,
        peer: Role,
        addr: SocketAddr,
        backoff: Backoff,
        redial: Arc<Notify>,
    ) {
        let me = endpoint.role();
        tokio::spawn(async move {
            loop {
                match endpoint.connect(addr, peer, backoff).await {
                    Ok(link) => {
                        if !links.send(link) {
                            return;
                        }
                        redial.notified().await;
                        // Not at once: a peer that takes links and drops them would
                        // otherwise be redialled in a tight loop.
                        tokio::time::sleep(backoff.initial).await;
                    }
                    Err(e) => {
                        tracing::warn!(%me, "{}; retrying", Chain(&e));
                        tokio::time::sleep(backoff.max).await;
                    }
                }
            }
        });
    }

    /// Where to hand links so that they arrive through the inbox ([`Hub::blocking_next`]).
    pub(crate) fn inbox(&self) -> LinkTo {
        LinkTo::Inbox(self.inbox_sender())
    }

    /// A sender into the inbox (e.g. for [`Inbound::Stop`]).
    pub(crate) fn inbox_sender(&self) -> mpsc::UnboundedSender<Inbound> {
        self.mesh.inbox.clone()
    }

    /// Acts on one inbox item: the event it makes, if any. Links are attached ("link up" at
    /// `info`), frames of replaced links dropped, a current link's failure reported once
    /// ("link down" at `warn`).
    fn on_inbound(&mut self, ev: Inbound) -> Option<Event> {
        match ev {
            Inbound::Frame(peer, id, f) if self.mesh.is_current(peer, id) => {
                Some(Event::Frame(peer, f))
            }
            Inbound::Down(peer, id, cause) if self.mesh.down(peer, id) => {
                tracing::warn!(me = %self.me, %peer, "link down: {}", Chain(&cause));
                Some(Event::Down(peer, cause))
            }
            Inbound::Link(link) => {
                self.attach(link);
                None
            }
            Inbound::Frame(..) | Inbound::Down(..) | Inbound::AcceptorEnded | Inbound::Stop => None,
        }
    }

    fn attach(&mut self, link: Link) {
        tracing::info!(me = %self.me, peer = %link.peer(), addr = %link.remote_address(), "link up");
        self.mesh.attach(link);
    }

    /// [`Hub::next`] for a process whose state machine runs on a thread of its own, with
    /// links delivered through the inbox ([`Hub::inbox`]): blocks that thread until the
    /// next event, or returns `None` at [`Inbound::Stop`] (after the events queued before
    /// it); fails with `NoMoreLinks` when the acceptor ended. The thread must have entered the
    /// tokio runtime (`Handle::enter`: attaching a link spawns its tasks there) without
    /// running on it. Errors when the inbox closed.
    pub(crate) fn blocking_next(&mut self) -> Result<Option<Event>, ServiceError> {
        loop {
            let ev = self
                .inbox
                .blocking_recv()
                .ok_or(ServiceError::Stopped(StopCause::InboxClosed))?;
            match ev {
                Inbound::Stop => return Ok(None),
                Inbound::AcceptorEnded => {
                    return Err(ServiceError::Stopped(StopCause::NoMoreLinks))
                }
                _ => {}
            }
            if let Some(e) = self.on_inbound(ev) {
                return Ok(Some(e));
            }
        }
    }

    /// The next event. New links are attached on the way ("link up" at `info`), frames of
    /// replaced links are dropped, and a current link's failure is reported once ("link down"
    /// at `warn`). Cancel-safe (it only awaits channel receives). Errors when no link can
    /// come any more or the inbox closed.
    // The party's and the coordinator's (absent from a node-only build).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    pub(crate) async fn next(&mut self) -> Result<Event, ServiceError> {
        loop {
            tokio::select! {
                link = self.links.recv() => {
                    let link = link.ok_or_else(|| ServiceError::Stopped(StopCause::NoMoreLinks))?;
                    self.attach(link);
                }
                ev = self.inbox.recv() => {
                    let ev = ev.ok_or_else(|| ServiceError::Stopped(StopCause::InboxClosed))?;
                    if let Some(e) = self.on_inbound(ev) {
                        return Ok(e);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vtwin_net::Body;

    /// The session thread's view of the inbox: frames of links it never attached are
    /// dropped, the acceptor's end is an error (the node must not keep running deaf), and
    /// `Stop` ends the loop after what was queued before it.
    #[test]
    fn blocking_next_drops_stale_frames_fails_when_the_acceptor_ends_and_stops() {
        let (mut hub, _links) = Hub::new(Role::Node(1));
        let inbox = hub.inbox_sender();
        let stale = Frame::new([0; 16], 0, 0, Role::Node(0), Body::Hello);
        // All queued first, so a loop that ignored any of them returns the wrong thing
        // instead of blocking.
        inbox.send(Inbound::Frame(Role::Node(0), 7, stale)).unwrap();
        inbox.send(Inbound::AcceptorEnded).unwrap();
        inbox.send(Inbound::Stop).unwrap();
        assert!(matches!(
            hub.blocking_next(),
            Err(ServiceError::Stopped(StopCause::NoMoreLinks))
        ));
        assert!(matches!(hub.blocking_next(), Ok(None)));
    }
}
