tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/f.safetensors --keep ^f --keep ^bool$ --drop ^f64$ --rename "^f(\d+)=float\1" --rename ^bool=mask
tlio inspect TMP/f.safetensors
tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/g.safetensors --dtype f16 --keep ^f --rename "^(.*)$=x.\1" --json
tlio convert DATA/bnb/nf4_bs128_bf16_33x17.safetensors TMP/q.safetensors --rename "^model\.layers\.=blocks."
tlio inspect TMP/q.safetensors
