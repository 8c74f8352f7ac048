"""The profiler, part 3: what a person looks at, built on what part 2 (:mod:`smdebug.profiler.reading`)
reads.

* :mod:`~smdebug.profiler.views.report` — the HTML profiler report (``render_profiler_report``);
  ProfilerReport and ``smdebug report --profile`` write it.
* :mod:`~smdebug.profiler.views.timeline` — the Chrome trace / Perfetto timeline
  (``build_timeline``); ``smdebug profile timeline`` writes it.
* :mod:`~smdebug.profiler.views.units` — numbers as both show them (``20.9 ms``, ``12.3 MB/s``).

The pages are assembled with :mod:`smdebug.analysis.page_kit`, as the other HTML reports.
"""
