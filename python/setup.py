"""Builds gdn's Python module with the project's CMake (see pyproject.toml).

The CMake build runs through scripts/lib.sh, as the project's scripts do:
Kokkos is the one named by Kokkos_ROOT (a CUDA-enabled Kokkos builds the CUDA
module with its nvcc_wrapper), else the project's bootstrap
(cmake/kokkos-bootstrap.sh, OpenMP) in .deps/; the build goes to
build/python-<python version>. pybind11 comes from CMake's search (Debian:
pybind11-dev) or the pybind11 Python package.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(GDN VERSION ([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        name = f"python-{sys.version_info.major}.{sys.version_info.minor}"
        variant = os.environ.get("GDN_KOKKOS_VARIANT", "openmp")
        script = (
            'source scripts/lib.sh\n'
            f'kokkos=$(kokkos_prefix {variant})\n'
            f'mapfile -t pyargs < <(python_cmake_args "{sys.executable}")\n'
            f'configure_and_build {name} "$kokkos" -DGDN_ENABLE_TESTS=OFF '
            '-DGDN_ENABLE_EXAMPLES=OFF -DGDN_ENABLE_BENCHMARKS=OFF "${pyargs[@]}"\n'
        )
        env = dict(os.environ, JOBS=os.environ.get("JOBS", str(os.cpu_count() or 2)))
        built = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, check=True,
                               stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
        modules = sorted(pathlib.Path(built, "python", "gdn").glob("_gdn*.so"))
        if not modules:
            raise RuntimeError(f"the CMake build in {built} produced no gdn/_gdn*.so")
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[-1], dest)


setup(
    version=project_version(),
    packages=["gdn"],
    ext_modules=[Extension("gdn._gdn", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
