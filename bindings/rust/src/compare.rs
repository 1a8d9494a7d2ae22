//! Comparing the values of two files (as `tlio diff`): across dtypes and against quantized
//! weights, dequantized under their logical names, and across formats (a GGUF file against its
//! Hugging Face folder).
use std::ffi::CStr;
use std::os::raw::{c_char, c_void};

use crate::error::{check, Result};
use crate::file::{c_name, c_open_options, File, OpenOptions};
use crate::model::Model;
use crate::quant::call_progress;
use crate::sys;

/// What `compare_files` does. A value of A is within tolerance of B's when
/// |a - b| <= atol + rtol * |b| (B is the reference), or both are NaN, or the same infinity.
#[derive(Default)]
pub struct CompareOptions<'a> {
    pub atol: f64,
    pub rtol: f64,
    /// Called with (elements compared, all).
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// Compare only the names this ECMAScript regex finds (as `tlio diff --filter`).
    pub filter: Option<&'a str>,
    /// Each side's quantization_config (`Model::quantization_config`), which says how its
    /// weights are read; `compare_models` passes the folders' own when these are `None`.
    pub quantization_config_a: Option<&'a str>,
    pub quantization_config_b: Option<&'a str>,
}

/// One name both files have (a quantized weight under its logical name).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TensorComparison {
    pub name: String,
    /// B's name for it when that is another (a GGUF file against a folder).
    pub b_name: Option<String>,
    /// A dtype ("BF16") or a quantization scheme ("nf4").
    pub a_dtype: String,
    pub b_dtype: String,
    /// Logical shape (A's when the shapes differ).
    pub shape: Vec<u64>,
    pub elements: u64,
    /// False when the values cannot be compared: `note` says why.
    pub compared: bool,
    pub note: String,
    pub max_abs: f64,
    pub max_rel: f64,
    pub rmse: f64,
    pub cosine: f64,
    /// Elements outside tolerance.
    pub outside: u64,
    pub equal: bool,
}

/// What `compare_files` found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// No name in one file only, and every common tensor equal within tolerance.
    pub equal: bool,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// The common names, in natural order ("layers.2" before "layers.10").
    pub tensors: Vec<TensorComparison>,
}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string that lives as long as the comparison.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

struct Handle(*mut sys::tl_comparison);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: made by tl_compare_files, freed once.
        unsafe { sys::tl_comparison_free(self.0) }
    }
}

/// Compares every name `a` and `b` share by value, after converting both to F64.
pub fn compare_files(a: &File, b: &File, options: CompareOptions<'_>) -> Result<Comparison> {
    compare_sets(&[a], &[b], options)
}

/// Compares two model folders (their shards, each folder one namespace), as
/// `tlio diff DIR_A DIR_B` does.
pub fn compare_models<'a>(
    a: &'a Model,
    b: &'a Model,
    options: CompareOptions<'a>,
) -> Result<Comparison> {
    let options = CompareOptions {
        quantization_config_a: options
            .quantization_config_a
            .or(Some(a.quantization_config())),
        quantization_config_b: options
            .quantization_config_b
            .or(Some(b.quantization_config())),
        ..options
    };
    let (a, b): (Vec<&File>, Vec<&File>) = (a.files().iter().collect(), b.files().iter().collect());
    compare_sets(&a, &b, options)
}

/// Compares two sets of files, each one namespace: a folder's shards (`Model::files`), a
/// single file, or one against the other (`tlio diff model_dir model.safetensors`). A quantized
/// weight whose parts are in different shards counts whole.
pub fn compare_sets(a: &[&File], b: &[&File], options: CompareOptions<'_>) -> Result<Comparison> {
    let strings = OptionStrings::new(&options)?;
    let mut progress = options.progress;
    let o = c_options(options.atol, options.rtol, &strings, &mut progress);
    let (a, b): (Vec<_>, Vec<_>) = (
        a.iter().map(|f| f.raw()).collect(),
        b.iter().map(|f| f.raw()).collect(),
    );
    let mut raw = std::ptr::null_mut();
    // SAFETY: valid handles; o, the filter and the progress closure outlive the call.
    check(unsafe { sys::tl_compare_sets(a.as_ptr(), a.len(), b.as_ptr(), b.len(), &o, &mut raw) })?;
    read_comparison(Handle(raw))
}

