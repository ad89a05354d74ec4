"""The paper's feature detectors (LR and SVM): their span features (masked-LM probability and entropy,
spaCy tags through text/tagging.py, TF-IDF and PPMI), the feature stages, and the linear models.

Must not import what detect/ must not (its __init__ names them).
"""
