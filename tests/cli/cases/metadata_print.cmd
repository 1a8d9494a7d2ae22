tlio metadata DATA/hf/metadata_nonascii_value.safetensors
tlio metadata DATA/hf/dtype_F32.safetensors
tlio metadata DATA/hf/mixed_spec15_dtypes.safetensors --json
