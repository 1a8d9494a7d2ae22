tlio inspect DATA/hf/worked_example.safetensors --json
