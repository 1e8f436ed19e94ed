//! Subcommands, one module each.
