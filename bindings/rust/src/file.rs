//! Reading: a validated file, its tensors as zero-copy views, metadata and quantized weights.
use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;

use crate::dtype::Dtype;
use crate::error::{check, Error, ErrorKind, Result};
use crate::sys;

/// A path as the C API takes it (bytes, NUL-terminated).
pub(crate) fn c_path(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{}: a path cannot hold a NUL byte", path.display()),
        )
    })
}

pub(crate) fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "{:?}: tlio's C API cannot take a name holding a NUL byte",
                name
            ),
        )
    })
}

/// Text libtlio hands out: UTF-8 by the format's rule 2, so this never fails for a valid file.
fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str> {
    std::str::from_utf8(bytes)
        .map_err(|_| Error::new(ErrorKind::Format, format!("rule 2: {} is not UTF-8", what)))
}

/// # Safety
/// `p` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_text<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Ok("");
    }
    utf8(CStr::from_ptr(p).to_bytes(), what)
}

/// A safetensors file, checked against every rule on opening (rules 1-5) and mapped read-only.
/// Tensor views borrow from it; it is safe to share between threads.
pub struct File {
    raw: NonNull<sys::tl_file>,
    /// False for the files of a `Model`, which the model closes.
    owned: bool,
    /// The bytes of `from_bytes`, which the C side views without copying.
    _buffer: Option<Vec<u8>>,
    /// True when the tensor bytes are this process's own (`open_private`, `from_bytes`).
    writable: bool,
}

// SAFETY: a tl_file is immutable after opening (tensor bytes change only through
// `tensor_data_mut`, which takes `&mut self`); its lazily built caches (quantized weights and
// their readers) are guarded by a mutex inside libtlio, and errors are thread-local.
unsafe impl Send for File {}
unsafe impl Sync for File {}

impl Drop for File {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: opened by tl_open/tl_open_memory and closed once, here.
            unsafe { sys::tl_close(self.raw.as_ptr()) }
        }
    }
}

/// One tensor of a `File`: header facts and its bytes, borrowed from the file.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    name: &'a str,
    dtype: Dtype,
    shape: &'a [u64],
    data: Option<&'a [u8]>, // None: the file is not mapped (a URL)
    data_offsets: (u64, u64),
}

impl<'a> TensorView<'a> {
    pub fn name(&self) -> &'a str {
        self.name
    }
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    pub fn shape(&self) -> &'a [u64] {
        self.shape
    }
    /// The tensor's bytes, little-endian as stored (zero-copy from the mapping).
    ///
    /// # Panics
    /// When the file is not mapped (opened from an http(s) URL): see `is_mapped`; read such
    /// tensors with `File::read` or `File::read_many`.
    pub fn data(&self) -> &'a [u8] {
        self.data.unwrap_or_else(|| {
            panic!(
                "tensor {:?} is not mapped (a remote file): read it with File::read",
                self.name
            )
        })
    }
    /// False for the tensors of a file opened from a URL, whose bytes are fetched by
    /// `File::read` / `File::read_many` rather than lent by `data`.
    pub fn is_mapped(&self) -> bool {
        self.data.is_some()
    }
    /// [begin, end) in the data section, as the header gives them.
    pub fn data_offsets(&self) -> (u64, u64) {
        self.data_offsets
    }
    /// Elements (the product of the shape; 1 for a scalar).
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// A quantized weight found in a file (tinyllm int4, bitsandbytes NF4/FP4, LLM.int8, FP8 blocks
/// and rows; read only: the Hub's other FP8 forms, GPTQ, AWQ, MXFP4, NVFP4, compressed-tensors
/// integers).
#[derive(Clone, Debug)]
pub struct QuantizedWeight<'a> {
    name: &'a str,
    scheme: &'a str,
    shape: &'a [u64],
    dtype: Dtype,
    blocksize: u64,
    nested: bool,
}

