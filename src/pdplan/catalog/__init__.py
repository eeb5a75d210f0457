"""L0 catalogs: models (from HF config.json), GPUs and clusters, each number with its source."""
