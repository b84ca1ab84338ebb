"""Generated validators of the table formats (``python -m conformance schemas``): never edit by hand."""
