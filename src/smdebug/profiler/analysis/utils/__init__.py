"""``PandasFrame`` (profiler_data_to_pandas) and ``PandasFrameAnalysis`` (pandas_data_analysis): the
only modules of smdebug that import pandas (the ``profiler`` extra installs it)."""
