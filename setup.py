"""Builds the compiled module with CMake for `pip install .` and `pip wheel .`.

libtlio is linked statically into tlio._tlio (every build does so), so the installed package needs
no library path; it still uses the system's shared simdjson and fmt. Set TLIO_CMAKE_BUILD_DIR to
keep the CMake build between installs, or to an existing build folder (`build`, configured for
the same Python) to install the module that build made instead of compiling libtlio again; and
TLIO_CMAKE_ARGS for more CMake options when this configures a folder of its own.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def version():
    text = (ROOT / "include" / "tlio" / "version.hpp").read_text()
    return re.search(r'TLIO_VERSION_STRING\s+"([0-9.]+)"', text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = pathlib.Path(os.environ.get("TLIO_CMAKE_BUILD_DIR") or
                                 pathlib.Path(self.build_temp).resolve() / "cmake")
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir),
                     "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
                     "-DTLIO_BUILD_TESTS=OFF", "-DTLIO_BUILD_BENCH=OFF", "-DTLIO_PYTHON=ON",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        configure += shlex.split(os.environ.get("TLIO_CMAKE_ARGS", ""))
        # A folder that is already configured is built as it is: reconfiguring it here would turn
        # someone's Release build (shared libtlio, tests) into this one.
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_tlio",
                        "--parallel", str(os.cpu_count() or 2)], check=True)
        built = next((build_dir / "python" / "tlio").glob("_tlio*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)


setup(version=version(),
      ext_modules=[Extension("tlio._tlio", sources=[])],
      cmdclass={"build_ext": CMakeBuild},
      # setuptools' own build files stay out of the way of a CMake build in build/.
      options={"build": {"build_base": "build/pip"}})
