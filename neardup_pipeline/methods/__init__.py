"""Detection methods, one module or folder each; what a method is and may offer (contract.py);
the configured ones, built from settings (registry.py)."""
