//! PyTorch checkpoints: imported as torch.load reads them; code-running pickles refused.
mod support;

use support::*;

/// `got` holds exactly `expected`'s tensors: names, dtypes, shapes and bytes.
fn assert_same_tensors(got: &tlio::File, expected: &tlio::File) {
    assert_eq!(got.len(), expected.len());
    for t in expected.tensors() {
        let g = got.tensor(t.name()).unwrap();
        assert_eq!(
            (g.dtype(), g.shape(), g.data()),
            (t.dtype(), t.shape(), t.data()),
            "{}",
            t.name()
        );
    }
}

#[test]
fn imports_what_torch_load_returns() {
    for name in ["small_zip", "small_legacy"] {
        let out = scratch(&format!("import-{}", name)).join("out.safetensors");
        let src = data().join("checkpoints").join(format!("{}.pt", name));
        assert_eq!(
            tlio::import_checkpoint(&src, &out, &Default::default()).unwrap(),
            7
        );
        let got = tlio::File::open(&out).unwrap();
        let expected = tlio::File::open(
            data()
                .join("checkpoints")
                .join(format!("{}.expected.safetensors", name)),
        )
        .unwrap();
        assert_same_tensors(&got, &expected);
    }
    let out = scratch("import-key").join("out.safetensors");
    let src = data().join("checkpoints/small_zip.pt");
    assert_eq!(
        tlio::import_checkpoint(
            &src,
            &out,
            &tlio::ImportOptions {
                key: Some("state_dict.ids"),
                ..Default::default()
            }
        )
        .unwrap(),
        1
    );
}

#[test]
fn imports_a_distributed_checkpoint_as_torch_reads_it_back() {
    let out = scratch("import-dcp").join("model");
    let options = tlio::ImportOptions {
        import_all: true,
        ..Default::default()
    };
    let src = data().join("dcp/two_ranks");
    assert_eq!(tlio::import_checkpoint(&src, &out, &options).unwrap(), 33);
    let got = tlio::File::open(out.join("model.safetensors")).unwrap();
    let expected = tlio::File::open(data().join("dcp/two_ranks.expected.safetensors")).unwrap();
    assert_same_tensors(&got, &expected);
}

#[test]
fn imports_floating_tensors_in_the_dtype_asked() {
    let out = scratch("import-bf16").join("out.safetensors");
    let src = data().join("checkpoints/small_zip.pt");
    let options = tlio::ImportOptions {
        dtype: Some(tlio::Dtype::BF16),
        ..Default::default()
    };
    assert_eq!(tlio::import_checkpoint(&src, &out, &options).unwrap(), 7);
    let got = tlio::File::open(&out).unwrap();
    let expected =
        tlio::File::open(data().join("checkpoints/small_zip.expected.safetensors")).unwrap();
    for t in expected.tensors() {
        let g = got.tensor(t.name()).unwrap();
        let floating = matches!(
            t.dtype(),
            tlio::Dtype::F32 | tlio::Dtype::F16 | tlio::Dtype::BF16
        );
        assert_eq!(
            g.dtype(),
            if floating {
                tlio::Dtype::BF16
            } else {
                t.dtype()
            },
            "{}",
            t.name()
        );
        if floating {
            // BF16 rounds the F32 value to nearest even (finite values here).
            let want: Vec<f32> = expected
                .read_as_f32(t.name())
                .unwrap()
                .iter()
                .map(|v| {
                    let bits = v.to_bits();
                    f32::from_bits(((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) << 16)
                })
                .collect();
            assert_eq!(got.read_as_f32(t.name()).unwrap(), want, "{}", t.name());
        }
    }
    let e = tlio::import_checkpoint(
        &src,
        &out,
        &tlio::ImportOptions {
            dtype: Some(tlio::Dtype::I32),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn code_running_pickle_is_refused() {
    let out = scratch("import-evil").join("out.safetensors");
    let e = tlio::import_checkpoint(
        data().join("checkpoints/evil_os_system.pt"),
        &out,
        &Default::default(),
    )
    .unwrap_err();
    assert_eq!(
        (e.kind(), e.rule()),
        (tlio::ErrorKind::Format, Some("pickle"))
    );
    assert!(e.message().contains("posix.system"), "{}", e.message());
    assert!(!out.exists());
}
