//! The benchmark harness, one for the project: what `vtwin bench` measures and the typed
//! report it writes, which the figure generator (`bench/`, `vtwin-bench`) reads back.
//!
//! - [`workload`]: the data an iteration runs on (Adult, the built-in demo, or a random
//!   public schema for scaling in P and d);
//! - [`run`]: timed iterations of each gradient backend (float, fixed, mpc in memory, mpc
//!   over loopback QUIC) on one workload, with the same public seed;
//! - [`report`]: [`report::BenchReport`] and its parts, the JSON schema of a `vtwin bench`
//!   file;
//! - [`spread`]: medians and quantiles of timings.
//!
//! Hosts, dates and atomic writes come from `vtwin-host`, so a report is dated and written
//! the same way as every other vtwin output.

pub mod report;
pub mod run;
pub mod spread;
pub mod workload;

pub use report::BenchReport;
pub use run::{run, BenchBackend, BenchError, BenchSettings};
pub use workload::{Workload, WorkloadError, WorkloadKind};
