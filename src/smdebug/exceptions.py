"""The whole smdebug error tree, with the names and constructor arguments of smdebug 1.0.34.

A leaf module: it imports nothing from the rest of the package except the mode enum.
"""

from __future__ import annotations

from typing import Any

from smdebug.modes import ModeKeys

__all__ = [
    "SMDebugError",
    "SMDebugCustomerError",
    "SMDebugTypeError",
    "SMDebugRuntimeError",
    "SMDebugNotImplementedError",
    "SMDebugValueError",
    "InvalidCollectionConfiguration",
    "StepNotYetAvailable",
    "MissingCollectionFiles",
    "IndexReaderException",
    "EventFileCorrupt",
    "StorageError",
    "ObjectNotFound",
    "MissingDependency",
    "StepUnavailable",
    "TensorUnavailableForStep",
    "ShapeUnavailableForStep",
    "TensorUnavailable",
    "InvalidWorker",
    "NoMoreProfilerData",
    "NoMoreData",
    "RuleEvaluationConditionMet",
    "InsufficientInformationForRuleInvocation",
    "RuleConfigurationError",
    "TrainingStopRequested",
]


def _mode_name(mode: object) -> str:
    return mode.name if isinstance(mode, ModeKeys) else str(mode)


class SMDebugError(Exception):
    """Base class of every error smdebug raises."""


class SMDebugCustomerError(SMDebugError):
    pass


class SMDebugTypeError(SMDebugError, TypeError):
    pass


class SMDebugRuntimeError(SMDebugError, RuntimeError):
    pass


class SMDebugNotImplementedError(SMDebugError, NotImplementedError):
    pass


class SMDebugValueError(SMDebugError, ValueError):
    pass


