"""Writes the small Hub-format files of the C API and Rust tests (standard library only), each
with values known by hand (docs/quantization.md, "The Hub's formats"):
  fp8_block.safetensors  w.weight F8_E4M3 [2, 3] codes 7E 38 FE / 00 80 01 times one F32
                         w.weight_scale_inv [1, 1] = 0.5: 224, 0.5, -224 / 0, -0, 2^-10 (BF16)
  awq_order.safetensors  l.qweight I32 [8, 1] all 0x75316420 (AutoAWQ's order for columns 0..7
                         holding 0..7), l.qzeros 0, l.scales F16 ones [1, 8]: row n of the
                         [8, 8] weight is n everywhere
  gptq_sym.safetensors   l.qweight I32 [1, 8] all 0x99999999 (4-bit fields 9), l.qzeros [1, 1]
                         0x77777777 (v1 symmetric: zero point 8), l.scales F16 [1, 8] = 0.25:
                         every value of the [8, 8] weight is 0.25
Run: python3 make_hub_files.py (writes beside itself)."""
import json
import pathlib
import struct

HERE = pathlib.Path(__file__).parent


def write(name, tensors):
    header, blobs, offset = {}, [], 0
    for key, (dtype, shape, data) in tensors.items():
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    (HERE / name).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


write("fp8_block.safetensors", {
    "w.weight": ("F8_E4M3", [2, 3], bytes([0x7E, 0x38, 0xFE, 0x00, 0x80, 0x01])),
    "w.weight_scale_inv": ("F32", [1, 1], struct.pack("<f", 0.5))})
write("awq_order.safetensors", {
    "l.qweight": ("I32", [8, 1], struct.pack("<8I", *[0x75316420] * 8)),
    "l.qzeros": ("I32", [1, 1], struct.pack("<I", 0)),
    "l.scales": ("F16", [1, 8], struct.pack("<8e", *[1.0] * 8))})
write("gptq_sym.safetensors", {
    "l.qweight": ("I32", [1, 8], struct.pack("<8I", *[0x99999999] * 8)),
    "l.qzeros": ("I32", [1, 1], struct.pack("<I", 0x77777777)),
    "l.scales": ("F16", [1, 8], struct.pack("<8e", *[0.25] * 8))})
