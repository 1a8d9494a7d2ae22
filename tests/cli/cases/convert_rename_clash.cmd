tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/f.safetensors --rename "\d+$="
tlio inspect TMP/f.safetensors
