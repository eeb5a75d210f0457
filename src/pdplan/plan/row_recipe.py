"""Scheduler settings of a measured row's InferenceMAX launch recipe that change when prompts
are scheduled: TensorRT-LLM's attention-DP balancing and batch waiting (sim.gate)."""

from __future__ import annotations

from dataclasses import replace

from pdplan.perf.efficiency import Efficiency
from pdplan.perf.measured import MeasuredRow
from pdplan.plan.row_setup import is_inferencemax
from pdplan.plan.row_spec import row_spec
from pdplan.plan.row_vllm import MINIMAX_FP8_RECIPES, minimax_fp8_recipe
from pdplan.sim.gate import ContextGate

__all__ = [
    "recipe_text",
    "row_gate",
    "row_recipe_eff",
    "row_token_budget",
    "trtllm_max_num_tokens",
]

# InferenceX benchmarks/dsr1_fp{4,8}_b200_trt{,_mtp}.sh (SemiAnalysisAI/InferenceX): with
# attention DP the DeepSeek recipes write `attention_dp_config: {enable_balance: true,
# timeout_iters: 60, batching_wait_iters: 0}`; gptoss_fp4_b200_trt.sh writes only
# `enable_balance: true`, so TensorRT-LLM's defaults hold: timeout_iters 50,
# batching_wait_iters 10 (tensorrt_llm/llmapi/llm_args.py AttentionDpConfig).
_BALANCE = {"deepseek": (60, 0), "gpt-oss": (50, 10)}  # family -> (timeout, wait) iterations

# dsr1_fp8_b200_trt.sh, 1k / 1k at 64 <= C < 256 without DP: DELAY_BATCHING writes
# `batch_wait_timeout_iters: 40, batch_wait_max_tokens_ratio: 0.8` (iterations, fraction of
# max_num_tokens)
_BATCH_WAIT = (40, 0.8)

# The DeepSeek recipes stream with `stream_interval: 10` (dsr1_fp{4,8}_b200_trt{,_mtp}.sh) and
# their rows' first token reaches the client about 9 decode steps after the prefill: at C = 4,
# where no queue forms, measured minus simulated TTFT is 7.7-11.7 steps of the measured TPOT
# over TP4 / TP8, FP4 / FP8 and plain or MTP decoding (steps of K + 1 verified tokens) alike,
# and the 8k prompts' rows agree. So the first response leaves with the interval's 10th
# iteration, 9 steps late. gptoss_fp4_b200_trt.sh streams at 20 with num_postprocess_workers: 4
# and its rows show no such delay (TTFT 35-45 ms at C = 4), so it is not applied there.
_FIRST_TOKEN_STEPS = 9.0  # steps: stream_interval - 1


def _single_node_trtllm(row: MeasuredRow) -> bool:
    """An aggregated InferenceMAX TensorRT-LLM row: launched by the single-node scripts above
    (disaggregated rows ran Dynamo's recipes, whose settings these are not)."""
    return row.backend == "trtllm" and row.mode == "agg" and is_inferencemax(row)


def _family(row: MeasuredRow) -> str:
    name = row.model_path.lower()
    if "deepseek-r1" in name or "deepseek-v3" in name:
        return "deepseek"
    return "gpt-oss" if "gpt-oss" in name else ""


