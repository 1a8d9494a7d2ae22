tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int8 --nested
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --blocksize 48
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --include norm --storage i16
