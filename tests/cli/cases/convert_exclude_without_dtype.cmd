tlio convert DATA/hf/worked_example.safetensors TMP/x.safetensors --exclude w
