"""The wheel and the sdist: licence, metadata, contents, and no build warnings.

scripts/check-dist (run by scripts/test) also installs the wheel with every extra into a clean
virtual environment and runs it; this checks what is inside the archives.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("chatmem", "chatmem_repositories", "chatmem_advisors", "chatmem_cli")
pytest.importorskip("build", reason="the build package comes with the dev extra")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    out = tmp_path_factory.mktemp("dist")
    # No isolation: setuptools comes with the dev extra, so the build needs no network.
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = out.glob("chatmem-*.whl")
    (sdist,) = out.glob("chatmem-*.tar.gz")
    return wheel, sdist, result.stdout + result.stderr


def test_the_build_gives_no_warning(dist: tuple[Path, Path, str]) -> None:
    log = dist[2]
    assert "Deprecat" not in log, log
    # PYTHONDONTWRITEBYTECODE makes setuptools say it skips byte-compiling: not ours.
    warnings = [
        line for line in log.splitlines() if "warn" in line.lower() and "byte-compil" not in line
    ]
    assert warnings == []


def test_the_wheel_ships_the_license_and_spdx_metadata(dist: tuple[Path, Path, str]) -> None:
    with zipfile.ZipFile(dist[0]) as wheel:
        names = set(wheel.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(wheel.read(f"{info}/METADATA").decode())
        license_text = wheel.read(f"{info}/licenses/LICENSE").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert "Apache License" in license_text
    assert "Version 2.0, January 2004" in license_text
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License-File"] == "LICENSE"
    assert "License" not in metadata  # the deprecated free-text field
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # SPDX replaces them
    assert "redis" in metadata["Keywords"]
    assert "chatmem = chatmem_cli:main" in entry_points
    for package in PACKAGES:
        assert f"{package}/__init__.py" in names
        assert f"{package}/py.typed" in names
    assert "chatmem/testing/__init__.py" in names
    assert not [n for n in names if n.startswith(("tests/", "docs/", "scripts/"))]


def test_the_sdist_is_complete_without_tests(dist: tuple[Path, Path, str]) -> None:
    with tarfile.open(dist[1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "pyproject.toml", "PKG-INFO"} <= names
    for package in PACKAGES:
        assert f"{package}/__init__.py" in names
        assert f"{package}/py.typed" in names
    # The tests need the repository's servers and scripts: left out rather than half shipped.
    assert not [n for n in names if n.startswith(("tests/", "scripts/", ".ci/", "benchmarks/"))]
