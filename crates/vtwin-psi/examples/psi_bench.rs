//! Two-party PSI timing, the same workload as `/work/shared/peers/psi_bench.py` (openmined-psi):
//! party 0 holds `id0..id{N-1}`, party 1 holds `id{N/2}..id{N+N/2-1}`, so N/2 are shared.
//! Prints one JSON line: N, seconds (key generation to both parties' rows), bytes (all
//! messages, both directions), rounds, intersection size, threads.
//!
//! usage: cargo run --release -p vtwin-psi --example psi_bench -- N

use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .expect("usage: psi_bench N");
    let a: Vec<Vec<u8>> = (0..n).map(|i| format!("id{i}").into_bytes()).collect();
    let b: Vec<Vec<u8>> = (n / 2..n + n / 2)
        .map(|i| format!("id{i}").into_bytes())
        .collect();
    let t0 = Instant::now();
    let aligned = vtwin_psi::align(&[a, b]).expect("alignment");
    let secs = t0.elapsed().as_secs_f64();
    let bytes: u64 = aligned.stats.iter().map(|s| s.bytes_sent).sum();
    println!(
        "{{\"impl\":\"vtwin-psi\",\"n\":{n},\"seconds\":{secs:.3},\"bytes\":{bytes},\"rounds\":{},\"intersection\":{},\"threads\":{}}}",
        aligned.rounds,
        aligned.len(),
        rayon::current_num_threads()
    );
}
