"""llama.cpp's own converter on a folder, the second judge of tlio's GGUF exports:
`oracle_convert.py CONVERTER_DIR MODEL OUT.gguf TYPE [PRE]`, CONVERTER_DIR the release's
convert_hf_to_gguf.py with its conversion/ package and gguf-py (build/llama.cpp, from the source
bundle scripts/install-deps.sh unpacks). The converter names a BPE vocabulary's pre-tokenizer
by a hash of real vocabularies; for one trained in a test, PRE says which it stands for (tlio
finds the name from the pre-tokenizer's regex, and the test compares the two)."""
import runpy
import sys

source, model, out, outtype = sys.argv[1:5]
pre = sys.argv[5] if len(sys.argv) > 5 else ""
sys.path[:0] = [source, source + "/gguf-py"]
if pre:
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv = ["convert_hf_to_gguf.py", model, "--outfile", out, "--outtype", outtype]
runpy.run_path(source + "/convert_hf_to_gguf.py", run_name="__main__")
