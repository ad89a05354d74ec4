# The image that cluster/rayjob-perturb.yaml names: this repository installed on Ray's official CUDA
# image, with the Ray version and Python of the specs (Ray 2.60.0, Python 3.11).
#   docker build -t ghcr.io/your-org/hades-ray:0.1.0 .
# pip resolves torch from pyproject's range; PyPI's Linux x86_64 torch wheels are CUDA builds.
FROM rayproject/ray:2.60.0-py311-gpu

WORKDIR /app
COPY --chown=ray:users . /app
RUN pip install --no-cache-dir /app \
    && python -c "import hades_ray.cli, torch; assert torch.version.cuda, 'torch is a CPU build'; print(torch.__version__)"
