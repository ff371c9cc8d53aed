"""Op types several modules need to recognise, named once. Sets private to one algorithm (a
pass's own patterns) stay in that pass."""

PLACEHOLDER_OPS = ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault")
VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp")
SWITCH_OPS = ("Switch", "RefSwitch")
MERGE_OPS = ("Merge", "RefMerge")
IF_OPS = ("If", "StatelessIf")
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