def trtllm_max_num_tokens(row: MeasuredRow) -> int:
    """The DeepSeek recipes' --max_num_tokens (tokens one iteration of one rank may take):
    plain, (C + ISL + 64) rounded up to 64 and at least 8192 (dsr1_fp{4,8}_b200_trt.sh:
    MAX_NUM_TOKENS=$(( ($CONC+$ISL+64+63)/64*64 )), then >= 8192); MTP, ((K + 1) x max batch +
    ISL + 64) rounded up to 64 with no floor, the max batch C, or C / GPUs with attention DP
    (dsr1_fp{4,8}_b200_trt_mtp.sh)."""
    c = row.concurrency or 1
    spec = row_spec(row)
    if spec is None:
        return max(8192, (c + row.isl + 64 + 63) // 64 * 64)
    lay = row.layout
    batch = c // lay.gpus if (lay is not None and lay.dp > 1) else c
    return ((spec.draft_tokens + 1) * max(1, batch) + row.isl + 64 + 63) // 64 * 64


def row_token_budget(row: MeasuredRow) -> int | None:
    """Tokens one iteration of one rank may take in the row's InferenceMAX TensorRT-LLM
    recipe (--max_num_tokens), or None (the engine's default applies): the DeepSeek recipes'
    trtllm_max_num_tokens; gptoss_fp4_b200_trt.sh sets MAX_NUM_TOKENS=20000. The vLLM
    MiniMax-M2.5 FP8 recipe from v0.19 passes --max-num-batched-tokens $((ISL * 2)) (row_vllm)."""
    recipe = minimax_fp8_recipe(row)
    if recipe is not None:
        per_isl = MINIMAX_FP8_RECIPES[recipe][2]
        return per_isl * row.isl if per_isl else None
    if not _single_node_trtllm(row):
        return None
    fam = _family(row)
    if fam == "deepseek":
        return trtllm_max_num_tokens(row)
    return 20000 if fam == "gpt-oss" else None


def row_gate(row: MeasuredRow) -> ContextGate | None:
    """The context gate the row's InferenceMAX TensorRT-LLM recipe set, or None (any other row:
    engines schedule new prompts at the next step by default)."""
    if not _single_node_trtllm(row) or row.layout is None:
        return None
    fam, lay = _family(row), row.layout
    if lay.dp > 1 and fam in _BALANCE:
        timeout, wait = _BALANCE[fam]
        return ContextGate("balance", timeout, ranks=lay.dp, wait_steps=wait)
    c = row.concurrency or 0
    if (
        fam == "deepseek"
        and (row.weight_dtype or "").startswith("fp8")
        and (row.isl, row.osl) == (1024, 1024)
        and 64 <= c < 256
        and row_spec(row) is None
    ):
        timeout, ratio = _BATCH_WAIT
        return ContextGate("batch", timeout, tokens=int(ratio * trtllm_max_num_tokens(row)))
    return None


def row_recipe_eff(row: MeasuredRow, eff: Efficiency) -> Efficiency:
    """`eff` with the row's InferenceMAX TensorRT-LLM recipe settings in: its --max_num_tokens
    as the step budget (row_token_budget), and for the DeepSeek recipes the first token's
    delay (_FIRST_TOKEN_STEPS)."""
    budget = row_token_budget(row)
    if budget is not None:
        eff = replace(eff, prefill_chunk=budget)
    if _single_node_trtllm(row) and _family(row) == "deepseek":
        eff = replace(eff, ttft_decode_steps=_FIRST_TOKEN_STEPS)
    return eff


def recipe_text(row: MeasuredRow) -> str:
    """The recipe settings the row is predicted with, for `accuracy --rows` ('' = none):
    e.g. 'max_num_tokens=1152; first_token_steps=9; balance=60/0 x8'."""
    parts = []
    budget = row_token_budget(row)
    if budget is not None:
        name = "max_num_batched_tokens" if row.backend == "vllm" else "max_num_tokens"
        parts.append(f"{name}={budget}")
    recipe = minimax_fp8_recipe(row)
    if recipe is not None:
        frac, kvd, _ = MINIMAX_FP8_RECIPES[recipe]
        parts.append(f"gpu_memory_utilization={frac:g}; kv_cache_dtype={kvd}")
    if _single_node_trtllm(row) and _family(row) == "deepseek":
        parts.append(f"first_token_steps={_FIRST_TOKEN_STEPS:g}")
    gate = row_gate(row)
    if gate is not None and gate.kind == "balance":
        parts.append(f"balance={gate.timeout_steps}/{gate.wait_steps} x{gate.ranks}")
    elif gate is not None:
        parts.append(f"batch_wait={gate.timeout_steps}/{gate.tokens}")
    return "; ".join(parts)
