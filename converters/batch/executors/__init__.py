"""Where batch jobs run: one module per executor, each an `Executor` (base.py). The built-ins
are listed by reference and imported when chosen (as plugin executors' entry points are)."""

BUILTIN_EXECUTORS = {"local": "graphfreeze.batch.executors.local:LocalExecutor",
                     "ray": "graphfreeze.batch.executors.ray_executor:RayExecutor"}
