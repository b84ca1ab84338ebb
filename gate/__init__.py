"""The NeuroBrix release gate: refuse any wheel or sdist that is not exactly what this repository ships.

Run as ``python -m gate check DIST...`` or ``python -m gate build`` from a source checkout (the gate
is not shipped). Modules, in the order a run uses them:

``checks``      the check codes (G001...G704), a finding, the cap on findings, the limits, the input error
``names``       member names judged from their bytes, and where they land on each file system (G301-G303, G310)
``zipstrict``   the strict zip reader: one reading or a refusal (G311-G314), capped inflation
``tarstrict``   the strict tar reader: ustar files and folders only, nothing after the end (G311-G314)
``archive``     opening a wheel or sdist strictly; member names, types and sizes (G3xx)
``yamlsafe``    YAML bounded before it is built: no anchors or aliases, a size and a depth cap
``backend``     the build backend run in isolation (the repository's metadata, a wheel from an sdist)
``repository``  what the repository ships: the files git tracks, what pyproject.toml declares
``completeness`` the tables and the tracked list inside an archive against the reference (G1xx, G5xx)
``layout``      where an installer writes each wheel member, against the allow-list (G107-G109)
``metadata``    core metadata, WHEEL and entry points against pyproject.toml (G404, G406-G408, G601)
``wheel``       a wheel's checks: layout, RECORD (G2xx), metadata, tables, ``__version__``
``sdist``       an sdist's layout, its files against the repository (G507, G509), the rebuild (G508)
``tools``       twine check --strict and check-wheel-contents, folded in (G401-G403)
``smoke``       install the wheel with pip, hash what it wrote, run ``neurobrix tables verify`` (G7xx)
``checker``     one run over all dists; versions across them (G602, G603); folders (G001-G003)
``report``      text and JSON reports with one verdict
``build``       ``python -m build`` into a fresh folder
``cli``         ``main(argv)``
"""
