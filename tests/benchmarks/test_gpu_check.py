"""``benchmarks/gpu_check.py --tiny`` on the CPU: one JSON line, every route agreeing with the probe.

The check itself is prepared for a GPU (7B shapes, bfloat16); this runs its code paths on tiny shapes in
float32, where the reference routes must reproduce the probe to rounding.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"
ROUTE_KEYS = {
    "sink_strength",
    "abs_s_diff",
    "max_abs_g_diff",
    "kept_mismatch",
    "seconds",
    "seconds_range",
    "peak_mib",
}


pytestmark = pytest.mark.slow  # the script runs in a fresh interpreter (the report fixture)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    command = [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--dtype", "float32", "--reps", "1"]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=tmp_path_factory.mktemp("gpu_check"), timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout[-2000:]
    return json.loads(lines[0])


def test_the_report_holds_every_measurement(report: dict) -> None:
    assert {
        "device",
        "device_name",
        "dtype",
        "versions",
        "probe_options",
        "models",
        "llava",
        "passed",
        "total_s",
    } <= set(report)
    assert report["size"] == "tiny" and report["device"] == "cpu" and report["dtype"] == "float32"
    assert set(report["models"]) == {"llama", "qwen2"}
    for name, model in report["models"].items():
        assert {"shape", "init_s", "probe", "chunked", "eager", "monitor", "tokens"} <= set(model), name
        assert set(model["chunked"]) == set(model["eager"]) == ROUTE_KEYS, name
        assert {"sink_strength", "seconds", "seconds_range", "peak_mib"} <= set(model["probe"]), name
        assert math.isfinite(model["probe"]["sink_strength"]) and model["probe"]["seconds"] > 0, name
        assert model["monitor"]["measure_s"] > 0 and model["monitor"]["forward_s"] > 0, name
        assert model["probe"]["peak_mib"] is None  # device memory is measured on CUDA only
    assert report["models"]["qwen2"]["shape"]["num_key_value_heads"] == 2  # grouped-query attention covered


def test_reference_routes_reproduce_the_probe(report: dict) -> None:
    assert report["passed"] is True and report["tolerance_abs_s"] == 1e-4
    for name, model in report["models"].items():
        for route in ("chunked", "eager"):
            found = model[route]
            assert found["abs_s_diff"] <= 1e-5 and found["max_abs_g_diff"] <= 1e-4, (name, route, found)
            assert found["kept_mismatch"] == 0, (name, route)


def test_the_llava_extraction_is_verified(report: dict) -> None:
    llava = report["llava"]
    assert llava["verification"]["passed"] is True and llava["verification"]["max_abs_logit_diff"] <= 1e-4
    assert llava["parameters"] > 0 and llava["extracted_bytes"] > 0 and llava["extract_verify_s"] > 0
