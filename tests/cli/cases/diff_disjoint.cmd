tlio diff DATA/hf/worked_example.safetensors DATA/hf/zero_size.safetensors
