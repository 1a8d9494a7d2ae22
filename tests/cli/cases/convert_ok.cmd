tlio convert DATA/realfiles/hf-safetensors-pr84-samples/overall.safetensors TMP/out.safetensors
tlio validate TMP/out.safetensors
