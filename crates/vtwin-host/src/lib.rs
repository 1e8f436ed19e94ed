//! What a vtwin process needs of its host, in one place: atomic file writes
//! ([`atomic`]), UTC timestamps ([`clock`]), the description and load of the machine
//! a measurement ran on ([`machine`]), errors printed with their causes for logs
//! ([`error_chain`]), and secret byte buffers wiped at word speed ([`wipe`]). Every
//! command, checkpoint, key file and benchmark report goes through these, so "written
//! atomically" and "dated in UTC" mean the same thing everywhere.

pub mod atomic;
pub mod clock;
pub mod error_chain;
pub mod machine;
pub mod wipe;
