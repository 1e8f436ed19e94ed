//! Round-trip time of one frame over a loopback link (ping-pong) by payload size, without and
//! with the receive delay line at both ends (emulated RTT 1 ms: 0.5 ms each way).
//! `cargo run --release -p vtwin-net --example link_rtt -- [ROUNDS]`

use std::time::Instant;

use vtwin_net::pki::Ca;
use vtwin_net::{Backoff, Body, Endpoint, Frame, Role, TransportOptions};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(2000, |s| s.parse().expect("ROUNDS"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    for delay_us in [0u64, 500] {
        println!("receive delay {delay_us} us at both ends:");
        rt.block_on(measure(rounds, delay_us));
    }
}

async fn measure(rounds: usize, delay_us: u64) {
    let options = TransportOptions {
        receive_delay: Some(std::time::Duration::from_micros(delay_us)),
        ..TransportOptions::default()
    };
    {
        let ca = Ca::generate().unwrap();
        let any = "127.0.0.1:0".parse().unwrap();
        let server = Endpoint::bind(
            any,
            &ca.identity(Role::Node(1)).unwrap(),
            &[Role::Node(0).into()],
            options.clone(),
        )
        .unwrap();
        let addr = server.local_addr().unwrap();
        let client = Endpoint::bind(
            any,
            &ca.identity(Role::Node(0)).unwrap(),
            &[],
            options.clone(),
        )
        .unwrap();
        let (link, accepted) = tokio::join!(
            client.connect(addr, Role::Node(1), Backoff::default()),
            server.accept()
        );
        let (mut tx, mut rx) = link.unwrap().split();
        let (mut stx, mut srx) = accepted.unwrap().split();
        tokio::spawn(async move {
            while let Ok(f) = srx.recv().await {
                if stx.send(f).await.is_err() {
                    return;
                }
            }
        });
        for bytes in [64usize, 1 << 10, 22 << 10, 256 << 10] {
            let rounds = if bytes > 64 << 10 {
                rounds / 10
            } else {
                rounds
            };
            let mut times = Vec::with_capacity(rounds);
            for k in 0..rounds + 50 {
                let f = Frame::new(
                    [1; 16],
                    0,
                    k as u64,
                    Role::Node(0),
                    Body::Mpc {
                        message: vec![7; bytes],
                    },
                );
                let t0 = Instant::now();
                tx.send(f).await.unwrap();
                rx.recv().await.unwrap();
                if k >= 50 {
                    times.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
            times.sort_by(f64::total_cmp);
            println!(
                "  {bytes:>7} B: median RTT {:.0} us (p10 {:.0}, p90 {:.0}) over {rounds}",
                times[rounds / 2],
                times[rounds / 10],
                times[rounds * 9 / 10]
            );
        }
    }
}
