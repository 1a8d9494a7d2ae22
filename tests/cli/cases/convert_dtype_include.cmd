tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/x.safetensors --dtype F8_E4M3 --include "^f(16|32)$"
tlio inspect TMP/x.safetensors
