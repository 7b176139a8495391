"""Lower a checked spec to a Rust crate with a Python extension module (codegen_templates/rust/*.j2 from the IR).

The crate implements `envc_runtime::Env` (rust_runtime/): plain functions of the state for the reset, each action
kind's legality and effect, the rules, rewards, termination and the observation; the runtime supplies the step
protocol, the rayon batch driver and the numpy glue.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

from envc import __version__, ir
from envc.intervals import param_ranges
from envc.ir import DType
from envc.lower_rust import lanes
from envc.lower_rust.emit import (
    ARRAY_KIND,
    RUST,
    Analysis,
    Ctx,
    Emitter,
    conv,
    f32_literal,
    f64_literal,
    int_literal,
    paren,
)
from envc.lower_rust.names import Names, comment_lines, comment_text, py_doc, py_literal, rust_str, toml_value

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE.parent / "templates" / "rust"
RUNTIME = HERE.parent / "rust_runtime"
NUMPY = {
    DType.BOOL: "np.bool_",
    DType.I8: "np.int8",
    DType.I16: "np.int16",
    DType.I32: "np.int32",
    DType.U32: "np.uint32",
    DType.F32: "np.float32",
    DType.F64: "np.float64",
}


@dataclass(frozen=True)
class Function:
    """One generated Rust function."""

    name: str
    args: str
    ret: str
    body: list[str]
    doc: list[str]  # `///` lines (`doc_lines`) and attributes
    inline: str = "inline"  # the `#[...]` attribute, or "" for none
    public: bool = False
    simd: bool = False  # two out-of-line builds, the AVX2 one picked at run time (`rt::simd_dispatch!`)

    def arg_names(self) -> list[str]:
        """The names of its arguments, without the `_` of an unused one (split at top-level commas)."""
        names, depth, start = [], 0, 0
        for i, ch in enumerate(self.args + ","):
            if ch in "<[(":
                depth += 1
            elif ch in ">])":
                depth -= 1
            elif ch == "," and depth == 0:
                part = self.args[start:i].strip()
                if part:
                    names.append(part.split(":", 1)[0].strip().removeprefix("mut ").lstrip("_"))
                start = i + 1
        return names

    def call(self, exprs: dict[str, str] | None = None) -> str:
        """A call passing each argument the variable of its name, or its expression in `exprs`: how the `rt::Env`
        methods, whose parameters carry those names, call it. The lowering decides which arguments a function
        takes (a key only when it draws, the action only when it reads it, ...), so no call site assumes one."""
        args = [(exprs or {}).get(n, n) for n in self.arg_names()]
        return f"{self.name}({', '.join(args)})"


class Lowering:
    """Everything the templates need, computed once from the IR."""

    def __init__(self, spec: ir.SpecIR):
        self.spec = spec
        self.names = Names(spec)
        self.an = Analysis(spec)
        self.lane_plan = lanes.plan(spec, self.an)
        self.packed = lanes.packed(spec, self.lane_plan)
        self.enums = {e.name: len(e.members) for e in spec.enums}
        self.functions: list[Function] = []
        self.alone: list[str | None] = []  # per callable, lib.rs's arm that calls it alone (`alone_arm`)

    # ---- helpers ---------------------------------------------------------
    def emitter(self) -> Emitter:
        return Emitter(self.spec, self.names, self.an)

    def sig(self, body: object, mutable: bool, key: bool) -> list[str]:
        """The leading arguments of a function over `body`."""
        st = "st" if self.an.uses(body, "state") else "_st"
        prm = "prm" if self.an.uses(body, "params") else "_prm"
        args = [f"{st}: &{'mut ' if mutable else ''}State", f"{prm}: &Params"]
        if key:
            args.append("key: Key")
        return args

    def action_arg(self, body: object) -> list[str]:
        """The `action` argument of an output function (reward, ends, observation) over `body`, if it reads it:
        the continuous action's values, or the discrete action id."""
        if not self.an.uses(body, "action"):
            return []
        return ["action: &[f32]" if self.spec.box is not None else "action: i32"]

    def local(self, name: str) -> str:
        return self.names.local(name)

    def ty(self, t: ir.Ty) -> str:
        return RUST[t.dtype]

    def value_ty(self, t: ir.Ty) -> str:
        """A function parameter's or result's Rust type: an array of static shape is a `[T; N]` by value."""
        return f"[{RUST[t.dtype]}; {math.prod(t.shape)}]" if t.shape else RUST[t.dtype]

    # ---- functions ---------------------------------------------------------
    def callables(self) -> None:
        passed = param_ranges(self.spec)  # what every call passes the integer parameters
        for c in self.spec.callables:
            em = self.emitter()
            ranges = passed.get(c.name, {})
            params = [self.arg(n, self.value_ty(t), c.body) for n, t in c.params]
            doc = [
                *doc_lines(f"{'Function' if c.returns is not None else 'Procedure'} `{c.name}` of the spec."),
                "#[allow(dead_code, unused_assignments)]",  # as written in the spec: maybe unused, or a let overwritten
            ]
            if c.returns is not None:
                em.block(c.body[:-1], Ctx(ranges=dict(ranges)))
                last = c.body[-1]
                assert isinstance(last, ir.ReturnS)
                em.line(conv(em.expr(last.value, Ctx(ranges=dict(ranges))), last.value.ty, c.returns, self.enums))
                args = self.sig(c.body, False, False) + params
                ret = self.value_ty(c.returns)
                if c.results:  # a function that returns several values: a tuple
                    ret = f"({', '.join(self.value_ty(t) for t in c.results)})"
                self.functions.append(Function(self.names.fn(c.name), ", ".join(args), ret, em.lines, doc,
                                               public=True))
            else:
                key = self.an.draws(c.body)
                em.block(c.body, Ctx("key" if key else None, dict(ranges)))
                args = self.sig(c.body, True, key) + params
                self.functions.append(Function(self.names.fn(c.name), ", ".join(args), "", em.lines, doc,
                                               public=True))
            self.alone.append(self.alone_arm(c))

    def alone_arm(self, c: ir.CallableInfo) -> str | None:
        """The expression of lib.rs's `call` that runs callable `c` alone on `st` with `args` (f64s) and `key`, and
        gives its results as a `Vec<f64>`; None for one whose parameters or results are arrays."""
        if not scalar_only(c):
            return None
        results = c.results or ((c.returns,) if c.returns is not None else ())
        args = ["&mut st" if c.returns is None else "&st", "&self.prm"]
        if c.returns is None and self.an.draws(c.body):
            args.append("[key.0, key.1]")
        for k, (_, t) in enumerate(c.params):
            args.append(f"args[{k}] != 0.0" if t.dtype is ir.DType.BOOL else f"args[{k}] as {RUST[t.dtype]}")
        call = f"env::{self.names.fn(c.name)}({', '.join(args)})"

        def f64(v: str, t: ir.Ty) -> str:
            return f"f64::from(u8::from({v}))" if t.dtype is ir.DType.BOOL else f"{v} as f64"

        if not results:
            return f"{{ {call}; Vec::new() }}"
        if not c.results:
            return f"vec![{f64(call, results[0])}]"
        names = [f"r{i}" for i in range(len(results))]
        return f"{{ let ({', '.join(names)}) = {call}; vec![{', '.join(f64(n, t) for n, t in zip(names, results))}] }}"

    def writer(
        self,
        name: str,
        stmts: tuple[ir.Stmt, ...],
        doc: str,
        extra: list[str] | None = None,
        ranges: dict[str, tuple[int, int]] | None = None,
        action: bool = False,
        hoist: bool = False,
    ) -> Function:
        em = self.emitter()
        key = self.an.draws(stmts)
        ctx = Ctx("key" if key else None, dict(ranges or {}), action=action)
        if hoist:
            em.hoist_draws(stmts, ctx)
        em.block(stmts, ctx)
        args = self.sig(stmts, True, key) + (extra or [])
        return Function(name, ", ".join(args), "", em.lines, doc_lines(doc))

    def expr_fn(
        self,
        name: str,
        x: ir.Expr,
        ret: ir.Ty,
        doc: str,
        extra: list[str] | None = None,
        ranges: dict[str, tuple[int, int]] | None = None,
    ) -> Function:
        em = self.emitter()
        em.line(conv(em.expr(x, Ctx(None, dict(ranges or {}))), x.ty, ret, self.enums))
        return Function(
            name, ", ".join(self.sig(x, False, False) + (extra or [])), self.ty(ret), em.lines, doc_lines(doc)
        )

    def arg(self, name: str, ty: str, body: object) -> str:
        """A function argument for local `name`, `_`-prefixed when `body` never reads it."""
        used = bool(Analysis.mentions(body, {name}))
        return f"{'' if used else '_'}{self.local(name)}: {ty}"

    def action_params(self, a: ir.ActionKind, body: object) -> tuple[list[str], dict[str, tuple[int, int]]]:
        args = [self.arg(p.name, self.ty(p.ty), body) for p in a.params]
        return args, {p.name: (p.start, p.stop) for p in a.params}

    def decode(self, a: ir.ActionKind, local: str) -> list[str]:
        """Rust expressions of each parameter's value for the kind-local id `local` (row-major)."""
        out = []
        sizes = [p.stop - p.start for p in a.params]
        for j, p in enumerate(a.params):
            inner = math.prod(sizes[j + 1 :])
            v = local if inner == 1 else f"{local} / {inner}"
            if j > 0:
                v = f"({v}) % {sizes[j]}" if inner != 1 else f"{local} % {sizes[j]}"
            v = f"{paren(v)} as {self.ty(p.ty)}"
            if p.start:
                v = f"{v} + {int_literal(p.start, p.ty.dtype)}"
            out.append(v)
        return out

    def actions(self) -> None:
        spec = self.spec
        for a in spec.actions:
            kind = self.names.kind(a.name)
            params, ranges = self.action_params(a, a.effect)
            self.functions.append(
                self.writer(f"effect_{kind}", a.effect, f"Effect of action kind `{a.name}`.", params, ranges)
            )
            params, ranges = self.action_params(a, a.legal)
            self.functions.append(
                self.expr_fn(f"legal_{kind}", a.legal, ir.BOOL, f"Is `{a.name}` legal?", params, ranges)
            )
        if spec.box is not None:
            self.functions.append(
                self.writer(
                    "effect_box",
                    spec.box.effect,
                    "Effect of the continuous action.",
                    [f"{'' if self.an.uses(spec.box.effect, 'action') else '_'}action: &[f32]"],
                    action=True,
                )
            )
        self.functions.append(self.dispatch())
        self.functions.append(self.is_legal())
        self.functions.append(self.legal_mask())

    def dispatch(self) -> Function:
        lines = []
        key = any(self.an.draws(a.effect) for a in self.spec.actions)
        if self.spec.actions:
            lines.append("    match id {")
            for a in self.spec.actions:
                kind = self.names.kind(a.name)
                local = f"id - {a.offset}" if a.offset else "id"
                vals = self.decode(a, paren(local) if a.offset else "id")
                args = ["st", "prm"] + (["key"] if self.an.draws(a.effect) else []) + vals
                lines.append(f"        {a.offset}..={a.offset + a.size - 1} => effect_{kind}({', '.join(args)}),")
            lines.append("        _ => {}")
            lines.append("    }")
        u = "" if self.spec.actions else "_"  # a spec with only a continuous action has no ids
        args = [f"{u}st: &mut State", f"{u}prm: &Params", f"{'key' if key else '_key'}: Key", f"{u}id: usize"]
        return Function("apply_action", ", ".join(args), "", lines, doc_lines("Run the effect of action id `id`."))

    def is_legal(self) -> Function:
        lines = []
        if self.spec.actions:
            lines.append("    match id {")
            for a in self.spec.actions:
                kind = self.names.kind(a.name)
                vals = self.decode(a, f"(id - {a.offset})" if a.offset else "id")
                lines.append(
                    f"        {a.offset}..={a.offset + a.size - 1} => legal_{kind}({', '.join(['st', 'prm', *vals])}),"
                )
            lines.append("        _ => false,")
            lines.append("    }")
        else:
            lines.append("    false")
        u = "" if self.spec.actions else "_"
        args = f"{u}st: &State, {u}prm: &Params, {u}id: usize"
        return Function("is_legal", args, "bool", lines, doc_lines("Is action id `id` legal?"))

    def legal_mask(self) -> Function:
        """Every kind's ids, with each conjunct of `legal` tested in the outermost loop that binds its params."""
        em = self.emitter()
        for a in self.spec.actions:
            em.comment(f"{a.name}: ids {a.offset}..{a.offset + a.size}")
            conj: list[ir.Expr] = []
            stack: list[ir.Expr] = [a.legal]
            while stack:
                x = stack.pop()
                if isinstance(x, ir.Binary) and x.op == "and":
                    stack += [x.b, x.a]
                else:
                    conj.append(x)
            names = [p.name for p in a.params]
            level: list[list[ir.Expr]] = [[] for _ in range(len(names) + 1)]
            for c in conj:
                if isinstance(c, ir.Lit) and c.value is True:
                    continue
                used = Analysis.mentions(c, set(names))
                level[max((names.index(n) + 1 for n in used), default=0)].append(c)
            ctx = Ctx()
            closes = 0
            sizes = [p.stop - p.start for p in a.params]
            for depth in range(len(names) + 1):
                if depth > 0:
                    p = a.params[depth - 1]
                    em.line(f"for {self.local(p.name)} in {p.start}..{p.stop}{self.ty(p.ty)} {{")
                    em.depth += 1
                    closes += 1
                    ctx = ctx.with_range(p.name, p.start, p.stop)
                tests = [em.expr(c, ctx) for c in level[depth]]
                if depth < len(names):
                    if tests:
                        em.line(f"if {_conj(tests)} {{")
                        em.depth += 1
                        closes += 1
                    continue
                terms = [str(a.offset)] if a.offset else []
                for j, p in enumerate(a.params):
                    inner = math.prod(sizes[j + 1 :])
                    v = self.local(p.name)
                    v = f"({v} - {int_literal(p.start, p.ty.dtype)})" if p.start else v
                    v = f"{v} as usize"
                    terms.append(v if inner == 1 else f"({v}) * {inner}")
                idx = " + ".join(terms) or "0"
                em.line(f"mask[{idx}] = {_conj(tests) if tests else 'true'};")
            for _ in range(closes):
                em.depth -= 1
                em.line("}")
        st = "st" if self.an.uses(tuple(a.legal for a in self.spec.actions), "state") else "_st"
        prm = "prm" if self.an.uses(tuple(a.legal for a in self.spec.actions), "params") else "_prm"
        return Function(
            "legal_mask",
            f"{st}: &State, {prm}: &Params, {'mask' if self.spec.actions else '_mask'}: &mut [bool]",
            "",
            em.lines,
            doc_lines("Set `mask[id]` for every legal action id (`mask` arrives all false)."),
        )

    def rules(self) -> None:
        em = self.emitter()
        code = tuple(r.when for r in self.spec.rules) + tuple(r.body for r in self.spec.rules)
        key = self.an.draws(code)
        ctx = Ctx("key" if key else None)
        for r in self.spec.rules:
            em.comment(f"rule {r.name}")
            if isinstance(r.when, ir.Lit) and r.when.value is True:
                em.line("{")
                with em.indented():
                    em.block(r.body, ctx)
                em.line("}")
            else:
                em.s_if(ir.IfS(cond=r.when, then=r.body, span=r.when.span), ctx)
        args = self.sig(code, True, key) + ([] if key else ["_key: Key"])
        doc = doc_lines(f"The {len(self.spec.rules)} automatic rules in order, each under a comment with its name.")
        self.functions.append(Function("apply_rules", ", ".join(args), "", em.lines, doc))

    def observe(self) -> Function:
        em = self.emitter()
        em.block(self.spec.observation, Ctx(None, {}, obs=True))
        args = self.sig(self.spec.observation, False, False) + [
            self.arg("p", "i32", self.spec.observation),
            *self.action_arg(self.spec.observation),
            "obs: &mut Obs",
        ]
        return Function(
            "observe", ", ".join(args), "", em.lines, doc_lines("Write player `p`'s observation into `obs` (zeroed).")
        )

    def invariants(self) -> Function:
        em = self.emitter()
        for i, (name, x) in enumerate(self.spec.invariants):
            em.comment(name)
            em.line(f"ok[{i}] = {em.expr(x, Ctx())};")
        body = tuple(x for _, x in self.spec.invariants)
        args = self.sig(body, False, False) + [f"{'ok' if self.spec.invariants else '_ok'}: &mut [bool]"]
        doc = doc_lines("Each invariant's truth value, in `INVARIANTS` order.")
        return Function("invariants", ", ".join(args), "", em.lines, doc)

    def all_functions(self) -> list[Function]:
        spec = self.spec
        self.callables()
        reset = self.writer("reset", spec.reset, "The reset body (fields start at their `init` values).", hoist=True)
        # Restarts are a large part of a short-episode batch step (a reset draws with threefry): two builds.
        self.functions.append(
            replace(reset, args=reset.args + ("" if self.an.draws(spec.reset) else ", _key: Key"), inline="", simd=True)
        )
        self.actions()
        self.rules()
        self.functions.append(
            self.expr_fn(
                "reward",
                spec.reward,
                ir.F32,
                "Reward of player `p` for the last transition.",
                [self.arg("p", "i32", spec.reward), *self.action_arg(spec.reward)],
                {"p": (0, spec.players)},
            )
        )
        self.functions.append(
            self.expr_fn(
                "is_terminated", spec.terminated, ir.BOOL, "Has the episode ended?", self.action_arg(spec.terminated)
            )
        )
        self.functions.append(
            self.expr_fn(
                "is_truncated",
                spec.truncated,
                ir.BOOL,
                "Has the episode been cut off?",
                self.action_arg(spec.truncated),
            )
        )
        self.functions.append(self.observe())
        self.functions.append(self.invariants())
        self.functions += self.lane_functions()
        return self.functions

    def lane_functions(self) -> list[Function]:
        """The lane kernel and its gather/scatter wrapper (see `lanes`), when the spec qualifies."""
        p = self.lane_plan
        if p is None:
            return []
        a = p.kind
        code = (a.effect, *(r.when for r in p.rules), *(r.body for r in p.rules))
        used = [(j, q) for j, q in enumerate(a.params) if Analysis.mentions(code, {q.name})]
        rebound = lanes.rebound(a.effect + tuple(s for r in p.rules for s in r.body))
        em = lanes.LaneEmitter(self.spec, self.names, self.an, tuple(q.name for _, q in used), rebound)
        ctx = Ctx(None, {q.name: (q.start, q.stop) for q in a.params})
        for s in a.effect:
            em.top(s, ctx)
        for r in p.rules:
            em.comment(f"rule {r.name}")
            if lanes.always(r):
                for s in r.body:
                    em.top(s, ctx)
            else:
                em.top(ir.IfS(cond=r.when, then=r.body, span=r.when.span), ctx)
        args = ["ln: &mut Lanes", "prm: &Params" if self.an.uses(code, "params") else "_prm: &Params"]
        args += [f"{self.local(q.name)}: &[{self.ty(q.ty)}; LANES]" for _, q in used]
        kernel = Function(
            "lane_kernel",
            ", ".join(args),
            "",
            em.lines,
            doc_lines(
                f"Effect of `{a.name}` then the rules on every lane, one statement at a time over all lanes.\n"
                "Its builds stay out of line: in the batch loop LLVM would no longer vectorize the lane arrays."
            ),
            inline="",
            simd=True,
        )
        local = f"(ids[l] - {a.offset})" if a.offset else "ids[l]"
        values = self.decode(a, local)
        fields = [self.names.field(f.name) for f in self.lane_fields()]
        writes = [self.names.field(f.name) for f in p.writes]
        load = Function(
            "load_lane",
            "ln: &mut Lanes, l: usize, st: &State",
            "",
            [f"    ln.{name}[l] = st.{name};" for name in fields],
            doc_lines("Copy the fields in `Lanes` of `st` into lane `l`."),
        )
        store = self.lane_to_state("store_lane", writes, "Copy the fields the kernel writes from lane `l` into `st`.")
        body = [f"    let mut {self.local(q.name)} = [0{self.ty(q.ty)}; LANES];" for _, q in used]
        if used:
            body.append("    for l in 0..LANES {")
            body += [f"        {self.local(q.name)}[l] = {values[j]};" for j, q in used]
            body.append("    }")
        call = ["ln", "prm", *(f"&{self.local(q.name)}" for _, q in used)]
        body.append(f"    lane_kernel({', '.join(call)});")
        wrapper = Function(
            "apply_lanes",
            f"ln: &mut Lanes, prm: &Params, {'' if used else '_'}ids: &[usize; LANES]",
            "",
            body,
            doc_lines("`apply_action` then `apply_rules` on every lane (ids in range and legal)."),
        )
        # A packed spec's states never leave the lanes except whole (`unpack_lane`).
        return [kernel, load, *([] if self.packed else [store]), wrapper, *self.pack_functions()]

    @staticmethod
    def lane_to_state(name: str, fields: list[str], doc: str) -> Function:
        """A function copying `fields` from lane `l` of the lanes into a state."""
        body = [f"    st.{f} = ln.{f}[l];" for f in fields]
        return Function(name, "ln: &Lanes, l: usize, st: &mut State", "", body, doc_lines(doc))

    def lane_fields(self) -> list[ir.FieldInfo]:
        """The fields in `Lanes`: every field when packed, else the kernel's."""
        assert self.lane_plan is not None
        return list(self.spec.fields) if self.packed else list(self.lane_plan.fields)

    def pack_functions(self) -> list[Function]:
        """`unpack_lane`, `step_pack` and `pack_rows`, when the batch packs the states (`lanes.packed`)."""
        if not self.packed:
            return []
        spec = self.spec
        fields = [self.names.field(f.name) for f in spec.fields]
        unpack = self.lane_to_state("unpack_lane", fields, "Copy lane `l` into `st` (every field).")
        count = self.names.field("step_count")
        step = Function(
            "step_pack",
            "ln: &mut Lanes, prm: &Params, ids: &[usize; LANES]",
            "",
            [
                "    for l in 0..LANES {",
                f"        ln.{count}[l] = ln.{count}[l].wrapping_add(1);",
                "    }",
                "    apply_lanes(ln, prm, ids);",
            ],
            doc_lines("Count a step on every lane, then `apply_lanes`."),
        )
        em = lanes.LaneEmitter(spec, self.names, self.an, ())
        ctx = Ctx(None, {})
        em.line("for l in 0..LANES {")
        with em.indented():
            em.line(f"rows.reward[l] = {conv(em.expr(spec.reward, ctx), spec.reward.ty, ir.F32, self.enums)};")
            em.line(f"rows.terminated[l] = {em.expr(spec.terminated, ctx)};")
            em.line(f"rows.truncated[l] = {em.expr(spec.truncated, ctx)};")
        em.line("}")
        em.line("for l in 0..LANES {")
        with em.indented():
            em.line("rows.obs[l] = Obs::default();")
            em.block(spec.observation, Ctx(None, {}, obs=True))
        em.line("}")
        code = (spec.reward, spec.terminated, spec.truncated, spec.observation)
        prm = "prm" if self.an.uses(code, "params") else "_prm"
        out = Function(
            "pack_rows",
            f"ln: &Lanes, {prm}: &Params, rows: &mut rt::LaneRows<Obs>",
            "",
            em.lines,
            doc_lines(
                "Every lane's reward, ends and observation.\nIts builds stay out of line, as `lane_kernel`'s do."
            ),
            inline="",
            simd=True,
        )
        return [unpack, step, out]

    # ---- declarations -------------------------------------------------------
    def value(self, v: bool | int | float, ty: ir.Ty) -> str:
        if ty.dtype is DType.BOOL:
            return "true" if v else "false"
        if ty.dtype is DType.F32:
            return f32_literal(float(v))
        if ty.dtype is DType.F64:
            return f64_literal(float(v))
        return int_literal(int(v), ty.dtype)

    def array_init(self, values: tuple[bool | int | float, ...], ty: ir.Ty) -> str:
        n = len(values)
        if not ty.shape:
            return self.value(values[0], ty)
        if len(set(values)) == 1:
            return f"[{self.value(values[0], ty)}; {n}]"
        return "[" + ", ".join(self.value(v, ty) for v in values) + "]"

    def context(self) -> dict[str, object]:
        spec = self.spec
        functions = self.all_functions()
        enums = [
            {
                "name": self.names.enum(e.name),
                "doc": spec_doc(e.doc or f"Members of the enum `{e.name}`."),
                "members": [(self.names.member(e.name, m), i) for i, m in enumerate(e.members)],
                "rust": "i8" if len(e.members) <= 127 else "i16",  # member index storage (i16 past 127)
            }
            for e in spec.enums
        ]
        consts = []
        code = "\n".join(line for f in functions for line in f.body)
        for c in spec.consts:
            name = self.names.const(c.name)
            if not re.search(rf"\b{name}\b", code):
                continue  # a table column no code reads (a card's id, say) would be dead code
            kind = "const" if not c.ty.shape else "static"
            ty = self.ty(c.ty) if not c.ty.shape else f"[{self.ty(c.ty)}; {len(c.values)}]"
            consts.append(
                {
                    "kind": kind,
                    "name": name,
                    "ty": ty,
                    "value": self.array_init(c.values, c.ty),
                    "doc": spec_doc(c.doc or f"`{c.name}`, shape {list(c.ty.shape)}"),
                }
            )
        params = [
            {
                "name": self.names.param(p.name),
                "spec": p.name,
                "ty": self.ty(p.ty),
                "dtype": p.ty.dtype.value,
                "default": self.value(p.default, p.ty),
                "doc": spec_doc(p.doc) if p.doc.strip() else [],
            }
            for p in spec.params
            if not p.static
        ]
        fields = []
        for f in spec.fields:
            n = math.prod(f.ty.shape)
            fields.append(
                {
                    "name": self.names.field(f.name),
                    "spec": f.name,
                    "ty": self.ty(f.ty),
                    "rust_ty": self.ty(f.ty) if not f.ty.shape else f"[{self.ty(f.ty)}; {n}]",
                    "init": self.array_init(f.init, f.ty),
                    "shape": list(f.ty.shape),
                    "size": n,
                    "kind": ARRAY_KIND[f.ty.dtype],
                    "scalar": not f.ty.shape,
                    "doc": spec_doc(f.doc or f"`{f.name}`" + (f", shape {list(f.ty.shape)}" if f.ty.shape else "")),
                }
            )
        obs = []
        for o in spec.obs_fields:
            n = math.prod(o.ty.shape)
            obs.append(
                {
                    "name": self.names.obs(o.name),
                    "spec": o.name,
                    "ty": self.ty(o.ty),
                    "size": n,
                    "rust_ty": self.ty(o.ty) if not o.ty.shape else f"[{self.ty(o.ty)}; {n}]",
                    "zero": "false" if o.ty.dtype is DType.BOOL else ("0.0" if o.ty.dtype.is_float else "0"),
                    "shape": list(o.ty.shape),
                    "kind": ARRAY_KIND[o.ty.dtype],
                    "scalar": not o.ty.shape,
                    "dtype": o.ty.dtype,
                    "low": o.low,
                    "high": o.high,
                }
            )
        step_draws = self.an.draws(tuple(a.effect for a in spec.actions) + tuple(r.body for r in spec.rules)) or (
            spec.box is not None and self.an.draws(spec.box.effect)
        )
        return {
            "spec": spec,
            "version": __version__,
            "doc": spec_doc(spec.doc) if spec.doc.strip() else [],
            "enums": enums,
            "consts": consts,
            "params": params,
            "fields": fields,
            "obs": obs,
            "functions": functions,
            "calls": {
                f.name: f.call(
                    {"action": "action.values(&NO_ACTION)" if spec.box is not None else "action.id()"}
                    if f.name in ("reward", "is_terminated", "is_truncated", "observe")
                    else {}
                )
                for f in functions
            },
            "alone": [(i, arm) for i, arm in enumerate(self.alone) if arm is not None],
            "callable_names": [rust_str(c.name) for c in spec.callables],
            "invariants": [rust_str(n) for n, _ in spec.invariants],
            "step_draws": "true" if step_draws else "false",
            "name_literal": rust_str(spec.name),
            "penalty": f32_literal(spec.illegal_action_penalty),
            "action_size": math.prod(spec.box.shape) if spec.box is not None else 0,
            "step_count": self.names.field("step_count"),
            "current_player": self.names.field("current_player"),
            "lanes": None
            if self.lane_plan is None
            else [(self.names.field(f.name), self.ty(f.ty)) for f in self.lane_fields()],
            "packed": self.packed,
            "always_legal": all(isinstance(a.legal, ir.Lit) and a.legal.value is True for a in spec.actions),
        }


