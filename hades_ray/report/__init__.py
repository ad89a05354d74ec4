"""``hades-ray report``: the pipeline's outputs as the paper's analyses, in one self-contained page.

``inputs`` reads and checks the folders, one module per section computes its numbers and figures,
``plots`` draws them with matplotlib, ``render`` writes report.html, report.md and report.json.
"""
