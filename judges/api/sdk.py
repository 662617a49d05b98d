"""Glue between wire-format request bodies and the official SDKs' typed methods."""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any


def sdk_call_kwargs(method: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for an SDK method from a wire-format request body: fields the
    method's signature names go as arguments, the rest in ``extra_body`` (SDK versions
    differ in which sampling fields they type, the wire format does not)."""
    params = _signature_params(getattr(method, "__func__", method))
    kwargs = {k: v for k, v in body.items() if k in params}
    extra = {k: v for k, v in body.items() if k not in params}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@lru_cache(maxsize=32)
def _signature_params(func: Any) -> frozenset[str]:
    return frozenset(inspect.signature(func).parameters)
