"""L0 catalogs: models (from HF config.json), GPUs and clusters, each number with its source."""

from pdplan.catalog.gpu_spec import ClusterSpec, GPUSpec
from pdplan.catalog.gpus import get_gpu, list_gpus, load_gpu_file, make_cluster
from pdplan.catalog.hf_config import load_config_dict, model_from_hf_config
from pdplan.catalog.model_spec import (
    DTYPE_BYTES,
    LinearAttnSpec,
    MLASpec,
    ModelSpec,
    MoESpec,
    dtype_bytes,
)
from pdplan.catalog.models import get_model, list_models, resolve_model_name

__all__ = [
    "DTYPE_BYTES",
    "ClusterSpec",
    "GPUSpec",
    "LinearAttnSpec",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "dtype_bytes",
    "get_gpu",
    "get_model",
    "list_gpus",
    "list_models",
    "load_config_dict",
    "load_gpu_file",
    "make_cluster",
    "model_from_hf_config",
    "resolve_model_name",
]
