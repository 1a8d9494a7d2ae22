//! Read plans: many tensors, or slices of them, read in few large reads (positional reads of a
//! local file, O_DIRECT ones with `direct`; ranged requests of a URL). A quantized weight is
//! asked for by its logical name and comes dequantized, reading only the parts its slice needs
//! (docs/loading.md).
use std::ops::Range;
use std::os::raw::{c_int, c_void};
use std::path::Path;

use crate::dtype::Dtype;
use crate::error::{check, Error, ErrorKind, Result};
use crate::file::{c_name, c_path};
use crate::sys;

/// How a plan reads. Unset fields keep the library's defaults.
#[derive(Default, Clone)]
pub struct PlanOptions {
    /// Scratch bytes held at once (default 64 MiB).
    pub max_inflight_bytes: Option<u64>,
    /// Wanted ranges this close are read as one (default 64 KiB local, 1 MiB for URLs).
    pub max_gap: Option<u64>,
    /// List quantized weights as their stored tensors, read as they are.
    pub keep_packed: bool,
    /// URLs: a bearer token, sent to the URL's own origin only. None: $HF_TOKEN.
    pub token: Option<String>,
    /// Local files read past the page cache (O_DIRECT, as `OpenOptions::direct`): a cold model
    /// read once.
    pub direct: bool,
}

/// A direct plan (`PlanOptions::direct`) reads into a buffer without a bounce copy where the
/// buffer's address is congruent to its item's `StoredRange::offset` modulo this.
pub const DIRECT_ALIGNMENT: u64 = sys::TL_DIRECT_ALIGNMENT;

/// What one item of a plan holds once executed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PlanItem {
    pub shape: Vec<u64>,
    pub dtype: Dtype,
    pub byte_size: u64,
    /// Where its bytes are stored when they are one contiguous range of a file (a stored
    /// tensor whole, or a range of its leading rows).
    pub stored: Option<StoredRange>,
}

/// A range of one of the plan's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredRange {
    /// Index of the file (one, or a folder's shards in index order).
    pub file: usize,
    /// From the file's first byte.
    pub offset: u64,
}

/// A contiguous range of one file's data that executing the plan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedRead {
    /// Index of the file (one, or a folder's shards in index order).
    pub file: usize,
    /// Offset in the file's data buffer.
    pub offset: u64,
    pub length: u64,
}

/// A plan over one source: a file, a folder of weights, or a URL of either.
pub struct ReadPlan {
    raw: *mut sys::tl_plan,
}

// SAFETY: a plan is used by one thread at a time (&mut self for every call that changes it).
unsafe impl Send for ReadPlan {}

impl Drop for ReadPlan {
    fn drop(&mut self) {
        // SAFETY: the handle came from tl_plan_open_ex and is freed once.
        unsafe { sys::tl_plan_free(self.raw) }
    }
}

impl ReadPlan {
    pub fn open(source: impl AsRef<Path>, options: &PlanOptions) -> Result<ReadPlan> {
        let source = c_path(source.as_ref())?;
        let token = options.token.as_deref().map(c_name).transpose()?;
        let mut o = std::mem::MaybeUninit::<sys::tl_plan_options>::uninit();
        // SAFETY: tl_plan_options_init fills every field.
        let mut o = unsafe {
            sys::tl_plan_options_init(o.as_mut_ptr());
            o.assume_init()
        };
        if let Some(n) = options.max_inflight_bytes {
            o.max_inflight_bytes = n;
        }
        if let Some(gap) = options.max_gap {
            o.max_gap = i64::try_from(gap).unwrap_or(i64::MAX);
        }
        o.keep_packed = c_int::from(options.keep_packed);
        o.token = token.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        let mut raw = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path, initialised options whose token outlives the call.
        let flags = if options.direct {
            sys::TL_OPEN_DIRECT
        } else {
            0
        };
        check(unsafe { sys::tl_plan_open_ex(source.as_ptr(), &o, flags, &mut raw) })?;
        Ok(ReadPlan { raw })
    }

    /// Adds tensor `name`, its leading dimensions cut to `slice` (an `end` of `u64::MAX`: to
    /// the end of the dimension; empty: whole), and returns the item's index. `dtype`: a
    /// quantized weight's values (F32, F16 or BF16; None: its default); a stored tensor is
    /// copied as it is.
    pub fn add(&mut self, name: &str, slice: &[Range<u64>], dtype: Option<Dtype>) -> Result<usize> {
        let name = c_name(name)?;
        let starts: Vec<u64> = slice.iter().map(|r| r.start).collect();
        let stops: Vec<u64> = slice.iter().map(|r| r.end).collect();
        let mut item = 0usize;
        // SAFETY: a valid handle, a NUL-terminated name and two arrays of slice.len() values.
        check(unsafe {
            sys::tl_plan_add(
                self.raw,
                name.as_ptr(),
                slice.len(),
                starts.as_ptr(),
                stops.as_ptr(),
                dtype.map_or(-1, Dtype::raw),
                &mut item,
            )
        })?;
        Ok(item)
    }

