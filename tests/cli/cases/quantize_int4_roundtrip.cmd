tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int4-g32-sym
tlio inspect TMP/q.safetensors
tlio validate TMP/q.safetensors
tlio dequantize TMP/q.safetensors TMP/d.safetensors --dtype bf16
tlio inspect TMP/d.safetensors --json
