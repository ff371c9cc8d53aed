"""Loops a graph may not have: a node waiting for itself, a function calling itself."""

from __future__ import annotations

from graphfreeze.errors import InputError

FIX = "fix or re-export the graph"  # the advice ending every structural fault


def check_recursion(calls: dict[str, list[str]], where: str) -> None:
    """TensorFlow crashes on recursive functions: find any cycle of calls."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for root in sorted(calls):
        if root in state:
            continue
        path, stack = [root], [iter(calls[root])]
        state[root] = 1
        while stack:
            callee = next(stack[-1], None)
            if callee is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(callee) == 1:
                loop = path[path.index(callee):] + [callee]
                what = (f"function '{callee}' calls itself" if len(loop) == 2 else
                        "functions " + " -> ".join(f"'{f}'" for f in loop) + " call each other")
                raise InputError(f"{where}: {what}; TensorFlow cannot run recursive functions, "
                                 "re-export the graph without the recursion")
            elif callee not in state:
                state[callee] = 1
                path.append(callee)
                stack.append(iter(calls[callee]))


def check_cycles(deps: dict[str, set[str]], where: str, scope: str) -> None:
    """No node may (through data or control edges) wait for itself. `deps` in the graph's own
    order: most graphs list every node after what it waits for, which settles it at once."""
    seen: set[str] = set()
    for name, ds in deps.items():
        if not ds <= seen:
            break
        seen.add(name)
    else:
        return
    users: dict[str, list[str]] = {}
    for name, ds in deps.items():
        for d in ds:
            users.setdefault(d, []).append(name)
    pending = {name: len(ds) for name, ds in deps.items()}
    ready = [name for name, n in pending.items() if n == 0]
    while ready:
        for user in users.get(ready.pop(), ()):
            pending[user] -= 1
            if pending[user] == 0:
                ready.append(user)
    left = sorted(name for name, n in pending.items() if n)
    if not left:
        return
    path, seen = [left[0]], {left[0]}  # walk unresolved inputs until a node repeats
    while (nxt := min(d for d in deps[path[-1]] if pending[d])) not in seen:
        path.append(nxt)
        seen.add(nxt)
    shown = " <- ".join(f"'{n}'" for n in path[path.index(nxt):] + [nxt])
    raise InputError(f"{where}: {scope}node '{nxt}' depends on itself ({shown}); graphs may loop "
                     f"only through a while loop's NextIteration, {FIX}")