    /// Item `index`'s shape, dtype and size.
    pub fn item(&self, index: usize) -> Result<PlanItem> {
        let mut info = std::mem::MaybeUninit::<sys::tl_plan_item_info>::uninit();
        // SAFETY: a valid handle; tl_plan_item fills `info` when it returns TL_OK.
        check(unsafe { sys::tl_plan_item(self.raw, index, info.as_mut_ptr()) })?;
        // SAFETY: filled above; its shape points into the plan, alive for this call.
        let info = unsafe { info.assume_init() };
        let shape = if info.rank == 0 {
            Vec::new()
        } else {
            // SAFETY: `rank` values at `shape`, owned by the plan.
            unsafe { std::slice::from_raw_parts(info.shape, info.rank) }.to_vec()
        };
        let (mut file, mut offset) = (0usize, 0u64);
        // SAFETY: a valid handle and two out-parameters; `index` was accepted just above.
        check(unsafe { sys::tl_plan_item_range(self.raw, index, &mut file, &mut offset) })?;
        let stored = (offset != u64::MAX).then_some(StoredRange { file, offset });
        Ok(PlanItem {
            shape,
            dtype: Dtype::from_raw(info.dtype)?,
            byte_size: info.byte_size,
            stored,
        })
    }

    /// Removes every item, keeping the files open: for loading in batches that each fit in
    /// memory. The next item added is item 0 again.
    pub fn clear(&mut self) -> Result<()> {
        // SAFETY: a valid handle.
        check(unsafe { sys::tl_plan_clear(self.raw) })
    }

    /// A dry run: the reads executing the plan makes, and the bytes its items receive.
    pub fn reads(&mut self) -> Result<(Vec<PlannedRead>, u64)> {
        let (mut count, mut wanted) = (0usize, 0u64);
        // SAFETY: a valid handle and two out-parameters.
        check(unsafe { sys::tl_plan_reads(self.raw, &mut count, &mut wanted) })?;
        let mut reads = Vec::with_capacity(count);
        for i in 0..count {
            let mut r = PlannedRead {
                file: 0,
                offset: 0,
                length: 0,
            };
            // SAFETY: i < count, from the tl_plan_reads call just made.
            check(unsafe {
                sys::tl_plan_read_at(self.raw, i, &mut r.file, &mut r.offset, &mut r.length)
            })?;
            reads.push(r);
        }
        Ok((reads, wanted))
    }

    /// Reads every item into the caller's buffers, one per item in item order, each exactly
    /// its `byte_size` (Err(InvalidArgument) otherwise, before any read). For a direct plan,
    /// a buffer whose address is congruent to its item's stored offset modulo
    /// DIRECT_ALIGNMENT is read into without a bounce copy.
    pub fn execute_into(&mut self, buffers: &mut [&mut [u8]]) -> Result<()> {
        let mut items = 0usize;
        while self.item(items).is_ok() {
            items += 1;
        }
        if buffers.len() != items {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{} buffers for a plan of {} items", buffers.len(), items),
            ));
        }
        for (index, buffer) in buffers.iter_mut().enumerate() {
            // SAFETY: `buffer.len()` writable bytes, borrowed until execute_into returns; the
            // library refuses a size other than the item's.
            check(unsafe {
                sys::tl_plan_set_destination(
                    self.raw,
                    index,
                    buffer.as_mut_ptr() as *mut c_void,
                    buffer.len(),
                )
            })?;
        }
        // SAFETY: a valid handle whose destinations all live in `buffers`.
        check(unsafe { sys::tl_plan_execute(self.raw) })
    }

    /// Reads every item, each into a buffer of its own (its bytes, little-endian as stored or
    /// dequantized), returned in item order.
    pub fn execute(&mut self) -> Result<Vec<Vec<u8>>> {
        let mut buffers = Vec::new();
        let mut index = 0usize;
        loop {
            let item = match self.item(index) {
                Ok(item) => item,
                Err(_) => break, // past the last item
            };
            let size = usize::try_from(item.byte_size).expect("an item that fits in memory");
            let mut buffer = vec![0u8; size];
            // SAFETY: `size` writable bytes, kept (in `buffers`) until execute returns.
            check(unsafe {
                sys::tl_plan_set_destination(
                    self.raw,
                    index,
                    buffer.as_mut_ptr() as *mut c_void,
                    size,
                )
            })?;
            buffers.push(buffer);
            index += 1;
        }
        // SAFETY: a valid handle whose destinations all live in `buffers`.
        check(unsafe { sys::tl_plan_execute(self.raw) })?;
        Ok(buffers)
    }
}
