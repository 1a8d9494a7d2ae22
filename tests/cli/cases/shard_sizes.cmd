tlio shard DATA/quant/tiny_model.safetensors TMP/s --max-size 5GB
tlio shard DATA/quant/tiny_model.safetensors TMP/s --max-size 5XB
