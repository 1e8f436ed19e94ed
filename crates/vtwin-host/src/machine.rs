//! The machine a measurement ran on (CPU model, logical cores, OS, architecture) and its
//! load averages, as every benchmark report records them: absolute times on shared
//! machines are noisy, so a report says where and under what load it was taken.

use serde::{Deserialize, Serialize};

/// A host's description. Serialized with the keys `cpu_model`, `logical_cores`, `os`,
/// `arch` (the form of `vtwin bench` reports and `docs/results.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The first `model name` of `/proc/cpuinfo` ("unknown" where unreadable).
    pub cpu_model: String,
    /// Logical cores available to this process.
    pub logical_cores: usize,
    /// `std::env::consts::OS`.
    pub os: String,
    /// `std::env::consts::ARCH`.
    pub arch: String,
}

impl Machine {
    /// Describes this host. Cost: one read of `/proc/cpuinfo`.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let (cpu_model, processors) = parse_cpuinfo(&cpuinfo);
        Machine {
            cpu_model,
            logical_cores: std::thread::available_parallelism().map_or(processors, |n| n.get()),
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
        }
    }
}

/// (first model name, processor count) of a `/proc/cpuinfo` text.
fn parse_cpuinfo(text: &str) -> (String, usize) {
    fn field(l: &str) -> Option<(&str, &str)> {
        l.split_once(':').map(|(k, v)| (k.trim(), v.trim()))
    }
    let model = text
        .lines()
        .filter_map(field)
        .find_map(|(k, v)| (k == "model name").then(|| v.to_owned()))
        .unwrap_or_else(|| "unknown".into());
    let processors = text
        .lines()
        .filter_map(field)
        .filter(|(k, _)| *k == "processor")
        .count();
    (model, processors)
}

/// The 1, 5 and 15 minute load averages, `None` where `/proc/loadavg` is unreadable.
/// Cost: one small file read.
pub fn load_average() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(str::parse::<f64>);
    Some([it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields() {
        let text = "processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\n\nprocessor\t: 1\nmodel name\t: Example CPU @ 2.0GHz\n";
        assert_eq!(parse_cpuinfo(text), ("Example CPU @ 2.0GHz".into(), 2));
        assert_eq!(parse_cpuinfo(""), ("unknown".into(), 0));
    }

    #[test]
    fn loadavg_fields() {
        assert_eq!(
            parse_loadavg("0.52 1.10 2.00 1/123 4567\n"),
            Some([0.52, 1.10, 2.00])
        );
        assert_eq!(parse_loadavg("0.5 x 1"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn detects_something() {
        let m = Machine::detect();
        assert!(m.logical_cores >= 1);
        assert!(!m.os.is_empty());
    }
}
