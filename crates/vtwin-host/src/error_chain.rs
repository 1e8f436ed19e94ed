//! An error printed with its causes on one line, `a: b: c` (what `{:#}` of an
//! `anyhow::Error` prints): for logs, and for text that crosses an API taking strings (the
//! `Failed` and `Abort` frames, rustls' `General` errors, close reasons, reports).

use std::error::Error;
use std::fmt;

/// Displays an error followed by its chain of causes, `: `-separated. Cost O(chain length).
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// [`Chain`] as a `String`.
pub fn chain(e: &dyn Error) -> String {
    Chain(e).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str, Option<Box<E>>);

    impl fmt::Display for E {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for E {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn prints_every_cause_once_in_order() {
        let e = E("a", Some(Box::new(E("b", Some(Box::new(E("c", None)))))));
        assert_eq!(chain(&e), "a: b: c");
        assert_eq!(format!("{:?}", Chain(&E("alone", None))), "alone");
    }
}
