"""The NeuroBrix release gate: refuse any wheel or sdist that is not complete, before it is uploaded.

Run as ``python -m gate check DIST...`` or ``python -m gate build`` from a source checkout (the gate
is not shipped). Modules, in the order a run uses them:

``checks``        the check codes (G001...G703), a finding, the archive limits, the input error
``archive``       opening a wheel or sdist safely; member names, types and sizes (G3xx)
``completeness``  the tables and the tracked list inside an archive against the reference (G1xx, G5xx)
``wheel``         a wheel's RECORD (G2xx), metadata and ``__version__``
``sdist``         an sdist's layout and whether it rebuilds the wheel (G507, G508)
``metadata``      core metadata read and validated with ``packaging`` (G404, G601)
``tools``         twine check --strict and check-wheel-contents, folded in (G401-G403)
``smoke``         install the wheel in a fresh environment and run ``neurobrix tables verify`` (G7xx)
``checker``       one run over all dists; versions across them (G602, G603); folders (G001, G002)
``report``        text and JSON reports with one verdict
``build``         ``python -m build`` into a fresh folder
``cli``           ``main(argv)``
"""
