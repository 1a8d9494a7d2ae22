//! Quantized weights carried into another ecosystem's layout without a detour through floats,
//! each proven on the way (tlio/transcode.hpp).
use std::path::Path;

use crate::dtype::Dtype;
use crate::error::{check, Result};
use crate::file::{c_name, c_open_options, c_path, OpenOptions};
use crate::sys;

/// What a transcode wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TranscodeResult {
    /// Weights carried and proven: their values in the output equal ggml's in the source.
    pub carried: usize,
    /// Weights requantized (`lossy`).
    pub requantized: usize,
    /// Tensors written as floats.
    pub plain: usize,
    /// -0 values of the source written as +0.
    pub zero_signs: u64,
    /// The largest RMSE of a requantized weight (0 without one).
    pub max_rmse: f64,
}

/// Carries the quantized weights of `src` into the layout `to`, as `tlio transcode SRC DST --to
/// TO [--lossy] [--dtype]`, each proven on the way. "mlx": the GGUF file `src` as the folder
/// `dst`, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_0, Q4_K and Q5_K weights as MLX affine with F32 scales
/// and biases, MXFP4 and NVFP4 as MLX's mxfp4 and nvfp4; or the model folder `src`, its
/// compressed-tensors MXFP4 and NVFP4 and power-of-two FP8 byte for byte. "gguf": the model folder
/// `src` as the
/// GGUF file `dst`, MLX's and compressed-tensors' MXFP4 and NVFP4 weights as ggml's blocks.
/// "compressed-tensors": an MLX folder's mxfp4 and nvfp4 Linear weights byte for byte.
/// Tensors written as floats are in `dtype` (F32, F16 or BF16). A weight no rule carries is an
/// `Unsupported` error naming it unless `lossy` (then requantized); a weight whose proof fails is
/// a `Format` error; nothing is written then.
pub fn transcode(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    to: &str,
    lossy: bool,
    dtype: Dtype,
    options: &OpenOptions,
) -> Result<TranscodeResult> {
    let (src, dst) = (c_path(src.as_ref())?, c_path(dst.as_ref())?);
    let to = c_name(to)?;
    let (o, _token) = c_open_options(options)?;
    let mut r = sys::tl_transcode_result::default();
    // SAFETY: NUL-terminated strings and options that outlive the call; a valid out pointer.
    check(unsafe {
        sys::tl_transcode(
            src.as_ptr(),
            dst.as_ptr(),
            to.as_ptr(),
            i32::from(lossy),
            dtype.raw(),
            &o,
            &mut r,
        )
    })?;
    Ok(TranscodeResult {
        carried: r.carried,
        requantized: r.requantized,
        plain: r.plain,
        zero_signs: r.zero_signs,
        max_rmse: r.max_rmse,
    })
}
