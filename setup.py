"""Ship the functions' entry modules in the wheel, so `healthlog serve` runs from any folder.

Everything else is in pyproject.toml. ``functions/<target>/main.py`` is the source the
functions are deployed from (template.yaml's CodeUri) and served from in a checkout;
a built wheel carries a copy of each as ``healthlog/_functions/<target>/main.py``,
which ``healthlog.local.launcher.function_source`` serves when there is no checkout.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TARGETS = ("ingest", "fold")


class BuildPyWithFunctions(build_py):
    def run(self) -> None:
        super().run()
        for target in TARGETS:
            packaged = Path(self.build_lib) / "healthlog" / "_functions" / target / "main.py"
            self.mkpath(str(packaged.parent))
            self.copy_file(str(Path("functions") / target / "main.py"), str(packaged))


setup(cmdclass={"build_py": BuildPyWithFunctions})
