# The image that cluster/rayjob-perturb.yaml names: this repository installed on Ray's official CUDA
# image, with the Ray version and Python of the specs (Ray 2.60.0, Python 3.11).
#   docker build -t ghcr.io/your-org/hades-ray:0.1.0 .
#   docker build --build-arg SPACY_PIPELINES="de_core_news_sm xx_ent_wiki_sm" -t ghcr.io/your-org/hades-ray:0.1.0 .
# pip resolves torch from pyproject's range; PyPI's Linux x86_64 torch wheels are CUDA builds.
# The `languages` extra brings the word segmenters of Chinese, Japanese, Thai and Vietnamese (Korean's
# MeCab-ko is a system library pip cannot install); SPACY_PIPELINES names the trained spaCy pipelines
# (entities) the image carries for the languages it will run (`hades-ray languages` lists them).
FROM rayproject/ray:2.60.0-py311-gpu

ARG SPACY_PIPELINES="xx_ent_wiki_sm"
WORKDIR /app
COPY --chown=ray:users . /app
RUN pip install --no-cache-dir "/app[languages]" \
    && python -c "import hades_ray.cli, torch; assert torch.version.cuda, 'torch is a CPU build'; print(torch.__version__)" \
    && for pipeline in $SPACY_PIPELINES; do python -m spacy download "$pipeline" || exit 1; done
