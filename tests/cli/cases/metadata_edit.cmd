tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/a.safetensors
tlio metadata TMP/a.safetensors --set format=tensors
tlio metadata TMP/a.safetensors --set license=apache-2.0 --set "note=a = b" --delete format
tlio metadata TMP/a.safetensors --set format=pt -o TMP/b.safetensors --json
tlio metadata TMP/a.safetensors
tlio validate TMP/a.safetensors TMP/b.safetensors
