"""L4 tables, plots and reports."""
