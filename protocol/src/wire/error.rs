use core::fmt;

/// Why a byte string could not be decoded (or a representation could not be emitted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the format (or a length field inside it) requires.
    Truncated,
    /// A field holds a value the format forbids; the text names the field.
    Malformed(&'static str),
    /// Well-formed, but a variant this implementation does not handle; the text names it.
    Unsupported(&'static str),
}

/// Result of decoding or emitting.
pub type Result<T> = core::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => write!(f, "truncated"),
            Error::Malformed(what) => write!(f, "malformed: {what}"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
        }
    }
}

impl std::error::Error for Error {}
