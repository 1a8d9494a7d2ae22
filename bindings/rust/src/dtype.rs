//! Element types, named as safetensors headers name them.
use std::ffi::{CStr, CString};
use std::fmt;
use std::str::FromStr;

use crate::error::{check, Error, ErrorKind, Result};
use crate::sys;

/// The 22 element types, in the reference implementation's order (the C API's `tl_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(non_camel_case_types)]
#[non_exhaustive]
pub enum Dtype {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

const ALL: [Dtype; 22] = [
    Dtype::BOOL,
    Dtype::F4,
    Dtype::F6_E2M3,
    Dtype::F6_E3M2,
    Dtype::U8,
    Dtype::I8,
    Dtype::F8_E5M2,
    Dtype::F8_E4M3,
    Dtype::F8_E8M0,
    Dtype::F8_E4M3FNUZ,
    Dtype::F8_E5M2FNUZ,
    Dtype::I16,
    Dtype::U16,
    Dtype::F16,
    Dtype::BF16,
    Dtype::I32,
    Dtype::U32,
    Dtype::F32,
    Dtype::C64,
    Dtype::F64,
    Dtype::I64,
    Dtype::U64,
];

impl Dtype {
    /// Every dtype, in order.
    pub fn all() -> &'static [Dtype] {
        &ALL
    }

    pub(crate) fn from_raw(raw: sys::tl_dtype) -> Result<Dtype> {
        usize::try_from(raw)
            .ok()
            .and_then(|i| ALL.get(i).copied())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("not a tl_dtype value: {}", raw),
                )
            })
    }

    pub(crate) fn raw(self) -> sys::tl_dtype {
        self as sys::tl_dtype
    }

    /// The header name: "F32", "BF16", "F8_E4M3", ...
    pub fn name(self) -> &'static str {
        // SAFETY: tl_dtype_name returns a static, NUL-terminated ASCII literal for every dtype.
        unsafe { CStr::from_ptr(sys::tl_dtype_name(self.raw())) }
            .to_str()
            .unwrap_or("?")
    }

    /// Bits per element (4 for F4, 6 for the F6 types).
    pub fn bits(self) -> u32 {
        // SAFETY: a plain lookup.
        unsafe { sys::tl_dtype_bits(self.raw()) }
    }

    /// A header name ("BF16") or a numpy/torch spelling ("bfloat16", "float32").
    pub fn from_name(name: &str) -> Result<Dtype> {
        let c = CString::new(name).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("unknown dtype {:?}", name),
            )
        })?;
        let mut raw: sys::tl_dtype = 0;
        // SAFETY: c is NUL-terminated; raw is written on success.
        check(unsafe { sys::tl_dtype_from_name(c.as_ptr(), &mut raw) })?;
        Dtype::from_raw(raw)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dtype {
    type Err = Error;
    fn from_str(s: &str) -> Result<Dtype> {
        Dtype::from_name(s)
    }
}
