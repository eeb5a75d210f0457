"""L0 traffic: trace readers, length histograms, arrival processes, live metrics."""
