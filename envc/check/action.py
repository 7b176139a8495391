"""Where a body may read `action`, the action of the transition (docs/spec-language.md sections 5 and 14)."""

from __future__ import annotations

from envc.check.symbols import StorageSym
from envc.ir import I32, DType, Ty

# The `Context.where` of the bodies that score a transition: they read the action just taken.
OUTPUTS = frozenset({"reward", "terminated", "truncated", "observation"})
BOX_EFFECT = "continuous action effect"


def discrete_symbol() -> StorageSym:
    """`action` of a spec with discrete actions: the id of the action just taken, an `i32` (-1: none)."""
    return StorageSym("action", "action", "array", (), I32, writable=False)


def box_symbol(shape: tuple[int, ...]) -> StorageSym:
    """`action` of a spec with a continuous action: its `f32` values (zeros: none)."""
    return StorageSym("action", "action", "array", shape, Ty(dtype=DType.F32, shape=shape), writable=False)


def misplaced(sym: StorageSym, where: str) -> str | None:
    """Why `action` (`sym`) cannot be read in the body `where` (an E030 message), or None if it can."""
    box = bool(sym.ty is not None and sym.ty.shape)
    if where in OUTPUTS or (box and where == BOX_EFFECT):
        return None
    readers = "`reward`, `terminated`, `truncated` and the observation body"
    if box:
        msg = f"'action' can only be read in the continuous action's effect, {readers}"
    else:
        msg = f"'action' (the id of the action just taken) can only be read in {readers}"
        if where.startswith("effect of "):
            return msg + "; an effect reads its action's parameters"
    if where.startswith(("function ", "procedure ")):
        return msg + "; pass the values a function needs as arguments"
    return msg
