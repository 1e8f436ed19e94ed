//! Two-party PSI timing, the same workload as `/work/shared/peers/psi_bench.py` (openmined-psi):
//! party 0 holds `id0..id{N-1}`, party 1 holds `id{N/2}..id{N+N/2-1}`, so N/2 are shared.
//! Prints one JSON line: N, seconds (key generation to both parties' rows), bytes (all
//! messages, both directions), rounds, intersection size, threads, and the scalar
//! multiplication backend curve25519-dalek picks on this CPU (`.cargo/config.toml`).
//!
//! An optional second argument P (default 2) runs P parties: party p holds
//! `id{p s}..id{p s + N - 1}` with s = N / (2 (P - 1)), so the first and last share N/2 ids
//! and so do all P.
//!
//! usage: cargo run --release -p vtwin-psi --example psi_bench -- N [P]

use std::time::Instant;

/// The backend curve25519-dalek is expected to select at run time (dalek does not report
/// its choice): IFMA when the build asked for it (the repository's `.cargo/config.toml`
/// sets the cfg, which this crate sees too) and the CPU has avx512ifma and avx512vl, else
/// AVX2 where present, else the portable serial code. A build that enables IFMA otherwise
/// (`-C target-cpu=native` on an IFMA host) is reported as "avx2".
fn dalek_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(curve25519_dalek_backend = "avx512")
            && std::arch::is_x86_feature_detected!("avx512ifma")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return "avx512ifma";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "avx2";
        }
    }
    "serial"
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .expect("usage: psi_bench N");
    let p: usize = std::env::args()
        .nth(2)
        .map_or(2, |a| a.parse().expect("P, the number of parties"));
    assert!(p >= 2, "P >= 2");
    let shift = n / (2 * (p - 1));
    let parties: Vec<Vec<Vec<u8>>> = (0..p)
        .map(|q| {
            (q * shift..q * shift + n)
                .map(|i| format!("id{i}").into_bytes())
                .collect()
        })
        .collect();
    let t0 = Instant::now();
    let aligned = vtwin_psi::align(&parties).expect("alignment");
    let secs = t0.elapsed().as_secs_f64();
    let bytes: u64 = aligned.stats.iter().map(|s| s.bytes_sent).sum();
    println!(
        "{{\"impl\":\"vtwin-psi\",\"n\":{n},\"parties\":{p},\"seconds\":{secs:.3},\"bytes\":{bytes},\"rounds\":{},\"intersection\":{},\"threads\":{},\"backend\":\"{}\"}}",
        aligned.rounds,
        aligned.len(),
        rayon::current_num_threads(),
        dalek_backend()
    );
}
