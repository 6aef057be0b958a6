"""Many reports at once: per-rank report sets merged into one, loaded where they live.

``asys stats --merge-reports``: :func:`~asysstats.many.merged.open_merged` opens every
report on a worker (:mod:`~asysstats.many.cluster`), and the resulting
:class:`~asysstats.many.merged.MergedReport` serves every rule through the one-report
interface; the summary rules are reduced where each report lives
(:mod:`~asysstats.many.reduce`, :mod:`~asysstats.many.parts`) and only their statistics
come back; :mod:`~asysstats.many.hosts` adds the ``Host`` column. docs/many-reports.md.
"""
