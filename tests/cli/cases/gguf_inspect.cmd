tlio inspect DATA/gguf/two_tensors.gguf
tlio inspect DATA/gguf/no_extension --json
tlio validate DATA/gguf/two_tensors.gguf DATA/gguf/no_extension
tlio inspect DATA/gguf/two_tensors.gguf --filter w
tlio validate DATA/gguf/truncated.gguf