impl<'a> QuantizedWeight<'a> {
    /// The logical name (what a model calls the weight).
    pub fn name(&self) -> &'a str {
        self.name
    }
    /// "int4-g<G>-sym", "nf4", "fp4" or "int8"; read only: "fp8-block128x128", "fp8-channel",
    /// "gptq-4bit-g128", "awq-4bit-g128", "mxfp4", "nvfp4", "ct-int4-g128" and the like
    /// (docs/quantization.md).
    pub fn scheme(&self) -> &'a str {
        self.scheme
    }
    /// The logical shape.
    pub fn shape(&self) -> &'a [u64] {
        self.shape
    }
    /// What dequantization restores by default (bnb 4-bit: the original dtype; else F32).
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    /// The int4 group or the bitsandbytes block (0 for int8).
    pub fn blocksize(&self) -> u64 {
        self.blocksize
    }
    /// bitsandbytes 4-bit: the absmax is itself quantized.
    pub fn nested(&self) -> bool {
        self.nested
    }
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// A vector of `count` zeroed elements, or `NoMemory` instead of aborting.
pub(crate) fn zeroed_vec<T: Copy + Default>(count: u64, what: &str) -> Result<Vec<T>> {
    let too_big = || {
        Error::new(
            ErrorKind::NoMemory,
            format!("{}: {} elements do not fit in memory", what, count),
        )
    };
    let n = usize::try_from(count).map_err(|_| too_big())?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| too_big())?;
    v.resize(n, T::default());
    Ok(v)
}

/// How File::open_with and Model::open_with open their input.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// A private copy-on-write mapping (see File::open_private).
    pub private: bool,
    /// Reads past the page cache (O_DIRECT, 16 reads in flight), for files read once: tensors
    /// are read with `read`/`read_many`, nothing is mapped. Not with `private`.
    pub direct: bool,
    /// For http(s):// URLs: a bearer token, sent to the URL's own origin only. None: $HF_TOKEN.
    pub token: Option<String>,
}

