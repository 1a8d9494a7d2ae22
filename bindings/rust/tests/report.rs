//! Reports: a model folder against its own F32 GGUF export (every tensor paired, exact), the
//! page written, progress called, and errors. The figures are checked against numpy in
//! python/tests/test_report.py.
mod support;

use support::*;

#[test]
fn a_folder_against_its_gguf_export() {
    let folder = data().join("gguf").join("tiny_llama");
    let dir = scratch("report");
    let gguf = dir.join("model.gguf");
    tlio::export_gguf(&folder, &gguf, "F32", &tlio::OpenOptions::default()).unwrap();
    let mut calls = 0u32;
    let mut count = |_: u64, _: u64| calls += 1;
    let r = tlio::report(
        &folder,
        tlio::ReportOptions {
            against: Some(&gguf),
            bins: Some(16),
            progress: Some(&mut count),
            ..Default::default()
        },
    )
    .unwrap();
    let json = r.json();
    assert!(json.contains("\"format\":\"model folder\""), "{json}");
    assert!(
        json.contains("\"reference\":\"blk.0.attn_k.weight\""),
        "{json}"
    );
    assert!(
        json.contains("\"only_in_model\":[],\"only_in_reference\":[]"),
        "{json}"
    );
    assert!(
        !json.contains("\"max_abs\":0."),
        "an F32 export is exact: {json}"
    );
    assert!(calls > 0);
    let page = dir.join("report.html");
    r.write_html(&page).unwrap();
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
}

#[test]
fn errors_are_results() {
    let e = tlio::report(
        data().join("nosuch.safetensors"),
        tlio::ReportOptions::default(),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::Io);
    let e = tlio::report(
        data().join("gguf").join("tiny_llama"),
        tlio::ReportOptions {
            bins: Some(0),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    let e = tlio::report(
        data().join("gguf").join("tiny_llama"),
        tlio::ReportOptions {
            filter: Some("("),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
}
