"""Two GGUF files of the same tensors compared by gguf-py (run in build/oracle-venv):
`compare_ggufs.py A.gguf B.gguf` prints {"types": {name: [type in A, type in B]}, "differ": names
whose bytes differ (types equal), "file_type": [A's, B's]} as JSON."""
import json
import sys

import numpy as np
from gguf import GGUFReader

files = [GGUFReader(p) for p in sys.argv[1:3]]
tensors = [{t.name: t for t in f.tensors} for f in files]
assert tensors[0].keys() == tensors[1].keys(), sorted(tensors[0].keys() ^ tensors[1].keys())
types, differ = {}, []
for name, a in tensors[0].items():
    b = tensors[1][name]
    types[name] = [a.tensor_type.name, b.tensor_type.name]
    if a.tensor_type == b.tensor_type and not np.array_equal(np.asarray(a.data).view(np.uint8).reshape(-1),
                                                              np.asarray(b.data).view(np.uint8).reshape(-1)):
        differ.append(name)
file_type = [int(f.fields["general.file_type"].parts[-1][0]) for f in files]
print(json.dumps({"types": types, "differ": differ, "file_type": file_type}))
