"""1.0.34's ``smdebug.profiler.analysis``: the pandas helpers of its notebooks (``utils``)."""
