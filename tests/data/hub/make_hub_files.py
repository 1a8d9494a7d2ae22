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
  gpt_oss_mxfp4.safetensors  e.gate_up_proj_blocks U8 [1, 2, 1, 16]: row 0 bytes 0x21 (codes 1, 2:
                         0.5, 1) times E8M0 128 (2), row 1 bytes 0xF8 (codes 8, 15: -0, -6) times
                         126 (0.5); read as e.gate_up_proj [1, 32, 2] (transformers' layout):
                         1, -0, 2, -3 repeated
  ct_nvfp4.safetensors   l.weight_packed U8 [1, 8]: 0x08 then 0x72 (codes 8, 0, then 2, 7: -0, 0,
                         then 1, 6), l.weight_scale E4M3 0x38 (1.0), l.weight_global_scale 0.5:
                         s = 1 / 0.5 = 2, so -0, 0, then 2, 12 repeated
  ct_pack_int4.safetensors  l.weight_packed I32 [2, 4], words 0x76543210, 0xFEDCBA98 twice a
                         row (4-bit fields 0..15, offset binary: -8..7), l.weight_shape I64
                         [2, 32] (4 words of 32 inputs: only 4 bits fit), l.weight_scale BF16
                         [2, 1] = 0.5: -4, -3.5, ..., 3.5 twice a row
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
write("gpt_oss_mxfp4.safetensors", {
    "e.gate_up_proj_blocks": ("U8", [1, 2, 1, 16], bytes([0x21] * 16 + [0xF8] * 16)),
    "e.gate_up_proj_scales": ("U8", [1, 2, 1], bytes([128, 126]))})
write("ct_nvfp4.safetensors", {
    "l.weight_packed": ("U8", [1, 8], bytes([0x08] + [0x72] * 7)),
    "l.weight_scale": ("F8_E4M3", [1, 1], bytes([0x38])),
    "l.weight_global_scale": ("F32", [1], struct.pack("<f", 0.5))})
write("ct_pack_int4.safetensors", {
    "l.weight_packed": ("I32", [2, 4], struct.pack("<8I", *[0x76543210, 0xFEDCBA98] * 4)),
    "l.weight_shape": ("I64", [2], struct.pack("<2q", 2, 32)),
    "l.weight_scale": ("BF16", [2, 1], struct.pack("<2H", 0x3F00, 0x3F00))})
