tlio convert DATA/gguf/tiny_llama TMP/m.gguf --dtype q4_k_m
tlio slice TMP/m.gguf blk.0.ffn_up.weight[1:3,5:20] blk.0.attn_q.weight[2] output_norm.weight[-4:] --dry-run
tlio slice TMP/m.gguf blk.0.ffn_up.weight[1:3,5:20] blk.0.attn_q.weight[2] output_norm.weight[-4:] -o TMP/s.safetensors --dtype bf16
tlio cat TMP/s.safetensors blk.0.ffn_up.weight --slice 1,0:6
tlio cat TMP/m.gguf blk.0.ffn_up.weight --slice 2,5:11
tlio slice TMP/m.gguf output.weight[:,3:] token_embd.weight[5:,7:] --max-memory 1KiB -o TMP/a.safetensors
tlio slice TMP/m.gguf output.weight[:,3:] token_embd.weight[5:,7:] -o TMP/b.safetensors
tlio diff TMP/a.safetensors TMP/b.safetensors --rtol 0
tlio slice DATA/gguf/two_tensors.gguf q[1:,4:40] --dry-run --json
tlio slice TMP/m.gguf blk.0.ffn_up.weigth[0] -o TMP/x.safetensors
tlio slice TMP/m.gguf blk.0.ffn_up.weight[64] -o TMP/x.safetensors
tlio slice TMP/m.gguf blk.0.ffn_up.weight --keep-packed -o TMP/x.safetensors
tlio slice TMP/m.gguf output_norm.weight --dtype f16 -o TMP/x.safetensors
tlio slice TMP/m.gguf output.weight[:,3:] --max-memory 1KiB --dry-run
tlio slice TMP/m.gguf model.layers.0.mlp.up_proj.weight -o TMP/x.safetensors
