//! The consortium protocol: coordinator, compute-node and party state machines (sans-IO),
//! and the thin services that drive them over [`vtwin_net`].
