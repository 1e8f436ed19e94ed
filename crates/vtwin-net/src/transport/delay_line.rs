//! The receive delay line of a link (emulating a round-trip time; [`super`] module docs).

use super::link::{read_raw, RawFrame};
use super::*;

/// One frame read by a delay line, with its arrival time.
struct Arrival {
    at: Instant,
    raw: RawFrame,
}

/// The delay line of one link: a task reads frames as they arrive and stamps them; an OS
/// thread releases each at arrival + `delay`, in order, into the returned queue.
///
/// Why a thread: tokio's timer has a 1 ms resolution, so a 0.5 ms sleep lasted 1 to 2 ms and
/// an emulated RTT of 1 ms measured the timer, not the protocol. A thread sleep is precise to
/// tens of microseconds. At most [`DELAY_QUEUE_FRAMES`] frames wait in each stage; beyond,
/// the reader stops and QUIC flow control holds the sender back. Both stop when the stream
/// ends or fails (that outcome is delivered last) or when the link is dropped.
pub(super) fn delay_line(mut stream: RecvStream, delay: Duration) -> mpsc::Receiver<RawFrame> {
    const SPIN: Duration = Duration::from_micros(100);
    let (arrivals, mut pending) = mpsc::channel::<Arrival>(DELAY_QUEUE_FRAMES);
    let (release, queue) = mpsc::channel(DELAY_QUEUE_FRAMES);
    tokio::spawn(async move {
        loop {
            let raw = read_raw(&mut stream).await;
            let last = !matches!(raw, Ok(Some(_)));
            let arrival = Arrival {
                at: Instant::now(),
                raw,
            };
            if arrivals.send(arrival).await.is_err() || last {
                return;
            }
        }
    });
    let timer = std::thread::Builder::new()
        .name("vtwin-delay-line".into())
        .spawn(move || {
            while let Some(a) = pending.blocking_recv() {
                let due = a.at + delay;
                // Sleep to just before the deadline (a thread sleep overshoots by the timer
                // slack, about 50 us), then yield until it.
                let wait = due.saturating_duration_since(Instant::now());
                if wait > SPIN {
                    std::thread::sleep(wait - SPIN);
                }
                while Instant::now() < due {
                    std::thread::yield_now();
                }
                if release.blocking_send(a.raw).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = timer {
        // Without the thread the link cannot deliver; say so on the first receive.
        tracing::warn!("delay line thread: {e}");
    }
    queue
}
