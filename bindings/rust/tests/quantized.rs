//! Quantized weights dequantize exactly as `tlio dequantize` writes them; quantize_file works.
mod support;

use support::*;

fn check_against_cli(src: &std::path::Path, dir: &std::path::Path) -> usize {
    let file = tlio::File::open(src).unwrap();
    let weights = file.quantized().unwrap();
    let out = dir.join("dequantized.safetensors");
    run_tlio(&[
        "dequantize".as_ref(),
        src.as_os_str(),
        out.as_os_str(),
        "--dtype".as_ref(),
        "F32".as_ref(),
    ]);
    let cli = tlio::File::open(&out).unwrap();
    for q in &weights {
        let ours = file.dequantize(q.name()).unwrap();
        let t = cli.tensor(q.name()).unwrap();
        assert_eq!(t.shape(), q.shape(), "{} {}", src.display(), q.name());
        assert_eq!(ours.len() as u64, q.numel());
        let theirs = cli.read_as_f32(q.name()).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&ours) == bits(&theirs),
            "{} {}: values differ",
            src.display(),
            q.name()
        );
    }
    weights.len()
}

#[test]
fn dequantize_equals_the_cli() {
    let dir = scratch("dequantize");
    let mut weights = 0;
    let mut schemes = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(data().join("bnb")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".safetensors") && !name.ends_with(".expected.safetensors") {
            for q in tlio::File::open(&path).unwrap().quantized().unwrap() {
                schemes.insert(q.scheme().to_string());
            }
            weights += check_against_cli(&path, &dir);
        }
    }
    // int4 made here from a plain model, through the Rust quantize_file.
    let int4 = dir.join("int4.safetensors");
    let mut calls = 0u32;
    let mut progress = |done: u64, total: u64| {
        assert!(done <= total);
        calls += 1;
    };
    let mut options = tlio::QuantizeOptions::new("int4-g32-sym");
    options.progress = Some(&mut progress);
    tlio::quantize_file(data().join("quant/tiny_model.safetensors"), &int4, options).unwrap();
    assert!(calls > 0);
    let int4_file = tlio::File::open(&int4).unwrap();
    let q = int4_file.quantized().unwrap();
    assert!(
        !q.is_empty()
            && q.iter()
                .all(|w| w.scheme() == "int4-g32-sym" && w.blocksize() == 32)
    );
    weights += check_against_cli(&int4, &dir);
    schemes.insert("int4-g32-sym".to_string());
    for s in ["nf4", "fp4", "int8"] {
        assert!(schemes.contains(s), "no {} golden", s);
    }
    assert!(weights >= 20, "{} weights", weights);
}

#[test]
fn quantize_options_are_checked() {
    let dir = scratch("quantize_options");
    let src = data().join("quant/tiny_model.safetensors");
    let out = dir.join("q.safetensors");
    let mut o = tlio::QuantizeOptions::new("int8");
    o.nested = true;
    let e = tlio::quantize_file(&src, &out, o).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(
        e.to_string()
            .contains("nested is an option of nf4, fp4, not of int8"),
        "{}",
        e
    );
    assert!(!out.exists());

    let mut o = tlio::QuantizeOptions::new("nf4");
    o.blocksize = Some(128);
    o.nested = true;
    o.storage = Some(tlio::Dtype::BF16);
    tlio::quantize_file(&src, &out, o).unwrap();
    let f = tlio::File::open(&out).unwrap();
    let q = f.quantized().unwrap();
    assert!(
        !q.is_empty()
            && q.iter()
                .all(|w| w.scheme() == "nf4" && w.blocksize() == 128 && w.nested())
    );

    let plain = dir.join("plain.safetensors");
    tlio::dequantize_file(&out, &plain, Some(tlio::Dtype::F16)).unwrap();
    let p = tlio::File::open(&plain).unwrap();
    assert!(p.quantized().unwrap().is_empty());
    assert_eq!(p.tensor(q[0].name()).unwrap().dtype(), tlio::Dtype::F16);
}

#[test]
fn mlx_affine_through_its_scheme_name() {
    // Bits and group in the name, as the C API takes it; 2 bits in groups of 32 is the one pair
    // the stored shapes fit (64 bits a group), so the file reads without its folder's config.
    // q_proj [8, 64] is quantized, down_proj's 30 inputs stay plain, as mlx-lm leaves them.
    let dir = scratch("mlx");
    let src = data().join("quant/tiny_model.safetensors");
    let out = dir.join("mlx.safetensors");
    tlio::quantize_file(
        &src,
        &out,
        tlio::QuantizeOptions::new("mlx-affine-2bit-g32"),
    )
    .unwrap();
    let file = tlio::File::open(&out).unwrap();
    let q = file.quantized().unwrap();
    let names: Vec<&str> = q.iter().map(|w| w.name()).collect();
    assert!(
        names.contains(&"model.layers.0.self_attn.q_proj.weight"),
        "{:?}",
        names
    );
    assert!(
        !names.contains(&"model.layers.0.mlp.down_proj.weight"),
        "{:?}",
        names
    );
    assert!(q
        .iter()
        .all(|w| w.scheme() == "mlx-affine-2bit-g32" && w.blocksize() == 32));
    assert_eq!(check_against_cli(&out, &dir), q.len());
    let bad = dir.join("bad.safetensors");
    let e = tlio::quantize_file(&src, &bad, tlio::QuantizeOptions::new("mlx-affine-7bit"))
        .err()
        .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::Unsupported, "{}", e);
    assert!(!bad.exists());
}