class MissingDependency(SMDebugError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        self.package = package
        self.extra = extra
        what = f" {purpose}" if purpose else ""
        super().__init__(
            f"'{package}' is needed{what} but is not installed; install it with: pip install 'smdebug-open[{extra}]'"
        )


class InvalidCollectionConfiguration(SMDebugError):
    def __init__(self, c_name: str) -> None:
        self.c_name = c_name

    def __str__(self) -> str:
        return f"Collection {self.c_name} has not been configured. Please fill in tensor_name or include_regex"


class StepNotYetAvailable(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> None:
        self.step = step
        self.mode = mode

    def __str__(self) -> str:
        return f"Step {self.step} of mode {_mode_name(self.mode)} not yet available"


class MissingCollectionFiles(SMDebugError):
    def __init__(self, path: str | None = None) -> None:
        self.path = path

    def __str__(self) -> str:
        where = f" under {self.path}" if self.path is not None else ""
        return (
            f"No collections file was found{where} (expected collections/000000000/"
            "<worker>_collections.json). Check that the path is the hook's out_dir and that "
            "the Hook was configured correctly before the training job started."
        )


class IndexReaderException(SMDebugError):
    """An index file that cannot be used (not JSON, keys missing, a path outside the trial)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


class EventFileCorrupt(SMDebugError, ValueError):
    """An event file record that cannot be decoded (truncated, bad CRC, bad protobuf)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


class StorageError(SMDebugError, OSError):
    """A storage backend failed; the message names the object and the backend error."""


class ObjectNotFound(StorageError, FileNotFoundError):
    """The named file or object does not exist."""


class NotAFile(StorageError):
    """A local key names something that is not a regular file (a FIFO, a device, a folder): it is
    not read, so that a reader never blocks on it or reads without end."""


class StepUnavailable(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> None:
        self.step = step
        self.mode = mode

    def __str__(self) -> str:
        return f"Step {self.step} of mode {_mode_name(self.mode)} is not available as it was not saved"


class TensorUnavailableForStep(SMDebugError):
    def __init__(
        self,
        tname: str,
        step: int,
        mode: ModeKeys | None = ModeKeys.GLOBAL,
        has_reductions: bool = False,
        *,
        reduction: str | None = None,
        abs: bool = False,
    ) -> None:
        self.step = step
        self.mode = mode
        self.tname = tname
        self.has_reductions = has_reductions
        self.reduction = reduction  # set when a reduction of the tensor was asked for
        self.abs = abs

    def __str__(self) -> str:
        if self.reduction is not None:
            red = f"{'abs_' if self.abs else ''}{self.reduction}"
            return (
                f"Reduction {red} of tensor {self.tname} is not available for step {self.step} with mode "
                f"{_mode_name(self.mode)}: neither that reduction nor the raw tensor was saved."
            )
        msg = (
            f"Value for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )
        if self.has_reductions:
            msg += " This tensor has reductions saved for this step. You might want to query for the reductions."
        return msg


class ShapeUnavailableForStep(SMDebugError):
    def __init__(self, tname: str, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> None:
        self.step = step
        self.mode = mode
        self.tname = tname

    def __str__(self) -> str:
        return (
            f"Shape for tensor {self.tname} is not available for step {self.step} "
            f"with mode {_mode_name(self.mode)} as it was not saved."
        )


class TensorUnavailable(SMDebugError):
    def __init__(self, tname: str) -> None:
        self.tname = tname

    def __str__(self) -> str:
        return f"Tensor {self.tname} was not saved."


class InvalidWorker(SMDebugError):
    def __init__(self, worker: str) -> None:
        self.worker = worker

    def __str__(self) -> str:
        return f"Invalid Worker: {self.worker}"


class NoMoreProfilerData(SMDebugError):
    def __init__(self, timestamp: float) -> None:
        self.timestamp = timestamp
        self.msg = f"Looking for timestamp {timestamp} and reached end of training."

    def __str__(self) -> str:
        return self.msg


class NoMoreData(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL, last_step: int = -1) -> None:
        self.step = step
        self.mode = mode
        self.last_step = last_step
        self.msg = (
            f"Looking for step {step} of mode {_mode_name(mode)} and reached "
            f"end of training. Max step available is {last_step}"
        )

    def __str__(self) -> str:
        return self.msg


class RuleEvaluationConditionMet(SMDebugError):
    """A rule's condition was met at ``step``. ``finding`` (a :class:`smdebug.rules.finding.Finding`,
    or None for a rule that does not say) names what it found: its text ends the message."""

    def __init__(self, rule_name: str, step: int, end_of_rule: bool = False, finding: Any = None) -> None:
        self.rule_name = rule_name
        self.step = step
        self.end_of_rule = end_of_rule
        self.finding = finding

    def __str__(self) -> str:
        what = f": {self.finding.text()}" if self.finding is not None else ""
        return f"Evaluation of the rule {self.rule_name} at step {self.step} resulted in the condition being met{what}"


class InsufficientInformationForRuleInvocation(SMDebugError):
    def __init__(self, rule_name: str, message: str) -> None:
        self.rule_name = rule_name
        self.message = message

    def __str__(self) -> str:
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"


class RuleConfigurationError(SMDebugValueError):
    """A rule, its parameters or its actions were given bad input; raised when the rule is built."""

    def __init__(self, rule_name: str, parameter: str | None, message: str) -> None:
        self.rule_name = rule_name
        self.parameter = parameter
        self.message = message

    def __str__(self) -> str:
        where = f" parameter {self.parameter!r}" if self.parameter else ""
        return f"rule {self.rule_name}{where}: {self.message}"


class TrainingStopRequested(SMDebugError):
    """A rule asked training to stop (the StopTraining action); raised by a hook at a step boundary.

    Everything the hook held was written before it is raised. A training loop may catch it.
    """

    def __init__(self, rule_name: str, step: int, reason: str = "") -> None:
        self.rule_name = rule_name
        self.step = step
        self.reason = reason

    def __str__(self) -> str:
        why = f": {self.reason}" if self.reason else ""
        return f"training stopped at the request of rule {self.rule_name} (fired at step {self.step}){why}"
