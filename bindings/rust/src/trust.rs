//! Hashes and model signatures (OpenSSF model-signing v1.0, key-based): knowing a file is the
//! one meant. Each is a full read of what it checks, so nothing here runs on `File::open`.
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::path::Path;

use crate::error::{check, Result};
use crate::file::{c_open_options, c_path, File, OpenOptions};
use crate::sys;

fn hex_of(buffer: &[c_char; sys::TL_SHA256_HEX_SIZE]) -> String {
    // SAFETY: the C API wrote 64 digits and a NUL.
    unsafe { CStr::from_ptr(buffer.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The SHA-256 of the file at `location` (a path or URL), as 64 lower-case hex digits, read
/// once front to back (a URL is hashed as it downloads). When the file's server publishes a
/// SHA-256 (the Hub's X-Linked-Etag) and the bytes differ: `ErrorKind::Verification`.
pub fn hash_file(location: impl AsRef<Path>, options: &OpenOptions) -> Result<String> {
    let location = c_path(location.as_ref())?;
    let (o, _token) = c_open_options(options)?;
    let mut hex = [0 as c_char; sys::TL_SHA256_HEX_SIZE];
    // SAFETY: a NUL-terminated path, valid options (their token outlives the call) and a buffer
    // of TL_SHA256_HEX_SIZE bytes.
    check(unsafe { sys::tl_hash_file(location.as_ptr(), &o, hex.as_mut_ptr()) })?;
    Ok(hex_of(&hex))
}

impl File {
    /// The SHA-256 of the file's bytes (the version this `File` holds); with `expected`, an
    /// `ErrorKind::Verification` error unless it is that (64 hex digits, either case).
    pub fn sha256(&self, expected: Option<&str>) -> Result<String> {
        let expected = expected.map(crate::file::c_name).transpose()?;
        let mut hex = [0 as c_char; sys::TL_SHA256_HEX_SIZE];
        // SAFETY: a valid handle, a NUL-terminated string or NULL, a buffer of the size asked.
        check(unsafe {
            sys::tl_file_sha256(
                self.raw(),
                expected.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
                hex.as_mut_ptr(),
            )
        })?;
        Ok(hex_of(&hex))
    }
}

// tl_sign_folder and tl_verify_signature: a folder, a key file and a signature path or NULL.
type FolderCall = unsafe extern "C" fn(*const c_char, *const c_char, *const c_char) -> c_int;

fn folder_call(
    call: FolderCall,
    folder: &Path,
    key: &Path,
    signature: Option<&Path>,
) -> Result<()> {
    let (folder, key) = (c_path(folder)?, c_path(key)?);
    let signature = signature.map(c_path).transpose()?;
    // SAFETY: NUL-terminated strings, or NULL for the default signature path.
    check(unsafe {
        call(
            folder.as_ptr(),
            key.as_ptr(),
            signature.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
        )
    })
}

/// Signs every file of `folder` with the PEM private key file `private_key` (ECDSA on P-256,
/// P-384 or P-521), writing the signature to `signature` (None: FOLDER/model.sig), atomically.
pub fn sign_folder(
    folder: impl AsRef<Path>,
    private_key: impl AsRef<Path>,
    signature: Option<&Path>,
) -> Result<()> {
    folder_call(
        sys::tl_sign_folder,
        folder.as_ref(),
        private_key.as_ref(),
        signature,
    )
}

/// Checks `folder` against its signature (None: FOLDER/model.sig) with the PEM public key file
/// `public_key`: `ErrorKind::Verification`, its message listing each problem (a file changed,
/// added or missing; the key hint, the signature or the root digest), unless it all matches.
pub fn verify_signature(
    folder: impl AsRef<Path>,
    public_key: impl AsRef<Path>,
    signature: Option<&Path>,
) -> Result<()> {
    folder_call(
        sys::tl_verify_signature,
        folder.as_ref(),
        public_key.as_ref(),
        signature,
    )
}
