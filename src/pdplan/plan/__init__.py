"""L3 planning: the xPyD ratio, agg-vs-disagg decision, search, goodput."""
