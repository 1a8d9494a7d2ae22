"""The type stubs (tlio/*.pyi, installed beside the modules) against the modules they describe:
the same public names, the same members in each class, the same parameters in each function;
and the PEP 561 marker py.typed. Adding a runtime function without its stub fails here."""
import ast
import importlib
import inspect
import io
import pathlib

import pytest

import tlio

MODULES = ["tlio", "tlio.numpy", "tlio.torch", "tlio.ray"]
# Protocol methods a stub declares when the class defines them (other dunders, such as __repr__,
# are object's and need no stub).
DUNDERS = {"__enter__", "__exit__", "__getitem__", "__len__", "__iter__", "__contains__",
           "__call__"}
KINDS = {"posonlyargs": inspect.Parameter.POSITIONAL_ONLY,
         "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
         "vararg": inspect.Parameter.VAR_POSITIONAL,
         "kwonlyargs": inspect.Parameter.KEYWORD_ONLY,
         "kwarg": inspect.Parameter.VAR_KEYWORD}


def runtime(name):
    if name in ("tlio.torch", "tlio.ray"):
        pytest.importorskip(name[len("tlio."):])
    return importlib.import_module(name)


def stub(module):
    """The parsed stub beside the module's file."""
    path = pathlib.Path(module.__file__).with_suffix(".pyi")
    assert path.is_file(), f"{module.__name__} has no stub at {path}"
    return ast.parse(path.read_text(), str(path))


def public(name):
    return not name.startswith("_")


def defined_names(body):
    """Names a stub body defines: classes, functions, annotated or assigned names, and explicit
    re-exports (`import x as x`)."""
    names = set()
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname for a in node.names if a.asname == a.name.split(".")[-1])
    return names