#[test]
fn a_malformed_quantized_weight_is_a_format_error() {
    let f = tlio::File::open(data().join("bnb_bad/bnb003_quant_map.safetensors")).unwrap();
    let e = f.quantized().err().unwrap();
    assert_eq!(
        (e.kind(), e.rule()),
        (tlio::ErrorKind::Format, Some("BNB-003")),
        "{}",
        e
    );
}

#[test]
fn folders_are_rewritten_shard_by_shard() {
    let dir = scratch("folders");
    let src = data().join("models/sharded");
    let (f16, q, restored) = (dir.join("f16"), dir.join("q"), dir.join("restored"));
    tlio::convert_folder(&src, &f16, Some(tlio::Dtype::F16), 0).unwrap();
    let m = tlio::Model::open(&f16).unwrap();
    let source = tlio::Model::open(&src).unwrap();
    assert_eq!(m.files().len(), source.files().len());
    for name in source.names() {
        assert_eq!(
            m.tensor(name).unwrap().dtype(),
            tlio::Dtype::F16,
            "{}",
            name
        );
        // F16 holds these values to within its rounding (2^-11 relative, 2^-25 among subnormals).
        let (a, b) = (
            source.read_as_f32(name).unwrap(),
            m.read_as_f32(name).unwrap(),
        );
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x - y).abs() <= x.abs() / 1024.0 + 3e-8),
            "{}",
            name
        );
    }
    let mut o = tlio::QuantizeOptions::new("nf4");
    o.include = Some("proj".into());
    tlio::quantize_folder(&f16, &q, o, 0).unwrap();
    let quantized: usize = tlio::Model::open(&q)
        .unwrap()
        .files()
        .iter()
        .map(|f| f.quantized().unwrap().len())
        .sum();
    assert_eq!(quantized, 2);
    tlio::dequantize_folder(&q, &restored, Some(tlio::Dtype::BF16), 0).unwrap();
    let r = tlio::Model::open(&restored).unwrap();
    assert_eq!(r.names().len(), source.names().len());
    // Nothing to quantize: an error, and the output folder left as it was.
    let mut o = tlio::QuantizeOptions::new("nf4");
    o.include = Some("^nothing$".into());
    let e = tlio::quantize_folder(&src, &restored, o, 0).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert_eq!(
        tlio::Model::open(&restored)
            .unwrap()
            .tensor("model.layers.0.mlp.down_proj.weight")
            .unwrap()
            .dtype(),
        tlio::Dtype::BF16
    );
    // Re-sharded: the quantized folder's four shards as one, then each module in its own.
    let one = dir.join("one");
    tlio::dequantize_folder(&q, &one, None, 1 << 30).unwrap();
    assert_eq!(tlio::Model::open(&one).unwrap().files().len(), 1);
    assert!(!one.join("model.safetensors.index.json").exists());
    let each = dir.join("each");
    let mut o = tlio::QuantizeOptions::new("nf4");
    o.include = Some("proj".into());
    tlio::quantize_folder(&one, &each, o, 1).unwrap();
    let m = tlio::Model::open(&each).unwrap();
    assert_eq!(m.files().len(), 4);
    assert_eq!(
        m.files()
            .iter()
            .map(|f| f.quantized().unwrap().len())
            .sum::<usize>(),
        2
    );
    tlio::convert_folder(&each, &each, Some(tlio::Dtype::F32), 1 << 30).unwrap();
    assert_eq!(tlio::Model::open(&each).unwrap().files().len(), 1);
}

