//! The links of one process: a reader and a writer task per link, all feeding one inbox.
//!
//! The process's state machine runs in one task that owns a [`Mesh`]: frames from every link
//! arrive in order per link as [`Inbound::Frame`], a link that fails (peer gone, bad frame,
//! which vtwin-net answers by closing that connection) arrives as [`Inbound::Down`], and
//! [`Mesh::send`] queues a frame for a peer's writer. A newer link to the same role replaces
//! the older one (a restarted peer); events of a replaced link are recognised by its id and
//! ignored.

use std::collections::HashMap;

use tokio::sync::mpsc;
use vtwin_net::transport::{Link, LinkSender};
use vtwin_net::{Frame, Role};

/// What the links deliver to the state machine's task.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A frame from the authenticated peer of link `id`.
    Frame(Role, u64, Frame),
    /// Link `id` to the peer failed or closed.
    Down(Role, u64, String),
}

enum Out {
    Frame(Frame),
    Close(String),
}

/// Writer handles by peer role.
#[derive(Debug)]
pub(crate) struct Mesh {
    writers: HashMap<Role, (u64, mpsc::UnboundedSender<Out>)>,
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
                if let Err(e) = sender.send(f).await {
                    let _ = inbox.send(Inbound::Down(peer, id, e.to_string()));
                    return;
                }
            }
            Out::Close(reason) => {
                sender.close(&reason);
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
            next_id: 0,
            inbox,
        }
    }

    /// Takes over `link` (spawns its reader and writer); returns its id. A previous link to
    /// the same role is closed.
    pub(crate) fn attach(&mut self, link: Link) -> u64 {
        let peer = link.peer();
        let id = self.next_id;
        self.next_id += 1;
        let (sender, mut receiver) = link.split();
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some((_, old)) = self.writers.insert(peer, (id, tx)) {
            let _ = old.send(Out::Close("replaced by a newer link".into()));
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
                        let _ = inbox.send(Inbound::Down(peer, id, e.to_string()));
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

    /// Forgets link `id` to `peer` after it went down; true if it was the current one.
    pub(crate) fn down(&mut self, peer: Role, id: u64) -> bool {
        if self.is_current(peer, id) {
            self.writers.remove(&peer);
            true
        } else {
            false
        }
    }

    /// Queues `frame` for `to`; false if there is no link to `to`.
    pub(crate) fn send(&self, to: Role, frame: Frame) -> bool {
        match self.writers.get(&to) {
            Some((_, tx)) => tx.send(Out::Frame(frame)).is_ok(),
            None => false,
        }
    }

    /// Closes every link after the frames already queued.
    pub(crate) fn close_all(&mut self, reason: &str) {
        for (_, (_, tx)) in self.writers.drain() {
            let _ = tx.send(Out::Close(reason.to_owned()));
        }
    }
}
