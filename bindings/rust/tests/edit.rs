//! edit_file: metadata in place, keep/drop/rename by rewrite, refusals that write nothing.
mod support;

use std::os::unix::fs::MetadataExt;

use support::*;

fn sample(path: &std::path::Path) {
    let mut w = tlio::Writer::create(path).unwrap();
    w.metadata("format", "pt").unwrap();
    let tensors = [("layers.0.w", [1.0f32, 2.0]), ("layers.1.w", [3.0, 4.0])];
    for (name, _) in &tensors {
        w.declare(name, tlio::Dtype::F32, &[2]).unwrap();
    }
    for (name, values) in &tensors {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        w.write(name, &bytes).unwrap();
    }
    w.commit().unwrap();
}

#[test]
fn metadata_in_place_and_tensors_by_rewrite() {
    let dir = scratch("edit");
    let src = dir.join("m.safetensors");
    sample(&src);
    let inode = std::fs::metadata(&src).unwrap().ino();
    let r = tlio::edit_file(
        &src,
        None,
        tlio::EditOptions {
            set_metadata: vec![("format".into(), "np".into())],
            ..Default::default()
        },
    )
    .unwrap();
    assert!(r.in_place);
    assert_eq!(std::fs::metadata(&src).unwrap().ino(), inode);
    assert_eq!(tlio::File::open(&src).unwrap().metadata()["format"], "np");

    let out = dir.join("out.safetensors");
    let mut calls = 0;
    let mut progress = |_done: u64, _total: u64| calls += 1;
    let r = tlio::edit_file(
        &src,
        Some(&out),
        tlio::EditOptions {
            drop: vec![r"^layers\.0\.".into()],
            rename: vec![(r"^layers\.(\d+)\.w$".into(), r"h\1".into())],
            progress: Some(&mut progress),
            ..Default::default()
        },
    )
    .unwrap();
    // A report is read field by field (#[non_exhaustive]: it may grow).
    assert_eq!(
        (r.kept, r.dropped, r.renamed, r.in_place, r.data_bytes),
        (1, 1, 1, false, 8)
    );
    assert!(calls >= 1);
    let f = tlio::File::open(&out).unwrap();
    assert_eq!(f.names(), vec!["h1"]);
    assert_eq!(f.read_as_f32("h1").unwrap(), vec![3.0, 4.0]);
}

#[test]
fn refusals_write_nothing() {
    let dir = scratch("edit-refused");
    let src = dir.join("m.safetensors");
    sample(&src);
    let before = std::fs::read(&src).unwrap();
    let out = dir.join("out.safetensors");
    let clash = tlio::edit_file(
        &src,
        Some(&out),
        tlio::EditOptions {
            rename: vec![(r"\d".into(), "".into())],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(clash.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(
        clash.to_string().contains("the same name \"layers..w\""),
        "{clash}"
    );
    let missing = tlio::edit_file(
        &src,
        Some(&out),
        tlio::EditOptions {
            delete_metadata: vec!["licence".into()],
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        missing.to_string().contains("no metadata key \"licence\""),
        "{missing}"
    );
    assert_eq!(std::fs::read(&src).unwrap(), before);
    assert!(!out.exists());
}

#[test]
fn compare_across_dtypes() {
    let dir = scratch("compare");
    let a = dir.join("a.safetensors");
    sample(&a);
    let b = dir.join("b.safetensors");
    let out = run_tlio(&[
        "convert".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "--dtype".as_ref(),
        "f16".as_ref(),
    ]);
    assert!(out.status.success(), "{:?}", out);
    let (fa, fb) = (tlio::File::open(&a).unwrap(), tlio::File::open(&b).unwrap());
    let same = tlio::compare_files(&fa, &fa, Default::default()).unwrap();
    assert!(same.equal);
    assert!(same.tensors.iter().all(|t| t.cosine == 1.0));
    // 1, 2, 3 and 4 are exact in F16: equal, with B's dtype named.
    let r = tlio::compare_files(&fa, &fb, Default::default()).unwrap();
    assert!(r.equal, "{r:?}");
    let names: Vec<&str> = r.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["layers.0.w", "layers.1.w"]);
    assert_eq!(
        (r.tensors[0].a_dtype.as_str(), r.tensors[0].b_dtype.as_str()),
        ("F32", "F16")
    );
    assert_eq!(r.tensors[0].shape, vec![2]);
    let bad = tlio::compare_files(
        &fa,
        &fb,
        tlio::CompareOptions {
            atol: -1.0,
            ..Default::default()
        },
    );
    assert_eq!(bad.unwrap_err().kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn a_folder_is_edited_shard_by_shard() {
    let out = scratch("edit-folder").join("model");
    let r = tlio::edit_file(
        data().join("models/sharded"),
        Some(&out),
        tlio::EditOptions {
            set_metadata: vec![("source".into(), "rust".into())],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.kept, 4);
    let m = tlio::Model::open(&out).unwrap();
    assert_eq!(m.files().len(), 4);
    for f in m.files() {
        assert_eq!(f.metadata()["source"], "rust");
    }
}

#[test]
fn folders_compare_as_one_namespace() {
    let sharded = tlio::Model::open(data().join("models/sharded")).unwrap();
    let one = tlio::File::open(data().join("quant/tiny_model.safetensors")).unwrap();
    let shards: Vec<&tlio::File> = sharded.files().iter().collect();
    let r = tlio::compare_sets(&shards, &[&one], Default::default()).unwrap();
    assert!(r.equal && r.only_in_a.is_empty() && r.only_in_b.is_empty());
    assert_eq!(r.tensors.len(), 4);
    let r = tlio::compare_models(
        &sharded,
        &sharded,
        tlio::CompareOptions {
            filter: Some("layers"),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.tensors.len(), 2);
    let bad = tlio::compare_sets(
        &shards,
        &[&one],
        tlio::CompareOptions {
            filter: Some("("),
            ..Default::default()
        },
    );
    assert_eq!(bad.err().unwrap().kind(), tlio::ErrorKind::InvalidArgument);
}
