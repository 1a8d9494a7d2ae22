tlio convert DATA/bad/utf8_bom.safetensors TMP/out.safetensors