/// The Hub's formats (read only): found under their logical names, their values known by hand
/// (tests/data/hub/make_hub_files.py), and equal to what `tlio dequantize` writes.
#[test]
fn hub_formats_read_dequantized() {
    let dir = scratch("hub");
    let cases: [(&str, &str, tlio::Dtype, Vec<f32>); 6] = [
        (
            "fp8_block.safetensors",
            "fp8-block128x128",
            tlio::Dtype::BF16,
            vec![224.0, 0.5, -224.0, 0.0, -0.0, 1.0 / 1024.0],
        ),
        (
            "awq_order.safetensors",
            "awq-4bit",
            tlio::Dtype::F16,
            (0..64).map(|i| (i / 8) as f32).collect(),
        ),
        (
            "gptq_sym.safetensors",
            "gptq-4bit",
            tlio::Dtype::F16,
            vec![0.25; 64],
        ),
        (
            "gpt_oss_mxfp4.safetensors",
            "mxfp4",
            tlio::Dtype::BF16,
            [1.0, -0.0, 2.0, -3.0].repeat(16),
        ),
        (
            "ct_nvfp4.safetensors",
            "nvfp4",
            tlio::Dtype::BF16,
            [vec![-0.0, 0.0], [2.0, 12.0].repeat(7)].concat(),
        ),
        (
            "ct_pack_int4.safetensors",
            "ct-int4-channel",
            tlio::Dtype::BF16,
            (0..64).map(|i| 0.5 * ((i % 16) as f32 - 8.0)).collect(),
        ),
    ];
    for (file, scheme, dtype, want) in cases {
        let path = data().join("hub").join(file);
        let f = tlio::File::open(&path).unwrap();
        let weights = f.quantized().unwrap();
        assert_eq!(weights.len(), 1, "{file}");
        assert_eq!(weights[0].scheme(), scheme);
        assert_eq!(weights[0].dtype(), dtype);
        let got = f.dequantize(weights[0].name()).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{file}");
        assert_eq!(check_against_cli(&path, &dir), 1);
    }
}

/// A folder's quantization_config says how its weights are read: compare_models passes each
/// folder's own (here 2x4 blocks where the file alone reads 128x128), compare_sets what it is given.
#[test]
fn a_folders_quantization_config_reaches_the_comparison() {
    let dir = scratch("hub-config").join("model");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        data().join("hub").join("fp8_block.safetensors"),
        dir.join("model.safetensors"),
    )
    .unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"architectures": ["X"], "model_type": "x", "quantization_config": {"quant_method": "fp8", "weight_block_size": [2, 4]}}"#,
    )
    .unwrap();
    let m = tlio::Model::open(&dir).unwrap();
    assert!(m
        .quantization_config()
        .contains("\"weight_block_size\": [2, 4]"));
    let r = tlio::compare_models(&m, &m, tlio::CompareOptions::default()).unwrap();
    assert!(r.equal);
    assert_eq!(r.tensors[0].a_dtype, "fp8-block2x4");
    let f = &m.files()[0];
    let alone = tlio::compare_sets(&[f], &[f], tlio::CompareOptions::default()).unwrap();
    assert_eq!(alone.tensors[0].a_dtype, "fp8-block128x128");
    let bad = tlio::compare_sets(
        &[f],
        &[f],
        tlio::CompareOptions {
            quantization_config_a: Some(r#"{"quant_method": "fp8", "weight_block_size": [1, 1]}"#),
            ..Default::default()
        },
    );
    assert_eq!(bad.unwrap_err().kind(), tlio::ErrorKind::Format);
}

#[test]
fn conversions_say_what_they_lost_and_cast_to_fp8_only_when_asked() {
    let dir = scratch("counting");
    let src = data().join("models/sharded");
    let lost =
        tlio::convert_folder_counting(&src, dir.join("bf16"), tlio::Dtype::BF16, 0, false).unwrap();
    assert_eq!(lost, tlio::LostValues::default());
    let e = tlio::convert_folder_counting(&src, dir.join("f8"), tlio::Dtype::F8_E4M3, 0, false)
        .unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("fp8-block"), "{}", e);
    tlio::convert_folder_counting(&src, dir.join("f8"), tlio::Dtype::F8_E4M3, 0, true).unwrap();
}

#[test]
fn rewrites_take_a_file_or_a_folder_and_the_library_says_which() {
    let dir = scratch("by-location");
    let folder = data().join("models/sharded");
    let file = folder.join("model-00001-of-00004.safetensors");
    // A file through the folder function, a folder through the file function.
    tlio::convert_folder(
        &file,
        dir.join("one-f16.safetensors"),
        Some(tlio::Dtype::F16),
        0,
    )
    .unwrap();
    let f = tlio::File::open(dir.join("one-f16.safetensors")).unwrap();
    assert!(f.tensors().iter().all(|t| t.dtype() != tlio::Dtype::F32));
    tlio::dequantize_file(&folder, dir.join("plain"), None).unwrap();
    assert!(dir.join("plain/model.safetensors.index.json").exists());
    // What a kind cannot take is refused, nothing written.
    let e = tlio::convert_folder(&file, dir.join("x"), None, 4096).unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("one file"), "{}", e);
    let e = tlio::convert_folder(&folder, dir.join("x.safetensors"), None, 0).unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    assert!(!dir.join("x.safetensors").exists());
}
