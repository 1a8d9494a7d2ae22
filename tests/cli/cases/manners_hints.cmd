tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf5
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4 --quiet
tlio cat DATA/quant/tiny_model.safetensors model.norm.weigth
tlio inspect DATA/checkpoints/small_zip.pt --group
tlio shard DATA/quant/tiny_model.safetensors TMP/s
tlio metadata DATA/quant/tiny_model.safetensors -o TMP/x.safetensors
