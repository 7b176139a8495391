"""Hover text of the rule language's builtins (from docs/spec-language.md, sections 6.6 and 10-13)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Builtin:
    """A builtin function, cast or statement: its call form and what it does."""

    signature: str
    doc: str
    pure: bool = True  # allowed in pure contexts (legal, reward, functions, ...)


_CAST = "Cast (section 6.6): ints wrap, f32 -> int truncates toward zero and saturates, NaN -> 0."
_MATH1 = "ints are converted to f32 first"
_ZONE_STMT = "Zone statement (section 12): changes state, not allowed in pure contexts."
_RANDOM = "Draws randomness (section 13): only in effects, `reset`, rule bodies and procedures."

BUILTINS: dict[str, Builtin] = {
    # math (section 10)
    "abs": Builtin("abs(x) -> type of x", "Absolute value; ints wrap (`abs(i8(-128)) == -128`)."),
    "min": Builtin(
        "min(a, b) -> common type | min(array or generator) -> element type",
        "Minimum of two numbers (f32: NaN if either is NaN), or a reduction; empty: the type's maximum.",
    ),
    "max": Builtin(
        "max(a, b) -> common type | max(array or generator) -> element type",
        "Maximum of two numbers (f32: NaN if either is NaN), or a reduction; empty: the type's minimum.",
    ),
    "clip": Builtin("clip(x, lo, hi) -> common type", "`min(max(x, lo), hi)`."),
    "sqrt": Builtin("sqrt(x) -> f32", f"Square root; {_MATH1}; `sqrt(<0)` is NaN."),
    "exp": Builtin("exp(x) -> f32", f"e to the power x; {_MATH1}."),
    "log": Builtin("log(x) -> f32", f"Natural logarithm; {_MATH1}; `log(0)` is -inf, `log(<0)` NaN."),
    "sin": Builtin("sin(x) -> f32", f"Sine (radians); {_MATH1}; `sin(±inf)` is NaN."),
    "cos": Builtin("cos(x) -> f32", f"Cosine (radians); {_MATH1}; `cos(±inf)` is NaN."),
    "tan": Builtin("tan(x) -> f32", f"Tangent (radians); {_MATH1}; `tan(±inf)` is NaN."),
    "tanh": Builtin("tanh(x) -> f32", f"Hyperbolic tangent; {_MATH1}."),
    "floor": Builtin("floor(x) -> f32", "Round down; the result is f32: use `i32(floor(x))` for an int."),
    "ceil": Builtin("ceil(x) -> f32", "Round up; the result is f32: use `i32(ceil(x))` for an int."),
    "atan2": Builtin("atan2(y, x) -> f32", "Angle of the point (x, y) in radians."),
    # math of language 1.1 (section 10; `**`, `<<`, `>>`, `~` are operators: section 6.4)
    "pow": Builtin(
        "pow(x, y) -> type of x | f32",
        "Same as `x ** y`: a static integer exponent multiplies (exact for ints, which wrap; f32 in a fixed order); "
        "otherwise f32 `pow` (ints converted first).",
    ),
    "sign": Builtin(
        "sign(x) -> type of x", "-1, 0 or 1 (u32: 0 or 1); f32: -1.0 or 1.0, a zero keeps its sign, NaN stays NaN."
    ),
    "round": Builtin(
        "round(x) -> f32",
        f"Round to the nearest integer, halves to even (`round(2.5) == 2.0`, as numpy); {_MATH1}; "
        "use `i32(round(x))` for an int.",
    ),
    "trunc": Builtin("trunc(x) -> f32", f"Round toward zero (`trunc(-1.5) == -1.0`); {_MATH1}."),
    "hypot": Builtin("hypot(x, y) -> f32", f"`sqrt(x*x + y*y)` without overflow; {_MATH1}; inf if either is ±inf."),
    "asin": Builtin("asin(x) -> f32", f"Arcsine in radians; {_MATH1}; NaN outside [-1, 1]."),
    "acos": Builtin("acos(x) -> f32", f"Arccosine in radians; {_MATH1}; NaN outside [-1, 1]."),
    "atan": Builtin("atan(x) -> f32", f"Arctangent in radians, in [-pi/2, pi/2]; {_MATH1}."),
    "sinh": Builtin("sinh(x) -> f32", f"Hyperbolic sine; {_MATH1}."),
    "cosh": Builtin("cosh(x) -> f32", f"Hyperbolic cosine; {_MATH1}."),
    "log1p": Builtin("log1p(x) -> f32", f"`log(1 + x)`, accurate near 0; {_MATH1}; -inf at -1, NaN below."),
    "expm1": Builtin("expm1(x) -> f32", f"`exp(x) - 1`, accurate near 0; {_MATH1}."),
    "fmod": Builtin(
        "fmod(x, y) -> f32",
        f"C remainder with the sign of x (`fmod(-7.5, 2.0) == -1.5`; `%` floors instead: `-7.5 % 2.0 == 0.5`); "
        f"{_MATH1}; NaN for y == 0.",
    ),
    "isnan": Builtin("isnan(x) -> bool", "Whether x is NaN (ints: false)."),
    "isinf": Builtin("isinf(x) -> bool", "Whether x is +inf or -inf (ints: false)."),
    "isfinite": Builtin("isfinite(x) -> bool", "Whether x is neither NaN nor ±inf (ints: true)."),
    "select": Builtin("select(c, a, b) -> common type", "`if c then a else b` (both sides evaluated)."),
    # casts (section 6.6)
    "i8": Builtin("i8(x) -> i8", _CAST),
    "i16": Builtin("i16(x) -> i16", _CAST),
    "i32": Builtin("i32(x) -> i32", _CAST),
    "u32": Builtin("u32(x) -> u32", _CAST),
    "f32": Builtin("f32(x) -> f32", _CAST + " Ints become the nearest f32."),
    "f64": Builtin(
        "f64(x) -> f64",
        _CAST + " To the opt-in double type: ints and f32 exactly; `f64(0.1)` is the double 0.1 (section 6.6).",
    ),
    "bool": Builtin("bool(x) -> bool", "Cast: `x != 0` (NaN -> true)."),
    "int": Builtin("int(x) -> i32", "Same as `i32(x)`. " + _CAST),
    "float": Builtin("float(x) -> f32", "Same as `f32(x)`. " + _CAST),
    # arrays, zones and loops (sections 8, 10, 12)
    "range": Builtin(
        "range(stop) | range(start, stop)",
        "The static integers start .. stop-1 of a `for` loop or generator; bounds must be static (E051).",
    ),
    "len": Builtin(
        "len(a) -> i32",
        "Array: static size of the first remaining dimension; table: number of rows; zone: number of elements.",
    ),
    "count": Builtin(
        "count(z) -> i32 | count(bools or generator) -> i32",
        "A zone's number of elements (`z.count`), or the number of true elements (empty: 0).",
    ),
    "capacity": Builtin("capacity(z) -> i32", "Static capacity of a zone."),
    "top": Builtin("top(z) -> element type", "`z[z.count - 1]`; an empty zone is a spec bug (fallback: 0)."),
    "contains": Builtin("contains(z, v) -> bool", "Whether `v` is among the zone's live elements."),
    "index_of": Builtin("index_of(z, v) -> i32", "Position of the first live element equal to `v`, -1 if absent."),
    "push": Builtin("push(z, v)", "Put `v` on top of the zone (full zone: nothing happens). " + _ZONE_STMT, False),
    "insert": Builtin(
        "insert(z, i, v)", "Insert `v` at position `i`, shifting the slots above up. " + _ZONE_STMT, False
    ),
    "pop": Builtin(
        "pop(z) -> element type", "Take the top element (empty zone: nothing happens, yields 0). " + _ZONE_STMT, False
    ),
    "remove_at": Builtin(
        "remove_at(z, i) -> element type",
        "Take element `i`, shifting the slots above down (out of range: yields 0). " + _ZONE_STMT,
        False,
    ),
    "clear": Builtin("clear(z)", "Empty the zone (every slot zeroed). " + _ZONE_STMT, False),
    "shuffle": Builtin(
        "shuffle(z)", "Uniformly permute the zone's live elements. " + _ZONE_STMT + " " + _RANDOM, False
    ),
    # reductions (section 11)
    "sum": Builtin(
        "sum(array or generator) -> i32 | u32 | f32",
        "Sum of the elements (ints in i32, u32 or f32; integer sums wrap); empty: 0.",
    ),
    "any": Builtin("any(bools or generator) -> bool", "Whether some element is true; empty: false."),
    "all": Builtin("all(bools or generator) -> bool", "Whether every element is true; empty: true."),
    "argmax": Builtin(
        "argmax(array or generator) -> i32",
        "Position of the first largest element (flat index, or the generator variable's value); empty: -1.",
    ),
    "argmin": Builtin(
        "argmin(array or generator) -> i32",
        "Position of the first smallest element (flat index, or the generator variable's value); empty: -1.",
    ),
    # randomness (section 13)
    "uniform": Builtin("uniform(lo, hi) -> f32", "A uniform f32 in [lo, hi). " + _RANDOM, False),
    "randint": Builtin("randint(lo, hi) -> i32", "A uniform integer in [lo, hi). " + _RANDOM, False),
    "bernoulli": Builtin("bernoulli(prob) -> bool", "True with probability `prob`. " + _RANDOM, False),
    "coin": Builtin("coin() -> bool", "`bernoulli(0.5)`. " + _RANDOM, False),
    "choice": Builtin(
        "choice(mask or generator) -> i32",
        "A uniformly random index among the true entries (none true: a spec bug). " + _RANDOM,
        False,
    ),
}

# the math constants (section 10): f32 values; a declaration of the same name shadows them
CONSTANTS: dict[str, tuple[str, str]] = {
    "pi": ("const pi: f32 = 3.1415927", "The f32 nearest to pi. A declaration named `pi` shadows it."),
    "tau": ("const tau: f32 = 6.2831855", "The f32 nearest to 2 pi. A declaration named `tau` shadows it."),
    "e": ("const e: f32 = 2.7182817", "The f32 nearest to Euler's number. A declaration named `e` shadows it."),
    "inf": ("const inf: f32 = +inf", "Positive infinity (`-inf` for negative). A declaration named `inf` shadows it."),
}

# names that are always in scope besides the declarations
SPECIAL: dict[str, tuple[str, str]] = {
    "current_player": ("state current_player: i32", "Player to act; starts at 0. Keep it in [0, players)."),
    "step_count": ("state step_count: i32 (read-only)", "Steps taken this episode; incremented before the effect."),
    "num_players": ("const num_players: i32", "The static number of players."),
}
