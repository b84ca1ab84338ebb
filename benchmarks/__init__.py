"""NeuroBrix benchmarks on a GPU: the engine end to end and each certified kernel against PyTorch. Not shipped."""
