"""`tlio completion bash|zsh|fish` and the man page (`tlio help --man`), both generated from the
CLI's definitions: each shell completes commands, options and dtype/scheme names, and the page
holds every command and option `--help` lists."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

CLI = os.environ.get("TLIO_CLI", str(pathlib.Path(__file__).parents[2] / "build" / "tlio"))


def run(*args, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, **kw)


def script(tmp_path, shell):
    r = run("completion", shell)
    assert r.returncode == 0, r.stderr
    path = tmp_path / f"tlio.{shell}"
    path.write_text(r.stdout)
    return path


def commands():
    listing = run("help").stdout
    return re.findall(r"^  (\w+)  ", listing, re.M)


BASH_CASES = [
    (["tlio", "con"], {"convert"}),
    (["tlio", "convert", "a", "b", "--dt"], {"--dtype"}),
    (["tlio", "convert", "a", "b", "--dtype", "BF"], {"BF16"}),
    (["tlio", "dequantize", "a", "b", "--dtype", "F3"], {"F32"}),
    # Only what the option takes: dequantize and slice restore F32, F16 or BF16 only.
    (["tlio", "dequantize", "a", "b", "--dtype", ""], {"F32", "F16", "BF16"}),
    (["tlio", "slice", "a", "x", "--dtype", ""], {"F32", "F16", "BF16"}),
    (["tlio", "quantize", "a", "b", "--storage", ""], {"U8", "I8", "F16", "BF16", "F32", "F64"}),
    (["tlio", "quantize", "a", "b", "--blocksize", "1"], {"128", "1024"}),
    # Free text (a tolerance, a regex, a size, a token) is offered nothing, not file names.
    (["tlio", "diff", "a", "b", "--atol", ""], set()),
    (["tlio", "inspect", "a", "--filter", ""], set()),
    (["tlio", "shard", "a", "b", "--max-size", ""], set()),
    (["tlio", "validate", "--token", ""], set()),
    (["tlio", "quantize", "a", "b", "--scheme", ""], {"int4-g32-sym", "nf4", "fp4", "int8", "fp8-block", "fp8", "mlx-affine"}),
    (["tlio", "bigram", "g"], {"generate"}),
    (["tlio", "bigram", "generate", "--te"], {"--temperature"}),
    (["tlio", "help", "st"], {"stats"}),
    (["tlio", "completion", ""], {"bash", "zsh", "fish"}),
    (["tlio", "metadata", "f", "--de"], {"--delete"}),
    (["tlio", "--token", "x", "va"], {"validate"}),
]


@pytest.mark.parametrize("words, want", BASH_CASES)
def test_bash_completes_commands_options_and_names(tmp_path, words, want):
    path = script(tmp_path, "bash")
    line = " ".join(f"'{w}'" for w in words)
    r = subprocess.run(["bash", "-c", f'source "{path}"; COMP_WORDS=({line}); '
                        f'COMP_CWORD={len(words) - 1}; _tlio; printf "%s\\n" "${{COMPREPLY[@]}}"'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) == want


@pytest.mark.parametrize("words", [["tlio", "inspect", "mod"], ["tlio", "sign", "d", "--key", "mod"],
                                   ["tlio", "metadata", "f", "-o", "mod"]])
def test_bash_completes_file_names_for_arguments_and_paths(tmp_path, words):
    path = script(tmp_path, "bash")
    (tmp_path / "model.safetensors").write_bytes(b"")
    r = subprocess.run(["bash", "-c", f'cd "{tmp_path}"; source "{path}"; COMP_WORDS=({" ".join(words)}); '
                        f'COMP_CWORD={len(words) - 1}; _tlio; printf "%s\\n" "${{COMPREPLY[@]}}"'],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == ["model.safetensors"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (scripts/install-deps.sh installs it)")
def test_zsh_completes_with_descriptions(tmp_path):
    path = script(tmp_path, "zsh")
    assert subprocess.run(["zsh", "-n", str(path)]).returncode == 0
    # compsys' functions stand-ins that print what they were given.
    prelude = ('compdef(){ print -r -- "compdef $*" >&2; }; '
               'compadd(){ [[ $1 == -- ]] && shift; print -r -- "words: $*"; }; '
               '_describe(){ print -r -- "$1: ${(P)2}"; }; _files(){ print files; }; ')
    def complete(words, prefix=""):
        w = " ".join(f"'{x}'" for x in words)
        r = subprocess.run(["zsh", "-fc", prelude + f'source "{path}"; words=({w}); '
                            f'CURRENT={len(words)}; PREFIX={prefix!r}; _tlio'],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout
    top = complete(["tlio", "co"])
    assert top.startswith("command: ") and "convert:Rewrite a file canonically" in top
    assert all(f"{c}:" in top for c in commands())
    assert complete(["tlio", "quantize", "a", "--scheme", ""]) == "words: int4-g32-sym nf4 fp4 int8 fp8-block fp8 mlx-affine\n"
    assert "--atol:Absolute tolerance" in complete(["tlio", "diff", "a", "--a"], "--a")
    assert complete(["tlio", "bigram", ""]).startswith("command: train:")
    assert complete(["tlio", "inspect", ""]) == "files\n"
    assert complete(["tlio", "diff", "a", "--atol", ""]) == ""
    assert complete(["tlio", "dequantize", "a", "b", "--dtype", ""]) == "words: F32 F16 BF16\n"


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (scripts/install-deps.sh installs it)")
def test_fish_completes_with_descriptions(tmp_path):
    path = script(tmp_path, "fish")
    def complete(line):
        r = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return [l.split("\t")[0] for l in r.stdout.splitlines()]
    assert complete("tlio conv") == ["convert"]
    assert set(commands()) <= set(complete("tlio "))
    assert "--rename" in complete("tlio convert a b --re")
    assert "BF16" in complete("tlio convert a b --dtype ") and "I32" not in complete("tlio convert a b --dtype ")
    assert complete("tlio bigram g") == ["generate"]
    assert sorted(complete("tlio dequantize a b --dtype ")) == ["BF16", "F16", "F32"]
    assert complete("tlio diff a b --atol ") == []


def test_the_man_page_holds_every_command_and_option():
    page = run("help", "--man")
    assert page.returncode == 0 and page.stdout.startswith(".TH TLIO 1")
    text = page.stdout.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "").replace("\\fI", "")
    for command in commands():
        help_text = run("help", command).stdout
        assert f'.SS "tlio {command}' in text, command
        for option in set(re.findall(r"^\s+(?:-\w,)?(--[\w-]+)", help_text, re.M)):
            assert option in text, (command, option)
    if shutil.which("groff"):
        lint = subprocess.run(["groff", "-man", "-ww", "-z"], input=page.stdout, capture_output=True,
                              text=True, timeout=60)
        assert lint.returncode == 0 and lint.stderr == "", lint.stderr
    # The build wrote the same page (and the scripts) for `cmake --install`.
    built = pathlib.Path(CLI).parent / "share"
    if built.is_dir():
        assert (built / "tlio.1").read_text() == page.stdout
        assert (built / "tlio.bash").read_text() == run("completion", "bash").stdout


def test_completion_needs_a_known_shell():
    r = run("completion", "tcsh")
    assert r.returncode == 2 and "tcsh" in r.stderr
