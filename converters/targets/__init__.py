"""Built-in targets, declared as data in the *.toml files beside this module."""
