tlio validate DATA/hf/worked_example.safetensors DATA/bad/dim_negative.safetensors --json
tlio stats DATA/quant/tiny_model.safetensors model.norm.weight --json
tlio cat DATA/hf/mixed_spec15_dtypes.safetensors bool --json
tlio cat DATA/hf/mixed_spec15_dtypes.safetensors i8 --json
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int4-g8-sym --json
tlio dequantize TMP/q.safetensors TMP/d.safetensors --json
tlio shard DATA/quant/tiny_model.safetensors TMP/s --max-size 3KB --json
tlio merge TMP/s TMP/m.safetensors --json
tlio inspect DATA/hf/worked_example.safetensors DATA/nothing.safetensors --json
tlio convert DATA/nothing.safetensors TMP/x.safetensors --json