/// Compares any two inputs by location, as `tlio diff A B`: files, model folders (their own
/// quantization_config applied; the options' are not read) or GGUF files, local or remote. With
/// a GGUF file on a side, names pair as reports pair them: a GGUF file's tensors with a Hugging
/// Face folder's by the names the GGUF export gives them, Q/K rows put back in place (`b_name`).
pub fn compare_locations(
    a: &str,
    b: &str,
    options: CompareOptions<'_>,
    open: &OpenOptions,
) -> Result<Comparison> {
    let (a, b) = (c_name(a)?, c_name(b)?);
    let strings = OptionStrings::new(&options)?;
    let mut progress = options.progress;
    let o = c_options(options.atol, options.rtol, &strings, &mut progress);
    let (open, _token) = c_open_options(open)?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings; o, open and the progress closure outlive the call.
    check(unsafe { sys::tl_compare_locations(a.as_ptr(), b.as_ptr(), &o, &open, &mut raw) })?;
    read_comparison(Handle(raw))
}

/// The options' strings as C strings, alive while the call runs.
struct OptionStrings {
    filter: Option<std::ffi::CString>,
    config_a: Option<std::ffi::CString>,
    config_b: Option<std::ffi::CString>,
}

impl OptionStrings {
    fn new(options: &CompareOptions<'_>) -> Result<Self> {
        Ok(Self {
            filter: options.filter.map(c_name).transpose()?,
            config_a: options.quantization_config_a.map(c_name).transpose()?,
            config_b: options.quantization_config_b.map(c_name).transpose()?,
        })
    }
}

fn c_options<'p>(
    atol: f64,
    rtol: f64,
    strings: &OptionStrings,
    progress: &mut Option<&'p mut dyn FnMut(u64, u64)>,
) -> sys::tl_compare_options {
    let mut o = std::mem::MaybeUninit::<sys::tl_compare_options>::uninit();
    // SAFETY: init_sized fills every field of a struct of that size.
    let mut o = unsafe {
        sys::tl_compare_options_init_sized(
            o.as_mut_ptr(),
            std::mem::size_of::<sys::tl_compare_options>(),
        );
        o.assume_init()
    };
    o.atol = atol;
    o.rtol = rtol;
    o.filter = strings
        .filter
        .as_ref()
        .map_or(std::ptr::null(), |f| f.as_ptr());
    o.quantization_config_a = strings
        .config_a
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr());
    o.quantization_config_b = strings
        .config_b
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr());
    if let Some(f) = progress.as_mut() {
        o.progress = Some(call_progress);
        o.progress_user = f as *mut &mut dyn FnMut(u64, u64) as *mut c_void;
    }
    o
}

fn read_comparison(handle: Handle) -> Result<Comparison> {
    // SAFETY: a valid comparison until `handle` drops; every string is copied before.
    unsafe {
        let only = |side| {
            (0..sys::tl_comparison_only_count(handle.0, side))
                .map(|i| text(sys::tl_comparison_only_at(handle.0, side, i)))
                .collect::<Vec<_>>()
        };
        let mut tensors = Vec::new();
        for i in 0..sys::tl_comparison_count(handle.0) {
            let mut t = std::mem::MaybeUninit::<sys::tl_tensor_comparison>::uninit();
            check(sys::tl_comparison_at(handle.0, i, t.as_mut_ptr()))?;
            let t = t.assume_init();
            let shape = if t.rank == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(t.shape, t.rank).to_vec()
            };
            let b_name = sys::tl_comparison_b_name(handle.0, i);
            tensors.push(TensorComparison {
                name: text(t.name),
                b_name: (!b_name.is_null()).then(|| text(b_name)),
                a_dtype: text(t.a_dtype),
                b_dtype: text(t.b_dtype),
                shape,
                elements: t.elements,
                compared: t.compared != 0,
                note: text(t.note),
                max_abs: t.max_abs,
                max_rel: t.max_rel,
                rmse: t.rmse,
                cosine: t.cosine,
                outside: t.outside,
                equal: t.equal != 0,
            });
        }
        Ok(Comparison {
            equal: sys::tl_comparison_equal(handle.0) != 0,
            only_in_a: only(0),
            only_in_b: only(1),
            tensors,
        })
    }
}
