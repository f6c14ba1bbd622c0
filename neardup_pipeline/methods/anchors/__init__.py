"""Anchor words: the model and its file (model.py), fitting (fit.py), the detection method
(method.py), and the pipeline's fit from its first pages (warmup.py)."""
