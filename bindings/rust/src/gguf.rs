//! GGUF files (llama.cpp's format): their tensors listed and read, every ggml block type decoded
//! exactly as ggml decodes it, imported to safetensors files and Hugging Face folders, and
//! exported from folders.
use std::ffi::c_void;
use std::ops::Range;
use std::os::raw::c_int;
use std::path::Path;
use std::ptr::NonNull;

use crate::dtype::Dtype;
use crate::error::{check, Result};
use crate::file::{c_name, c_open_options, c_path, c_text, OpenOptions};
use crate::sys;

/// A GGUF file, opened and checked as ggml's own reader checks it.
pub struct Gguf {
    raw: NonNull<sys::tl_gguf>,
}

// SAFETY: a tl_gguf is read-only once open; its reads share nothing mutable.
unsafe impl Send for Gguf {}
unsafe impl Sync for Gguf {}

impl Drop for Gguf {
    fn drop(&mut self) {
        // SAFETY: opened by tl_gguf_open and closed once, here.
        unsafe { sys::tl_gguf_close(self.raw.as_ptr()) }
    }
}

/// One tensor of a GGUF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufTensor {
    pub name: String,
    /// ggml's type id, and its name ("Q4_K").
    pub ggml_type: u32,
    pub type_name: String,
    /// Whether tlio decodes this type (not the IQ1/IQ2/IQ3 codebook types).
    pub decodes: bool,
    /// numpy's order (ggml's ne reversed).
    pub shape: Vec<u64>,
    pub elements: u64,
    /// Stored bytes.
    pub bytes: u64,
}

impl Gguf {
    /// Opens a GGUF file at a path or URL.
    pub fn open(location: impl AsRef<Path>) -> Result<Gguf> {
        Gguf::open_with(location, &OpenOptions::default())
    }

    /// Opens with options (a token for URLs).
    pub fn open_with(location: impl AsRef<Path>, options: &OpenOptions) -> Result<Gguf> {
        let c = c_path(location.as_ref())?;
        let (o, _token) = c_open_options(options)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings that outlive the call; raw is set on success.
        check(unsafe { sys::tl_gguf_open(c.as_ptr(), &o, &mut raw) })?;
        Ok(Gguf {
            raw: NonNull::new(raw).expect("tl_gguf_open succeeded"),
        })
    }

    /// Every tensor, in file order.
    pub fn tensors(&self) -> Result<Vec<GgufTensor>> {
        // SAFETY: a valid handle.
        let n = unsafe { sys::tl_gguf_tensor_count(self.raw.as_ptr()) };
        (0..n).map(|i| self.tensor_at(i)).collect()
    }

    fn tensor_at(&self, index: usize) -> Result<GgufTensor> {
        let mut t = std::mem::MaybeUninit::<sys::tl_gguf_tensor>::uninit();
        // SAFETY: a valid handle and out pointer; filled on success.
        check(unsafe { sys::tl_gguf_tensor_at(self.raw.as_ptr(), index, t.as_mut_ptr()) })?;
        // SAFETY: filled by the successful call; its strings live as long as the handle.
        let t = unsafe { t.assume_init() };
        Ok(GgufTensor {
            name: unsafe { c_text(t.name, "tensor name") }?.to_owned(),
            ggml_type: t.ggml_type,
            type_name: unsafe { c_text(t.type_name, "type name") }?.to_owned(),
            decodes: t.decodes != 0,
            shape: t.shape[..t.rank].to_vec(),
            elements: t.elements,
            bytes: t.bytes,
        })
    }

    fn index_of(&self, name: &str) -> Result<usize> {
        let c = c_name(name)?;
        let mut index = 0usize;
        // SAFETY: a valid handle, a NUL-terminated name and an out pointer.
        check(unsafe { sys::tl_gguf_find(self.raw.as_ptr(), c.as_ptr(), &mut index) })?;
        Ok(index)
    }

    /// Tensor `name`; a `NotFound` error when the file has none.
    pub fn tensor(&self, name: &str) -> Result<GgufTensor> {
        self.tensor_at(self.index_of(name)?)
    }

