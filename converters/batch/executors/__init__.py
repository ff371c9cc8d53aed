"""Where batch jobs run: one module per executor, each an `Executor` (base.py). The registry
lists the built-ins by reference (registry.BUILTIN_EXECUTORS) and imports one when chosen."""
