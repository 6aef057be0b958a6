"""Many reports at once: per-rank report sets merged into one, loaded where they live.

``asys stats --merge-reports``: :func:`~asysstats.many.merged.open_merged` opens every
report on a worker (:mod:`~asysstats.many.cluster`), and the resulting
:class:`~asysstats.many.merged.MergedReport` serves every rule through the one-report
interface; :mod:`~asysstats.many.hosts` adds the ``Host`` column. docs/many-reports.md.
"""
