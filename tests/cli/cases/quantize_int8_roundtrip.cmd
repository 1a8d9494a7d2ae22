tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int8
tlio inspect TMP/q.safetensors
tlio dequantize TMP/q.safetensors TMP/d.safetensors
tlio inspect TMP/d.safetensors
