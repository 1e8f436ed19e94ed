//! Running the `vtwin` binary from CLI tests and reading what it printed.

#![allow(dead_code, unreachable_pub)]

use std::process::{Command, Output};

/// Runs the `vtwin` binary built for this test with `args`; panics only if it cannot start.
pub fn vtwin(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vtwin"))
        .args(args)
        .output()
        .expect("runs the binary")
}

/// The process's standard output (must be UTF-8).
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

/// The process's standard error (must be UTF-8).
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// Asserts the run failed with a one-line error that contains `culprit` (the flag, file,
/// ... at fault); returns that error text for further checks.
pub fn assert_one_line_error(o: &Output, culprit: &str) -> String {
    assert!(
        !o.status.success(),
        "succeeded; expected an error naming {culprit}"
    );
    let e = stderr(o);
    assert!(e.contains(culprit), "{culprit}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    e
}
