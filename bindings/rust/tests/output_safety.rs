//! Outputs that are not files are refused; a check that says stop interrupts a write and
//! leaves nothing behind.
mod support;

use std::cell::Cell;
use std::process::Command;

use support::*;

#[test]
fn a_fifo_is_refused_untouched() {
    let dir = scratch("output_safety_fifo");
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = tlio::Writer::create(&fifo)
        .err()
        .expect("a FIFO accepted as an output");
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(e.message().contains("is a FIFO, not a file"), "{}", e);
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let e = tlio::Writer::create(&dir)
        .err()
        .expect("a directory accepted as an output");
    assert_eq!(e.kind(), tlio::ErrorKind::Io);
    assert_eq!(e.raw_os_error(), Some(21)); // EISDIR
}

#[test]
fn an_interrupted_write_leaves_nothing() {
    let dir = scratch("output_safety_interrupt");
    let out = dir.join("out.safetensors");
    let _ = std::fs::remove_file(&out);
    let data = vec![0u8; 1 << 20];
    let asked = Cell::new(0);
    let result = tlio::with_interrupt_check(
        || {
            asked.set(asked.get() + 1);
            true
        },
        || -> tlio::Result<()> {
            let mut w = tlio::Writer::create(&out)?;
            w.declare("w", tlio::Dtype::U8, &[data.len() as u64])?;
            w.write("w", &data)?;
            w.commit()
        },
    );
    let e = result.err().expect("not interrupted");
    assert_eq!(e.kind(), tlio::ErrorKind::Interrupted, "{}", e);
    assert!(asked.get() >= 1);
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "something was left in {:?}",
        dir
    );
    // Outside the check, the same write completes.
    let mut w = tlio::Writer::create(&out).unwrap();
    w.declare("w", tlio::Dtype::U8, &[data.len() as u64])
        .unwrap();
    w.write("w", &data).unwrap();
    w.commit().unwrap();
    tlio::remove_temporary_files();
    assert!(out.exists());
}
