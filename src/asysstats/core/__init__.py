"""What every layer shares: errors, event tables, the string pool, rule declarations and results."""
