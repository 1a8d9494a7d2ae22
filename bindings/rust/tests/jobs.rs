//! Jobs of units from Rust: a folder converted as plan, units in any order and commit is the
//! folder the call without a job writes, byte for byte; a commit with a unit missing publishes
//! nothing, and abort removes the job.
mod support;

use std::path::Path;

use support::*;
use tlio::{Job, JobStep};

/// Every file of a folder, by name, with its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                b"<folder>".to_vec()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_folder_converted_as_units_is_the_folder_converted_whole() {
    let dir = scratch("jobs");
    let src = data().join("models/sharded");
    let (whole, units) = (dir.join("whole"), dir.join("units"));
    let convert = |to: &Path| tlio::convert_folder(&src, to, Some(tlio::Dtype::BF16), 0);
    convert(&whole).unwrap();
    let job = Job::new("rust-1");
    let n = job.plan(|| convert(&units)).unwrap();
    assert!(n >= 2, "{} units", n);
    for k in (0..n).rev() {
        job.step(JobStep::Unit(k), || convert(&units)).unwrap();
    }
    job.step(JobStep::Commit, || convert(&units)).unwrap();
    assert_eq!(contents(&units), contents(&whole));
    // Outside a step, the same call is the whole rewrite again.
    convert(&units).unwrap();
    assert_eq!(contents(&units), contents(&whole));
}

#[test]
fn a_commit_with_a_unit_missing_publishes_nothing() {
    let dir = scratch("jobs-missing");
    let src = data().join("models/sharded");
    let out = dir.join("out");
    let convert = || tlio::convert_folder(&src, &out, Some(tlio::Dtype::F16), 0);
    let job = Job::new("rust-2");
    job.plan(convert).unwrap();
    job.step(JobStep::Unit(0), convert).unwrap();
    let e = job.step(JobStep::Commit, convert).unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::Io, "{}", e);
    assert!(
        e.to_string()
            .contains("unit 1 of job rust-2 has not finished"),
        "{}",
        e
    );
    assert_eq!(contents(&out).len(), 1); // the staging folder only
    job.step(JobStep::Abort, convert).unwrap();
    assert!(contents(&out).is_empty());
    let bad = Job::new("no/slash");
    assert_eq!(
        bad.plan(convert).unwrap_err().kind(),
        tlio::ErrorKind::InvalidArgument
    );
}
