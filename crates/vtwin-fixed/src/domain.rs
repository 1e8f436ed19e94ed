//! The error returned when a checked function gets an input outside its documented domain.

/// An input outside the documented domain of a function.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DomainError {
    /// `function` was called with argument `argument` = `value`, outside `domain`.
    #[error("{function}: {argument} = {value} is outside the domain {domain}")]
    OutOfDomain {
        /// The function.
        function: &'static str,
        /// The argument at fault.
        argument: &'static str,
        /// Its value, decoded.
        value: f64,
        /// The documented domain.
        domain: &'static str,
    },
}

pub(crate) fn check(
    ok: bool,
    function: &'static str,
    argument: &'static str,
    value: crate::Fx,
    domain: &'static str,
) -> Result<(), DomainError> {
    if ok {
        Ok(())
    } else {
        Err(DomainError::OutOfDomain {
            function,
            argument,
            value: value.to_f64(),
            domain,
        })
    }
}

/// An element of a slice was outside the domain of the function applied to it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("element {index}: {source}")]
#[non_exhaustive]
pub struct SliceError {
    /// Index of the first bad element.
    pub index: usize,
    /// The domain error.
    pub source: DomainError,
}
