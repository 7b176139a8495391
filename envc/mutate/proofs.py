"""JAX mutants proven equivalent from the generated code alone, by patterns the emitter produces.

Each proof is a function of the module's tree and the site, returning why the mutant cannot change an output,
or None. `envc.mutate.oob` holds the index proofs (JAX's out-of-range rules); `JaxProgram.same_tree` asks both.
"""

from __future__ import annotations

import ast
from typing import Any

from envc.mutate import oob, operators, values

Range = tuple[int, int]  # lo <= v < hi


def _innermost(tree: ast.Module, node: ast.AST) -> ast.FunctionDef | None:
    """The innermost function around `node` (SSA names are per function)."""
    line = getattr(node, "lineno", 0)
    fns = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.lineno <= line <= (f.end_lineno or 0)]
    return min(fns, key=lambda f: (f.end_lineno or 0) - f.lineno) if fns else None


def _in_function(tree: ast.Module, site: operators.Site) -> tuple[ast.AST, list[ast.AST]]:
    """The site's node, and every node of the innermost function around it."""
    node = list(ast.walk(tree))[site.index]
    return node, list(ast.walk(_innermost(tree, node) or tree))


def _else_arm_dropped(
    tree: ast.Module, site: operators.Site, shapes: dict[str, tuple[int, ...]]
) -> tuple[ast.Call, oob._Function] | None:
    """The `where(cond, a, b)` whose else-arm the site drops, and the `oob` view (defs, parents, shapes) of its
    function; None for any other site."""
    if site.op != "branch_drop" or "else-arm" not in site.after:
        return None
    node = list(ast.walk(tree))[site.index]
    fn = _innermost(tree, node)
    if not (isinstance(node, ast.Call) and operators.call_name(node) == "where" and len(node.args) == 3) or fn is None:
        return None
    return node, oob.function_view(tree, fn, shapes)


