tlio shard DATA/quant/tiny_model.safetensors TMP/shards --max-size 1KB
tlio merge TMP/shards TMP/merged.safetensors
tlio inspect TMP/merged.safetensors --json
