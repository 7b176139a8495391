"""The one door through which spec-derived names and text reach generated Python.

Identifiers are allocated per namespace (State attributes, EnvParams attributes, constants, module globals,
one function's arguments) with every name known up front: a spec name is kept when it is free, else `_` is
appended until it is, so the mapping is deterministic and injective and never yields a keyword, a generated
member or a name of the `name_3` shape the emitter gives its SSA locals. Text (rule and invariant names, docs)
reaches code only as a `repr` literal or through `doc`, which escapes everything a docstring could act on.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

from envc import ir

# Names env.py defines or imports at module level (the emitter's SSA locals all end in `_<digits>`).
MODULE_GLOBALS = frozenset(
    {
        "annotations", "Any", "chex", "jax", "jnp", "np", "C", "EnvParams", "State", "Env",
        "argmax_where", "argmin_where", "choice_index", "clamp_index", "drop_index", "float_to_int", "floor_div",
        "floor_mod", "shuffle_order", "site_bernoulli", "site_randint", "site_uniform", "to_enum", "zone_insert",
        "zone_remove",
        "SPEC_FILE", "SPEC_PATH", "SPEC_SHA256", "NUM_PLAYERS", "NUM_ACTIONS", "ILLEGAL_ACTION_PENALTY",
        "reset", "apply_rules", "reward", "is_terminated", "is_truncated", "observe", "legal_action_mask",
        "apply_action", "effect_box",
    }
)  # fmt: skip
# Arguments and names every generated function body may use besides the module's.
FUNCTION_NAMES = frozenset({"state", "key", "params", "p", "action", "carry", "self"})
# Members a chex dataclass has (State, EnvParams) besides its fields, and State's pgx-style outputs.
DATACLASS_MEMBERS = frozenset({"replace", "from_tuple", "to_tuple", "keys", "values", "items", "get"})
STATE_OUTPUTS = frozenset({"observation", "rewards", "terminated", "truncated", "legal_action_mask"})
_SSA = re.compile(r"_[0-9]+$")


def storage_ident(name: str) -> str:
    """Python spelling of a dotted storage name (`bench.damage` -> `bench__damage`); `__` is not a spec name."""
    return name.replace(".", "__")


class Namespace:
    """Identifiers handed out in one Python scope."""

    def __init__(self, reserved: Iterable[str] = ()):
        self.taken: set[str] = set(reserved)
        self.names: dict[str, str] = {}

    def add(self, key: str, preferred: str | None = None) -> str:
        """Allocate an identifier for `key` (spelled `preferred`, default `key`); the same key gets the same one."""
        if key in self.names:
            return self.names[key]
        name = preferred if preferred is not None else key
        while name in self.taken or keyword.iskeyword(name) or _SSA.search(name) or name.startswith("__"):
            name += "_"
        self.taken.add(name)
        self.names[key] = name
        return name

    def __getitem__(self, key: str) -> str:
        return self.names[key]


class PyNames:
    """Every generated Python identifier that comes from a spec name."""

    def __init__(self, spec: ir.SpecIR):
        self.fields = Namespace(DATACLASS_MEMBERS | STATE_OUTPUTS)
        for f in spec.fields:
            self.fields.add(f.name, storage_ident(f.name))
        self.params = Namespace(DATACLASS_MEMBERS)
        for p in spec.params:
            self.params.add(p.name)
        self.consts = Namespace()
        for c in spec.consts:
            self.consts.add(c.name, storage_ident(c.name))
        self.module = Namespace(MODULE_GLOBALS)
        for e in spec.enums:
            self.module.add(f"members:{e.name}", f"{e.name.upper()}_MEMBERS")
        for a in spec.actions:
            self.module.add(f"effect:{a.name}", f"effect_{a.name}")
            self.module.add(f"legal:{a.name}", f"legal_{a.name}")
            self.module.add(f"params:{a.name}", f"{a.name.upper()}_PARAMS")
        for fn in spec.callables:
            self.module.add(f"call:{fn.name}", fn.name)
        for i, (name, _) in enumerate(spec.invariants):
            slug = name if name.isidentifier() and name.isascii() and len(name) <= 64 else str(i)
            self.module.add(f"invariant:{name}", f"invariant_{slug}")
        self.action_args: dict[str, Namespace] = {}
        for a in spec.actions:
            ns = Namespace(self.module.taken | FUNCTION_NAMES)
            for prm in a.params:
                ns.add(prm.name)
            self.action_args[a.name] = ns

    def field(self, name: str) -> str:
        """The State attribute of storage field `name`."""
        return self.fields[name]

    def param(self, name: str) -> str:
        """The EnvParams attribute of runtime param `name`."""
        return self.params[name]

    def const(self, name: str) -> str:
        """The attribute of class `C` holding constant `name`."""
        return self.consts[name]

    def glob(self, kind: str, name: str) -> str:
        """A module-level name: kind is members, effect, legal, params, call or invariant."""
        return self.module[f"{kind}:{name}"]

    def arg(self, action: str, name: str) -> str:
        """The argument of an action kind's effect/legal functions for parameter `name`."""
        return self.action_args[action][name]


def doc(text: str) -> str:
    """Text safe inside a one-line `\"\"\"...\"\"\"` docstring: escapes, not raw characters, for anything active."""
    text = text if len(text) <= 200 else text[:197] + "..."
    return text.encode("unicode_escape").decode("ascii").replace('"', '\\"')
