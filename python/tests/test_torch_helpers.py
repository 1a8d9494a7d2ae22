"""tlio.torch's copies of the safetensors package's private helpers that transformers and
accelerate import (_find_shared_tensors, _remove_duplicate_names, _is_complete, _end_ptr): tied
weights, views, meta and empty tensors. Needs Debian's python3-torch."""
import collections

import pytest
import torch

import tlio
import tlio.torch
from tlio.torch import _end_ptr, _find_shared_tensors, _is_complete, _remove_duplicate_names


class TiedLinears(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 3)
        self.b = torch.nn.Linear(3, 3)
        self.b.weight = self.a.weight  # tied


def grid():
    """A 4x4 float32 tensor: 64 bytes, 16 per row."""
    return torch.arange(16, dtype=torch.float32).reshape(4, 4)


def as_sets(groups):
    return {frozenset(g) for g in groups}


def test_tied_weights_are_one_group_and_every_other_tensor_its_own():
    state = TiedLinears().state_dict()
    assert list(state) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    # In the order each storage first appears in the state dict, as the package gives them.
    assert _find_shared_tensors(state) == [{"a.weight", "b.weight"}, {"a.bias"}, {"b.bias"}]
    removed = _remove_duplicate_names(state)
    assert isinstance(removed, collections.defaultdict)  # as the package's
    assert removed == {"a.weight": ["b.weight"]}


def test_preferred_and_discarded_names_choose_the_kept_one():
    state = TiedLinears().state_dict()
    assert _remove_duplicate_names(state, preferred_names=["b.weight"]) == {"b.weight": ["a.weight"]}
    assert _remove_duplicate_names(state, discard_names=["a.weight"]) == {"b.weight": ["a.weight"]}
    # A preferred name wins over a discarded one, even the same name.
    assert _remove_duplicate_names(state, preferred_names=["a.weight"],
                                   discard_names=["a.weight"]) == {"a.weight": ["b.weight"]}
    # Discarding every complete name keeps the first of them anyway.
    assert _remove_duplicate_names(state, discard_names=["a.weight", "b.weight"]) == {
        "a.weight": ["b.weight"]}
    # Names not in a group, or not covering its storage, are not kept for preferring them.
    base = grid()
    views = {"base": base, "row": base[1], "all": base}
    assert _remove_duplicate_names(views, preferred_names=["row", "a.weight"]) == {
        "all": ["base", "row"]}
    assert _remove_duplicate_names(views, preferred_names=["base"]) == {"base": ["all", "row"]}


def test_views_group_where_their_bytes_overlap():
    base = grid()
    # Disjoint halves of one storage share nothing: a group each, in address order.
    assert _find_shared_tensors({"bottom": base[2:], "top": base[:2]}) == [{"top"}, {"bottom"}]
    # Overlapping slices (row 2 in both) are one group.
    assert _find_shared_tensors({"x": base[0:3], "y": base[2:4]}) == [{"x", "y"}]
    # Every slice overlaps the whole tensor.
    assert _find_shared_tensors({"base": base, "top": base[:2], "bottom": base[2:]}) == [
        {"base", "top", "bottom"}]
    assert _remove_duplicate_names({"base": base, "top": base[:2], "bottom": base[2:]}) == {
        "base": ["bottom", "top"]}
    # Rows 1 and 3 overlap only the whole tensor, not each other: still one group. (The
    # package compares each range with the previous one only and puts r3 in a group of its own.)
    assert _find_shared_tensors({"all": base, "r1": base[1:2], "r3": base[3:4]}) == [
        {"all", "r1", "r3"}]
    # A transposed view covers the whole storage too: either name can be kept.
    assert _remove_duplicate_names({"wt": base.t(), "w": base}) == {"w": ["wt"]}
    # A copy shares nothing.
    assert _find_shared_tensors({"base": base, "copy": base.clone()}) == [{"base"}, {"copy"}]


def test_no_name_covering_the_storage_is_a_runtime_error():
    base = grid()
    with pytest.raises(RuntimeError, match=r"\['x', 'y'\] share a storage of 64 bytes but none "
                                           r"covers all of it"):
        _remove_duplicate_names({"x": base[0:3], "y": base[2:4]})
    # A lone view of part of a storage is a group too, and raises, as in the package.
    with pytest.raises(RuntimeError, match=r"tensor 'top' views 32 of the 64 bytes"):
        _remove_duplicate_names({"top": base[:2], "bottom": base[2:]})


