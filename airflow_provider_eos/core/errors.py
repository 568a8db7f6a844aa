"""Typed errors. Each carries what an operator needs to act: what was found and the fix."""

from __future__ import annotations


class EosError(Exception):
    """Base of every error this package raises on purpose.

    :param message: what is wrong, naming the values found.
    :param fix: what the operator should do about it.
    """

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message}\nFix: {fix}" if fix else message)


class PrerequisiteError(EosError):
    """A tool the project needs (Java, Maven, the Kafka jars) is missing or unusable."""


class DevstackError(EosError):
    """The local Kafka broker could not be started, reached or stopped."""


class SpecError(EosError):
    """The pipeline spec is invalid; the message names the field."""


class CheckpointError(EosError):
    """A Spark checkpoint file is missing or malformed; the message names the file."""


class MarkerError(EosError):
    """A committed offset's metadata is not a batch marker this package can read."""


class InconsistentOffsetsError(EosError):
    """The sink group's committed offsets disagree with the checkpoint's planned batch."""


class RepairError(EosError):
    """A repair was refused or failed; nothing was changed unless the message says so."""


class UnsafeToActError(EosError):
    """The pipeline looks alive; acting now could abort a healthy transaction."""
