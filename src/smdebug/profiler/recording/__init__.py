"""The profiler's recording room: what a training process runs to write a profile (the session the
hooks drive, its configuration, the system sampler, the timeline writer, the Python profiler, the
upload of finished files). It imports only :mod:`smdebug.profiler.locations` (the format's names)
below it; :mod:`smdebug.profiler` re-exports its public classes."""
