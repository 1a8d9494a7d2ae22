tlio report DATA/quant/tiny_model.safetensors
