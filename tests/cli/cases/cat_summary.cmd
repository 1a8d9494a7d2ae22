tlio cat DATA/bnb/fp4_bs64_bf16_64x96.expected.safetensors input
tlio cat DATA/bnb/fp4_bs64_bf16_64x96.safetensors model.layers.0.mlp.down_proj.weight
tlio cat DATA/bnb/fp4_bs64_bf16_64x96.expected.safetensors input --slice 1:3
