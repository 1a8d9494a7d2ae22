tlio stats DATA/models/sharded model.norm.weight
tlio cat DATA/models/sharded model.layers.0.mlp.down_proj.weight --slice 0,0:4
tlio metadata DATA/models/sharded
tlio diff DATA/models/sharded DATA/quant/tiny_model.safetensors
tlio metadata DATA/models/sharded --set a=b -o TMP/edited
tlio metadata TMP/edited
tlio metadata TMP/edited --delete a --set b=c
tlio metadata TMP/edited/model-00002-of-00004.safetensors
tlio diff TMP/edited DATA/models/sharded
tlio metadata TMP/edited --delete a
tlio cat DATA/models/sharded nope
tlio stats DATA/models/sharded '*.norm.weight' --json
tlio stats DATA/models/sharded --filter 'proj'
tlio diff DATA/models/sharded DATA/quant/tiny_model.safetensors --filter 'layers' --all
tlio stats DATA/models/sharded 'nothing*'
