tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/braces.safetensors --keep ^f --rename "^f(16|32)$=x{}.\1" --rename "^f64$=x{}.7.{}"
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4
tlio inspect DATA/quant/tiny_model.safetensors TMP/q.safetensors --group
tlio inspect TMP/q.safetensors --filter proj
tlio inspect DATA/hf/many_1000.safetensors --group
tlio inspect DATA/hf/worked_example.safetensors DATA/hf/dtype_F32.safetensors --json
tlio inspect DATA/hf/worked_example.safetensors --filter "("
tlio inspect TMP/braces.safetensors --group
