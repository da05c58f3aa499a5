"""pip install of the Python package fluxon (python/fluxon over fluxon._native).

    pip install --no-build-isolation --no-index .

works offline with Debian's python3-setuptools, python3-wheel and python3-pip
(scripts/deps.sh): the extension is built by this repository's CMake build in
a temporary folder (the targets fluxon_py and libfluxon only, no tests), and
libfluxon.so.MAJOR is bundled inside the package, where the extension finds it
($ORIGIN). The package's .py files (subpackages too) come from python/fluxon.
Nothing is written into the source tree: setuptools' build and egg-info
folders live in that temporary folder too. FX_PIP_JOBS sets the build's jobs.
"""
import atexit
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
SCRATCH = tempfile.mkdtemp(prefix="fluxon-pip-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def project_version():
    """The VERSION of project() in CMakeLists.txt, the one version of the project."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*fluxon\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        sys.exit("setup.py: no project(fluxon VERSION x.y.z) in CMakeLists.txt")
    return m.group(1)


class CMakeBuild(build_ext):
    """Builds fluxon._native with CMake and bundles the libfluxon it links."""

    def build_extension(self, ext):
        build = os.path.join(SCRATCH, "cmake")
        jobs = os.environ.get("FX_PIP_JOBS") or str(os.cpu_count() or 1)
        # Linked with its installed rpath, $ORIGIN (the bundled library beside
        # it): no path into this temporary build.
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DPython3_EXECUTABLE=" + sys.executable,
                               "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DFX_PYTHON_RPATH=$ORIGIN"],
                              stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target", "fluxon_py"])
        built = glob.glob(os.path.join(build, "python", "fluxon", "_native*.so"))
        if len(built) != 1:
            sys.exit("setup.py: expected one _native*.so in %s, found %r" % (build, built))
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)
        # The extension needs libfluxon by its soname (libfluxon.so.MAJOR).
        sonames = [p for p in glob.glob(os.path.join(build, "libfluxon.so.*"))
                   if re.fullmatch(r"libfluxon\.so\.[0-9]+", os.path.basename(p))]
        if len(sonames) != 1:
            sys.exit("setup.py: expected one libfluxon.so.MAJOR in %s, found %r" % (build, sonames))
        shutil.copyfile(os.path.realpath(sonames[0]),
                        os.path.join(os.path.dirname(dest), os.path.basename(sonames[0])))


setup(
    name="fluxon",
    version=project_version(),
    description="Fluxon KV client: put, get and delete in a Fluxon cluster, zero-copy gets",
    long_description=open(os.path.join(ROOT, "README.md"), encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    package_dir={"": "python"},
    packages=find_namespace_packages(where="python", include=["fluxon", "fluxon.*"],
                                     exclude=["*.__pycache__"]),
    ext_modules=[Extension("fluxon._native", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    options={
        "build": {"build_base": os.path.join(SCRATCH, "build")},
        "egg_info": {"egg_base": SCRATCH},
    },
)
