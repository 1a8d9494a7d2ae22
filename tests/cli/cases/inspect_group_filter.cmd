tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4
tlio inspect DATA/quant/tiny_model.safetensors TMP/q.safetensors --group
tlio inspect TMP/q.safetensors --filter proj
tlio inspect DATA/hf/many_1000.safetensors --group
tlio inspect DATA/hf/worked_example.safetensors DATA/hf/dtype_F32.safetensors --json
tlio inspect DATA/hf/worked_example.safetensors --filter "("
