//! Whole-file and whole-folder quantization and dequantization (as `tlio quantize` and `tlio
//! dequantize`), and folders converted (as `tlio convert DIR OUT`).
use std::ffi::CString;
use std::os::raw::c_void;
use std::path::Path;

use crate::dtype::Dtype;
use crate::error::{check, Result};
use crate::file::{c_name, c_path};
use crate::sys;

/// What `quantize_file` does. Scheme options left unset keep their defaults; one set for a
/// scheme that does not have it is an `InvalidArgument` error ("nested is an option of nf4, fp4,
/// not of int8").
#[derive(Default)]
pub struct QuantizeOptions<'a> {
    /// "int4-g<G>-sym", "nf4", "fp4", "int8", "fp8-block" ("fp8-block<B>x<B>") or "fp8".
    pub scheme: String,
    /// Regex searched in names: replaces the default selection of weight matrices.
    pub include: Option<String>,
    /// Regex searched in names: never quantized.
    pub exclude: Option<String>,
    /// nf4/fp4: 32, 64, ..., 4096 (default 64).
    pub blocksize: Option<u64>,
    /// nf4/fp4: quantize the absmax too.
    pub nested: bool,
    /// nf4/fp4: the dtype the packed codes are stored as (default U8).
    pub storage: Option<Dtype>,
    /// Called with (output bytes done, total).
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// `src` an http(s):// URL: a bearer token, sent to its own origin only. None: $HF_TOKEN.
    pub token: Option<String>,
    /// Quantize 1-D tensors (biases, norms) that `include` names too.
    pub allow_1d: bool,
}

impl<'a> QuantizeOptions<'a> {
    pub fn new(scheme: &str) -> QuantizeOptions<'a> {
        QuantizeOptions {
            scheme: scheme.to_string(),
            ..QuantizeOptions::default()
        }
    }
}

pub(crate) unsafe extern "C" fn call_progress(done: u64, total: u64, user: *mut c_void) {
    let f = &mut *(user as *mut &mut dyn FnMut(u64, u64));
    // A panic must not unwind into C++.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(done, total)));
}

fn optional(text: &Option<String>) -> Result<Option<CString>> {
    text.as_deref().map(c_name).transpose()
}

/// Writes `src` with the selected weights quantized to `dst`, atomically. Like every rewrite
/// here, `src` may be a safetensors file or a model folder whatever the function's name: the
/// library asks which, so `quantize_file` and `quantize_folder` differ only in their arguments.
/// A folder's `dst` is a folder (a `.safetensors` name is an `InvalidArgument` error), a
/// `max_shard_size` with a file is one too, and a GGUF file is refused naming its import.
pub fn quantize_file(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: QuantizeOptions<'_>,
) -> Result<()> {
    // SAFETY (for the closure): quantize_with passes valid, NUL-terminated arguments.
    quantize_with(src.as_ref(), dst.as_ref(), options, |s, d, o| unsafe {
        sys::tl_quantize_file_with(s, d, o)
    })
}

/// The model folder `src` (model.safetensors, or shards with their index) quantized shard by
/// shard into the folder `dst`: the same shards (or, when `max_shard_size` is not 0, new shards
/// of at most that many tensor bytes, each module's tensors in one), a new index, config.json
/// and the tokenizer files carried over, `dst` replaced as a whole or left as it was. The
/// selection is the whole folder's.
pub fn quantize_folder(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: QuantizeOptions<'_>,
    max_shard_size: u64,
) -> Result<()> {
    // SAFETY (for the closure): quantize_with passes valid, NUL-terminated arguments.
    quantize_with(src.as_ref(), dst.as_ref(), options, |s, d, o| unsafe {
        sys::tl_quantize_folder(s, d, o, max_shard_size)
    })
}

