"""The YAML surface of a spec as pydantic models (also the source of `envc schema`)."""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, JsonValue, Tag

Scalar = Union[bool, int, float]
Dim = Union[int, str]
Nested = JsonValue


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _short_or_long(v: Any) -> str:
    return "long form" if isinstance(v, (dict, BaseModel)) else "short form"


def _type_kind(v: Any) -> str:
    return "record type" if isinstance(v, dict) and "record" in v else "enum type"


def _state_kind(v: Any) -> str:
    if not isinstance(v, dict):
        return "short form"
    return "zone decl" if "zone" in v else "field decl"


class ParamDecl(_Model):
    """A parameter with a default; `static` params are compile-time (usable in shapes and loop bounds)."""

    type: str | None = Field(None, description="bool, i8, i16, i32, u32, f32 or f64 (default: from the default value)")
    default: Scalar = Field(description="Default value, overridable at run time (static: at build time).")
    static: bool = Field(False, description="Compile-time constant: may size arrays and bound loops.")
    values: list[Scalar] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="The values a runtime param is meant to take; `envc verify` runs episodes with each of them.",
        examples=[[0, 1, 2, 3]],
    )
    doc: str = ""


class EnumDecl(_Model):
    """An enumeration; stored as a small integer (its member index)."""

    enum: list[str] = Field(min_length=1, examples=[["empty", "x", "o"]])
    doc: str = ""


class RecordField(_Model):
    """A field of a record type."""

    type: str
    shape: list[Dim] = []
    doc: str = ""


RecordFieldSpec = Annotated[
    Union[Annotated[str, Tag("short form")], Annotated[RecordField, Tag("long form")]],
    Discriminator(_short_or_long),
]


class RecordDecl(_Model):
    """A record type; arrays of records are stored as one array per field."""

    record: dict[str, RecordFieldSpec]
    doc: str = ""


class ConstDecl(_Model):
    """A compile-time constant scalar or array, inline or loaded from a CSV/YAML file beside the spec."""

    type: str
    shape: list[Dim] = []
    value: Nested | None = None
    file: str | None = None
    doc: str = ""


class ColumnDecl(_Model):
    """A typed column of a constant table."""

    type: str = Field(description="bool, sized int, f32, f64, an enum name, or str (documentation only)")
    shape: list[Dim] = []
    default: Nested | None = None
    doc: str = ""


ColumnSpec = Annotated[
    Union[Annotated[str, Tag("short form")], Annotated[ColumnDecl, Tag("long form")]],
    Discriminator(_short_or_long),
]


class TableDecl(_Model):
    """A constant table (e.g. a card database): typed columns, rows inline or from a CSV/YAML file."""

    columns: dict[str, ColumnSpec]
    rows: list[dict[str, Nested]] | None = None
    file: str | None = None
    doc: str = ""


class VisibleDecl(_Model):
    """Visibility that depends on the state, per element: `element` names the leading indices of the field."""

    element: list[str] = Field(
        [],
        description="Names for the leading indices of the field (e.g. `[pl, i]` for a per-player hand), usable in "
        "`when`; empty: one rule for the whole field.",
        examples=[["pl", "i"]],
    )
    when: Union[str, bool] = Field(
        description="Bool expression: player `p` may see the element where it holds (pure; reads the current state).",
        examples=["pl == p or shown[pl, i]"],
    )


VISIBLE_DESCRIPTION = (
    "Who sees it: `all`, `owner` (needs `per_player`), `none` (hidden information), a bool expression in the "
    'observing player `p` (e.g. "round >= 1"), or `{element: [i, ...], when: EXPR}` per element (section 15).'
)
VisibleSpec = Union[str, VisibleDecl]


class FieldDecl(_Model):
    """A state field: a scalar or fixed array, optionally one per player."""

    type: str
    shape: list[Dim] = []
    per_player: bool = False
    init: Nested | None = None
    visible: VisibleSpec = Field("all", description=VISIBLE_DESCRIPTION)
    low: float | None = None
    high: float | None = None
    doc: str = ""


class ZoneDecl(_Model):
    """A zone/stack: a fixed-capacity array of elements plus a count."""

    zone: str = Field(description="Element type (an int type or an enum)")
    capacity: Dim
    shape: list[Dim] = []
    per_player: bool = False
    visible: VisibleSpec = Field("all", description=VISIBLE_DESCRIPTION)
    doc: str = ""


class ActionParamDecl(_Model):
    """An action parameter over a finite range [low, high) or the members of an enum."""

    range: Union[Dim, list[Dim], None] = None
    type: str | None = None
    doc: str = ""


