//! Read plans from Rust: slices equal the bytes cut from the whole, the dry run's reads, and a
//! quantized weight's slice equal to the same slice of its dequantized whole.
mod support;

use support::*;

/// O_DIRECT, whose value differs between x86-64 and aarch64.
const O_DIRECT: u32 = if cfg!(target_arch = "aarch64") {
    0o200000
} else {
    0o40000
};

/// Descriptors of this process open on `path` with O_DIRECT (/proc/self/fd's links and
/// fdinfo's octal flags; other tests' files, written at the same time, do not count).
fn direct_descriptors(path: &std::path::Path) -> usize {
    let path = std::fs::canonicalize(path).unwrap();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            if std::fs::read_link(e.path()).ok()? != path {
                return None;
            }
            let info =
                std::fs::read_to_string(format!("/proc/self/fdinfo/{}", e.file_name().to_str()?))
                    .ok()?;
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        .filter(|flags| flags & O_DIRECT != 0)
        .count()
}

/// Whether files in `dir` open with O_DIRECT (tmpfs before Linux 6.6 refuses it).
fn o_direct_works(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("probe");
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(O_DIRECT as i32)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn slices_reads_and_errors() {
    let dir = scratch("plan");
    let path = dir.join("m.safetensors");
    let values: Vec<f32> = (0..6 * 4).map(|i| i as f32).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut w = tlio::Writer::create(&path).unwrap();
    w.declare("m", tlio::Dtype::F32, &[6, 4]).unwrap();
    w.write("m", &bytes).unwrap();
    w.commit().unwrap();

    let options = tlio::PlanOptions {
        max_gap: Some(0),
        ..Default::default()
    };
    let mut plan = tlio::ReadPlan::open(&path, &options).unwrap();
    let rows = plan.add("m", &[2..4, 1..3], None).unwrap();
    let all = plan.add("m", &[], None).unwrap();
    let item = plan.item(rows).unwrap();
    assert_eq!(item.shape, vec![2, 2]);
    assert_eq!(item.dtype, tlio::Dtype::F32);
    let (reads, wanted) = plan.reads().unwrap();
    assert_eq!(wanted, 6 * 4 * 4); // the whole tensor, which the second item asks for
    assert_eq!(reads.len(), 1);
    let out = plan.execute().unwrap();
    assert_eq!(f32s(&out[rows]), vec![9.0, 10.0, 13.0, 14.0]);
    assert_eq!(out[all], bytes);

    let e = plan.add("absent", &[], None).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::NotFound);
    let e = plan.add("m", &[0..7], None).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);

    plan.clear().unwrap();
    assert!(plan.item(0).is_err());
    assert_eq!(plan.add("m", &[5..6], None).unwrap(), 0);
    assert_eq!(
        f32s(&plan.execute().unwrap()[0]),
        vec![20.0, 21.0, 22.0, 23.0]
    );
    assert!(tlio::ReadPlan::open(dir.join("absent.safetensors"), &options).is_err());

    // Past the page cache: the same bytes.
    let direct = tlio::PlanOptions {
        direct: true,
        ..Default::default()
    };
    assert_eq!(direct_descriptors(&path), 0);
    let mut plan = tlio::ReadPlan::open(&path, &direct).unwrap();
    if o_direct_works(&dir) {
        assert_eq!(direct_descriptors(&path), 1);
    }
    let rows = plan.add("m", &[2..4, 1..3], None).unwrap();
    let all = plan.add("m", &[], None).unwrap();
    let out = plan.execute().unwrap();
    assert_eq!(f32s(&out[rows]), vec![9.0, 10.0, 13.0, 14.0]);
    assert_eq!(out[all], bytes);

    // Where items stored as one range are, and buffers of the caller's placed as the file lays
    // them out (a direct plan reads into those without a copy).
    assert_eq!(plan.item(rows).unwrap().stored, None); // two ranges
    let stored = plan.item(all).unwrap().stored.unwrap();
    let file = std::fs::read(&path).unwrap();
    assert_eq!(stored.file, 0);
    assert_eq!(&file[stored.offset as usize..][..bytes.len()], &bytes[..]);
    let align = tlio::DIRECT_ALIGNMENT as usize;
    let mut block = vec![0u8; 2 * align + bytes.len()];
    let shift = (stored.offset as usize + align - block.as_ptr() as usize % align) % align;
    let rest = &mut block[shift..];
    let mut small = vec![0u8; 16];
    plan.execute_into(&mut [&mut small[..], &mut rest[..bytes.len()]])
        .unwrap();
    assert_eq!(f32s(&small), vec![9.0, 10.0, 13.0, 14.0]);
    assert_eq!(&rest[..bytes.len()], &bytes[..]);
    let e = plan.execute_into(&mut [&mut small[..]]).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    let e = plan
        .execute_into(&mut [&mut small[..], &mut rest[..8]])
        .err()
        .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn quantized_slice_equals_the_slice_of_the_whole() {
    let dir = scratch("plan_quantized");
    let src = dir.join("f32.safetensors");
    let values: Vec<f32> = (0..16 * 64)
        .map(|i| ((i * 37) % 100) as f32 / 50.0 - 1.0)
        .collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut w = tlio::Writer::create(&src).unwrap();
    w.declare("x", tlio::Dtype::F32, &[16, 64]).unwrap();
    w.write("x", &bytes).unwrap();
    w.commit().unwrap();
    let q = dir.join("nf4.safetensors");
    let options = tlio::QuantizeOptions {
        include: Some("x".into()),
        ..tlio::QuantizeOptions::new("nf4")
    };
    tlio::quantize_file(&src, &q, options).unwrap();

    let mut whole = tlio::ReadPlan::open(&q, &Default::default()).unwrap();
    whole.add("x", &[], Some(tlio::Dtype::F32)).unwrap();
    let whole = f32s(&whole.execute().unwrap()[0]);
    let mut plan = tlio::ReadPlan::open(&q, &Default::default()).unwrap();
    plan.add("x", &[3..5, 10..u64::MAX], Some(tlio::Dtype::F32))
        .unwrap();
    let got = f32s(&plan.execute().unwrap()[0]);
    let expected: Vec<f32> = (3..5)
        .flat_map(|r| (10..64).map(move |c| (r, c)))
        .map(|(r, c)| whole[r * 64 + c])
        .collect();
    assert_eq!(got, expected);
}
