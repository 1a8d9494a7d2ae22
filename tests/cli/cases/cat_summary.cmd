tlio cat DATA/bnb/fp4_bs64_bf16_64x96.expected.safetensors input
tlio cat DATA/bnb/fp4_bs64_bf16_64x96.safetensors model.layers.0.mlp.down_proj.weight
tlio cat DATA/bnb/fp4_bs64_bf16_64x96.expected.safetensors input --slice 1:3
tlio cat DATA/models/sharded '*.norm.weight' 'model.layers.0.*' --slice 0:1
tlio cat DATA/models/sharded --filter 'norm' --json
tlio cat DATA/models/sharded --filter 'nothing'
tlio cat DATA/models/sharded
