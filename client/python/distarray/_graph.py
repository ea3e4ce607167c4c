"""RunGraph programs traced from Python functions, as the C++ builder (client/graph.cc) does.

A ``Program`` records statements as you compute on its ``Var``s (traced values: the same
operators, ufuncs and reductions as DistributedArray); ``while_loop`` and ``cond`` trace their
Python functions into loop and branch bodies. Nothing is sent until ``client.run_graph``::

    def count_up(a):
        return distarray.while_loop(lambda a: (a < 1000).all(), lambda a: a + 1, a,
                                    max_iterations=1 << 20)

    run = client.run_graph(distarray.trace(count_up), a=x)
    run.outputs["out"].to_numpy()

Vars are values: ``while_loop`` and ``cond`` return new Vars and leave their arguments unchanged.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ._array import DistributedArray
from ._errors import traced_value_error
from ._index_map import IndexMapLike, to_proto_index_map
from ._manipulation import ManipulationOps, set_item_spec
from ._ops import REDUCTIONS, UFUNCS, ArrayOps, Axis, normalize_axes
from ._types import ModeLike, from_proto_dtype, is_scalar, to_proto_dtype, to_proto_mode, to_proto_scalar
from .v1 import distarray_pb2 as pb


class Var(ArrayOps, ManipulationOps):
    """A traced value: a variable of the program being built. Its shape, dtype and layout are
    known to the daemon only when the program runs, so a Var has none; ops on it record
    statements (the same operators, ufuncs, reductions, indexing and shape ops as
    DistributedArray; those that need the rank take their axes explicitly)."""

    __slots__ = ("_program", "_name")

    def __init__(self, program: "Program", name: str):
        self._program = program
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def program(self) -> "Program":
        return self._program

    def __repr__(self) -> str:
        return f"Var({self._name!r})"

    def __getattr__(self, name: str) -> Any:
        """A Var has no shape, rank or dtype while the program is built (the daemon learns them
        when it runs). An op that reads one gets ``TracedValueError``, a TypeError naming the
        function the caller called and what it needs, rather than a bare AttributeError from
        deep inside it; being an AttributeError too, ``getattr(v, "shape", None)`` still says
        there is none."""
        needs = _UNKNOWN_UNTIL_RUN.get(name)
        if needs is None:
            found = inspect.getattr_static(type(self), name, None)
            if hasattr(found, "__get__"):
                # A property (``mT``) that raised an AttributeError, such as TracedValueError,
                # lands here: run it again so that its own error is the one raised.
                return found.__get__(self, type(self))
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}",
                                 name=name, obj=self)
        raise traced_value_error(_entry_function(sys._getframe(1)), needs)

    def __bool__(self) -> bool:
        raise TypeError(
            "a traced value has no truth value while a program is traced; "
            "use distarray.cond(pred, true_fn, false_fn, operands) or distarray.where"
        )

    def _accepts(self, other: Any) -> bool:
        return (isinstance(other, Var) and other._program is self._program) or is_scalar(other)

    def _operand(self, value: Any) -> "pb.Operand":
        if isinstance(value, Var):
            if value._program is not self._program:
                raise ValueError("a Var of another program")
            return pb.Operand(variable=value._name)
        if is_scalar(value):
            return pb.Operand(scalar=to_proto_scalar(value))
        raise TypeError(
            f"not an operand inside a program: {type(value).__name__} "
            "(arrays enter a program as inputs: Program.input or distarray.trace)"
        )

    def _ufunc(self, name: str, operands: Sequence[Any], *, dtype=None, out=None,
               index_map: Optional[IndexMapLike] = None, result_name: Optional[str] = None) -> "Var":
        if out is not None or result_name:
            raise TypeError("out= and name= do not apply inside a program (assign the result)")
        op = pb.ELEMENTWISE_OP_ASTYPE if name == "astype" else UFUNCS[name][0]
        s = pb.Statement()
        s.elementwise.op = op
        for o in operands:
            s.elementwise.operands.append(self._operand(o))
        if dtype is not None:
            s.elementwise.dtype = to_proto_dtype(dtype)
        if index_map is not None:
            raise TypeError("index_map= inside a program: use Program.reshard on the result")
        return self._program._emit(s, "t")

    def _reduce(self, name: str, axis: Axis, keepdims: bool, *, combine: bool = True,
                result_name: Optional[str] = None) -> "Var":
        if result_name:
            raise TypeError("name= does not apply inside a program")
        s = pb.Statement()
        s.reduce.op = REDUCTIONS[name]
        s.reduce.operand.variable = self._name
        s.reduce.axes.extend(normalize_axes(axis))
        s.reduce.keepdims = keepdims
        s.reduce.combine = combine  # combined (REPLICA), so a loop condition is a plain 0-d bool
        return self._program._emit(s, "r")

    def _linalg(self, op: str, a: "Var", b: Optional["Var"] = None, *, upper: bool = False,
                full_matrices: bool = False, compute_uv: bool = False) -> List["Var"]:
        """A LinalgStatement: `op`'s results in LinalgOp's order. The daemon checks shapes and
        dtypes when the program runs (a Var has none here), and runs a program holding one
        eagerly: each factorization reads its status back."""
        results = {"qr": 2, "slogdet": 2, "eigh": 2 if compute_uv else 1,
                   "svd": 3 if compute_uv else 1}.get(op, 1)
        s = pb.Statement()
        spec = s.linalg.spec
        spec.op = pb.LinalgOp.Value(f"LINALG_OP_{op.upper()}")
        spec.a.CopyFrom(self._operand(a))
        if b is not None:
            spec.b.CopyFrom(self._operand(b))
        spec.upper = upper
        spec.full_matrices = full_matrices
        spec.compute_uv = compute_uv
        return self._program._emit_linalg(s, results)

    def _matmul(self, a: "Var", b: "Var", *, allow_tf32: bool = False, a_symmetric: bool = False,
                index_map=None, result_name=None) -> "Var":
        if index_map is not None or result_name:
            raise TypeError("index_map= and name= do not apply inside a program")
        s = pb.Statement()
        s.matmul.a.CopyFrom(self._operand(a))
        s.matmul.b.CopyFrom(self._operand(b))
        s.matmul.allow_tf32 = allow_tf32
        s.matmul.a_symmetric = a_symmetric
        return self._program._emit(s, "m")

    def __setitem__(self, key: Any, value: Any) -> None:
        """``u[key] = value`` inside a program: records ``u = set_item(u, key, value)``, so this
        Var, and every later use of it, names the updated value (as NumPy's in-place write).
        The daemon writes into u's own buffers, or into a copy where u is an input of the
        program (the caller's array is never written). ``value`` is a Var of this program or a
        scalar; keys are basic (integers, slices, None, ``...``) or listed integers, not masks
        or index arrays held in the daemon (their values would decide the plan)."""
        if not self._accepts(value):
            raise TypeError(
                f"u[key] = value inside a program takes a Var of the same program or a scalar, "
                f"not {type(value).__name__} (arrays enter a program as inputs: Program.input, "
                "Program.capture or distarray.trace)")
        if isinstance(key, Var) or (isinstance(key, tuple) and any(isinstance(k, Var)
                                                                   for k in key)):
            raise TypeError("u[key] = value inside a program: a key of traced values (a mask or "
                            "an index array) is not served; index with integers, slices or lists")
        s = pb.Statement()
        s.target = self._name
        s.manipulate.CopyFrom(set_item_spec(self, key, value))
        self._program._blocks[-1].append(s)

    def _manipulate(self, spec: "pb.ManipulationSpec", result_name: Optional[str] = None) -> "Var":
        if result_name:
            raise TypeError("name= does not apply inside a program")
        if spec.WhichOneof("op") == "set_item":  # Var.__setitem__ records it
            raise TypeError("item assignment inside a program: write u[key] = value")
        s = pb.Statement()
        s.manipulate.CopyFrom(spec)
        return self._program._emit(s, "x")

    def reshard(self, index_map: Optional[IndexMapLike] = None, mode: Optional[ModeLike] = None,
                *, ndim: Optional[int] = None) -> "Var":
        """This value in another layout and/or mode. ``index_map`` chunks must give every axis a
        slice (a Var does not know its rank), or pass ``ndim``."""
        s = pb.Statement()
        s.reshard.source = self._name
        if index_map is not None:
            rank = ndim if ndim is not None else max(len(c if isinstance(c, tuple) else c[0])
                                                     for c in index_map.values())
            s.reshard.index_map.CopyFrom(to_proto_index_map(index_map, rank))
        if mode is not None:
            s.reshard.mode = to_proto_mode(mode)
        return self._program._emit(s, "s")

    def change_mode(self, mode: ModeLike) -> "Var":
        """This value in another mode."""
        s = pb.Statement()
        s.change_mode.source = self._name
        s.change_mode.mode = to_proto_mode(mode)
        return self._program._emit(s, "s")

    def copy(self) -> "Var":
        s = pb.Statement()
        s.copy = self._name
        return self._program._emit(s, "t")


# What a Var does not have until the program runs, by attribute: what an op reading it needs.
_UNKNOWN_UNTIL_RUN = {"shape": "rank", "ndim": "rank", "size": "rank", "dtype": "dtype"}


def _entry_function(frame: Any) -> str:
    """The distarray function the caller called, from the frame that read a Var's attribute:
    the outermost of the consecutive distarray frames (``distarray.std``, not the ``var`` it
    calls), named by its public module (``distarray.linalg.trace``)."""
    entry = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "distarray" and not module.startswith("distarray."):
            break
        entry = frame
        frame = frame.f_back
    if entry is None:
        return "this operation"
    module = entry.f_globals.get("__name__", "distarray")
    public = ".".join(part for part in module.split(".") if not part.startswith("_"))
    code = entry.f_code
    if code.co_varnames[:1] == ("self",) and code.co_argcount:
        return f"{type(entry.f_locals['self']).__name__}.{code.co_name}"
    return f"{public}.{code.co_name}"


def _reads_operand(o: "pb.Operand", name: str) -> bool:
    return o.WhichOneof("kind") == "variable" and o.variable == name


def _block_reads(block, start: int, name: str) -> bool:
    return any(_reads(block[i], name) for i in range(start, len(block)))


def _block_assigns(block, start: int, name: str) -> bool:
    """Whether a statement from `start` on assigns `name` (nested bodies included)."""
    for i in range(start, len(block)):
        s = block[i]
        if s.target == name or name in s.linalg.targets:
            return True
        if s.HasField("while_loop") and _block_assigns(s.while_loop.body, 0, name):
            return True
        if s.HasField("if_else") and (_block_assigns(s.if_else.then_body, 0, name)
                                      or _block_assigns(s.if_else.else_body, 0, name)):
            return True
    return False


def _manipulation_operands(spec: "pb.ManipulationSpec") -> List["pb.Operand"]:
    op = spec.WhichOneof("op")
    if op == "set_item":
        return [spec.set_item.target, spec.set_item.value]
    if op == "concat":
        return list(spec.concat.sources)
    return [getattr(spec, op).source] if op else []


def _reads(s: "pb.Statement", name: str) -> bool:
    """Whether a statement reads variable `name` (nested bodies included)."""
    kind = s.WhichOneof("op")
    if kind == "elementwise":
        return any(_reads_operand(o, name) for o in s.elementwise.operands)
    if kind == "reduce":
        return _reads_operand(s.reduce.operand, name)
    if kind == "matmul":
        return _reads_operand(s.matmul.a, name) or _reads_operand(s.matmul.b, name)
    if kind == "manipulate":
        return any(_reads_operand(o, name) for o in _manipulation_operands(s.manipulate))
    if kind == "linalg":
        return _reads_operand(s.linalg.spec.a, name) or _reads_operand(s.linalg.spec.b, name)
    if kind == "reshard":
        return s.reshard.source == name
    if kind == "change_mode":
        return s.change_mode.source == name
    if kind == "copy":
        return s.copy == name
    if kind == "while_loop":
        return s.while_loop.condition == name or _block_reads(s.while_loop.body, 0, name)
    if kind == "if_else":
        return (s.if_else.condition == name or _block_reads(s.if_else.then_body, 0, name)
                or _block_reads(s.if_else.else_body, 0, name))
    return False


class Program:
    """A RunGraph program under construction (the C++ ``graph::ProgramBuilder``).

    ``input(name)`` gives a Var bound at run time to an array; compute on Vars; ``output(name,
    var)`` returns a value as a new array, ``value_output(name, var)`` returns it as a NumPy array
    in the response (small results: a residual, a counter). ``proto`` is the pb.Program.
    """

    def __init__(self) -> None:
        self._proto = pb.Program()
        self._blocks: List[Any] = [self._proto.statements]
        self._next_id = 0
        # Arrays the traced code used directly (a sparse matrix's parts): inputs of their own,
        # bound by client.run_graph without being named there.
        self._captured: Dict[str, DistributedArray] = {}

    @property
    def proto(self) -> "pb.Program":
        return self._proto

    def __repr__(self) -> str:
        return (f"Program(inputs={list(self._proto.inputs)}, outputs={list(self._proto.outputs)}, "
                f"value_outputs={list(self._proto.value_outputs)})")

    def _fresh(self, hint: str) -> str:
        name = f"_{hint}{self._next_id}"
        self._next_id += 1
        return name

    def _emit_linalg(self, statement: "pb.Statement", results: int) -> List[Var]:
        """A linalg statement assigns `results` fresh variables (LinalgStatement.targets)."""
        names = [self._fresh("la") for _ in range(results)]
        statement.linalg.targets.extend(names)
        self._blocks[-1].append(statement)
        return [Var(self, name) for name in names]

    def _emit(self, statement: "pb.Statement", hint: str) -> Var:
        statement.target = self._fresh(hint)
        self._blocks[-1].append(statement)
        return Var(self, statement.target)

    def input(self, name: str) -> Var:
        """A program input, bound to an array by name at run time."""
        self._proto.inputs.append(name)
        return Var(self, name)

    def create(self, shape: Sequence[int], dtype: Any = np.float64,
               index_map: Optional[IndexMapLike] = None, *,
               fill: Optional["pb.Fill"] = None) -> Var:
        """A new array made by the program (a create statement): ``shape`` and ``dtype`` in
        ``index_map`` (default: the whole array on device 0), filled by ``fill`` (a pb.Fill, as
        ``Client.create``'s; default zeros). In a loop body it is made anew every iteration."""
        shape = tuple(int(d) for d in shape)
        if index_map is None:
            from ._index_map import on_device
            index_map = on_device(len(shape), 0)
        s = pb.Statement()
        s.create.shape.dims.extend(shape)
        s.create.dtype = to_proto_dtype(dtype)
        s.create.index_map.CopyFrom(to_proto_index_map(index_map, len(shape)))
        if fill is not None:
            s.create.fill.CopyFrom(fill)
        return self._emit(s, "new")

    def capture(self, array: DistributedArray) -> Var:
        """``array`` as a Var of this program: an input of its own (once per array), which
        ``client.run_graph`` binds to it."""
        for name, captured in self._captured.items():
            if captured is array:
                return Var(self, name)
        name = f"_captured{len(self._captured)}"
        self._captured[name] = array
        return self.input(name)

    @property
    def captured_arguments(self) -> Dict[str, DistributedArray]:
        """The arrays ``capture`` made inputs of, by input name."""
        return dict(self._captured)

    def output(self, name: str, var: Var) -> None:
        """Returns ``var`` as a new array under the output name ``name``."""
        self._assign_to(name, self._var(var))
        self._proto.outputs.append(name)

    def value_output(self, name: str, var: Var) -> None:
        """Returns ``var``'s values in the response (at most 1 MiB of them)."""
        self._assign_to(name, self._var(var))
        self._proto.value_outputs.append(name)

    def _var(self, value: Any) -> Var:
        if not isinstance(value, Var) or value._program is not self:
            raise TypeError(f"expected a Var of this program, got {value!r}")
        return value

    def _assign_to(self, target: str, value: Var) -> None:
        """Makes `target` hold `value` at the end of the current block: renames the statement
        that made `value` when nothing after it reads it (no copy), else appends a copy."""
        if value._name == target:
            return
        block = self._blocks[-1]
        for i in range(len(block) - 1, -1, -1):
            if block[i].target != value._name:
                continue
            # Not when a later loop or branch assigns the old name: it carries that name, and
            # renamed, its variable would become local to the body.
            if (value._name.startswith("_") and not _block_reads(block, i + 1, value._name)
                    and not _block_assigns(block, i + 1, value._name)
                    and not _block_reads(block, i + 1, target)):
                block[i].target = target
                return
            break
        s = pb.Statement(target=target, copy=value._name)
        block.append(s)

    def _assign_all(self, targets: Sequence[Var], values: Sequence[Var]) -> None:
        # Simultaneous assignment: a value that is itself another target (a body returning
        # (b, a)) is copied aside first, so no assignment reads another's new value.
        staged = list(values)
        names = [t._name for t in targets]
        for i, v in enumerate(staged):
            if any(j != i and v._name == n for j, n in enumerate(names)):
                staged[i] = self._copies_of([v], "t")[0]
        for t, v in zip(targets, staged):
            self._assign_to(t._name, v)

    def _copies_of(self, values: Sequence[Var], hint: str) -> List[Var]:
        return [self._emit(pb.Statement(copy=v._name), hint) for v in values]

    def while_loop(self, cond_fn: Callable, body_fn: Callable, carried: Any, *,
                   max_iterations: int) -> Any:
        """``while cond_fn(carried): carried = body_fn(carried)``; see distarray.while_loop."""
        single, values = _unpack(carried)
        for v in values:
            self._var(v)
        loop_vars = self._copies_of(values, "loop")
        condition = self._fresh("cond")
        self._assign_to(condition, self._cond_var(cond_fn(_pack(single, loop_vars))))
        s = pb.Statement()
        s.while_loop.condition = condition
        s.while_loop.max_iterations = int(max_iterations)
        self._blocks.append(s.while_loop.body)
        try:
            results = _results(body_fn(_pack(single, loop_vars)), len(loop_vars), "body_fn")
            self._assign_all(loop_vars, [self._var(r) for r in results])
            self._assign_to(condition, self._cond_var(cond_fn(_pack(single, loop_vars))))
        finally:
            self._blocks.pop()
        self._blocks[-1].append(s)
        return _pack(single, loop_vars)

    def cond(self, pred: Var, true_fn: Callable, false_fn: Callable, operands: Any) -> Any:
        """``true_fn(operands)`` if pred else ``false_fn(operands)``; see distarray.cond."""
        single, values = _unpack(operands)
        for v in values:
            self._var(v)
        results = self._copies_of(values, "if")
        s = pb.Statement()
        s.if_else.condition = self._cond_var(pred)._name
        for fn, block in ((true_fn, s.if_else.then_body), (false_fn, s.if_else.else_body)):
            self._blocks.append(block)
            try:
                out = _results(fn(_pack(single, results)), len(results), "cond branch")
                self._assign_all(results, [self._var(r) for r in out])
            finally:
                self._blocks.pop()
        self._blocks[-1].append(s)
        return _pack(single, results)

    def _cond_var(self, value: Any) -> Var:
        if not isinstance(value, Var):
            raise TypeError(
                f"a condition must be a traced 0-d bool (e.g. (x < 10).all()), not {value!r}"
            )
        return self._var(value)


def _unpack(carried: Any):
    if isinstance(carried, Var):
        return True, [carried]
    if isinstance(carried, (list, tuple)) and carried:
        return False, list(carried)
    raise TypeError("carried values are a Var or a non-empty sequence of Vars")


def _pack(single: bool, values: List[Var]):
    return values[0] if single else tuple(values)


def _results(out: Any, n: int, what: str) -> List[Any]:
    values = [out] if isinstance(out, Var) else list(out) if isinstance(out, (list, tuple)) else [out]
    if len(values) != n:
        raise ValueError(f"{what} returned {len(values)} values for {n} carried")
    return values


def _program_of(values: Any, what: str) -> Program:
    single, vs = _unpack(values)
    for v in vs:
        if isinstance(v, Var):
            return v._program
    raise TypeError(f"{what} takes traced values (Vars)")


def while_loop(cond_fn: Callable, body_fn: Callable, carried: Any, *, max_iterations: int) -> Any:
    """A loop run on the daemon: ``while cond_fn(c): c = body_fn(c)``, at most
    ``max_iterations`` times (required; the run reports whether the cap stopped it).

    ``carried`` is a Var or a tuple of Vars; ``cond_fn`` gets the same structure and returns a
    0-d bool Var (e.g. ``(a < 1000).all()``); ``body_fn`` returns new values of the same shape,
    dtype, layout and mode. Returns the carried values after the loop (new Vars)."""
    program = _program_of(carried, "while_loop")
    return program.while_loop(cond_fn, body_fn, carried, max_iterations=max_iterations)


def cond(pred: Var, true_fn: Callable, false_fn: Callable, operands: Any) -> Any:
    """A branch run on the daemon: ``true_fn(operands)`` when the 0-d bool ``pred`` is true, else
    ``false_fn(operands)``; both return values of the same types as ``operands``."""
    if not isinstance(pred, Var):
        raise TypeError("cond's predicate is a traced 0-d bool Var")
    return pred._program.cond(pred, true_fn, false_fn, operands)


def trace(fn: Callable, *, input_names: Optional[Sequence[str]] = None,
          value_outputs: Sequence[str] = ()) -> Program:
    """Traces ``fn`` into a Program. Its parameters become the inputs (by their names, or
    ``input_names``); what it returns becomes the outputs: a Var is output ``"out"``, a tuple
    ``"out0"``, ``"out1"``..., a dict names them. Names listed in ``value_outputs`` come back as
    NumPy values instead of arrays."""
    names = list(input_names) if input_names is not None else list(inspect.signature(fn).parameters)
    program = Program()
    result = fn(*[program.input(n) for n in names])
    if isinstance(result, Var):
        outputs: Dict[str, Var] = {"out": result}
    elif isinstance(result, Mapping):
        outputs = dict(result)
    elif isinstance(result, (list, tuple)):
        outputs = {f"out{i}": v for i, v in enumerate(result)}
    else:
        raise TypeError("a traced function returns a Var, a tuple of Vars or a dict of them")
    for name, var in outputs.items():
        if name in value_outputs:
            program.value_output(name, var)
        else:
            program.output(name, var)
    return program


def program_proto(program: Any) -> "pb.Program":
    if isinstance(program, Program):
        return program.proto
    if isinstance(program, pb.Program):
        return program
    if callable(program):
        return trace(program).proto
    raise TypeError(f"not a program: {type(program).__name__}")


_EXECUTION = {
    pb.GRAPH_EXECUTION_UNSPECIFIED: "unspecified",
    pb.GRAPH_EXECUTION_EAGER: "eager",
    pb.GRAPH_EXECUTION_DEVICE_GRAPH: "device_graph",
}


@dataclass
class GraphRun:
    """What a RunGraph call returned."""

    outputs: Dict[str, "DistributedArray"] = field(default_factory=dict)
    values: Dict[str, np.ndarray] = field(default_factory=dict)
    iterations: int = 0
    hit_iteration_cap: bool = False
    graph_cache_hit: bool = False
    execution: str = "unspecified"  # "eager" or "device_graph"
    device_seconds: float = 0.0
    fused_loops: int = 0  # loops run as one fused kernel per iteration (docs/graphs.md)
    # Straight-line runs inside loop and branch bodies recorded as one kernel per device each,
    # and the statements they cover (a body of S statements then launches S - F + C operations).
    fused_chains_in_bodies: int = 0
    fused_chain_statements_in_bodies: int = 0

    @classmethod
    def from_response(cls, client, response: "pb.RunGraphResponse") -> "GraphRun":
        values = {}
        for name, v in response.values.items():
            values[name] = np.frombuffer(v.data, dtype=from_proto_dtype(v.dtype)).reshape(
                tuple(v.shape.dims)).copy()
        return cls(
            outputs={k: DistributedArray(client, info, owned=True) for k, info in response.outputs.items()},
            values=values,
            iterations=response.iterations,
            hit_iteration_cap=response.hit_iteration_cap,
            graph_cache_hit=response.graph_cache_hit,
            execution=_EXECUTION.get(response.execution, str(response.execution)),
            device_seconds=response.device_seconds,
            fused_loops=response.fused_loops,
            fused_chains_in_bodies=response.fused_chains_in_bodies,
            fused_chain_statements_in_bodies=response.fused_chain_statements_in_bodies,
        )
