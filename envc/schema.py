"""`envc schema`: the JSON Schema (2020-12) of a spec file, generated from the pydantic models in envc.document.

The models carry the structure; the texts below fill in a description for every key the models leave
undocumented, and examples for the sections, so a YAML language server can show hover text and offer
completions for every key of a spec.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from envc import document as d

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# model name -> key -> description, for keys whose pydantic Field has none
DESCRIPTIONS: dict[str, dict[str, str]] = {
    "SpecDocument": {
        "doc": "Free text describing the environment.",
        "version": 'Spec version, a release number such as "1.0" (quote it).',
        "players": "Number of players, 1 to 16 (`num_players` in code).",
        "params": "Named scalar parameters: runtime params can be overridden per environment, `static: true` ones "
        "are compile-time constants that may size arrays and bound loops.",
        "types": "Enums (`{enum: [a, b]}`) and records (`{record: {field: type}}`).",
        "constants": "Compile-time constants: a scalar (type inferred) or `{type, shape, value | file}`.",
        "tables": "Constant tables (e.g. a card database): typed columns, rows inline or from a CSV/YAML file.",
        "state": "State fields (`name: type` or `{type, shape, per_player, init, visible}`) and zones "
        "(`{zone: type, capacity: n}`). `current_player` and `step_count` are always present.",
        "actions": "Discrete action kinds: each has typed `params`, a `legal` predicate and an `effect`; "
        "the flat action space and the legal mask are derived from them.",
        "continuous_action": "A continuous box action for control tasks (instead of `actions`); the effect reads "
        "`action`.",
        "reset": "Statements run by `init(key)` after every field has its `init` value; may draw randomness.",
        "rules": "Automatic rules run in order after every action effect: `name`, `when` (bool), `body`.",
        "reward": "Reward of player `p` for this step: an f32 expression (or a number).",
        "terminated": "Bool expression (or true/false): the episode ended by the rules of the game.",
        "truncated": "Bool expression (or true/false): the episode was cut (e.g. a time limit).",
        "observation": "The per-player observation: typed `fields` written by `body` for the observing player `p`.",
        "invariants": "Named bool expressions that must hold in every reachable state (checked by `envc verify`).",
        "functions": "Pure helpers returning a value: `params`, `returns` and `body`.",
        "procedures": "Helpers that may change state and draw randomness: `params` and `body` (statements).",
        "illegal_action_penalty": "Reward of a player who plays an illegal action.",
        "oracle": "The original environment the spec claims to be and where it keeps each state field, for "
        "`envc verify SPEC --against TARGET` (docs/oracle.md); backends ignore it.",
    },
    "ParamDecl": {"doc": "Free text describing the parameter."},
    "EnumDecl": {
        "enum": "The members, in order (stored as their index). Write them `Type.member` in code.",
        "doc": "Free text describing the enum.",
    },
    "RecordField": {
        "type": "bool, i8, i16, i32, u32, f32, f64 or an enum.",
        "shape": "Static dimensions of an array part (ints or static names).",
        "doc": "Free text describing the record field.",
    },
    "RecordDecl": {
        "record": "The record's fields: `name: type` or `{type, shape, doc}`.",
        "doc": "Free text describing the record type.",
    },
    "ConstDecl": {
        "type": "bool, i8, i16, i32, u32, f32, f64 or an enum.",
        "shape": "Static dimensions (ints or static names); `[]` for a scalar.",
        "value": "A nested list matching `shape` (row-major), or one scalar that fills the shape.",
        "file": "A CSV or YAML file beside the spec holding the values (instead of `value`).",
        "doc": "Free text describing the constant.",
    },
    "ColumnDecl": {
        "shape": "Static dimensions of one cell (an array column).",
        "default": "Value of a missing or empty cell.",
        "doc": "Free text describing the column.",
    },
    "TableDecl": {
        "columns": "Column name -> type, or `{type, shape, default, doc}`. Read in code as `table[i].column`.",
        "rows": "The rows, one mapping of column values each (or use `file`).",
        "file": "A CSV (header = column names) or YAML file beside the spec holding the rows (or use `rows`).",
        "doc": "Free text describing the table.",
    },
    "FieldDecl": {
        "type": "bool, i8, i16, i32, u32, f32, f64, an enum or a record type.",
        "shape": "Static dimensions (ints or static names).",
        "per_player": "Prepend a dimension of size `players`.",
        "init": "Initial value: a scalar fills the field, or a nested list of the full shape (default zero).",
        "low": "Declared lower bound (metadata).",
        "high": "Declared upper bound (metadata).",
        "doc": "Free text describing the field.",
    },
    "ZoneDecl": {
        "capacity": "Most elements the zone holds (an int or a static name).",
        "shape": "Extra leading dimensions: several zones of the same kind.",
        "per_player": "One zone per player.",
        "doc": "Free text describing the zone.",
    },
    "ActionParamDecl": {
        "range": "`stop` or `[start, stop]` (stop exclusive), ints or static names.",
        "type": "An enum (every member) or a sized int (with `range`).",
        "doc": "Free text describing the parameter.",
    },
    "ActionDecl": {
        "params": "Parameter name -> range: `n` (0..n-1), a static name, `{range: [a, b]}` or `{type: Enum}`.",
        "legal": "Bool expression (or true/false): when this action is legal; reads the params.",
        "effect": "Statements run when the action is taken.",
        "doc": "Free text describing the action.",
    },
    "BoxDecl": {
        "shape": "Static shape of the action array.",
        "low": "Lower bound of every component (not enforced).",
        "high": "Upper bound of every component (not enforced).",
    },
    "ContinuousDecl": {
        "box": "The action box: `{shape, low, high}`.",
        "effect": "Statements run with the read-only f32 array `action`.",
        "doc": "Free text describing the action.",
    },
    "TodoItem": {"doc": "Free text about the item."},
    "RuleDecl": {
        "name": "Name of the rule (for messages).",
        "when": "Bool expression (or true/false): the rule runs when it holds.",
        "body": "Statements run when `when` holds.",
        "doc": "Free text describing the rule.",
    },
    "ObsField": {
        "type": "bool, i8, i16, i32, u32, f32, f64 or an enum.",
        "shape": "Static dimensions (ints or static names).",
        "low": "Declared lower bound (observation space): one number, or one per element (row-major).",
        "high": "Declared upper bound (observation space): one number, or one per element (row-major).",
        "doc": "Free text describing the observation field.",
    },
    "ObservationDecl": {
        "fields": "Observation field name -> type, or `{type, shape, low, high, doc}`.",
        "body": "Statements that write the fields for the observing player `p` (fields start at zero).",
        "doc": "Free text describing the observation.",
    },
    "CallableDecl": {
        "params": "Parameter name -> type (read-only locals in the body).",
        "returns": "Result type of a function (procedures return nothing); a list of types for a function that "
        "returns several values (`returns: [f32, f32]`, `return a, b`, `let x, v = f(...)`).",
        "body": "A function: one expression, or statements ending with `return VALUE`. A procedure: statements.",
        "doc": "Free text describing the function or procedure.",
    },
    "TextLine": {"when": "Bool expression (or true/false): the line is drawn when it holds."},
    "TextRenderDecl": {"grid": "A grid of symbols: `{rows, cols, cell, symbols}` (boards)."},
    "LineShape": {
        "start": "[x, y]: numbers or f32 expressions of the state and params.",
        "end": "[x, y]: numbers or f32 expressions of the state and params.",
        "color": "A color name (black, white, red, tan, ...) or #rrggbb.",
    },
    "CircleShape": {
        "center": "[x, y] in world units.",
        "radius": "Radius in world units (a number or an f32 expression).",
        "color": "A color name or #rrggbb.",
    },
    "RectShape": {
        "center": "[x, y] in world units.",
        "size": "[width, height] in world units.",
        "color": "A color name or #rrggbb.",
    },
    "PolygonShape": {"points": "The corners, [x, y] each (world units).", "color": "A color name or #rrggbb."},
    "CurveShape": {
        "samples": "Number of points along the curve (`t` = 0, ..., 1).",
        "x": "f32 expression of `t` (0 to 1), the state and params.",
        "y": "f32 expression of `t` (0 to 1), the state and params.",
        "color": "A color name or #rrggbb.",
    },
    "ShapeItem": {
        "line": "A line `{start, end, width, color}`.",
        "circle": "A filled circle `{center, radius, color}`.",
        "rect": "A filled rectangle `{center, size, color}`.",
        "polygon": "A filled polygon `{points, color}`.",
        "curve": "A polyline sampled from expressions of `t`: `{samples, x, y, width, color}`.",
        "when": "Bool expression (or true/false): the shape is drawn when it holds.",
    },
    "ShapesRenderDecl": {
        "width": "Image width in pixels.",
        "height": "Image height in pixels.",
        "background": "A color name or #rrggbb.",
        "items": "The shapes, drawn in order (later ones on top).",
    },
    "RenderDecl": {
        "text": "A text render: `grid` and `lines` (render_mode ansi, `envc play`).",
        "shapes": "A 2D drawing for rgb_array: `{width, height, world, items}`.",
        "doc": "Free text describing the render.",
    },
}

# examples of the top-level sections (each must validate against its section; tests check that)
EXAMPLES: dict[str, list[Any]] = {
    "name": ["tic_tac_toe"],
    "doc": ["Tic-tac-toe for two players."],
    "version": ["1.0"],
    "players": [2],
    "params": [{"gravity": 9.8, "BOARD": {"type": "i32", "default": 9, "static": True}}],
    "types": [{"Mark": {"enum": ["empty", "x", "o"]}, "Slot": {"record": {"card": "i16", "damage": "i16"}}}],
    "constants": [{"MAX_HAND": 10, "LINES": {"type": "i8", "shape": [2, 3], "value": [[0, 1, 2], [3, 4, 5]]}}],
    "tables": [
        {
            "cards": {
                "columns": {"name": "str", "hp": "i16"},
                "rows": [{"name": "Pebblit", "hp": 40}, {"name": "Emberkit", "hp": 60}],
            }
        }
    ],
    "state": [
        {
            "board": {"type": "Mark", "shape": [3, 3], "init": "empty"},
            "x": "f32",
            "hand": {"zone": "i16", "capacity": 10, "per_player": True, "visible": "owner"},
        }
    ],
    "actions": [
        {"place": {"params": {"cell": 9}, "legal": "board[cell // 3, cell % 3] == Mark.empty", "effect": "pass"}}
    ],
    "continuous_action": [{"box": {"shape": [1], "low": -2.0, "high": 2.0}, "effect": "torque = action[0]"}],
    "reset": ["current_player = randint(0, num_players)"],
    "rules": [[{"name": "next_turn", "when": "not game_over", "body": "current_player = 1 - current_player"}]],
    "reward": ["if winner == p then 1.0 else 0.0", 1.0],
    "terminated": ["winner >= 0", False],
    "truncated": ["step_count >= max_steps", False],
    "observation": [{"fields": {"board": {"type": "i8", "shape": [9]}}, "body": "board[0] = 1"}],
    "invariants": [{"count_in_range": "hand[0].count <= 10"}],
    "functions": [
        {"opponent": {"params": {"m": "Mark"}, "returns": "Mark", "body": "if m == Mark.x then Mark.o else Mark.x"}}
    ],
    "procedures": [{"draw": {"params": {"pl": "i32"}, "body": "push(hand[pl], pop(deck[pl]))"}}],
    "illegal_action_penalty": [-1.0],
    "oracle": [
        {
            "target": "gymnasium:CartPole-v1",
            "fields": {"x": "state[0]", "x_dot": "state[1]", "theta": "state[2]", "theta_dot": "state[3]"},
        }
    ],
    "render": [
        {
            "text": {
                "grid": {"rows": 3, "cols": 3, "cell": "board[r, c]", "symbols": {"empty": ".", "x": "X", "o": "O"}},
                "lines": ["player {current_player} to move"],
            }
        },
        {
            "shapes": {
                "width": 600,
                "height": 400,
                "world": [-2.4, 2.4, -0.8, 2.4],
                "items": [{"line": {"start": [0.0, 0.0], "end": ["sin(theta)", "cos(theta)"], "width": 6}}],
            }
        },
    ],
    "todo": [[{"name": "attack", "target": "actions.attack", "text": "Choose one of your Active creature's attacks."}]],
}


def models() -> dict[str, type[BaseModel]]:
    """The pydantic models of the spec surface, by name."""
    return {
        name: obj
        for name, obj in vars(d).items()
        if isinstance(obj, type)
        and issubclass(obj, BaseModel)
        and obj.__module__ == d.__name__
        and not name.startswith("_")
    }


def _document(props: dict[str, Any], model: str) -> None:
    extra = DESCRIPTIONS.get(model, {})
    for key, prop in props.items():
        if "description" not in prop and key in extra:
            prop["description"] = extra[key]


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, as a JSON-ready dict."""
    raw = d.SpecDocument.model_json_schema(mode="validation")
    for name, sub in raw.get("$defs", {}).items():
        _document(sub.get("properties", {}), name)
    props = raw["properties"]
    _document(props, "SpecDocument")
    for key, examples in EXAMPLES.items():
        props[key]["examples"] = examples
    out: dict[str, Any] = {
        "$schema": DIALECT,
        "title": "envc spec",
        "description": "A declarative RL environment spec for envc (see docs/spec-language.md).",
    }
    out.update({k: v for k, v in raw.items() if k not in ("title", "description")})
    return out


def render() -> str:
    """The schema as the text committed in docs/envc.schema.json."""
    return json.dumps(spec_schema(), indent=2, sort_keys=False) + "\n"


def write(path: str | os.PathLike[str]) -> None:
    """Write the schema to `path` atomically (a reader never sees a half-written file)."""
    target = Path(path)
    text = render()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
