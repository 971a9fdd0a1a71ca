"""An installed (non-editable) sinkbench builds the leaderboard outside the repository, from a copy of the
submissions: every source the site needs ships inside the wheel."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _source_copy(target: Path) -> Path:
    """The repository's tracked and unignored files, copied (so building a wheel leaves the checkout clean)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell the project's files from build outputs")
    for name in listed.stdout.splitlines():
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow  # builds a wheel and a virtual environment
def test_wheel_builds_the_site_outside_the_repository(tmp_path: Path) -> None:
    source = _source_copy(tmp_path / "source")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        tmp_path / "dist",
        ".",
        cwd=source,
    )
    wheel = next((tmp_path / "dist").glob("sinkbench-*.whl"))
    with zipfile.ZipFile(wheel) as archive:  # the product only: no experiment, driver or its results
        assert not [name for name in archive.namelist() if name.startswith(("experiments/", "benchmarks/"))]
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        wheel,
        cwd=tmp_path,
    )
    # The dependencies come from this environment: its site-packages as plain path entries, after the new
    # environment's own (so the installed wheel, not this checkout, provides sinkbench).
    packages = _run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path)
    Path(packages.stdout.strip(), "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "submissions", work / "submissions")
    where = _run(python, "-c", "import sinkbench, sys; print(sinkbench.__file__)", cwd=work)
    assert where.stdout.strip().startswith(str(venv)), where.stdout
    built = _run(
        python, "-m", "sinkbench", "site", "build", "--submissions", "submissions", "--out", "site", cwd=work
    )
    assert "Built" in built.stdout
    assert (work / "site" / "index.html").is_file() and (work / "site" / "leaderboard.html").is_file()
    assert (work / "site" / "downloads" / "pairs.csv").is_file()
    assert "This build found no experiment page" in (work / "site" / "training.html").read_text(
        encoding="utf-8"
    )
