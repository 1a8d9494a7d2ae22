//! Editing a file's metadata and its set of tensors without touching their bytes (as `tlio
//! metadata` and `tlio convert --keep/--drop/--rename`).
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::path::Path;

use crate::error::{check, Result};
use crate::file::{c_name, c_path};
use crate::quant::call_progress;
use crate::sys;

/// What `edit_file` does. Regexes are ECMAScript, searched in names; `keep` and `drop` see the
/// source's names; `rename` rules run in order, each replacing every match (`\1`..`\9` insert
/// groups). A quantized weight moves whole: keep and drop decide by its logical name, and its
/// stored tensors are renamed together.
#[derive(Default)]
pub struct EditOptions<'a> {
    /// Metadata entries added or replaced, in order.
    pub set_metadata: Vec<(String, String)>,
    /// Metadata keys removed; each must exist.
    pub delete_metadata: Vec<String>,
    /// A tensor must match one of these; empty: every tensor.
    pub keep: Vec<String>,
    /// A tensor matching any of these is left out.
    pub drop: Vec<String>,
    /// (regex, replacement) pairs.
    pub rename: Vec<(String, String)>,
    /// Called with (data bytes copied, total) during a rewrite.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// `src` an http(s):// URL: a bearer token, sent to its own origin only. None: $HF_TOKEN.
    pub token: Option<String>,
}

/// What `edit_file` did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EditReport {
    /// Tensors written (renamed ones included).
    pub kept: usize,
    /// Tensors left out.
    pub dropped: usize,
    /// Tensors written under another name.
    pub renamed: usize,
    /// Only the header was rewritten, in the file itself.
    pub in_place: bool,
    /// Data bytes of the result.
    pub data_bytes: u64,
}

fn c_strings<'s>(items: impl Iterator<Item = &'s str>) -> Result<Vec<CString>> {
    items.map(c_name).collect()
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|c| c.as_ptr()).collect()
}

/// Edits `src` into `dst`, or into `src` itself when `dst` is None (or names the same file): in
/// place when only the header changes and keeps its length (one synced write), else one atomic
/// rewrite whose tensor bytes are copied in the kernel. A bad regex, two tensors renamed to one
/// name, a key to delete that is not there, or a selection that would split a quantized weight
/// or keep no tensor is an `InvalidArgument` error, with nothing written.
pub fn edit_file(
    src: impl AsRef<Path>,
    dst: Option<&Path>,
    options: EditOptions<'_>,
) -> Result<EditReport> {
    let src = c_path(src.as_ref())?;
    let dst = dst.map(c_path).transpose()?;
    let set_keys = c_strings(options.set_metadata.iter().map(|(k, _)| k.as_str()))?;
    let set_values = c_strings(options.set_metadata.iter().map(|(_, v)| v.as_str()))?;
    let delete = c_strings(options.delete_metadata.iter().map(String::as_str))?;
    let keep = c_strings(options.keep.iter().map(String::as_str))?;
    let drop = c_strings(options.drop.iter().map(String::as_str))?;
    let patterns = c_strings(options.rename.iter().map(|(p, _)| p.as_str()))?;
    let replacements = c_strings(options.rename.iter().map(|(_, r)| r.as_str()))?;
    let token = options.token.as_deref().map(c_name).transpose()?;
    let (set_keys_p, set_values_p) = (pointers(&set_keys), pointers(&set_values));
    let (delete_p, keep_p, drop_p) = (pointers(&delete), pointers(&keep), pointers(&drop));
    let (patterns_p, replacements_p) = (pointers(&patterns), pointers(&replacements));

    let mut o = std::mem::MaybeUninit::<sys::tl_edit_options>::uninit();
    // SAFETY: init fills every field.
    let mut o = unsafe {
        sys::tl_edit_options_init(o.as_mut_ptr());
        o.assume_init()
    };
    o.set_keys = set_keys_p.as_ptr();
    o.set_values = set_values_p.as_ptr();
    o.set_count = set_keys_p.len();
    o.delete_keys = delete_p.as_ptr();
    o.delete_count = delete_p.len();
    o.keep = keep_p.as_ptr();
    o.keep_count = keep_p.len();
    o.drop = drop_p.as_ptr();
    o.drop_count = drop_p.len();
    o.rename_patterns = patterns_p.as_ptr();
    o.rename_replacements = replacements_p.as_ptr();
    o.rename_count = patterns_p.len();
    o.token = token.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    let mut progress = options.progress;
    if let Some(f) = progress.as_mut() {
        o.progress = Some(call_progress);
        o.progress_user = f as *mut &mut dyn FnMut(u64, u64) as *mut c_void;
    }
    let mut report = sys::tl_edit_report::default();
    // SAFETY: every pointer in o (and the arrays they point at) outlives the call.
    check(unsafe {
        sys::tl_edit_file(
            src.as_ptr(),
            dst.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            &o,
            &mut report,
        )
    })?;
    Ok(EditReport {
        kept: report.kept,
        dropped: report.dropped,
        renamed: report.renamed,
        in_place: report.in_place != 0,
        data_bytes: report.data_bytes,
    })
}
