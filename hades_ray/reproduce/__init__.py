"""The paper's experiments as commands: ``hades-ray reproduce tables`` trains and evaluates the grid of
HaDes' Tables 2 and 3 (LR, SVM and four transformer backbones, offline and online) as one Ray Tune
experiment, and writes the tables with the paper's figure, ours and the difference in each cell;
demo_loop.py runs the whole loop offline with simulated judges (``make demo-loop``).

Must not import: api, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