def exclusive_cases(tree: ast.Module, site: operators.Site) -> str | None:
    """`y_6 = where(a, x, y_5)`, `y_5 = where(b, z, ... x)`: a chain of `where`s whose tests `b`, ... each exclude
    `a` (cases of one `match`: one value tested against disjoint constants) ends in `x`. Dropping the then-arm (or
    the statement) keeps `y_5`, which is `x` wherever `a` holds."""
    node, nodes = _in_function(tree, site)
    call = node.value if site.op == "stmt_drop" and isinstance(node, ast.Assign) else node
    if not (isinstance(call, ast.Call) and operators.call_name(call) == "where" and len(call.args) == 3):
        return None
    if not (site.op == "branch_drop" and "then-arm" in site.after) and not (
        site.op == "stmt_drop" and site.replacement == ast.unparse(call.args[2])  # `y_6 = y_5`: the same drop
    ):
        return None
    defs = {t.id: n.value for n in nodes if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    a = _cases(call.args[0], defs)
    if a is None:
        return None
    kept, passed = call.args[2], list[list[Any]]()
    while ast.dump(kept) != ast.dump(call.args[1]):
        inner = defs.get(kept.id) if isinstance(kept, ast.Name) else None
        if not (isinstance(inner, ast.Call) and operators.call_name(inner) == "where" and len(inner.args) == 3):
            return None
        if len(passed) > 64:
            return None
        b = _cases(inner.args[0], defs)
        if b is None or a[0] != b[0] or a[1] & b[1]:
            return None
        passed.append(sorted(b[1]))
        kept = inner.args[2]
    return (f"proven: `{ast.unparse(call)[:60]}` -> its else-arm: where `{a[0]}` is one of {sorted(a[1])} the "
            f"else-arm's tests (one of {passed}) fail, so it holds the same value")  # fmt: skip


def boundary_kept(tree: ast.Module, site: operators.Site) -> str | None:
    """`k = (x < c) & ...; y = where(k, c, x)`: `<` -> `<=` changes `k` only where `x == c`, and there both
    arms hold `c` (mountain car's wall: `velocity < 0` sets velocity to 0). Equal values; the sign of a
    zero may differ, which IEEE equality (the suite's, spec-language 14.3) does not see."""
    if site.op != "compare" or site.before not in ("<", "<=", ">", ">="):
        return None
    cmp, nodes = _in_function(tree, site)
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    assert isinstance(cmp, ast.Compare)
    x, c = cmp.left, literal(cmp.comparators[0])
    if not isinstance(x, ast.Name) or c is None or isinstance(c, bool):
        return None
    up: ast.AST = cmp
    while (p := parents.get(id(up))) is not None and operators.call_name(p) == "logical_and":
        up = p
    assign = parents.get(id(up))
    if not (isinstance(assign, ast.Assign) and assign.value is up and isinstance(assign.targets[0], ast.Name)):
        return None
    k = assign.targets[0].id
    uses = [n for n in nodes if isinstance(n, ast.Name) and n.id == k and isinstance(n.ctx, ast.Load)]
    where = parents.get(id(uses[0])) if len(uses) == 1 else None
    if not (isinstance(where, ast.Call) and operators.call_name(where) == "where" and len(where.args) == 3):
        return None
    if where.args[0] is not uses[0]:
        return None
    then, other = where.args[1], where.args[2]
    defs = {t.id: n.value for n in nodes if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    value = literal(defs[then.id]) if isinstance(then, ast.Name) and then.id in defs else literal(then)
    if value != c or not (isinstance(other, ast.Name) and other.id == x.id):
        return None
    return (f"proven: `{ast.unparse(cmp)}` and its flip differ only where {x.id} == {c!r}, and there both arms "
            f"of `{ast.unparse(where)[:60]}` hold {c!r} (equal values; a zero's sign aside)")  # fmt: skip


def equality_excluded(tree: ast.Module, site: operators.Site) -> str | None:
    """`where(... or x == y, a, f(x > y))`: the flip `>` -> `>=` differs only where `x == y`, and there the
    enclosing `where` takes its then-arm (a reward's win / draw / loss: `if score[p] == score[o] then 0.0 else if
    score[p] > score[o] then 1.0 else -1.0`)."""
    if site.op != "compare" or site.before not in ("<", "<=", ">", ">="):
        return None
    cmp, nodes = _in_function(tree, site)
    assert isinstance(cmp, ast.Compare)
    pair = {ast.dump(cmp.left), ast.dump(cmp.comparators[0])}
    parents = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    up: ast.AST = cmp
    while (p := parents.get(id(up))) is not None and not isinstance(p, ast.stmt):
        if isinstance(p, ast.Call) and operators.call_name(p) == "where" and len(p.args) == 3 and p.args[2] is up:
            if any(pair == {ast.dump(e.left), ast.dump(e.comparators[0])} for e in _disjuncts(p.args[0])):
                return (f"proven: `{ast.unparse(cmp)}` and its flip differ only where its sides are equal, and "
                        f"there `{ast.unparse(p.args[0])[:60]}` takes the other arm")  # fmt: skip
        up = p
    return None


def decided_alike(tree: ast.Module, site: operators.Site, module: values.Module) -> str | None:
    """The changed expression, or one around it in its statement, takes one and the same value in the original
    and in the mutant on every input (integer intervals: `envc.mutate.values`): `(0 + dc) < 4` -> `<= 4` where
    `dc` is -1, 0 or 1; `drop_index(m, 4)` -> `drop_index(m, 5)` where `m` is 0."""
    if site.op not in ("compare", "arith", "constant", "and_or"):
        return None
    node = list(ast.walk(tree))[site.index]
    fn = _innermost(tree, node)
    if fn is None or not isinstance(node, ast.expr):
        return None
    changed = list(ast.walk(operators.apply(tree, site)))[site.index]
    assert isinstance(changed, ast.expr)
    v = module.values(fn)
    parents = {id(c): p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    up: ast.AST = node
    while isinstance(up, ast.expr):
        if site.op == "constant" and up is not node and not _elementwise(up):
            return None  # a constant in a shape, a slice or a call's other roles: intervals see values only
        before, after = v.interval(up), v.interval(up, {id(node): changed})
        if before is not None and before == after and before[0] == before[1]:
            return (f"proven: `{ast.unparse(up)[:60]}` is {before[0]} in the original and in the mutant on every "
                    "input (integer intervals of the generated code)")
        up = parents.get(id(up), fn)
    return None


_ELEMENTWISE = {"where", "logical_and", "logical_or", "logical_not", "minimum", "maximum", "clip", "clamp_index",
                "drop_index", "floor_div", "floor_mod", "int8", "int16", "int32", "uint32", "bool_"}


def _elementwise(node: ast.AST) -> bool:
    """Does `node` compute its value element by element from its operands, its shape not set by a constant?"""
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
        return True
    if isinstance(node, ast.Call):
        f = node.func
        name = operators.call_name(node) or (f.id if isinstance(f, ast.Name) else None)
        return name in _ELEMENTWISE and not node.keywords
    return False


def same_arms(tree: ast.Module, site: operators.Site, module: values.Module) -> str | None:
    """A dropped or swapped arm of `where(c, a, b)` whose arms hold the same value on every input (copies and
    `where`s that agree, tests the intervals decide: `where(4 < n, x, y)` with `n` in 0..4 is `y`)."""
    if not (site.op == "where_swap" or site.op == "branch_drop"):
        return None
    node = list(ast.walk(tree))[site.index]
    fn = _innermost(tree, node)
    if fn is None or not (isinstance(node, ast.Call) and operators.call_name(node) == "where" and len(node.args) == 3):
        return None
    v = module.values(fn)
    c = v.interval(node.args[0])
    kept_else = site.op == "branch_drop" and "then-arm" in site.after
    if site.op == "branch_drop" and c == ((0, 0) if kept_else else (1, 1)):
        return f"proven: the test of `{ast.unparse(node)[:60]}` always takes the kept arm (integer intervals)"
    if v.same(node.args[1], node.args[2]):
        return f"proven: both arms of `{ast.unparse(node)[:60]}` hold the same value on every input"
    return None


def guarded_index(tree: ast.Module, site: operators.Site, shapes: dict[str, tuple[int, ...]]) -> str | None:
    """`x.at[where(i < k, i, s)].set(v, mode="drop")` (or `.get(mode="fill")`) on an axis of length `n <= k`:
    where the guard fails, `i >= n` is out of range itself, so the write is dropped (the read fills) without the
    sentinel `s` too (a push's guard against a full zone)."""
    found = _else_arm_dropped(tree, site, shapes)
    if found is None:
        return None
    node, fn = found
    guard = _resolve(node.args[0], fn.defs)
    if not (isinstance(guard, ast.Compare) and len(guard.ops) == 1 and isinstance(guard.ops[0], ast.Lt)):
        return None
    k = fn.value(guard.comparators[0])
    uses = list(fn.positions(node))
    lengths = {fn.length(sub, axis, True) for kind, sub, axis in uses if kind == "at" and fn.drop_or_fill(sub)}
    if k is None or not uses or len(lengths) != 1 or any(kind != "at" for kind, _, _ in uses):
        return None
    n = lengths.pop()
    if n is None or n > k or ast.dump(guard.left) != ast.dump(node.args[1]):
        return None
    return (f"proven: where `{ast.unparse(guard)}` fails, {ast.unparse(node.args[1])} >= {k} is out of range of "
            f"the axis of length {n} itself: the drop write (fill read) does the same without the sentinel")


def empty_pop(tree: ast.Module, site: operators.Site, shapes: dict[str, tuple[int, ...]]) -> str | None:
    """A pop's guard `ok = n > 0` dropped from its read `where(ok, row[clamp_index(n - 1, c)], 0)` or its write
    `row.at[where(ok, n - 1, c)].set(0, mode="drop")`: where it fails the zone is empty (counts are >= 0), and an
    empty zone's slots all hold 0 (docs/spec-language.md, zones), so slot 0 reads 0 and slot `c - 1` (index -1)
    is written the 0 it holds."""
    found = _else_arm_dropped(tree, site, shapes)
    if found is None or not isinstance(found[0].args[0], ast.Name):
        return None
    node, fn = found
    assert isinstance(node.args[0], ast.Name)
    ok = node.args[0].id
    pops = [p for p in ast.walk(fn.fn) if isinstance(p, ast.Call) and _pop_pair(p, ok, fn) is not None]
    pairs = {_pop_pair(p, ok, fn) for p in pops}
    if node not in pops or len(pairs) != 1:
        return None
    row, count = pairs.pop()  # type: ignore[misc]
    if not any(_pop_pair(p, ok, fn, write=True) == (row, count) for p in pops) or not any(
        _pop_pair(p, ok, fn, write=False) == (row, count) for p in pops
    ):
        return None  # both halves of the emitter's pop, on one zone row and its count
    guard = _resolve(node.args[0], fn.defs)
    if not (isinstance(guard, ast.Compare) and isinstance(guard.ops[0], ast.Gt) and ast.unparse(guard.left) == count
            and fn.value(guard.comparators[0]) == 0):  # fmt: skip
        return None
    return (f"proven: where `{ok}` ({ast.unparse(guard)}) fails the zone `{row}` is empty, and an empty zone's "
            f"slots hold 0: the pop reads and writes 0 without its guard")


def remove_in_range(
    tree: ast.Module, site: operators.Site, shapes: dict[str, tuple[int, ...]], ranges: dict[str, dict[str, Range]]
) -> str | None:
    """`remove_at(z, i)`'s guard `ok = (i >= 0) & (i < n)` dropped from its read `where(ok, row[i], 0)` or its
    shift `where(ok, zone_remove(row, i), row)`, where `i`'s range (an action parameter's, or what every call
    passes) lies within the zone's slots: where the guard fails, `i` is a free slot, which holds 0, and so does
    every slot after it, so the read gives 0 and the shift changes nothing."""
    found = _else_arm_dropped(tree, site, shapes)
    if found is None or not isinstance(found[0].args[0], ast.Name):
        return None
    node, fn = found
    assert isinstance(node.args[0], ast.Name)
    guard = _resolve(node.args[0], fn.defs)
    if not (isinstance(guard, ast.BinOp) and isinstance(guard.op, ast.BitAnd)):
        return None
    low, high = guard.left, guard.right
    if not (isinstance(low, ast.Compare) and isinstance(low.ops[0], ast.GtE) and fn.value(low.comparators[0]) == 0
            and isinstance(high, ast.Compare) and isinstance(high.ops[0], ast.Lt)
            and isinstance(low.left, ast.Name) and ast.dump(low.left) == ast.dump(high.left)):  # fmt: skip
        return None
    i, count = low.left.id, high.comparators[0]
    then, other = node.args[1], node.args[2]
    row: ast.expr
    index: ast.expr
    if isinstance(then, ast.Subscript) and literal(other) == 0 and isinstance(then.slice, ast.Name):
        row, index = then.value, then.slice  # the read
    elif (isinstance(then, ast.Call) and isinstance(then.func, ast.Name) and then.func.id == "zone_remove"
          and len(then.args) == 2 and ast.dump(then.args[0]) == ast.dump(other)):  # fmt: skip
        row, index = other, then.args[1]  # the shift
    else:
        return None
    known = ranges.get(fn.fn.name, {}).get(i)
    shape = fn.shape(row)
    if not (isinstance(index, ast.Name) and index.id == i and known and shape and len(shape) == 1):
        return None
    if not (0 <= known[0] and known[1] <= shape[0] and _zone_pair(row, count, fn.defs)):
        return None
    return (f"proven: where `{ast.unparse(guard)}` fails, {i} (in {known[0]}..{known[1] - 1}) is a free slot of the "
            f"{shape[0]}-slot zone `{ast.unparse(row)}`, and free slots hold 0: the same value without the guard")


def _zone_pair(row: ast.expr, count: ast.expr, defs: dict[str, list[ast.expr]]) -> bool:
    """`row` and `count` are a zone's storage and its count (`state.hand`, `state.hand__count`), or their rows
    at the same leading index (`state.hand.at[at_1].get(...)`, `state.hand__count.at[at_1].get(...)`)."""
    r, c = _resolve(row, defs), _resolve(count, defs)

    def base(e: ast.expr) -> tuple[str, str] | None:
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "state":
            return e.attr, ""
        if (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get"
                and isinstance(e.func.value, ast.Subscript) and isinstance(e.func.value.value, ast.Attribute)
                and e.func.value.value.attr == "at"):  # fmt: skip
            inner = base(e.func.value.value.value)
            return (inner[0], ast.dump(e.func.value.slice)) if inner and not inner[1] else None
        return None

    a, b = base(r), base(c)
    return a is not None and b is not None and b == (a[0] + "__count", a[1])


def _pop_pair(call: ast.Call, ok: str, fn: oob._Function, write: bool | None = None) -> tuple[str, str] | None:
    """(row, count) if `call` is one half of a pop guarded by `ok`: the read `where(ok, row[clamp_index(count - 1,
    c)], 0)` or the write `row.at[...]` whose index is `where(ok, count - 1, c)` and value 0."""
    if not (operators.call_name(call) == "where" and len(call.args) == 3):
        return None
    if not (isinstance(call.args[0], ast.Name) and call.args[0].id == ok):
        return None
    then = call.args[1]
    if write is not True and isinstance(then, ast.Subscript) and literal(call.args[2]) == 0:  # the read
        idx = then.slice
        clamp = isinstance(idx, ast.Call) and isinstance(idx.func, ast.Name) and idx.func.id == "clamp_index"
        if clamp and isinstance(idx, ast.Call) and len(idx.args) == 2:
            count = _minus_one(idx.args[0])
            if count is not None:
                return ast.unparse(then.value), count
    if write is not False:  # the write: the `where` is the index of `row.at[...]`, set to 0 in drop mode
        count = _minus_one(then)
        sub = fn.parents.get(id(call))
        method = fn.parents.get(id(sub))
        setter = fn.parents.get(id(method))
        if count is None or not (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute)
                                 and sub.value.attr == "at" and isinstance(method, ast.Attribute)
                                 and method.attr == "set" and isinstance(setter, ast.Call)):  # fmt: skip
            return None
        mode = next((kw.value for kw in setter.keywords if kw.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and mode.value == "drop" and setter.args and literal(setter.args[0]) == 0:
            return ast.unparse(sub.value.value), count
    return None


def _minus_one(e: ast.expr) -> str | None:
    """`count` for `count - 1`."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and literal(e.right) == 1:
        return ast.unparse(e.left)
    return None


def _resolve(e: ast.expr, defs: dict[str, list[ast.expr]]) -> ast.expr:
    """A local bound once, replaced by its value (`ok_2` -> `n_2 < 3`)."""
    while isinstance(e, ast.Name) and len(defs.get(e.id, [])) == 1:
        e = defs[e.id][0]
    return e


def _disjuncts(e: ast.expr) -> list[ast.Compare]:
    """The `x == y` tests `e` is an `or` of (through `jnp.logical_or` and `|`)."""
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], ast.Eq):
        return [e]
    if isinstance(e, ast.Call) and operators.call_name(e) == "logical_or" and len(e.args) == 2:
        return _disjuncts(e.args[0]) + _disjuncts(e.args[1])
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
        return _disjuncts(e.left) + _disjuncts(e.right)
    return []


def _cases(e: ast.expr, defs: dict[str, ast.expr], depth: int = 0) -> tuple[str, set[Any]] | None:
    """(`v`, {k1, k2}) for a test `v == k1 | v == k2` (a match's case, through the locals it is bound to)."""
    if isinstance(e, ast.Name) and e.id in defs and depth < 8:
        return _cases(defs[e.id], defs, depth + 1)
    if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.ops[0], ast.Eq):
        k = literal(e.comparators[0])
        return (ast.unparse(e.left), {k}) if isinstance(e.left, ast.Name) and k is not None else None
    if isinstance(e, ast.Call) and operators.call_name(e) == "logical_or" and len(e.args) == 2:
        x, y = _cases(e.args[0], defs, depth + 1), _cases(e.args[1], defs, depth + 1)
        return (x[0], x[1] | y[1]) if x is not None and y is not None and x[0] == y[0] else None
    return None


def literal(e: ast.expr) -> bool | int | float | None:
    """The value of a generated constant (`jnp.float32(0.0)`, `jnp.int8(3)`, `jnp.bool_(True)`, either inside
    `jax.lax.optimization_barrier(...)`), else None."""
    while isinstance(e, ast.Call) and len(e.args) == 1 and not e.keywords:
        f = e.func
        if isinstance(f, ast.Attribute) and (
            f.attr == "optimization_barrier" or (isinstance(f.value, ast.Name) and f.value.id == "jnp")
        ):
            e = e.args[0]
        else:
            return None
    neg = isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub)
    c = e.operand if neg and isinstance(e, ast.UnaryOp) else e
    if isinstance(c, ast.Constant) and isinstance(c.value, (bool, int, float)):
        return -c.value if neg else c.value
    return None
