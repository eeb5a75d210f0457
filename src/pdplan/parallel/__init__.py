"""L1 parallel strategies: TP/PP/EP/SP/CP layouts, validity rules, communication volumes."""
