tlio validate DATA/bnb/nf4_bs64_f16_64x96_nested.safetensors DATA/bnb/fp4_bs64_bf16_64x96.safetensors DATA/bnb/int8_f16_64x96.safetensors
tlio inspect DATA/bnb/nf4_bs64_bf16_64x96_storage_bf16.safetensors
tlio dequantize DATA/bnb/nf4_bs32_f16_3x5x7_nested.safetensors TMP/d.safetensors
tlio inspect TMP/d.safetensors --json
