//! Utility metrics of a synthetic table against real data, and membership-inference audits.

pub mod audit;
