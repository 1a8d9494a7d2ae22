tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/f.safetensors --rename "^(f)=\2"
tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/f.safetensors --keep ^nothing
tlio convert DATA/bnb/nf4_bs128_bf16_33x17.safetensors TMP/q.safetensors --drop absmax
tlio convert DATA/bnb/nf4_bs128_bf16_33x17.safetensors TMP/q.safetensors --keep quant_map
tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/f.safetensors --rename norule
