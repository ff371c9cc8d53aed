"""Model sources: each turns what a user has on disk into a LoadedModel."""
