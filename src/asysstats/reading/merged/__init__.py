"""Many reports at once: per-rank report sets merged into one, loaded where they live.

``asys stats --merge-reports``: :func:`~asysstats.reading.merged.report.open_merged` opens every
report on a worker (:mod:`~asysstats.reading.merged.cluster`), and the resulting
:class:`~asysstats.reading.merged.report.MergedReport` serves every rule through the one-report
interface; the summary rules are reduced where each report lives
(:mod:`~asysstats.api.merging.reduce`, :mod:`~asysstats.api.merging.parts`) and only their statistics
come back; :mod:`~asysstats.api.merging.hosts` adds the ``Host`` column. docs/many-reports.md.
"""
