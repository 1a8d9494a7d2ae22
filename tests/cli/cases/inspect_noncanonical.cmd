tlio inspect DATA/realfiles/hf-safetensors-pr84-samples/overall.safetensors
