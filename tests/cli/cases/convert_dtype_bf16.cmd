tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/bf16.safetensors --dtype bfloat16
tlio inspect TMP/bf16.safetensors --json
