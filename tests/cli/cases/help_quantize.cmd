tlio quantize --help
tlio dequantize --help
