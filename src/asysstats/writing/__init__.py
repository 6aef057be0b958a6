"""Writing results: CSV, aligned columns, JSON, XLSX, and where they go."""
