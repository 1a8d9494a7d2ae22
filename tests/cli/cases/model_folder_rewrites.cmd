tlio convert DATA/models/sharded TMP/f16 --dtype f16
tlio validate TMP/f16
tlio convert DATA/models/sharded TMP/f16 --json --drop norm
tlio convert DATA/models/sharded TMP/one.safetensors
tlio convert DATA/models/sharded - --dtype f16
tlio quantize DATA/models/sharded TMP/q --scheme nf4 --include weight
tlio dequantize TMP/q TMP/dq --dtype bf16 --json
tlio validate TMP/dq
tlio quantize DATA/models/sharded TMP/q2 --scheme nf4 --max-size 600B --json
tlio dequantize TMP/q2 TMP/q2 --max-size 1GB --json
tlio inspect TMP/q2
tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/x.safetensors --max-size 1GB
