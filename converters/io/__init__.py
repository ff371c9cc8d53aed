"""File and folder I/O: local, gs:// and ram:// paths, atomic transactions, marked temporaries,
tree digests."""
