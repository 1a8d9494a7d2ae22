tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme nf4
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight[2:5,10:40] model.norm.weight[-3:] model.embed_tokens.weight[1,2] --dry-run
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight[2:5,10:40] model.norm.weight[-3:] model.embed_tokens.weight[1,2] -o TMP/s.safetensors --dtype bf16
tlio cat TMP/s.safetensors model.layers.0.self_attn.q_proj.weight --slice 0,0:5
tlio cat TMP/q.safetensors model.layers.0.self_attn.q_proj.weight --slice 2,10:15
tlio cat TMP/s.safetensors model.norm.weight
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight[1:7,3:] --max-memory 1KiB -o TMP/m.safetensors
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight[1:7,3:] -o TMP/n.safetensors
tlio diff TMP/m.safetensors TMP/n.safetensors --rtol 0
tlio slice DATA/models/sharded model.embed_tokens.weight[0:2] model.norm.weight --dry-run --json
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight.absmax --keep-packed -o TMP/p.safetensors
tlio slice TMP/q.safetensors model.embed_tokens.weigth[0] -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.embed_tokens.weight[::2] -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.embed_tokens.weight[0] model.embed_tokens.weight[1] -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.embed_tokens.weight[16] -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.layers.0.self_attn.q_proj.weight.absmax --dry-run
tlio slice TMP/q.safetensors model.norm.weight --dtype f16 -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.norm.weight --max-memory 1000 -o TMP/x.safetensors
tlio slice TMP/q.safetensors model.embed_tokens.weight[0]
