//! Membership-inference attacks on a synthetic table.
