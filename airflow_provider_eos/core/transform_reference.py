"""The one resolution of a spec's ``transform`` (``module:function``), moved module paths included.

The job imports the transform through :func:`resolve_transform` and pre-flight reads its source
through it, so both find the same module. The example transforms and the job's entry script moved
from ``airflow_provider_eos.jobs`` to the top-level package ``spark_jobs`` (the project's layout:
``airflow_provider_eos``, ``dags``, ``spark_jobs``, ``tests``); a spec that names the old path keeps
working, with :attr:`TransformReference.deprecation` saying what to write instead (the job logs it
and warns with a :class:`DeprecationWarning`, pre-flight reports it as the WARNING EOS319).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MOVED_MODULES", "TransformReference", "resolve_transform"]

#: Old module path -> where it lives now; a module under an old path moves with it.
MOVED_MODULES: dict[str, str] = {"airflow_provider_eos.jobs": "spark_jobs"}


@dataclass(frozen=True)
class TransformReference:
    """A spec's ``transform``, split and resolved.

    :param given: the reference as the spec wrote it.
    :param module: the module to import (under its current path).
    :param function: the function's name in it (may be dotted: ``Cls.method``).
    :param moved_from: the old package the spec named, when it named one; ``None`` otherwise.
    """

    given: str
    module: str
    function: str
    moved_from: str | None = None

    @property
    def current(self) -> str:
        """The reference under the current module path: what the spec should say."""
        return f"{self.module}:{self.function}"

    @property
    def deprecation(self) -> str | None:
        """The deprecation message when the spec names a moved module, else ``None``."""
        if self.moved_from is None:
            return None
        return (
            f"transform {self.given!r} names the deprecated module path {self.moved_from!r}; the example "
            f"transforms moved to the package {MOVED_MODULES[self.moved_from]!r}: write {self.current!r} in the "
            "spec (the old path still works until it is removed)"
        )


def resolve_transform(reference: str) -> TransformReference:
    """Split ``module:function`` and map a moved module to its current path.

    :param reference: a spec's ``transform`` (its format is checked when the spec is loaded).
    """
    module, _, function = reference.partition(":")
    for old, new in MOVED_MODULES.items():
        if module == old or module.startswith(old + "."):
            return TransformReference(reference, new + module.removeprefix(old), function, moved_from=old)
    return TransformReference(reference, module, function)

