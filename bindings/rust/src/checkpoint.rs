//! PyTorch checkpoints to safetensors, with no pickle ever executed.
use std::path::Path;

use crate::error::{check, Result};
use crate::file::{c_name, c_path};
use crate::sys;

/// Converts the PyTorch checkpoint `src` (torch.save's zip format or the legacy one) to the
/// safetensors file `dst`, atomically, as `tlio import` does, and returns the number of tensors
/// written. `key` imports the sub-object at that path ("model.encoder"); `skip_unsupported`
/// leaves out tensors safetensors cannot hold instead of failing. A pickle naming code that
/// `torch.load` would run is an `ErrorKind::Format` error with rule "pickle".
pub fn import_checkpoint(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    key: Option<&str>,
    skip_unsupported: bool,
) -> Result<u64> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let key = key.map(c_name).transpose()?;
    let flags = if skip_unsupported {
        sys::TL_IMPORT_SKIP_UNSUPPORTED
    } else {
        0
    };
    let mut tensors = 0u64;
    // SAFETY: NUL-terminated strings (or NULL for no key) and a valid out pointer.
    check(unsafe {
        sys::tl_import_checkpoint(
            src.as_ptr(),
            dst.as_ptr(),
            key.as_ref().map_or(std::ptr::null(), |k| k.as_ptr()),
            flags,
            &mut tensors,
        )
    })?;
    Ok(tensors)
}
