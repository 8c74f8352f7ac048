"""The profiler, part 2: reading what part 1 (and 1.0.34, and SageMaker's agent) recorded.

:mod:`smdebug.profiler.reading.frames` holds the columnar shapes every consumer uses;
:class:`ProfileFolder` reads a job's profiler folder (local or ``s3://``) into them.
"""

from smdebug.profiler.reading.folder import ProfileFolder
from smdebug.profiler.reading.frames import FrameworkEvents, Series, StepSpans

__all__ = ["FrameworkEvents", "Series", "StepSpans", "ProfileFolder"]
