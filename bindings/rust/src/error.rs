//! Errors by kind, carrying the library's own message.
use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_int;

use crate::sys;

/// What went wrong, from the C API's status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes break a rule of the format (or of a quantized weight or model directory).
    Format,
    /// A file could not be opened, read, written or renamed.
    Io,
    /// A malformed request: bad sizes, a NUL byte in a name, an option a scheme does not have.
    InvalidArgument,
    /// No tensor, quantized weight or key of that name.
    NotFound,
    /// Valid, but not something tlio does (e.g. converting C64 to F32).
    Unsupported,
    /// Out of memory.
    NoMemory,
    /// Stopped by the check given to `with_interrupt_check`; nothing was left behind.
    Interrupted,
    /// The bytes are not the ones expected: a SHA-256 or a model signature does not match (the
    /// message lists what failed).
    Verification,
}

/// An error from tlio: its kind, the message the CLI and the C++ and Python APIs give (e.g.
/// `rule 5: tensor "b" begins at 8, expected 4`), the rule broken and the OS error when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    rule: String,
    os_error: Option<i32>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            rule: String::new(),
            os_error: None,
        }
    }

    /// The error the last C call on this thread left, for its status code `code`.
    pub(crate) fn last(code: c_int) -> Error {
        let kind = match code {
            sys::TL_EFORMAT => ErrorKind::Format,
            sys::TL_EIO => ErrorKind::Io,
            sys::TL_ENOTFOUND => ErrorKind::NotFound,
            sys::TL_EUNSUPPORTED => ErrorKind::Unsupported,
            sys::TL_ENOMEM => ErrorKind::NoMemory,
            sys::TL_EINTERRUPTED => ErrorKind::Interrupted,
            sys::TL_EVERIFY => ErrorKind::Verification,
            _ => ErrorKind::InvalidArgument,
        };
        // SAFETY: the three return thread-local, NUL-terminated strings or plain ints.
        let (message, rule, errno) = unsafe {
            (
                CStr::from_ptr(sys::tl_last_error())
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(sys::tl_last_error_rule())
                    .to_string_lossy()
                    .into_owned(),
                sys::tl_last_error_errno(),
            )
        };
        Error {
            kind,
            message,
            rule,
            os_error: if errno != 0 { Some(errno) } else { None },
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as `Display` prints it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The rule broken, as messages print it: "1" to "5", "int4", "bnb", "BNB-001", ...,
    /// "model", "index"; None when the error broke no rule.
    pub fn rule(&self) -> Option<&str> {
        if self.rule.is_empty() {
            None
        } else {
            Some(&self.rule)
        }
    }

    /// The OS error number behind an `Io` error.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.os_error
    }
}

/// Turns a C status code into a `Result`.
pub(crate) fn check(code: c_int) -> Result<()> {
    if code == sys::TL_OK {
        Ok(())
    } else {
        Err(Error::last(code))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    /// Keeps the OS error when there is one; invalid data is `InvalidData`.
    fn from(e: Error) -> std::io::Error {
        use std::io::ErrorKind as K;
        let kind = match (e.kind, e.os_error) {
            (ErrorKind::Io, Some(errno)) => std::io::Error::from_raw_os_error(errno).kind(),
            (ErrorKind::Io, None) => K::Other,
            (ErrorKind::Format, _) => K::InvalidData,
            (ErrorKind::InvalidArgument, _) => K::InvalidInput,
            (ErrorKind::NotFound, _) => K::NotFound,
            (ErrorKind::Unsupported, _) => K::Unsupported,
            (ErrorKind::NoMemory, _) => K::OutOfMemory,
            (ErrorKind::Interrupted, _) => K::Interrupted,
            (ErrorKind::Verification, _) => K::InvalidData,
        };
        std::io::Error::new(kind, e)
    }
}