def doc_lines(text: str) -> list[str]:
    """`text` as `///` doc comment lines: for the generator's own text, spec names allowed (see `spec_doc`)."""
    return comment_lines(text, "/// ")


def spec_doc(text: str) -> list[str]:
    """A spec `doc:` (free text) as plain `//` comment lines: in a doc comment a Markdown code block would be a
    doctest, which `cargo test` compiles and runs."""
    return comment_lines(text, "// ")


def _conj(tests: list[str]) -> str:
    return tests[0] if len(tests) == 1 else " && ".join(paren(t) for t in tests)


def _env(loader_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(loader_dir)),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    # Spec text reaches the files only through these (see `names`): a template never prints it raw.
    env.filters["pyrepr"] = py_literal
    env.filters["pydoc"] = py_doc
    env.filters["rust_str"] = rust_str
    env.filters["comment"] = comment_text
    env.filters["toml"] = toml_value
    return env


def runtime_files() -> dict[str, str]:
    """The envc-runtime crate's sources, relative path -> text (vendored into every compiled package)."""
    out = {}
    for rel in ("Cargo.toml", "Cargo.lock", *(f"src/{p.name}" for p in sorted((RUNTIME / "src").glob("*.rs")))):
        out[rel] = (RUNTIME / rel).read_text()
    return out