/// The C options for `options`; the token's CString must outlive their use.
pub(crate) fn c_open_options(
    options: &OpenOptions,
) -> Result<(sys::tl_open_options, Option<CString>)> {
    let token = options.token.as_deref().map(c_name).transpose()?;
    let mut o = std::mem::MaybeUninit::<sys::tl_open_options>::uninit();
    // SAFETY: tl_open_options_init fills every field.
    let mut o = unsafe {
        sys::tl_open_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    if options.private {
        o.flags |= sys::TL_OPEN_PRIVATE;
    }
    if options.direct {
        o.flags |= sys::TL_OPEN_DIRECT;
    }
    o.token = token.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    Ok((o, token))
}

impl File {
    /// Opens and validates a file (rules 1-5, name index), mapped read-only. `path` may be an
    /// http(s):// URL: the header is fetched at once, tensors by range when read (`read`,
    /// `read_many`; their views are not mapped, see `TensorView::is_mapped`).
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, &OpenOptions::default())
    }

    /// Opens with options (a private mapping, a token for URLs).
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<File> {
        let c = c_path(path.as_ref())?;
        let (o, _token) = c_open_options(options)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: c and the token are NUL-terminated and outlive the call; raw is set on success.
        check(unsafe { sys::tl_open_with(c.as_ptr(), &o, &mut raw) })?;
        Ok(File {
            raw: NonNull::new(raw).expect("tl_open_with succeeded"),
            owned: true,
            _buffer: None,
            writable: options.private,
        })
    }

    /// Opens and validates a file as a private copy-on-write mapping: zero-copy like `open`,
    /// and `tensor_data_mut` gives writable bytes. A written page becomes this process's own
    /// copy; the file never changes.
    pub fn open_private(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(
            path,
            &OpenOptions {
                private: true,
                ..OpenOptions::default()
            },
        )
    }

    /// Validates the bytes of a whole file, kept (not copied) for the views.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<File> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the Vec's heap buffer does not move when the Vec moves into the File, and
        // lives until the File is dropped, after tl_close.
        check(unsafe {
            sys::tl_open_memory(bytes.as_ptr() as *const c_void, bytes.len(), &mut raw)
        })?;
        Ok(File {
            raw: NonNull::new(raw).expect("tl_open_memory succeeded"),
            owned: true,
            _buffer: Some(bytes),
            writable: true,
        })
    }

    /// A file a model owns (closed by the model).
    pub(crate) fn borrowed(raw: *const sys::tl_file) -> File {
        File {
            raw: NonNull::new(raw as *mut _).expect("a model's file"),
            owned: false,
            _buffer: None,
            writable: false,
        }
    }

    pub(crate) fn raw(&self) -> *const sys::tl_file {
        self.raw.as_ptr()
    }

    pub fn len(&self) -> usize {
        // SAFETY: a valid handle.
        unsafe { sys::tl_tensor_count(self.raw()) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tensor names, in file (offset) order.
    pub fn names(&self) -> Vec<&str> {
        (0..self.len())
            .filter_map(|i| self.tensor_at(i).ok())
            .map(|t| t.name)
            .collect()
    }

    /// Every tensor, in file order.
    pub fn tensors(&self) -> Vec<TensorView<'_>> {
        (0..self.len())
            .filter_map(|i| self.tensor_at(i).ok())
            .collect()
    }

    /// The tensor at `index` in file order.
    pub fn tensor_at(&self, index: usize) -> Result<TensorView<'_>> {
        let mut info = std::mem::MaybeUninit::<sys::tl_tensor_info>::uninit();
        // SAFETY: info is written on success; its pointers live as long as the file.
        check(unsafe { sys::tl_tensor_info(self.raw(), index, info.as_mut_ptr()) })?;
        let info = unsafe { info.assume_init() };
        // SAFETY: name, shape and data point into the file's state, alive while `self` is.
        let name = utf8(
            unsafe { std::slice::from_raw_parts(info.name as *const u8, info.name_len) },
            "a tensor name",
        )?;
        let shape: &[u64] = if info.rank == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(info.shape, info.rank) }
        };
        let size = usize::try_from(info.byte_size).map_err(|_| {
            Error::new(
                ErrorKind::NoMemory,
                format!("tensor {:?} does not fit in the address space", name),
            )
        })?;
        let data: Option<&[u8]> = if size == 0 {
            Some(&[])
        } else if info.data.is_null() {
            None
        } else {
            Some(unsafe { std::slice::from_raw_parts(info.data as *const u8, size) })
        };
        Ok(TensorView {
            name,
            dtype: Dtype::from_raw(info.dtype)?,
            shape,
            data,
            data_offsets: (info.data_offsets[0], info.data_offsets[1]),
        })
    }

    fn index_of(&self, name: &str) -> Result<usize> {
        if name.as_bytes().contains(&0) {
            // The C lookup takes NUL-terminated names; names may hold NUL bytes (JSON \u0000).
            return (0..self.len())
                .find(|&i| self.tensor_at(i).map(|t| t.name == name).unwrap_or(false))
                .ok_or_else(|| {
                    Error::new(ErrorKind::NotFound, format!("no tensor named {:?}", name))
                });
        }
        let c = c_name(name)?;
        let mut index = 0usize;
        // SAFETY: c is NUL-terminated.
        check(unsafe { sys::tl_tensor_find(self.raw(), c.as_ptr(), &mut index) })?;
        Ok(index)
    }

    /// The tensor named `name` (`NotFound` when there is none).
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        self.tensor_at(self.index_of(name)?)
    }

    /// A copy of tensor `name`'s bytes (fetched by range for a file opened from a URL).
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let index = self.index_of(name)?;
        let mut info = std::mem::MaybeUninit::<sys::tl_tensor_info>::uninit();
        // SAFETY: info is written on success.
        check(unsafe { sys::tl_tensor_info(self.raw(), index, info.as_mut_ptr()) })?;
        let size = usize::try_from(unsafe { info.assume_init() }.byte_size).map_err(|_| {
            Error::new(
                ErrorKind::NoMemory,
                format!("tensor {:?} does not fit in memory", name),
            )
        })?;
        let mut out = Vec::new();
        out.try_reserve_exact(size).map_err(|_| {
            Error::new(
                ErrorKind::NoMemory,
                format!("tensor {:?} does not fit in memory", name),
            )
        })?;
        out.resize(size, 0);
        // SAFETY: out holds exactly the tensor's byte size.
        check(unsafe {
            sys::tl_tensor_read(self.raw(), index, out.as_mut_ptr() as *mut c_void, size)
        })?;
        Ok(out)
    }

    /// Copies several tensors at once (a model's parameters), their bytes split over the
    /// cores: each `(name, destination)` gets exactly the tensor's bytes. Every target is
    /// checked (name, size) before any byte is copied.
    pub fn read_many(&self, targets: &mut [(&str, &mut [u8])]) -> Result<()> {
        let mut indices = Vec::with_capacity(targets.len());
        let mut dsts = Vec::with_capacity(targets.len());
        let mut sizes = Vec::with_capacity(targets.len());
        for (name, dst) in targets.iter_mut() {
            indices.push(self.index_of(name)?);
            dsts.push(dst.as_mut_ptr() as *mut c_void);
            sizes.push(dst.len());
        }
        // SAFETY: each destination is a distinct live &mut slice of sizes[i] bytes.
        check(unsafe {
            sys::tl_tensor_read_many(
                self.raw(),
                indices.as_ptr(),
                dsts.as_mut_ptr(),
                sizes.as_ptr(),
                targets.len(),
            )
        })
    }

    /// The bytes of tensor `name`, writable: for files from `open_private` (writes stay in
    /// this process) and `from_bytes` (writes change the buffer). `InvalidArgument` for files
    /// mapped read-only.
    pub fn tensor_data_mut(&mut self, name: &str) -> Result<&mut [u8]> {
        if !self.writable {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "tensor {:?}: the file is mapped read-only (open it with File::open_private)",
                    name
                ),
            ));
        }
        let data = self.tensor(name)?.data.ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("tensor {:?} is not mapped (a remote file)", name),
            )
        })?;
        // SAFETY: the bytes are this process's own (a private mapping or the owned buffer),
        // alive while `self` is, and `&mut self` keeps every other view of them away.
        Ok(unsafe { std::slice::from_raw_parts_mut(data.as_ptr() as *mut u8, data.len()) })
    }

    /// Tensor `name` as f32 values: any floating dtype converted exactly or rounded as the C++
    /// API does; integers and BOOL converted.
    pub fn read_as_f32(&self, name: &str) -> Result<Vec<f32>> {
        let index = self.index_of(name)?;
        let n = self.tensor_at(index)?.numel();
        let mut out = zeroed_vec::<f32>(n, name)?;
        // SAFETY: out holds exactly n f32.
        check(unsafe {
            sys::tl_tensor_read_as(
                self.raw(),
                index,
                sys::TL_F32,
                out.as_mut_ptr() as *mut c_void,
                out.len() * 4,
            )
        })?;
        Ok(out)
    }

    /// The metadata (`__metadata__`), by key.
    pub fn metadata(&self) -> BTreeMap<&str, &str> {
        // SAFETY: a valid handle.
        let n = unsafe { sys::tl_metadata_count(self.raw()) };
        let mut out = BTreeMap::new();
        for i in 0..n {
            let (mut k, mut v) = (std::ptr::null(), std::ptr::null());
            // SAFETY: i < n; the strings live as long as the file.
            if unsafe { sys::tl_metadata_at(self.raw(), i, &mut k, &mut v) } != sys::TL_OK {
                continue;
            }
            if let (Ok(k), Ok(v)) =
                unsafe { (c_text(k, "a metadata key"), c_text(v, "a metadata value")) }
            {
                out.insert(k, v);
            }
        }
        out
    }

    /// The file's quantized weights, checked (a malformed one is a `Format` error naming its rule).
    pub fn quantized(&self) -> Result<Vec<QuantizedWeight<'_>>> {
        let mut n = 0usize;
        // SAFETY: a valid handle.
        check(unsafe { sys::tl_quantized_count(self.raw(), &mut n) })?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let mut q = std::mem::MaybeUninit::<sys::tl_quantized_info>::uninit();
            check(unsafe { sys::tl_quantized_at(self.raw(), i, q.as_mut_ptr()) })?;
            let q = unsafe { q.assume_init() };
            out.push(QuantizedWeight {
                name: unsafe { c_text(q.name, "a quantized weight's name") }?,
                scheme: unsafe { c_text(q.scheme, "a scheme name") }?,
                shape: if q.rank == 0 {
                    &[]
                } else {
                    unsafe { std::slice::from_raw_parts(q.shape, q.rank) }
                },
                dtype: Dtype::from_raw(q.dtype)?,
                blocksize: q.blocksize,
                nested: q.nested != 0,
            });
        }
        Ok(out)
    }

    /// Quantized weight `name` dequantized to f32, in row-major logical order.
    pub fn dequantize(&self, name: &str) -> Result<Vec<f32>> {
        let all = self.quantized()?;
        let q = all.iter().find(|q| q.name == name).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no quantized weight named {:?}", name),
            )
        })?;
        let mut out = zeroed_vec::<f32>(q.numel(), name)?;
        let c = c_name(name)?;
        // SAFETY: out holds exactly numel f32.
        check(unsafe {
            sys::tl_quantized_read(
                self.raw(),
                c.as_ptr(),
                0,
                out.len() as u64,
                sys::TL_F32,
                out.as_mut_ptr() as *mut c_void,
                out.len() * 4,
            )
        })?;
        Ok(out)
    }
}
