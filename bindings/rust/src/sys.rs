//! The C API, declared as `include/tlio/tlio.h` declares it (tests/header_mirror.rs fails when
//! the two differ). Everything here is unsafe to call; the rest of the crate is the safe API.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

pub const TL_OK: c_int = 0;
pub const TL_EFORMAT: c_int = 1;
pub const TL_EIO: c_int = 2;
pub const TL_EINVAL: c_int = 3;
pub const TL_ENOTFOUND: c_int = 4;
pub const TL_EUNSUPPORTED: c_int = 5;
pub const TL_ENOMEM: c_int = 6;
pub const TL_EINTERRUPTED: c_int = 7;
pub const TL_EVERIFY: c_int = 8;

/// A C enum: passed as a 32-bit int.
pub type tl_dtype = c_int;
pub const TL_BOOL: tl_dtype = 0;
pub const TL_F4: tl_dtype = 1;
pub const TL_F6_E2M3: tl_dtype = 2;
pub const TL_F6_E3M2: tl_dtype = 3;
pub const TL_U8: tl_dtype = 4;
pub const TL_I8: tl_dtype = 5;
pub const TL_F8_E5M2: tl_dtype = 6;
pub const TL_F8_E4M3: tl_dtype = 7;
pub const TL_F8_E8M0: tl_dtype = 8;
pub const TL_F8_E4M3FNUZ: tl_dtype = 9;
pub const TL_F8_E5M2FNUZ: tl_dtype = 10;
pub const TL_I16: tl_dtype = 11;
pub const TL_U16: tl_dtype = 12;
pub const TL_F16: tl_dtype = 13;
pub const TL_BF16: tl_dtype = 14;
pub const TL_I32: tl_dtype = 15;
pub const TL_U32: tl_dtype = 16;
pub const TL_F32: tl_dtype = 17;
pub const TL_C64: tl_dtype = 18;
pub const TL_F64: tl_dtype = 19;
pub const TL_I64: tl_dtype = 20;
pub const TL_U64: tl_dtype = 21;

pub const TL_OPEN_PREAD: c_uint = 1;
pub const TL_OPEN_PRIVATE: c_uint = 2;
pub const TL_OPEN_DIRECT: c_uint = 4;
pub const TL_DIRECT_ALIGNMENT: u64 = 4096;
pub const TL_IMPORT_SKIP_UNSUPPORTED: c_uint = 1;
pub const TL_IMPORT_ALLOW_EMPTY: c_uint = 2;
pub const TL_IMPORT_ALL: c_uint = 4;
pub const TL_SHA256_HEX_SIZE: usize = 65;
pub const TL_GGUF_PURE: c_uint = 1;
pub const TL_GGUF_ALLOW_REQUANTIZE: c_uint = 2;
pub const TL_JOB_PLAN: c_int = 0;
pub const TL_JOB_UNIT: c_int = 1;
pub const TL_JOB_COMMIT: c_int = 2;
pub const TL_JOB_ABORT: c_int = 3;

#[repr(C)]
pub struct tl_file {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct tl_writer {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct tl_model {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct tl_gguf {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct tl_gguf_tensor {
    pub name: *const c_char,
    pub ggml_type: u32,
    pub type_name: *const c_char,
    pub decodes: c_int,
    pub rank: usize,
    pub shape: [u64; 4],
    pub elements: u64,
    pub bytes: u64,
}

#[repr(C)]
#[derive(Default)]
pub struct tl_transcode_result {
    pub carried: usize,
    pub requantized: usize,
    pub plain: usize,
    pub zero_signs: u64,
    pub max_rmse: f64,
}

#[repr(C)]
pub struct tl_tensor_info {
    pub name: *const c_char,
    pub name_len: usize,
    pub dtype: tl_dtype,
    pub rank: usize,
    pub shape: *const u64,
    pub byte_size: u64,
    pub data_offsets: [u64; 2],
    pub data: *const c_void,
}

#[repr(C)]
pub struct tl_quantized_info {
    pub name: *const c_char,
    pub scheme: *const c_char,
    pub rank: usize,
    pub shape: *const u64,
    pub dtype: tl_dtype,
    pub blocksize: u64,
    pub nested: c_int,
}

pub type tl_interrupt_fn = Option<unsafe extern "C" fn(context: *mut c_void) -> c_int>;
pub type tl_progress_fn = Option<unsafe extern "C" fn(done: u64, total: u64, user: *mut c_void)>;

#[repr(C)]
pub struct tl_quantize_options {
    pub struct_size: usize,
    pub scheme: *const c_char,
    pub include: *const c_char,
    pub exclude: *const c_char,
    pub blocksize: u64,
    pub nested: c_int,
    pub storage: tl_dtype,
    pub progress: tl_progress_fn,
    pub progress_user: *mut c_void,
    pub token: *const c_char,
    pub allow_1d: c_int,
}

#[repr(C)]
pub struct tl_compare_options {
    pub struct_size: usize,
    pub atol: f64,
    pub rtol: f64,
    pub progress: tl_progress_fn,
    pub progress_user: *mut c_void,
    pub filter: *const c_char,
    pub quantization_config_a: *const c_char,
    pub quantization_config_b: *const c_char,
}

#[repr(C)]
pub struct tl_comparison {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct tl_report_options {
    pub struct_size: usize,
    pub against: *const c_char,
    pub filter: *const c_char,
    pub bins: c_uint,
    pub progress: tl_progress_fn,
    pub progress_user: *mut c_void,
}

#[repr(C)]
pub struct tl_report {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct tl_tensor_comparison {
    pub name: *const c_char,
    pub a_dtype: *const c_char,
    pub b_dtype: *const c_char,
    pub rank: usize,
    pub shape: *const u64,
    pub elements: u64,
    pub compared: c_int,
    pub note: *const c_char,
    pub max_abs: f64,
    pub max_rel: f64,
    pub rmse: f64,
    pub cosine: f64,
    pub outside: u64,
    pub equal: c_int,
}

#[repr(C)]
pub struct tl_edit_options {
    pub struct_size: usize,
    pub set_keys: *const *const c_char,
    pub set_values: *const *const c_char,
    pub set_count: usize,
    pub delete_keys: *const *const c_char,
    pub delete_count: usize,
    pub keep: *const *const c_char,
    pub keep_count: usize,
    pub drop: *const *const c_char,
    pub drop_count: usize,
    pub rename_patterns: *const *const c_char,
    pub rename_replacements: *const *const c_char,
    pub rename_count: usize,
    pub progress: tl_progress_fn,
    pub progress_user: *mut c_void,
    pub token: *const c_char,
}

#[repr(C)]
#[derive(Default)]
pub struct tl_edit_report {
    pub kept: usize,
    pub dropped: usize,
    pub renamed: usize,
    pub in_place: c_int,
    pub data_bytes: u64,
}

#[repr(C)]
pub struct tl_plan {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct tl_plan_options {
    pub struct_size: usize,
    pub max_inflight_bytes: u64,
    pub max_gap: i64,
    pub keep_packed: c_int,
    pub token: *const c_char,
}

#[repr(C)]
pub struct tl_plan_item_info {
    pub rank: usize,
    pub shape: *const u64,
    pub dtype: tl_dtype,
    pub byte_size: u64,
}

#[repr(C)]
pub struct tl_open_options {
    pub struct_size: usize,
    pub flags: c_uint,
    pub token: *const c_char,
}

// The functions, in a file of their own (the same declarations tlio.h has, in its order).
mod functions;
pub use functions::*;
