"""L4 real-endpoint benchmark client and metrics scraping."""
