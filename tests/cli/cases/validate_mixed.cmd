tlio validate DATA/hf/worked_example.safetensors DATA/bad/offsets_gap.safetensors DATA/bad/n_gt_max.safetensors DATA/none.safetensors
