"""`freeze inspect` (report.py) and `freeze scan` (scan.py): describe and check a model
without converting it."""
