tlio convert DATA/hf/mixed_spec15_dtypes.safetensors TMP/a.safetensors
tlio metadata TMP/a.safetensors --delete licence
tlio metadata TMP/a.safetensors --set format=pt --delete format
tlio metadata TMP/a.safetensors
tlio metadata TMP/a.safetensors --set novalue
