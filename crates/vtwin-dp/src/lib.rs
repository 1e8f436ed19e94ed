//! Exact discrete Gaussian noise, privacy accountants and the privacy ledger.