def runtime_digest() -> str:
    """A hash of the vendored runtime's sources."""
    h = hashlib.sha256()
    for rel, text in sorted(runtime_files().items()):
        h.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def crate_lock(package: str, version: str) -> str:
    """A Cargo.lock for a generated crate: the runtime's pinned versions plus an entry for the crate itself."""
    head, _, rest = (RUNTIME / "Cargo.lock").read_text().partition("[[package]]")
    blocks = ["[[package]]" + b for b in rest.split("[[package]]")]
    mine = (
        f'[[package]]\nname = "{package}"\nversion = "{version}"\n'
        'dependencies = [\n "envc-runtime",\n "numpy",\n "pyo3",\n]\n\n'
    )
    blocks.append(mine)
    blocks.sort(key=lambda b: b.split('name = "', 1)[1].split('"', 1)[0])
    return head + "".join(b if b.endswith("\n\n") else b.rstrip("\n") + "\n\n" for b in blocks).rstrip("\n") + "\n"


def rustfmt(source: str) -> str:
    """`source` laid out by rustfmt when it is installed (the code is the same either way)."""
    exe = shutil.which("rustfmt")
    if exe is None:
        return source
    try:
        r = subprocess.run([exe, "--edition", "2021"], input=source, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return source
    return r.stdout if r.returncode == 0 and r.stdout.strip() else source


def scalar_only(c: ir.CallableInfo) -> bool:
    """Does callable `c` take and give only scalars (so the package's `Env.call` runs it alone)?"""
    results = c.results or ((c.returns,) if c.returns is not None else ())
    return not any(t.shape for _, t in c.params) and not any(t.shape for t in results)


def cargo_version(version: str) -> str:
    """A semver `x.y.z` for Cargo from a spec version like `1.0` or `2.1.3rc1`."""
    nums = re.findall(r"\d+", version.split("a")[0].split("b")[0].split("rc")[0])[:3]
    return ".".join((nums + ["0", "0", "0"])[:3])


def render(
    spec: ir.SpecIR,
    spec_text: str,
    package: str,
    runtime_path: str = "runtime",
    dist_name: str | None = None,
    extra_deps: tuple[str, ...] = (),
    python_packages: tuple[str, ...] = (),
) -> dict[str, str]:
    """The files of the generated crate and Python package, path -> text (the runtime is vendored by the caller)."""
    low = Lowering(spec)
    ctx = low.context()
    ctx.update(
        {
            "package": package,
            "dist_name": dist_name or package,
            "extra_deps": list(extra_deps),
            "python_packages": list(python_packages),
            "cargo_version": cargo_version(spec.version),
            "sha": hashlib.sha256(spec_text.encode()).hexdigest()[:12],
            "runtime_path": runtime_path,
            "obs_spaces": [_obs_space(o) for o in spec.obs_fields],
            "numpy": NUMPY,
            "action_low": spec.box.low if spec.box is not None else 0.0,
            "action_high": spec.box.high if spec.box is not None else 0.0,
            "action_shape": tuple(spec.box.shape) if spec.box is not None else (),
        }
    )
    env = _env(TEMPLATES)
    files = {
        "Cargo.toml": env.get_template("Cargo.toml.j2").render(ctx),
        "src/env.rs": rustfmt(env.get_template("env.rs.j2").render(ctx)),
        "src/lib.rs": rustfmt(env.get_template("lib.rs.j2").render(ctx)),
        f"python/{package}/__init__.py": env.get_template("__init__.py.j2").render(ctx),
        f"python/{package}/gym.py": env.get_template("gym.py.j2").render(ctx),
        "pyproject.toml": env.get_template("pyproject.toml.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(ctx),
    }
    if spec.render is not None:  # what envc.render draws from (gym.py's render modes)
        files[f"python/{package}/render_spec.json"] = spec.portable_json()
    return files


def _obs_space(o: ir.ObsFieldInfo) -> dict[str, object]:
    """Declared bounds of an observation part, else its dtype's range."""
    dt = o.ty.dtype

    def code(b: ir.Bound) -> str:
        one = (lambda v: repr(int(v))) if not dt.is_float else _pyfloat
        return f"[{', '.join(one(v) for v in b)}]" if isinstance(b, tuple) else one(b)

    lo, hi = o.bounds()
    return {"name": o.name, "low": code(lo), "high": code(hi), "shape": tuple(o.ty.shape), "dtype": NUMPY[dt]}


def _pyfloat(v: float) -> str:
    if math.isinf(v):
        return "-np.inf" if v < 0 else "np.inf"
    return repr(float(v))
