"""Op types several modules need to recognise, named once. Sets private to one algorithm (a
pass's own patterns) stay in that pass."""

PLACEHOLDER_OPS = ("Placeholder", "PlaceholderV2", "PlaceholderWithDefault")
FED_OPS = PLACEHOLDER_OPS[:2]  # placeholders a run must feed (not one with a default)
VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp")
SWITCH_OPS = ("Switch", "RefSwitch")
MERGE_OPS = ("Merge", "RefMerge")
# v1 control flow's frames (a graph with none left needs no control edges for ordering)
FRAME_OPS = ("Switch", "RefSwitch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond")
IF_OPS = ("If", "StatelessIf")
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
# a tf.data iterator's next element: a model_dir's features, where its input_fn fed them
ITERATOR_GET_OPS = ("IteratorGetNext", "IteratorGetNextSync")
# ops whose output is their first input's value, unchanged
IDENTITY_OPS = ("Identity", "Snapshot", "StopGradient", "PreventGradient")
# ops inference can drop, their input passed through (checks and debug prints too)
DROPPABLE_OPS = (*IDENTITY_OPS, "CheckNumerics", "CheckNumericsV2", "Print", "EnsureShape",
                 "DebugIdentity")

# graphfreeze's own attr on a Const whose value is held apart (graph/weights.py): its key
WEIGHT_ATTR = "_graphfreeze_weight"
