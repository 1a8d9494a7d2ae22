//! tlio for Rust: strict, fast safetensors over libtlio's C API.
//!
//! Files are checked against every rule of the format on opening (the same rules, messages and
//! error kinds as the `tlio` command, C++, C and Python), tensors are zero-copy views of the
//! mapped file, files are written canonically and atomically, and quantized weights (tinyllm
//! int4, bitsandbytes NF4/FP4, LLM.int8, the Hub's FP8, GPTQ, AWQ, MXFP4, NVFP4) are found and
//! dequantized.
//!
//! ```no_run
//! let file = tlio::File::open("model.safetensors")?;
//! for name in file.names() {
//!     let t = file.tensor(name)?;
//!     println!("{} {} {:?} {} bytes", name, t.dtype().name(), t.shape(), t.data().len());
//! }
//! let w: Vec<f32> = file.read_as_f32("lm_head.weight")?;
//! # Ok::<(), tlio::Error>(())
//! ```
//!
//! Errors come by kind, with the library's message:
//!
//! ```no_run
//! match tlio::File::open("bad.safetensors") {
//!     Err(e) if e.kind() == tlio::ErrorKind::Format => eprintln!("invalid (rule {:?}): {}", e.rule(), e),
//!     Err(e) => eprintln!("{}", e),
//!     Ok(_) => {}
//! }
//! ```
//!
//! A view borrows from its `File`, so it cannot outlive it. Used while the file lives, it
//! compiles:
//!
//! ```no_run
//! let file = tlio::File::open("x.safetensors").unwrap();
//! let data = file.tensor("w").unwrap().data();
//! println!("{}", data.len());
//! ```
//!
//! Kept past the file's scope, it does not:
//!
//! ```compile_fail
//! let data = {
//!     let file = tlio::File::open("x.safetensors").unwrap();
//!     file.tensor("w").unwrap().data()
//! }; // error[E0597]: `file` does not live long enough
//! println!("{}", data.len());
//! ```
//!
//! Linking: `build.rs` takes libtlio from `TLIO_LIB_DIR`, else `pkg-config tlio`, else the
//! repository's `build/`.

mod checkpoint;
mod compare;
mod dtype;
mod edit;
mod error;
mod file;
mod gguf;
mod interrupt;
mod job;
mod model;
mod plan;
mod quant;
mod report;
pub mod sys;
mod transcode;
mod trust;
mod writer;

pub use checkpoint::{import_checkpoint, ImportOptions};
pub use compare::{
    compare_files, compare_locations, compare_models, compare_sets, CompareOptions, Comparison,
    TensorComparison,
};
pub use dtype::Dtype;
pub use edit::{edit_file, EditOptions, EditReport};
pub use error::{Error, ErrorKind, Result};
pub use file::{File, OpenOptions, QuantizedWeight, TensorView};
pub use gguf::{
    export_gguf, export_gguf_split, export_gguf_with, import_gguf, import_gguf_model,
    requantize_gguf, Gguf, GgufTensor,
};
pub use interrupt::{remove_temporary_files, with_interrupt_check};
pub use job::{Job, JobStep};
pub use model::Model;
pub use plan::{PlanItem, PlanOptions, PlannedRead, ReadPlan, StoredRange, DIRECT_ALIGNMENT};
pub use quant::{
    convert_folder, convert_folder_counting, dequantize_file, dequantize_folder, quantize_file,
    quantize_folder, LostValues, QuantizeOptions,
};
pub use report::{report, Report, ReportOptions};
pub use transcode::{transcode, TranscodeResult};
pub use trust::{hash_file, sign_folder, verify_signature};
pub use writer::Writer;

/// libtlio's version ("0.2.0").
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated literal.
    unsafe { std::ffi::CStr::from_ptr(sys::tl_version()) }
        .to_str()
        .unwrap_or("?")
}

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        assert_send_sync::<crate::File>();
        assert_send_sync::<crate::Model>();
    }
}
