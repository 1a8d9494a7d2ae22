//! Writing: canonical and atomic, as the C++ writer (the destination appears only on commit).
use std::os::raw::c_void;
use std::path::Path;
use std::ptr::NonNull;

use crate::dtype::Dtype;
use crate::error::{check, Result};
use crate::file::{c_name, c_path};
use crate::sys;

/// Declare every tensor, supply their bytes (whole with `write`, or in pieces with `append`),
/// then `commit`. Until commit the destination is untouched; dropping the writer without
/// committing removes the temporary file.
pub struct Writer {
    raw: Option<NonNull<sys::tl_writer>>,
}

// SAFETY: a tl_writer is used by one thread at a time (every method takes &mut self).
unsafe impl Send for Writer {}

impl Writer {
    pub fn create(path: impl AsRef<Path>) -> Result<Writer> {
        let c = c_path(path.as_ref())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: c is NUL-terminated; raw is set on success.
        check(unsafe { sys::tl_writer_open(c.as_ptr(), &mut raw) })?;
        Ok(Writer {
            raw: NonNull::new(raw),
        })
    }

    fn raw(&self) -> *mut sys::tl_writer {
        self.raw.expect("a writer is usable until commit").as_ptr()
    }

    /// Sets `__metadata__[key] = value`.
    pub fn metadata(&mut self, key: &str, value: &str) -> Result<()> {
        let (k, v) = (c_name(key)?, c_name(value)?);
        // SAFETY: NUL-terminated strings, copied by the writer.
        check(unsafe { sys::tl_writer_set_metadata(self.raw(), k.as_ptr(), v.as_ptr()) })
    }

    /// Declares a tensor (its place in the canonical layout follows from every declaration).
    pub fn declare(&mut self, name: &str, dtype: Dtype, shape: &[u64]) -> Result<()> {
        let c = c_name(name)?;
        // SAFETY: shape holds shape.len() entries, copied by the writer.
        check(unsafe {
            sys::tl_writer_declare(
                self.raw(),
                c.as_ptr(),
                dtype.raw(),
                shape.len(),
                shape.as_ptr(),
            )
        })
    }

    /// The whole bytes of a declared tensor (exactly its byte size), copied now.
    pub fn write(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let c = c_name(name)?;
        // SAFETY: data is valid for data.len() bytes during the call.
        check(unsafe {
            sys::tl_writer_write(
                self.raw(),
                c.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
            )
        })
    }

    /// The next piece of a declared tensor's bytes, in order.
    pub fn append(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let c = c_name(name)?;
        // SAFETY: as write.
        check(unsafe {
            sys::tl_writer_append(
                self.raw(),
                c.as_ptr(),
                data.as_ptr() as *const c_void,
                data.len(),
            )
        })
    }

    /// Finishes the file and renames it into place (durably), or fails leaving no file.
    pub fn commit(mut self) -> Result<()> {
        let raw = self.raw.take().expect("a writer commits once");
        // SAFETY: commit frees the writer whatever it returns.
        check(unsafe { sys::tl_writer_commit(raw.as_ptr()) })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some(raw) = self.raw.take() {
            // SAFETY: not committed: abort frees it and removes the temporary.
            unsafe { sys::tl_writer_abort(raw.as_ptr()) }
        }
    }
}
