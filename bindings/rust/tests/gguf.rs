//! GGUF files: listed, read (Q8_0 decoded here from the file's bytes as the reference), their
//! metadata, errors, and import to safetensors.
mod support;

use support::*;

/// An IEEE half's value (subnormals included).
fn f16_value(bits: u16) -> f32 {
    let (sign, exp, man) = (bits >> 15, (bits >> 10) & 0x1f, f32::from(bits & 0x3ff));
    let v = if exp == 0 {
        man * 2f32.powi(-24)
    } else {
        (1.0 + man / 1024.0) * 2f32.powi(i32::from(exp) - 15)
    };
    if sign == 1 {
        -v
    } else {
        v
    }
}

#[test]
fn lists_reads_and_imports_a_gguf() {
    let path = data().join("gguf").join("two_tensors.gguf");
    let g = tlio::Gguf::open(&path).unwrap();
    let tensors = g.tensors().unwrap();
    assert_eq!(tensors.len(), 2);
    let q = g.tensor("q").unwrap();
    assert_eq!(
        (q.type_name.as_str(), q.ggml_type, q.decodes),
        ("Q8_0", 8, true)
    );
    assert_eq!(
        (q.shape.clone(), q.elements, q.bytes),
        (vec![3, 32], 96, 102)
    );

    // Q8_0 by hand: three blocks of (fp16 scale, 32 int8 codes) at the data section (byte 320)
    // plus the tensor's offset (32).
    let bytes = std::fs::read(&path).unwrap();
    let mut want = Vec::new();
    for block in bytes[320 + 32..320 + 32 + 102].chunks(34) {
        let d = f16_value(u16::from_le_bytes([block[0], block[1]]));
        want.extend(block[2..].iter().map(|&c| f32::from(c as i8) * d));
    }
    assert_eq!(g.read_f32("q").unwrap(), want);
    let mut part = [0u8; 8];
    g.read_into("q", 33, tlio::Dtype::F32, &mut part).unwrap();
    assert_eq!(f32::from_le_bytes(part[..4].try_into().unwrap()), want[33]);

    assert_eq!(g.metadata("general.architecture").unwrap(), "llama");
    assert_eq!(g.metadata("llama.block_count").unwrap(), "2");
    assert_eq!(
        g.metadata("tokenizer.ggml.tokens").unwrap_err().kind(),
        tlio::ErrorKind::Unsupported
    );
    assert_eq!(
        g.metadata("nosuch").unwrap_err().kind(),
        tlio::ErrorKind::NotFound
    );
    assert_eq!(
        g.tensor("nosuch").unwrap_err().kind(),
        tlio::ErrorKind::NotFound
    );

    let out = scratch("gguf-import").join("out.safetensors");
    assert_eq!(
        tlio::import_gguf(&path, &out, tlio::Dtype::F32, &Default::default()).unwrap(),
        2
    );
    let f = tlio::File::open(&out).unwrap();
    let data = f.tensor("q").unwrap().data().to_vec();
    let got: Vec<f32> = data
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(f.metadata().get("llama.block_count"), Some(&"2"));
}

#[test]
fn reads_the_codebook_types_as_ggml_decodes_them() {
    // tests/data/gguf/codebooks: random blocks of each IQ1/IQ2/IQ3 type and their values as
    // libggml's dequantize_row_* gave them, kept as F32.
    let dir = data().join("gguf").join("codebooks");
    let g = tlio::Gguf::open(dir.join("codebooks.gguf")).unwrap();
    let want = tlio::File::open(dir.join("codebooks.expected.safetensors")).unwrap();
    for name in [
        "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m",
    ] {
        assert!(g.tensor(name).unwrap().decodes, "{}", name);
        let got: Vec<u8> = g
            .read_f32(name)
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(got, want.tensor(name).unwrap().data(), "{}", name);
    }
}

#[test]
fn a_truncated_gguf_is_a_format_error() {
    let err = tlio::Gguf::open(data().join("gguf").join("truncated.gguf"))
        .err()
        .unwrap();
    assert_eq!(err.kind(), tlio::ErrorKind::Format);
    assert_eq!(err.rule(), Some("gguf"));
}

