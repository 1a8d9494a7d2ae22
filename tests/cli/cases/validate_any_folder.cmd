tlio shard DATA/quant/tiny_model.safetensors TMP/f/sharded --max-size 2KB
tlio shard DATA/hf/mixed_spec15_dtypes.safetensors TMP/f/one --max-size 1GB
tlio validate TMP/f DATA/models
tlio inspect TMP/f --json
tlio inspect TMP/f/sharded
tlio validate TMP/f/sharded/model-00002-of-00003.safetensors TMP