    /// Elements [first, first + dst.len() / dtype's size) of tensor `name` as `dtype` into
    /// `dst`: block types decoded as ggml decodes them, then converted. An `Unsupported` error
    /// for a type tlio does not decode.
    pub fn read_into(&self, name: &str, first: u64, dtype: Dtype, dst: &mut [u8]) -> Result<()> {
        let index = self.index_of(name)?;
        let count = (dst.len() as u64 * 8) / u64::from(dtype.bits().max(1));
        // SAFETY: dst is valid for dst.len() bytes; the library checks the size.
        check(unsafe {
            sys::tl_gguf_read(
                self.raw.as_ptr(),
                index,
                first,
                count,
                dtype.raw(),
                dst.as_mut_ptr() as *mut c_void,
                dst.len(),
            )
        })
    }

    /// A slice of tensor `name` as `dtype` into `dst` (exactly the slice's bytes): its leading
    /// dimensions (numpy's order) cut to `slice` (an `end` of `u64::MAX`: to the end of the
    /// dimension; empty: whole). Only the blocks the slice touches are read, nearby rows'
    /// together. An `InvalidArgument` error for a bad slice or size, `Unsupported` for a type
    /// tlio does not decode.
    pub fn read_slice_into(
        &self,
        name: &str,
        slice: &[Range<u64>],
        dtype: Dtype,
        dst: &mut [u8],
    ) -> Result<()> {
        let index = self.index_of(name)?;
        let starts: Vec<u64> = slice.iter().map(|r| r.start).collect();
        let stops: Vec<u64> = slice.iter().map(|r| r.end).collect();
        // SAFETY: a valid handle, two arrays of slice.len() values, dst valid for dst.len() bytes
        // (the library checks the size).
        check(unsafe {
            sys::tl_gguf_read_slice(
                self.raw.as_ptr(),
                index,
                slice.len(),
                starts.as_ptr(),
                stops.as_ptr(),
                dtype.raw(),
                dst.as_mut_ptr() as *mut c_void,
                dst.len(),
            )
        })
    }

    /// The whole tensor `name` decoded to F32, in numpy's (row-major) order.
    pub fn read_f32(&self, name: &str) -> Result<Vec<f32>> {
        let t = self.tensor(name)?;
        let mut out = vec![0f32; t.elements as usize];
        // SAFETY: a Vec<f32> viewed as its bytes.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, out.len() * 4) };
        self.read_into(name, 0, Dtype::F32, bytes)?;
        Ok(out)
    }

    /// Metadata key `key` as text (numbers in their shortest decimal form); `NotFound` for a
    /// missing key, `Unsupported` for an array.
    pub fn metadata(&self, key: &str) -> Result<String> {
        let c = c_name(key)?;
        let mut text = std::ptr::null();
        // SAFETY: a valid handle, a NUL-terminated key and an out pointer.
        check(unsafe { sys::tl_gguf_metadata(self.raw.as_ptr(), c.as_ptr(), &mut text) })?;
        // SAFETY: set by the successful call; lives as long as the handle.
        Ok(unsafe { c_text(text, "metadata value") }?.to_owned())
    }
}

/// Writes the tensors of the GGUF file `src` to the safetensors file `dst` (atomically), as
/// `tlio convert SRC DST.safetensors`: floating tensors as `dtype` (F32, F16 or BF16), every
/// block type decoded as ggml decodes it. Returns the number of tensors written.
pub fn import_gguf(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Dtype,
    options: &OpenOptions,
) -> Result<u64> {
    import_with(
        sys::tl_import_gguf,
        src.as_ref(),
        dst.as_ref(),
        dtype,
        options,
    )
}

/// Writes the model of the GGUF file `src` as the Hugging Face folder `dst` (any location), as
/// `tlio convert SRC DST_DIR`: model.safetensors under the Hugging Face names (Q/K rows put back),
/// floating tensors as `dtype`; config.json, tokenizer.json (byte-level BPE and SentencePiece vocabularies),
/// tokenizer_config.json and generation_config.json. Returns the number of tensors written; an
/// architecture or tensor the export's table does not have is an `Unsupported` error.
pub fn import_gguf_model(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    dtype: Dtype,
    options: &OpenOptions,
) -> Result<u64> {
    import_with(
        sys::tl_import_gguf_model,
        src.as_ref(),
        dst.as_ref(),
        dtype,
        options,
    )
}

