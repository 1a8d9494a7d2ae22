//! PyTorch checkpoints to safetensors, with no pickle ever executed.
use std::path::Path;

use crate::dtype::Dtype;
use crate::error::{check, Result};
use crate::file::{c_name, c_path};
use crate::sys;

/// What `import_checkpoint` does beyond the defaults.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions<'a> {
    /// Import the sub-object at this path ("model.encoder") instead of the state dict.
    pub key: Option<&'a str>,
    /// Leave out tensors safetensors cannot hold (complex128, quantized, sparse) instead of
    /// failing.
    pub skip_unsupported: bool,
    /// Directories: the most tensor bytes per output shard (0: split as the source was).
    pub max_shard_size: u64,
    /// Write a file without tensors when the checkpoint has none (else a `Format` error).
    pub allow_empty: bool,
    /// A training checkpoint: import everything (optimizer state too), not its model part.
    pub import_all: bool,
    /// Floating tensors written in this floating dtype (as `convert_folder` converts them);
    /// integer tensors as they are. `None`: as saved.
    pub dtype: Option<Dtype>,
}

/// Converts the PyTorch checkpoint `src` (torch.save's zip format or the legacy one) to the
/// safetensors file `dst`, atomically, as `tlio import` does, and returns the number of tensors
/// written. A directory holding pytorch_model.bin or its shards becomes a model directory, and
/// so does a torch.distributed.checkpoint (DCP) folder, each tensor assembled from the chunks
/// its ranks saved. A pickle naming code that `torch.load` would run is an
/// `ErrorKind::Format` error with rule "pickle".
pub fn import_checkpoint(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: &ImportOptions<'_>,
) -> Result<u64> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let key = options.key.map(c_name).transpose()?;
    let mut flags = 0;
    if options.skip_unsupported {
        flags |= sys::TL_IMPORT_SKIP_UNSUPPORTED;
    }
    if options.allow_empty {
        flags |= sys::TL_IMPORT_ALLOW_EMPTY;
    }
    if options.import_all {
        flags |= sys::TL_IMPORT_ALL;
    }
    let mut tensors = 0u64;
    // SAFETY: NUL-terminated strings (or NULL for no key) and a valid out pointer.
    check(unsafe {
        sys::tl_import_checkpoint_as(
            src.as_ptr(),
            dst.as_ptr(),
            key.as_ref().map_or(std::ptr::null(), |k| k.as_ptr()),
            flags,
            options.max_shard_size,
            options.dtype.map_or(-1, |d| d.raw()),
            &mut tensors,
        )
    })?;
    Ok(tensors)
}