fn quantize_with(
    src: &Path,
    dst: &Path,
    options: QuantizeOptions<'_>,
    call: impl FnOnce(
        *const std::os::raw::c_char,
        *const std::os::raw::c_char,
        *const sys::tl_quantize_options,
    ) -> std::os::raw::c_int,
) -> Result<()> {
    let (src, dst) = (c_path(src)?, c_path(dst)?);
    let scheme = c_name(&options.scheme)?;
    let (include, exclude) = (optional(&options.include)?, optional(&options.exclude)?);
    let token = optional(&options.token)?;
    let mut o = std::mem::MaybeUninit::<sys::tl_quantize_options>::uninit();
    // SAFETY: init_sized fills every field of a struct of that size.
    let mut o = unsafe {
        sys::tl_quantize_options_init_sized(
            o.as_mut_ptr(),
            std::mem::size_of::<sys::tl_quantize_options>(),
        );
        o.assume_init()
    };
    o.scheme = scheme.as_ptr();
    o.include = include.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    o.exclude = exclude.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    o.blocksize = options.blocksize.unwrap_or(0);
    o.nested = options.nested as i32;
    o.allow_1d = options.allow_1d as i32;
    o.token = token.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    if let Some(storage) = options.storage {
        o.storage = storage.raw();
    }
    let mut progress = options.progress;
    if let Some(f) = progress.as_mut() {
        o.progress = Some(call_progress);
        o.progress_user = f as *mut &mut dyn FnMut(u64, u64) as *mut c_void;
    }
    // every pointer in o outlives the call
    check(call(src.as_ptr(), dst.as_ptr(), &o))
}

/// Writes `src` with every quantized weight restored to a plain tensor: as `dtype` (F32, F16 or
/// BF16), or each weight's default dtype when None. (A folder `src`: as `dequantize_folder`.)
pub fn dequantize_file(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Option<Dtype>,
) -> Result<()> {
    // SAFETY (for the closure): with_dtype passes NUL-terminated paths.
    with_dtype(src.as_ref(), dst.as_ref(), dtype, |s, d, t| unsafe {
        sys::tl_dequantize_file(s, d, t)
    })
}

/// The model folder `src` with every quantized weight restored, shard by shard, into the folder
/// `dst` (see `quantize_folder`, and for `max_shard_size`); config.json loses its
/// quantization_config.
pub fn dequantize_folder(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Option<Dtype>,
    max_shard_size: u64,
) -> Result<()> {
    // SAFETY (for the closure): with_dtype passes NUL-terminated paths.
    with_dtype(src.as_ref(), dst.as_ref(), dtype, |s, d, t| unsafe {
        sys::tl_dequantize_folder(s, d, t, max_shard_size)
    })
}

/// The model folder `src` rewritten into the folder `dst` (see `quantize_folder`, and for
/// `max_shard_size`) with its floating tensors converted to `dtype`, or copied as they are when
/// None; config.json's dtype follows. (A safetensors file `src`: converted as one file, with
/// `max_shard_size` 0.)
pub fn convert_folder(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Option<Dtype>,
    max_shard_size: u64,
) -> Result<()> {
    // SAFETY (for the closure): with_dtype passes NUL-terminated paths.
    with_dtype(src.as_ref(), dst.as_ref(), dtype, |s, d, t| unsafe {
        sys::tl_convert_folder(s, d, t, max_shard_size)
    })
}

/// What a conversion's dtype could not hold: finite values made infinite, nonzero values made zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LostValues {
    pub overflowed: u64,
    pub flushed: u64,
}

/// `convert_folder` to `dtype`, saying what the dtype could not hold. `cast` allows a dtype of 8
/// bits or fewer (a plain cast of every tensor, with no scale); without it such a dtype is an
/// error pointing to `quantize_folder`'s fp8-block.
pub fn convert_folder_counting(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Dtype,
    max_shard_size: u64,
    cast: bool,
) -> Result<LostValues> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let mut lost = LostValues::default();
    // SAFETY: NUL-terminated paths and two live u64s for the counts.
    check(unsafe {
        sys::tl_convert_folder_ex(
            src.as_ptr(),
            dst.as_ptr(),
            dtype.raw(),
            max_shard_size,
            cast as std::os::raw::c_int,
            &mut lost.overflowed,
            &mut lost.flushed,
        )
    })?;
    Ok(lost)
}

/// A rewrite of `src` into `dst` that takes an optional dtype (-1 for none).
fn with_dtype(
    src: &Path,
    dst: &Path,
    dtype: Option<Dtype>,
    call: impl FnOnce(
        *const std::os::raw::c_char,
        *const std::os::raw::c_char,
        std::os::raw::c_int,
    ) -> std::os::raw::c_int,
) -> Result<()> {
    let (src, dst) = (c_path(src)?, c_path(dst)?);
    check(call(
        src.as_ptr(),
        dst.as_ptr(),
        dtype.map_or(-1, |d| d.raw()),
    ))
}
