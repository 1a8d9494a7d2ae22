tlio convert DATA/hf/worked_example.safetensors TMP/x.safetensors --dtype int7
