//! Reports of a model's values (as `tlio report`): per tensor the counts, range, mean, std and a
//! histogram, and against a source the error (RMSE, max abs, cosine, SQNR), as JSON or as one
//! self-contained HTML page.
use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::path::Path;
use std::ptr::NonNull;

use crate::error::{check, Result};
use crate::file::{c_name, c_open_options, c_path, OpenOptions};
use crate::quant::call_progress;
use crate::sys;

/// What `report` does.
#[derive(Default)]
pub struct ReportOptions<'a> {
    /// The source compared with (a file, folder or GGUF file: a path or URL).
    pub against: Option<&'a Path>,
    /// Only the names this ECMAScript regex finds.
    pub filter: Option<&'a str>,
    /// Histogram bins, 1..=4096 (`None`: 64).
    pub bins: Option<u32>,
    /// Called with (bytes read, all).
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// A token for URLs.
    pub open: OpenOptions,
}

/// A model's report.
pub struct Report {
    raw: NonNull<sys::tl_report>,
}

// SAFETY: a tl_report is read-only once made.
unsafe impl Send for Report {}
unsafe impl Sync for Report {}

impl Drop for Report {
    fn drop(&mut self) {
        // SAFETY: made by tl_report_make and freed once, here.
        unsafe { sys::tl_report_free(self.raw.as_ptr()) }
    }
}

impl Report {
    /// The figures as one JSON document (`tlio report --json`'s).
    pub fn json(&self) -> &str {
        // SAFETY: a NUL-terminated string living as long as the report.
        unsafe { CStr::from_ptr(sys::tl_report_json(self.raw.as_ptr())) }
            .to_str()
            .expect("tl_report_json writes bytes that are not UTF-8 as U+FFFD")
    }

    /// Writes the report as one self-contained HTML page to `out` (a path or URL), atomically.
    pub fn write_html(&self, out: impl AsRef<Path>) -> Result<()> {
        let out = c_path(out.as_ref())?;
        // SAFETY: a valid report and a NUL-terminated path that outlives the call.
        check(unsafe { sys::tl_report_write_html(self.raw.as_ptr(), out.as_ptr()) })
    }
}

/// The report of the model at `location` (a file, a model folder or a GGUF file, a path or URL).
pub fn report(location: impl AsRef<Path>, options: ReportOptions) -> Result<Report> {
    let location = c_path(location.as_ref())?;
    let against: Option<CString> = options.against.map(c_path).transpose()?;
    let filter: Option<CString> = options.filter.map(c_name).transpose()?;
    let (open, _token) = c_open_options(&options.open)?;
    let mut o = std::mem::MaybeUninit::<sys::tl_report_options>::uninit();
    // SAFETY: tl_report_options_init fills every field.
    let mut o = unsafe {
        sys::tl_report_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    if let Some(a) = &against {
        o.against = a.as_ptr();
    }
    if let Some(f) = &filter {
        o.filter = f.as_ptr();
    }
    if let Some(bins) = options.bins {
        o.bins = bins;
    }
    let mut progress = options.progress;
    if let Some(f) = progress.as_mut() {
        o.progress = Some(call_progress);
        o.progress_user = f as *mut &mut dyn FnMut(u64, u64) as *mut c_void;
    }
    let mut raw = std::ptr::null_mut();
    // SAFETY: strings, options and the progress closure outlive the call; raw is set on success.
    check(unsafe { sys::tl_report_make(location.as_ptr(), &o, &open, &mut raw) })?;
    Ok(Report {
        raw: NonNull::new(raw).expect("tl_report_make succeeded"),
    })
}
