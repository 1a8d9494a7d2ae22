tlio
tlio help convert
tlio inspekt DATA/hf/worked_example.safetensors
tlio help nope
tlio inspect --jsn DATA/hf/worked_example.safetensors
tlio convert DATA/hf/worked_example.safetensors TMP/a.safetensors --dtype fp16
tlio convert DATA/hf/worked_example.safetensors TMP/b.safetensors --dtype fp12
