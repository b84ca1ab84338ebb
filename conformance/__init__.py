"""NeuroBrix conformance: float64 references, error bounds, and the tools that certify tables.

Not shipped in the wheel: it is run from a source checkout by contributors and CI.
"""
