"""L1 cost model: memory, FLOPs/bytes, collectives, step time, KV transfer, calibration."""
