tlio hash DATA/hf/worked_example.safetensors DATA/hf/mixed_spec15_dtypes.safetensors
tlio verify DATA/hf/worked_example.safetensors --sha256 0183D3FE12FAB76FEC1B436D6D591FE2352EF788DE2E6168C6E840B48383CB60
tlio verify DATA/hf/worked_example.safetensors --sha256 0000000000000000000000000000000000000000000000000000000000000000
tlio verify DATA/hf/worked_example.safetensors --sha256 12ab
tlio verify DATA/hf
