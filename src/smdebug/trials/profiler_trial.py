"""1.0.34's import path of ``ProfilerTrial`` (what ``create_trial(path, profiler=True)`` returns):
an alias. The class lives in :mod:`smdebug.profiler.trial`; this module only names it, so that
``from smdebug.trials.profiler_trial import ProfilerTrial`` keeps working."""

from smdebug.profiler.trial import ProfilerTrial

__all__ = ["ProfilerTrial"]
