tlio convert DATA/gguf/two_tensors.gguf TMP/t.safetensors --dtype f32
tlio cat TMP/t.safetensors q --json
tlio convert DATA/gguf/two_tensors.gguf TMP/folder