ActionParamSpec = Annotated[
    Union[Annotated[Dim, Tag("short form")], Annotated[ActionParamDecl, Tag("long form")]],
    Discriminator(_short_or_long),
]


class ActionDecl(_Model):
    """A named action kind: typed parameters, a legality predicate and an effect."""

    params: dict[str, ActionParamSpec] = {}
    legal: Union[str, bool] = True
    effect: str = "pass"
    doc: str = ""


class BoxDecl(_Model):
    """A continuous box action (control tasks)."""

    shape: list[Dim]
    low: float
    high: float


class ContinuousDecl(_Model):
    """A continuous action space; the effect reads `action`."""

    box: BoxDecl
    effect: str
    doc: str = ""


class RuleDecl(_Model):
    """An automatic rule run after every action effect, in order (e.g. a between-turns checkup)."""

    name: str
    when: Union[str, bool] = True
    body: str
    doc: str = ""


class TodoItem(_Model):
    """Rule text that still has to be formalized into spec code (a draft written by `envc scrape`)."""

    name: str = Field(description="Identifier of the item, unique among `todo` items", examples=["attack"])
    text: str = Field(description="The rule text, as found at `source`")
    target: str = Field("", description="Where its code goes: `actions.X`, `rules.X`, `procedures.X`, ...")
    source: str = Field("", description="Where the text came from (URL#anchor)")
    doc: str = ""


class ObsField(_Model):
    """One part of the observation."""

    type: str
    shape: list[Dim] = []
    low: float | list[float] | list[list[float]] | None = None  # one number, or one per element
    high: float | list[float] | list[list[float]] | None = None
    doc: str = ""


ObsFieldSpec = Annotated[
    Union[Annotated[str, Tag("short form")], Annotated[ObsField, Tag("long form")]],
    Discriminator(_short_or_long),
]


class ObservationDecl(_Model):
    """The per-player observation: named fields written by `body` for player `p`."""

    fields: dict[str, ObsFieldSpec]
    body: str
    doc: str = ""


class CallableDecl(_Model):
    """A helper function (pure, returns a value) or procedure (may write state, draw randomness)."""

    params: dict[str, str] = {}
    returns: str | list[str] | None = None  # a list: a function that returns several values
    body: str
    doc: str = ""


class OracleDecl(_Model):
    """The original environment this spec claims to be, for `envc verify --against` (docs/oracle.md)."""

    target: str = Field(
        "",
        description="The original: `gymnasium:ENV_ID`, `pgx:ENV_ID` or `MODULE:FACTORY` (a Python factory "
        "called with the spec, returning an envc.oracle.Oracle); used by `envc verify SPEC --against declared`.",
        examples=["gymnasium:CartPole-v1", "pgx:tic_tac_toe", "my_envs.oracles:make_oracle"],
    )
    fields: dict[str, str] = Field(
        {},
        description="Spec state field -> where the original keeps it: an attribute path with indices, read and "
        "written on the original (`state[0]`, `_x.board`).",
        examples=[{"x": "state[0]", "x_dot": "state[1]"}],
    )
    chance: list[str] = Field(
        [],
        description="Mapped fields the original fills from its own randomness during a step (a spawned tile, a "
        "dealt card): copied from the original after each step instead of compared.",
    )
    observation: bool = Field(True, description="Compare the original's observation with the spec's.")
    doc: str = Field("", description="Free text about the original.")


Coord = Union[float, str]  # a number, or an f32 expression of the state and params


class GridDecl(_Model):
    """A text grid: one symbol per cell, from an int or enum expression of the row `r` and column `c`."""

    rows: Dim = Field(description="Number of rows (an int or a static name); the local `r` runs over them.")
    cols: Dim = Field(description="Number of columns (an int or a static name); the local `c` runs over them.")
    cell: str = Field(description="Int, enum or bool expression of `r`, `c` and the state: the cell's value.")
    symbols: dict[str, str] = Field(
        {}, description="Cell value (an int or an enum member name) -> the text drawn; others are drawn as numbers."
    )
    sep: str = Field(" ", description="Text between two cells of a row.")


class TextLine(_Model):
    """A line of text drawn only when `when` holds."""

    text: str = Field(description="A format string: `{EXPR}`, `{EXPR:.2f}` or `{EXPR!NAMES}` (a `names` list).")
    when: Union[str, bool] = True


TextLineSpec = Annotated[
    Union[Annotated[str, Tag("short form")], Annotated[TextLine, Tag("long form")]],
    Discriminator(_short_or_long),
]


class TextRenderDecl(_Model):
    """A text render: an optional grid, then lines (format strings of state expressions)."""

    grid: GridDecl | None = None
    lines: list[TextLineSpec] = Field(
        [], description='Format strings such as "to move: {current_player}"; `{EXPR}` is any scalar expression.'
    )
    names: dict[str, list[str]] = Field(
        {}, description="Named lists of labels: `{card[0]!cards}` draws `names.cards[card[0]]`."
    )


