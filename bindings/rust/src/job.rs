//! Jobs of units (docs/jobs.md): a folder rewrite or checkpoint import split into units, one per
//! output shard, each run in any process on any machine that sees the output folder, then
//! published once.
//!
//! `Job::step` runs the folder calls `f` makes on this thread (`convert_folder`,
//! `quantize_folder`, `dequantize_folder`, `import_checkpoint` of a directory) as one step of the
//! job: give the same call with the same arguments to every step. Only calls on the calling
//! thread are steps (a call `f` hands to another thread, a rayon pool say, is the whole
//! rewrite), and steps do not nest: an inner `step` ends the outer one.
use crate::error::{check, Result};
use crate::file::c_name;
use crate::sys;

/// One step of a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStep {
    /// Decides the units and records them in the staging folder; `Job::plan` says how many.
    Plan,
    /// Writes unit k's output shard into the staging folder (a rerun rewrites it whole).
    Unit(u64),
    /// Publishes the folder: every byte what the call without a job writes.
    Commit,
    /// Removes the staging folder; the output folder stays as it was.
    Abort,
}

/// A job, named by its id (1 to 64 of A-Z a-z 0-9 - _), which names its staging folder in the
/// output folder.
#[derive(Clone, Debug)]
pub struct Job {
    id: String,
}

struct End;

impl Drop for End {
    fn drop(&mut self) {
        // SAFETY: clearing this thread's job takes no pointers.
        unsafe { sys::tl_job_end() }
    }
}

impl Job {
    pub fn new(id: impl Into<String>) -> Job {
        Job { id: id.into() }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs `f`, whose folder calls are this step of the job.
    pub fn step<R>(&self, step: JobStep, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let id = c_name(&self.id)?;
        let (code, unit) = match step {
            JobStep::Plan => (sys::TL_JOB_PLAN, 0),
            JobStep::Unit(k) => (sys::TL_JOB_UNIT, k),
            JobStep::Commit => (sys::TL_JOB_COMMIT, 0),
            JobStep::Abort => (sys::TL_JOB_ABORT, 0),
        };
        // SAFETY: `id` is a NUL-terminated string the library copies.
        check(unsafe { sys::tl_job_begin(id.as_ptr(), code, unit) })?;
        let _end = End;
        f()
    }

    /// The plan step of the call `f` makes: the number of units.
    pub fn plan<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<u64> {
        self.step(JobStep::Plan, f)?;
        // SAFETY: reads this thread's last plan's count.
        Ok(unsafe { sys::tl_job_units() })
    }
}
