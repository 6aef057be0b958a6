"""Reading reports: SQLite exports, Kineto traces and merged report sets behind one protocol."""
