"""NeuroBrix: LLM inference on Triton kernels whose settings are certified per GPU class."""

__version__ = "0.1.0"