def test_save_model_saves_lone_views_and_drops_tied_names(tmp_path):
    # Unlike the package's save_model, which refuses views that no name covers the storage of
    # (through _remove_duplicate_names), tlio's saves them: only groups of two or more drop names.
    base = grid()
    model = torch.nn.Module()
    model.top = torch.nn.Parameter(base[:2])
    model.bottom = torch.nn.Parameter(base[2:])
    assert tlio.torch.storage_ptr(model.bottom) == tlio.torch.storage_ptr(base)
    path = tmp_path / "halves.safetensors"
    tlio.torch.save_model(model, path)
    with tlio.safe_open(path, "pt") as f:
        assert f.keys() == ["bottom", "top"] and f.metadata() is None
        assert torch.equal(f.get_tensor("top"), base[:2])
        assert torch.equal(f.get_tensor("bottom"), base[2:])
    tied = TiedLinears()
    tlio.torch.save_model(tied, tmp_path / "tied.safetensors")
    with tlio.safe_open(tmp_path / "tied.safetensors", "pt") as f:
        assert f.keys() == ["a.bias", "a.weight", "b.bias"]
        assert f.metadata() == {"b.weight": "a.weight"}


def test_meta_tensors_are_in_no_group():
    weight = torch.empty(3, 4, device="meta")
    state = {"embed": weight, "head": weight, "bias": torch.empty(4, device="meta")}
    assert tlio.torch.storage_ptr(weight) == 0
    assert _find_shared_tensors(state) == []
    assert _remove_duplicate_names(state) == {}  # ties on meta are not seen, as in the package
    # With real tensors beside them, only the real ones are grouped.
    real = grid()
    assert _find_shared_tensors({"m": weight, "r": real, "s": real[1]}) == [{"r", "s"}]


def test_zero_element_tensors():
    # Their own storage is empty: in no group, as in the package.
    empty = torch.zeros(0)
    state = {"e1": empty, "e2": empty, "e3": torch.zeros(2, 0)}
    assert tlio.torch.storage_size(empty) == 0
    assert _find_shared_tensors(state) == []
    assert _remove_duplicate_names(state) == {}
    # So saving them is no sharing, as in the package.
    loaded = tlio.torch.load(tlio.torch.save(state))
    assert {k: list(v.shape) for k, v in loaded.items()} == {"e1": [0], "e2": [0], "e3": [2, 0]}
    # An empty view of a real storage has one: it is a group of its own (it overlaps no byte),
    # which covers nothing, so _remove_duplicate_names refuses it as the package does.
    base = grid()
    groups = _find_shared_tensors({"base": base, "none": base[1:1]})
    assert as_sets(groups) == {frozenset({"base"}), frozenset({"none"})}
    with pytest.raises(RuntimeError, match=r"tensor 'none' views 0 of the 64 bytes"):
        _remove_duplicate_names({"base": base, "none": base[1:1]})


def test_end_ptr_and_is_complete_on_slices():
    base = grid()
    start = base.data_ptr()
    assert (_end_ptr(base), _is_complete(base)) == (start + 64, True)
    assert (_end_ptr(base[1:3]), _is_complete(base[1:3])) == (start + 48, False)
    assert (_end_ptr(base[:1]), _is_complete(base[:1])) == (start + 16, False)
    assert (_end_ptr(base[3:]), _is_complete(base[3:])) == (start + 64, False)
    # Column 1: elements 1, 5, 9, 13; the last ends at byte 56.
    assert (_end_ptr(base[:, 1]), _is_complete(base[:, 1])) == (start + 56, False)
    assert (_end_ptr(base[::2]), _is_complete(base[::2])) == (start + 48, False)
    assert (_end_ptr(base[2, 3]), _is_complete(base[2, 3])) == (start + 48, False)
    # Transposed: the same bytes, the whole storage.
    assert (_end_ptr(base.t()), _is_complete(base.t())) == (start + 64, True)
    # Empty: the end is where it starts.
    assert _end_ptr(base[2:2]) == base[2:2].data_ptr()
    assert not _is_complete(base[2:2])
    # Broadcast: 12 elements over 12 bytes; they do not fill the storage with their own bytes.
    row = torch.zeros(3)
    wide = row.expand(4, 3)
    assert (_end_ptr(wide), _is_complete(wide)) == (row.data_ptr() + 12, False)
    # Another element size.
    halves = torch.zeros(5, dtype=torch.float16)
    assert (_end_ptr(halves[1:4]), _end_ptr(halves)) == (halves.data_ptr() + 8,
                                                           halves.data_ptr() + 10)
