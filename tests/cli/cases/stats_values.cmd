tlio stats DATA/quant/tiny_model.safetensors model.norm.weight model.embed_tokens.weight
tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme int4-g32-sym
tlio stats TMP/q.safetensors model.layers.0.self_attn.q_proj.weight
