"""Which ops each artifact format takes, for export errors and `freeze inspect`."""
