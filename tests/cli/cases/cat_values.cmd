tlio cat DATA/hf/worked_example.safetensors w
tlio cat DATA/hf/worked_example.safetensors w --slice 1
tlio cat DATA/quant/tiny_model.safetensors model.embed_tokens.weight --slice -2:,0:4
tlio cat DATA/hf/mixed_spec15_dtypes.safetensors i64
tlio cat DATA/hf/worked_example.safetensors w --slice 5
