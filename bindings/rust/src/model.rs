//! Model directories: config.json plus one weight file or shards, as one namespace of tensors.
use std::ffi::CStr;
use std::path::Path;
use std::ptr::NonNull;

use crate::error::{check, Result};
use crate::file::{c_name, c_open_options, c_path, File, OpenOptions, TensorView};
use crate::sys;

/// A model directory (config.json, then model.safetensors or the shards of
/// model.safetensors.index.json), every file checked and mapped read-only.
pub struct Model {
    raw: NonNull<sys::tl_model>,
    files: Vec<File>,
}

// SAFETY: as File: immutable after opening, caches guarded inside libtlio.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: opened by tl_model_open and closed once, here (`files` are borrowed handles:
        // dropping them afterwards closes nothing).
        unsafe { sys::tl_model_close(self.raw.as_ptr()) }
    }
}

impl Model {
    /// Opens a model directory, or a directory URL (its files fetched by name).
    pub fn open(dir: impl AsRef<Path>) -> Result<Model> {
        Model::open_with(dir, &OpenOptions::default())
    }

    /// Opens with options (a token for URLs).
    pub fn open_with(dir: impl AsRef<Path>, options: &OpenOptions) -> Result<Model> {
        let c = c_path(dir.as_ref())?;
        let (o, _token) = c_open_options(options)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: c and the token are NUL-terminated and outlive the call; raw is set on success.
        check(unsafe { sys::tl_model_open_with(c.as_ptr(), &o, &mut raw) })?;
        let raw = NonNull::new(raw).expect("tl_model_open_with succeeded");
        // SAFETY: indexes below tl_model_file_count give handles the model owns.
        let n = unsafe { sys::tl_model_file_count(raw.as_ptr()) };
        let files = (0..n)
            .map(|i| File::borrowed(unsafe { sys::tl_model_file(raw.as_ptr(), i) }))
            .collect();
        Ok(Model { raw, files })
    }

    /// config.json's architecture: "bigram", "llama", or a model_type tlio does not check.
    pub fn arch(&self) -> &str {
        // SAFETY: a string the model owns.
        unsafe { CStr::from_ptr(sys::tl_model_arch(self.raw.as_ptr())) }
            .to_str()
            .unwrap_or("")
    }

    /// config.json's quantization_config (or a GPTQ folder's quantize_config.json) as JSON
    /// text; empty when the folder has none.
    pub fn quantization_config(&self) -> &str {
        // SAFETY: a string the model owns.
        unsafe { CStr::from_ptr(sys::tl_model_quantization_config(self.raw.as_ptr())) }
            .to_str()
            .unwrap_or("")
    }

    /// The architecture checks: every expected tensor present with its shape, nothing unexpected.
    pub fn check(&self) -> Result<()> {
        // SAFETY: a valid handle.
        check(unsafe { sys::tl_model_check(self.raw.as_ptr()) })
    }

    /// The weight files: one, or the shards in index order.
    pub fn files(&self) -> &[File] {
        &self.files
    }

    /// The file holding tensor `name`.
    pub fn file_of(&self, name: &str) -> Result<&File> {
        let c = c_name(name)?;
        let (mut file, mut index) = (std::ptr::null(), 0usize);
        // SAFETY: c is NUL-terminated; file is one of the model's handles on success.
        check(unsafe { sys::tl_model_find(self.raw.as_ptr(), c.as_ptr(), &mut file, &mut index) })?;
        Ok(self
            .files
            .iter()
            .find(|f| f.raw() == file)
            .expect("tl_model_find returns one of the model's files"))
    }

    /// Tensor `name`, from whichever file holds it.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        self.file_of(name)?.tensor(name)
    }

    /// Tensor `name` as f32 values (see `File::read_as_f32`).
    pub fn read_as_f32(&self, name: &str) -> Result<Vec<f32>> {
        self.file_of(name)?.read_as_f32(name)
    }

    /// Every tensor name, file by file, each file's in offset order.
    pub fn names(&self) -> Vec<&str> {
        self.files.iter().flat_map(|f| f.names()).collect()
    }
}
