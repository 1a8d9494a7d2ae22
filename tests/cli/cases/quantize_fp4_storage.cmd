tlio quantize DATA/quant/tiny_model.safetensors TMP/q.safetensors --scheme fp4 --blocksize 32 --storage bf16 --exclude down_proj
tlio inspect TMP/q.safetensors --json
tlio convert TMP/q.safetensors TMP/c.safetensors --dtype f16 --exclude q_proj
tlio dequantize TMP/c.safetensors TMP/d.safetensors --dtype bf16
tlio dequantize TMP/q.safetensors TMP/e.safetensors --dtype bf16
tlio diff TMP/d.safetensors TMP/e.safetensors
tlio inspect TMP/d.safetensors
tlio convert TMP/q.safetensors TMP/f.safetensors --dtype bf16
tlio diff TMP/f.safetensors TMP/e.safetensors
