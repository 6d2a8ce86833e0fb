"""A check's target, "module:attribute", as the object it names in `exercises` or `solutions`."""
from __future__ import annotations

import importlib
from typing import Any


def resolve(target: str, package: str = "exercises") -> Any:
    """The function or class named by `target` ("mha:split_heads"), imported from `package`
    (exercises: the student's code; solutions: the reference)."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(f"{package}.{module}"), attribute)
