"""Reading reports into typed columnar tables, and writing rule results."""
