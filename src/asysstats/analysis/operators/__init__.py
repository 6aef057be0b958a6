"""PPU operator analysis: recognition, correlation, merging, layers and the utilisation model.

* :mod:`catalog` — operator types, library and kernel-name tables, the device catalogue
  and ``--device-spec`` files;
* :mod:`recognise` — range texts and kernel names -> operators (``--ppu-op-config`` first);
* :mod:`merge` — merge keys: minor parameters dropped unless a ``no-merge-*`` option says so;
* :mod:`model` — FLOPs and HBM bytes from operator parameters, peaks per device;
* :mod:`analysis` — one report's operators: activities, correlation, the per-activity claim;
* :mod:`instances` — operator instances and merged groups of the flat rules;
* :mod:`layers` — the framework / library / kernel breakdown with ``Native`` and ``Idle``;
* :mod:`unittest_gen` — the unit-test script of ``ppu_op_unit_test``.

``docs/operators.md`` describes the decisions (claim order, byte model, order-by values).
"""
