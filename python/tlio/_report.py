"""tlio.report: the figures of a model's values (and their error against a source), as the
`tlio report` command computes them, optionally written as one self-contained HTML page."""
import json as _json
import os as _os

from . import _tlio


def report(model, against=None, *, html=None, filter="", bins=64, token=None):  # noqa: A002 - as --filter
    """The report of `model` (a file, model folder or GGUF file: a path or URL) as a dict, the
    document ``tlio report --json`` prints: ``model``, ``format``, ``reference``, ``parameters``,
    ``stored_size``, ``files``, ``types`` (parameters by dtype, scheme or ggml type),
    ``metadata``, ``only_in_model``, ``only_in_reference`` and ``tensors``: one dict per tensor
    with name, type, shape, elements, stored_bytes, layer, count, nan, inf, zero, min, max, mean,
    std, max_over_std, histogram (`bins` counts over [min, max]) and, with `against` (the source
    to compare with), ``error``: rmse, max_abs, cosine, sqnr_db (None where infinite). Values
    are read as ``tlio stats`` reads them, dequantized where quantized, on every core in bounded
    memory.

    `html`: a path (or URL) the HTML page is also written to, atomically. `filter`: a regex
    searched in names; only those are reported."""
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= 4096:
        raise ValueError(f"bins must be an int in 1..4096, not {bins!r}")
    text = _tlio.report(_os.fspath(model), "" if against is None else _os.fspath(against), str(filter), bins,
                        "" if html is None else _os.fspath(html), token or "")
    return _json.loads(text)