#[test]
fn exports_a_hugging_face_folder() {
    let out = scratch("gguf-export").join("tiny.gguf");
    let src = data().join("gguf").join("tiny_llama");
    assert_eq!(
        tlio::export_gguf(&src, &out, "Q4_0", &Default::default()).unwrap(),
        12
    );
    let g = tlio::Gguf::open(&out).unwrap();
    assert_eq!(g.metadata("general.architecture").unwrap(), "llama");
    let q = g.tensor("blk.0.ffn_up.weight").unwrap();
    assert_eq!(
        (q.type_name.as_str(), q.shape.clone()),
        ("Q4_0", vec![64, 32])
    );
    assert_eq!(g.tensor("output_norm.weight").unwrap().type_name, "F32");
    // llama-quantize's Q4_0 gives output.weight Q6_K (rows of 32: Q8_0); --pure leaves it Q4_0.
    assert_eq!(g.tensor("output.weight").unwrap().type_name, "Q8_0");
    let pure = out.with_file_name("tiny-pure.gguf");
    tlio::export_gguf_with(&src, &pure, "Q4_0", true, false, 0, &Default::default()).unwrap();
    let p = tlio::Gguf::open(&pure).unwrap();
    assert_eq!(p.tensor("output.weight").unwrap().type_name, "Q4_0");
    // Requantized: Q4_0 weights are quantized already, so only with allow_requantize.
    let q8 = out.with_file_name("tiny-q8_0.gguf");
    let e = tlio::requantize_gguf(&out, &q8, "Q8_0", false, &Default::default()).unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument, "{}", e);
    assert!(!q8.exists());
    assert_eq!(
        tlio::requantize_gguf(&out, &q8, "Q8_0", true, &Default::default()).unwrap(),
        12
    );
    let again = tlio::Gguf::open(&q8).unwrap();
    assert_eq!(
        again.tensor("blk.0.ffn_up.weight").unwrap().type_name,
        "Q8_0"
    );
    assert_eq!(again.metadata("general.file_type").unwrap(), "7");
    // A slice (rows 10..13, columns 7..29 across Q4_0's blocks of 32): each row's elements.
    let whole = g.read_f32("blk.0.ffn_up.weight").unwrap();
    let mut cut = vec![0u8; 3 * 22 * 4];
    g.read_slice_into(
        "blk.0.ffn_up.weight",
        &[10..13, 7..29],
        tlio::Dtype::F32,
        &mut cut,
    )
    .unwrap();
    let got: Vec<f32> = cut
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<f32> = (10..13)
        .flat_map(|r| whole[r * 32 + 7..r * 32 + 29].to_vec())
        .collect();
    assert_eq!(got, want);
    let err = g
        .read_slice_into("blk.0.ffn_up.weight", &[10..65], tlio::Dtype::F32, &mut cut)
        .unwrap_err();
    assert_eq!(err.kind(), tlio::ErrorKind::InvalidArgument);
    // Compared with its folder, as `tlio diff` does: names pair across formats.
    let c = tlio::compare_locations(
        out.to_str().unwrap(),
        src.to_str().unwrap(),
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    assert!(!c.equal && c.only_in_a.is_empty() && c.only_in_b.is_empty());
    let up = c
        .tensors
        .iter()
        .find(|t| t.name == "blk.0.ffn_up.weight")
        .unwrap();
    assert_eq!(
        up.b_name.as_deref(),
        Some("model.layers.0.mlp.up_proj.weight")
    );
    assert!(up.compared && up.max_abs > 0.0 && up.cosine > 0.99 && up.a_dtype == "Q4_0");
    // Back to a Hugging Face folder: the F32 export read back as BF16 equals the original folder.
    tlio::export_gguf(&src, &out, "F32", &Default::default()).unwrap();
    let back = scratch("gguf-model-back").join("model");
    assert_eq!(
        tlio::import_gguf_model(&out, &back, tlio::Dtype::BF16, &Default::default()).unwrap(),
        12
    );
    let c = tlio::compare_locations(
        back.to_str().unwrap(),
        src.to_str().unwrap(),
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    assert!(c.equal && c.tensors.len() == 12 && c.tensors.iter().all(|t| t.b_name.is_none()));
    // In llama.cpp's split files of at most 50,000 tensor bytes each.
    let dir = scratch("gguf-split");
    assert_eq!(
        tlio::export_gguf_split(&src, dir.join("s.gguf"), "F32", 50_000, &Default::default())
            .unwrap(),
        12
    );
    let mut splits: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("s-"))
        .collect();
    splits.sort();
    assert!(
        splits.len() >= 3 && splits[0] == format!("s-00001-of-{:05}.gguf", splits.len()),
        "{splits:?}"
    );
    let set = tlio::Gguf::open(dir.join(&splits[0])).unwrap(); // the whole set, by its first file
    assert_eq!(
        set.metadata("split.count").unwrap(),
        splits.len().to_string()
    );
    assert_eq!(set.tensors().unwrap().len(), 12);
    assert!(tlio::Gguf::open(dir.join(&splits[1])).is_err()); // another file of a set: refused by name
                                                              // A mix: output.weight gets more bits (Q8_0: rows of 32 are not whole Q6_K super-blocks).
    assert_eq!(
        tlio::export_gguf(&src, &out, "Q4_K_M", &Default::default()).unwrap(),
        12
    );
    let g = tlio::Gguf::open(&out).unwrap();
    assert_eq!(g.metadata("general.file_type").unwrap(), "15");
    assert_eq!(g.tensor("output.weight").unwrap().type_name, "Q8_0");
    let err = tlio::export_gguf(&src, &out, "IQ2_XXS", &Default::default()).unwrap_err();
    assert_eq!(err.kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn stacks_experts_and_unstacks_them_back() {
    // tiny_qwen3moe: one layer of 4 experts; each part's experts become one 3-D tensor, expert 0
    // first, and the import makes them the folder's tensors again.
    let src = data().join("gguf").join("tiny_qwen3moe");
    let out = scratch("gguf-moe").join("moe.gguf");
    assert_eq!(
        tlio::export_gguf(&src, &out, "F32", &Default::default()).unwrap(),
        14
    );
    let g = tlio::Gguf::open(&out).unwrap();
    assert_eq!(g.metadata("general.architecture").unwrap(), "qwen3moe");
    assert_eq!(
        g.tensor("blk.0.ffn_up_exps.weight").unwrap().shape,
        vec![4, 32, 32]
    );
    let back = scratch("gguf-moe-back").join("model");
    assert_eq!(
        tlio::import_gguf_model(&out, &back, tlio::Dtype::BF16, &Default::default()).unwrap(),
        23
    );
    let c = tlio::compare_locations(
        back.to_str().unwrap(),
        src.to_str().unwrap(),
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    assert!(c.equal && c.tensors.len() == 23);
    // A mix takes experts too, as llama-quantize gives them their types.
    assert_eq!(
        tlio::export_gguf(&src, &out, "Q4_K_M", &Default::default()).unwrap(),
        14 // the GGUF's tensors: experts stacked
    );
}

#[test]
fn copies_gpt_oss_mxfp4_experts_as_ggml_mxfp4() {
    // tiny_gptoss_mxfp4: one layer of 4 experts as OpenAI ships them (MXFP4 blocks and scales,
    // gate and up interleaved): three MXFP4 tensors whatever the rest is written in.
    let src = data().join("gguf").join("tiny_gptoss_mxfp4");
    let out = scratch("gguf-oss").join("oss.gguf");
    assert_eq!(
        tlio::export_gguf(&src, &out, "Q8_0", &Default::default()).unwrap(),
        22
    );
    let g = tlio::Gguf::open(&out).unwrap();
    assert_eq!(g.metadata("general.architecture").unwrap(), "gpt-oss");
    let gate = g.tensor("blk.0.ffn_gate_exps.weight").unwrap();
    assert_eq!(
        (gate.type_name.as_str(), gate.shape.clone()),
        ("MXFP4", vec![4, 32, 32])
    );
    assert_eq!(g.tensor("blk.0.attn_q.weight").unwrap().type_name, "Q8_0");
    assert_eq!(g.metadata("gpt-oss.rope.scaling.type").unwrap(), "yarn");
    // Back to a folder from F32: the experts put back together, MXFP4 as OpenAI's blocks.
    assert_eq!(
        tlio::export_gguf(&src, &out, "F32", &Default::default()).unwrap(),
        22
    );
    let back = scratch("gguf-oss-back").join("model");
    assert_eq!(
        tlio::import_gguf_model(&out, &back, tlio::Dtype::F32, &Default::default()).unwrap(),
        22
    );
    let c = tlio::compare_locations(
        back.to_str().unwrap(),
        src.to_str().unwrap(),
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    assert!(c.equal);
}

#[test]
fn transcodes_a_q4_0_gguf_to_mlx() {
    let dir = scratch("transcode_q4_0");
    let (gguf, out) = (dir.join("q4_0.gguf"), dir.join("mlx"));
    let options = tlio::OpenOptions::default();
    tlio::export_gguf(
        data().join("gguf").join("tiny_llama"),
        &gguf,
        "Q4_0",
        &options,
    )
    .unwrap();
    let r = tlio::transcode(&gguf, &out, "mlx", false, tlio::Dtype::BF16, &options).unwrap();
    assert_eq!(
        (r.carried, r.requantized, r.plain, r.max_rmse),
        (9, 0, 3, 0.0)
    );
    // Each weight's values are the GGUF's (a -0 may be +0): ffn_up's rows are in the same order.
    let f = tlio::File::open(out.join("model.safetensors")).unwrap();
    let got = f.dequantize("model.layers.0.mlp.up_proj.weight").unwrap();
    let want = tlio::Gguf::open(&gguf)
        .unwrap()
        .read_f32("blk.0.ffn_up.weight")
        .unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits() || (*a == 0.0 && *b == 0.0)));
    let err = tlio::transcode(
        &gguf,
        dir.join("x"),
        "onnx",
        false,
        tlio::Dtype::BF16,
        &options,
    )
    .unwrap_err();
    assert_eq!(err.kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn transcodes_an_mlx_mxfp4_folder_to_gguf() {
    let dir = scratch("transcode_mxfp4");
    let (mlx, gguf) = (dir.join("mlx"), dir.join("mxfp4.gguf"));
    let options = tlio::OpenOptions::default();
    tlio::quantize_folder(
        data().join("gguf").join("tiny_llama"),
        &mlx,
        tlio::QuantizeOptions::new("mlx-mxfp4"),
        0,
    )
    .unwrap();
    let r = tlio::transcode(&mlx, &gguf, "gguf", false, tlio::Dtype::F16, &options).unwrap();
    assert_eq!(
        (r.carried, r.requantized, r.plain, r.zero_signs),
        (9, 0, 3, 0)
    );
    let g = tlio::Gguf::open(&gguf).unwrap();
    assert_eq!(g.tensor("blk.0.ffn_up.weight").unwrap().type_name, "MXFP4");
    // ffn_up's rows are in the same order both sides: the values MLX's layout holds.
    let want = tlio::File::open(mlx.join("model.safetensors"))
        .unwrap()
        .dequantize("model.layers.0.mlp.up_proj.weight")
        .unwrap();
    assert_eq!(g.read_f32("blk.0.ffn_up.weight").unwrap(), want);
    // As compressed-tensors' layout: the Linear weights carried, the embedding as BF16.
    let r = tlio::transcode(
        &mlx,
        dir.join("ct"),
        "compressed-tensors",
        false,
        tlio::Dtype::BF16,
        &options,
    )
    .unwrap();
    assert_eq!((r.carried, r.requantized, r.plain), (8, 0, 4));
    let ct = tlio::File::open(dir.join("ct").join("model.safetensors")).unwrap();
    assert_eq!(
        ct.dequantize("model.layers.0.mlp.up_proj.weight").unwrap(),
        want
    );
    // A GGUF is not a folder to carry into GGUF.
    let err = tlio::transcode(
        &gguf,
        dir.join("x.gguf"),
        "gguf",
        false,
        tlio::Dtype::F16,
        &options,
    )
    .unwrap_err();
    assert_eq!(err.kind(), tlio::ErrorKind::Unsupported);
}
