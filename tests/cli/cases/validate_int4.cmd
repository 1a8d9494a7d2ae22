tlio validate DATA/hf/metadata_quant_two_keys.safetensors DATA/hf/tinyllm_int4_layout.safetensors
