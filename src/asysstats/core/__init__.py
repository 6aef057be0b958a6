"""What every layer shares: errors, event tables, the string pool, output columns and results, user regular expressions, atomic files, freed memory."""