class LineShape(_Model):
    """A straight line between two points (world coordinates)."""

    start: list[Coord] = Field(min_length=2, max_length=2)
    end: list[Coord] = Field(min_length=2, max_length=2)
    width: Coord = Field(1.0, description="Width in pixels.")
    color: str = "black"


class CircleShape(_Model):
    """A filled circle (center and radius in world units)."""

    center: list[Coord] = Field(min_length=2, max_length=2)
    radius: Coord
    color: str = "black"


class RectShape(_Model):
    """A filled axis-aligned rectangle (center and size in world units)."""

    center: list[Coord] = Field(min_length=2, max_length=2)
    size: list[Coord] = Field(min_length=2, max_length=2)
    color: str = "black"


class PolygonShape(_Model):
    """A filled polygon (world coordinates)."""

    points: list[list[Coord]] = Field(min_length=3)
    color: str = "black"


class CurveShape(_Model):
    """A polyline through `samples` points; `x` and `y` read the local `t`, running from 0 to 1."""

    samples: int = Field(50, ge=2, le=10_000)
    x: Coord
    y: Coord
    width: Coord = Field(1.0, description="Width in pixels.")
    color: str = "black"


class ShapeItem(_Model):
    """One shape (exactly one of line, circle, rect, polygon, curve), drawn when `when` holds."""

    line: LineShape | None = None
    circle: CircleShape | None = None
    rect: RectShape | None = None
    polygon: PolygonShape | None = None
    curve: CurveShape | None = None
    when: Union[str, bool] = True


class ShapesRenderDecl(_Model):
    """A 2D drawing: a canvas in pixels showing the world rectangle `world`, and shapes drawn in order."""

    width: int = Field(600, ge=8, le=4096)
    height: int = Field(400, ge=8, le=4096)
    world: list[Coord] = Field(min_length=4, max_length=4, description="[xmin, xmax, ymin, ymax] shown.")
    background: str = "white"
    items: list[ShapeItem] = []


class RenderDecl(_Model):
    """How a state is drawn: `text` (boards, cards) and/or `shapes` (control tasks); evaluated from the state."""

    text: TextRenderDecl | None = None
    shapes: ShapesRenderDecl | None = None
    doc: str = ""


ParamSpec = Annotated[
    Union[Annotated[Scalar, Tag("short form")], Annotated[ParamDecl, Tag("long form")]],
    Discriminator(_short_or_long),
]


ConstSpec = Annotated[
    Union[Annotated[Scalar, Tag("short form")], Annotated[ConstDecl, Tag("long form")]],
    Discriminator(_short_or_long),
]


class SpecDocument(_Model):
    """A whole envc spec file."""

    name: str = Field(description="Identifier of the environment", examples=["cartpole"])
    doc: str = ""
    version: str = "0.1"
    players: int = Field(1, ge=1, le=16)
    params: dict[str, ParamSpec] = {}
    types: dict[
        str,
        Annotated[
            Union[Annotated[EnumDecl, Tag("enum type")], Annotated[RecordDecl, Tag("record type")]],
            Discriminator(_type_kind),
        ],
    ] = {}
    constants: dict[str, ConstSpec] = {}
    tables: dict[str, TableDecl] = {}
    state: dict[
        str,
        Annotated[
            Union[
                Annotated[str, Tag("short form")],
                Annotated[FieldDecl, Tag("field decl")],
                Annotated[ZoneDecl, Tag("zone decl")],
            ],
            Discriminator(_state_kind),
        ],
    ]
    actions: dict[str, Union[ActionDecl, None]] = {}
    continuous_action: ContinuousDecl | None = None
    reset: str = "pass"
    rules: list[RuleDecl] = []
    reward: Union[str, float, int] = 0.0
    terminated: Union[str, bool] = False
    truncated: Union[str, bool] = False
    observation: ObservationDecl
    invariants: dict[str, str] = {}
    functions: dict[str, CallableDecl] = {}
    procedures: dict[str, CallableDecl] = {}
    illegal_action_penalty: float = -1.0
    oracle: OracleDecl | None = None
    render: RenderDecl | None = Field(
        None,
        description="How a state is drawn (render_mode ansi/rgb_array, `envc play`, `envc run --record`); "
        "backends ignore it.",
    )
    todo: list[TodoItem] = Field(
        [],
        description="Rule text not formalized yet (a draft): each item is a W001 warning until `envc synthesize` "
        "or its author turns it into spec code; backends ignore it.",
    )