type ImportFn = unsafe extern "C" fn(
    *const std::os::raw::c_char,
    *const std::os::raw::c_char,
    sys::tl_dtype,
    *const sys::tl_open_options,
    *mut u64,
) -> std::os::raw::c_int;

/// One of the C imports (to a file, to a folder) called with these arguments.
fn import_with(
    f: ImportFn,
    src: &Path,
    dst: &Path,
    dtype: Dtype,
    options: &OpenOptions,
) -> Result<u64> {
    let (src, dst) = (c_path(src)?, c_path(dst)?);
    let (o, _token) = c_open_options(options)?;
    let mut tensors = 0u64;
    // SAFETY: NUL-terminated strings and options that outlive the call; a valid out pointer.
    check(unsafe { f(src.as_ptr(), dst.as_ptr(), dtype.raw(), &o, &mut tensors) })?;
    Ok(tensors)
}

/// Writes the Hugging Face model folder `src` (any location) as the GGUF file `dst` that
/// llama.cpp loads, as `tlio convert SRC DST.gguf --dtype TYPE`: `type_name` "F32", "F16",
/// "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K" ... "Q6_K", or one of llama.cpp's mixes
/// "Q3_K_S" ... "Q5_K_M" (each weight the type llama-quantize gives it). Returns the number of
/// tensors written; an architecture or tokenizer it does not export is an `Unsupported` error.
pub fn export_gguf(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    type_name: &str,
    options: &OpenOptions,
) -> Result<u64> {
    export_gguf_split(src, dst, type_name, 0, options)
}

/// The same in llama.cpp's split files of at most `split_max_size` tensor bytes each (0: one
/// file), named `DST-00001-of-0000N.gguf` (one file, `dst`, when all fits), published together.
pub fn export_gguf_split(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    type_name: &str,
    split_max_size: u64,
    options: &OpenOptions,
) -> Result<u64> {
    export_gguf_with(src, dst, type_name, false, false, split_max_size, options)
}

/// export_gguf_split with llama-quantize's `--pure` (every weight in the type's base type; without
/// it a file type such as Q4_0 gives output.weight Q6_K, as llama-quantize does) and
/// `--allow-requantize` (a GGUF source whose weights are quantized already).
pub fn export_gguf_with(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    type_name: &str,
    pure: bool,
    allow_requantize: bool,
    split_max_size: u64,
    options: &OpenOptions,
) -> Result<u64> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let type_name = c_name(type_name)?;
    let (o, _token) = c_open_options(options)?;
    let flags = if pure { sys::TL_GGUF_PURE } else { 0 }
        | if allow_requantize {
            sys::TL_GGUF_ALLOW_REQUANTIZE
        } else {
            0
        };
    let mut tensors = 0u64;
    // SAFETY: NUL-terminated strings and options that outlive the call; a valid out pointer.
    check(unsafe {
        sys::tl_export_gguf_with(
            src.as_ptr(),
            dst.as_ptr(),
            type_name.as_ptr(),
            flags,
            split_max_size,
            &o,
            &mut tensors,
        )
    })?;
    Ok(tensors)
}

/// The GGUF file `src` requantized into `dst` as llama.cpp's llama_model_quantize writes it: its
/// weights in `type_name` (a type or a mix), the other tensors and the metadata kept; weights
/// quantized already only with `allow_requantize` (quality is lost twice), else an
/// `InvalidArgument` error naming them. Returns the number of tensors written.
pub fn requantize_gguf(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    type_name: &str,
    allow_requantize: bool,
    options: &OpenOptions,
) -> Result<u64> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let type_name = c_name(type_name)?;
    let (o, _token) = c_open_options(options)?;
    let mut tensors = 0u64;
    // SAFETY: NUL-terminated strings and options that outlive the call; a valid out pointer.
    check(unsafe {
        sys::tl_requantize_gguf(
            src.as_ptr(),
            dst.as_ptr(),
            type_name.as_ptr(),
            allow_requantize as c_int,
            &o,
            &mut tensors,
        )
    })?;
    Ok(tensors)
}
