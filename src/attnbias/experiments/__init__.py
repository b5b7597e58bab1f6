"""Per-paper compositions of the library (models + optimisers + SVMs + data) into figure data."""