def stub_all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def stub_classes(tree):
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def stub_functions(body):
    """(name, def) for every function in a body; an overloaded one once per overload."""
    return [(n.name, n) for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def stub_parameters(func):
    """[(name, kind, has default, default if a literal else ...)] of a stub function."""
    a = func.args
    positional = [("posonlyargs", p) for p in a.posonlyargs] + [("args", p) for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [(p.arg, KINDS[kind], d) for (kind, p), d in zip(positional, defaults)]
    if a.vararg:
        params.append((a.vararg.arg, KINDS["vararg"], None))
    params += [(p.arg, KINDS["kwonlyargs"], d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append((a.kwarg.arg, KINDS["kwarg"], None))
    return [(name, kind, d is not None,
             d.value if isinstance(d, ast.Constant) and d.value is not Ellipsis else ...)
            for name, kind, d in params]


def runtime_parameters(obj):
    """The same for a runtime callable, or None when inspect cannot read its signature."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # compiled functions without a Python signature
        return None
    return [(p.name, p.kind, p.default is not p.empty, p.default)
            for p in signature.parameters.values()]


def is_overload(func):
    return any(getattr(d, "id", getattr(d, "attr", None)) == "overload"
               for d in func.decorator_list)


def assert_same_parameters(where, func, obj):
    got = runtime_parameters(obj)
    if got is None:
        return
    want = stub_parameters(func)
    assert [p[:2] for p in want] == [p[:2] for p in got], (
        f"{where}: the stub's parameters (names, kinds) differ from the runtime's")
    for (name, _, stub_has, stub_default), (_, _, has, default) in zip(want, got):
        # An overload may require what the function defaults (safe_open's framework="pt").
        if is_overload(func):
            assert has or not stub_has, f"{where}: {name!r} has a default only in the stub"
        else:
            assert stub_has == has, f"{where}: {name!r} has a default in one of stub and runtime"
        if stub_default is not ...:
            assert stub_default == default, f"{where}: default of {name!r}"


def class_members_at_runtime(cls):
    members = {k for k in vars(cls) if public(k) or k in DUNDERS}
    if cls is tlio.SafetensorError:  # its attributes are set on each raised error
        with pytest.raises(tlio.SafetensorError) as e:
            tlio.load(b"not a safetensors file")
        members |= {k for k in vars(e.value) if public(k)}
    if cls is tlio.VerificationError:  # so is its list of problems
        with pytest.raises(tlio.VerificationError) as e:
            tlio.safe_open(io.BytesIO(tlio.save({})), sha256="0" * 64)
        members |= {k for k in vars(e.value) if public(k)}
    return members


def class_members_in_stub(node):
    return {k for k in defined_names(node.body) if public(k) or k in DUNDERS}


def test_py_typed_is_beside_the_package():
    assert (pathlib.Path(tlio.__file__).parent / "py.typed").is_file()


@pytest.mark.parametrize("name", MODULES)
def test_stub_defines_the_modules_public_names(name):
    module = runtime(name)
    tree = stub(module)
    assert {n for n in defined_names(tree.body) if public(n)} == set(module.__all__)
    assert stub_all(tree) is not None and set(stub_all(tree)) == set(module.__all__)


@pytest.mark.parametrize("name", MODULES)
def test_every_public_function_and_class_is_exported(name):
    # What __all__ leaves out the stub test above would not see.
    module = runtime(name)
    defined = {k for k, v in vars(module).items()
               if public(k) and (inspect.isfunction(v) or inspect.isclass(v))
               and v.__module__ == module.__name__}
    assert defined <= set(module.__all__), f"not in {name}.__all__: {defined - set(module.__all__)}"


NEEDS_NEWER_TORCH = object()


def runtime_class(module, name):
    """The module's class `name`; NEEDS_NEWER_TORCH for one the installed torch cannot make
    (tlio.torch.StorageReader subclasses torch.distributed.checkpoint's, which torch 1.13 lacks)."""
    try:
        return getattr(module, name, None)
    except ImportError:
        return NEEDS_NEWER_TORCH


@pytest.mark.parametrize("name", MODULES)
def test_stub_classes_have_the_runtime_members(name):
    module = runtime(name)
    for node in stub_classes(stub(module)):
        cls = runtime_class(module, node.name)
        if cls is NEEDS_NEWER_TORCH:
            continue
        assert inspect.isclass(cls), f"{name}.{node.name} is in the stub, not in the module"
        assert class_members_in_stub(node) == class_members_at_runtime(cls), f"{name}.{node.name}"


@pytest.mark.parametrize("name", MODULES)
def test_stub_functions_have_the_runtime_parameters(name):
    module = runtime(name)
    tree = stub(module)
    for func_name, func in stub_functions(tree.body):
        obj = getattr(module, func_name, None)
        assert callable(obj), f"{name}.{func_name} is in the stub, not in the module"
        assert_same_parameters(f"{name}.{func_name}", func, obj)
    for node in stub_classes(tree):
        cls = runtime_class(module, node.name)
        if cls is NEEDS_NEWER_TORCH:
            continue
        for func_name, func in stub_functions(node.body):
            where = f"{name}.{node.name}.{func_name}"
            obj = vars(cls).get(func_name)
            assert obj is not None, f"{where} is in the stub, not in the class"
            if isinstance(obj, property):
                continue  # a @property in the stub too (its members are compared above)
            assert_same_parameters(where, func, obj)


def test_the_parameter_check_sees_differences():
    # The checker itself: names, kinds, defaults and literal default values all count.
    tree = ast.parse("__all__ = ['f']\ndef f(a, b: int = 1, *c, d, **e) -> None: ...\n"
                     "import os as os\nimport sys\n_T = 1\n")
    assert defined_names(tree.body) == {"__all__", "f", "os", "_T"}

    def f(a, b=1, *c, d, **e):
        pass

    def g(a, b=2, *c, d, **e):
        pass

    def h(a, b=1, *, d):
        pass

    def k(a, b, *c, d, **e):
        pass

    (_, func), = stub_functions(tree.body)
    assert_same_parameters("f", func, f)
    with pytest.raises(AssertionError, match="default of 'b'"):
        assert_same_parameters("g", func, g)
    with pytest.raises(AssertionError, match="names, kinds"):
        assert_same_parameters("h", func, h)
    with pytest.raises(AssertionError, match="'b' has a default in one"):
        assert_same_parameters("k", func, k)
