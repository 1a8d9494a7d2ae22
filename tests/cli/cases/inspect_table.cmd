tlio inspect DATA/hf/mixed_names_and_dtypes.safetensors
