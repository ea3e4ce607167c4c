"""Renders deploy/helm/distarray the way `helm template` does, for CI machines without Helm.

Debian 12 ships no Helm package and PyPI has none whose `template` runs offline on Debian 12's
Python, so CI renders the chart with this module instead (docs/testing.md, "The Helm chart").
It implements the part of Go's text/template and of Helm's functions that the chart uses, with
Go's semantics where they differ from Python's, and refuses anything else, so that a template
outside the subset fails here rather than rendering differently:

  actions       {{ pipeline }}, {{- trims -}}, {{/* comments */}}
  control       if / else if / else / end, with / else / end, range (over a list or a map, with
                `$v :=` or `$k, $v :=`; maps in sorted key order, as Go does)
  variables     $x := pipeline, $x = pipeline, $ (the root), $x.field
  operands      .Values.a.b, .Release.Name, .Release.Namespace, .Chart.Name, .Chart.Version,
                .Chart.AppVersion, .Files.Get, strings ("..." and `...`), integers, true, false
  functions     and or not eq ne lt le gt ge default empty required fail quote toString upper
                printf (%s %d %v) indent nindent toYaml toJson sha256sum int add sub list hasKey

Values are loaded as Helm loads them: numbers become float64 (so `{{ 1000000 }}` of a value
prints 1e+06 and `eq` between a value and an integer literal is an error, as in Go), and the
chart's values.schema.json is checked (jsonschema) before rendering, as Helm does.
"""

import copy
import hashlib
import json
import math
import pathlib
import re

import jsonschema
import yaml


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Values: Helm's numbers are float64.

def _helm_numbers(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {k: _helm_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_helm_numbers(v) for v in value]
    return value


def merge_values(base, override):
    """Helm's coalescing of -f/--set values over the chart's: maps merge, anything else replaces,
    and a null deletes the key."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------------
# Go's printing of values.

def _go_float(f):
    """fmt's %v of a float64: strconv 'g' with the shortest digits, %e from exponent 21 of a
    whole number only when the digits run out (Go: eprec 6, or the digit count when that is
    larger than the decimal point's place)."""
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "0"
    digits, exp = _shortest(f)
    nd, dp = len(digits), exp + 1
    eprec = 6
    if eprec > nd and nd >= dp:
        eprec = nd
    sign = "-" if f < 0 else ""
    if exp < -4 or exp >= eprec:
        mantissa = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return f"{sign}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= nd:
        return sign + digits + "0" * (dp - nd)
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def _shortest(f):
    """(digits, decimal exponent) of the shortest representation that reads back as f."""
    mantissa, _, exp = f"{abs(f):.17e}".partition("e")
    for precision in range(1, 18):
        text = f"{abs(f):.{precision - 1}e}"
        if float(text) == abs(f):
            mantissa, _, exp = text.partition("e")
            break
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    return digits, int(exp)


def go_str(value):
    """How text/template prints a value (Helm prints a missing value as empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise TemplateError(f"printing a {type(value).__name__} is outside the supported subset; "
                        "use toYaml or toJson")


def truth(value):
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0
    if isinstance(value, (str, list, dict)):
        return len(value) > 0
    return True


def _json_ready(value):
    """encoding/json writes a whole float64 below 1e21 without a fraction or exponent."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    return value


def to_json(value):
    text = json.dumps(_json_ready(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def to_yaml(value):
    """Helm's toYaml: sigs.k8s.io/yaml (keys sorted, through JSON numbers), trailing newline
    trimmed."""
    if value is None:
        return "null"
    return yaml.safe_dump(_json_ready(value), sort_keys=True, default_flow_style=False,
                          allow_unicode=True).rstrip("\n")


def _indent(spaces, text):
    pad = " " * int(spaces)
    return pad + text.replace("\n", "\n" + pad)


def _kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "nil"
    return type(value).__name__


def _compare(a, b, op):
    if _kind(a) != _kind(b):
        raise TemplateError(f"incompatible types for comparison: {_kind(a)} and {_kind(b)}")
    if op in ("lt", "le", "gt", "ge") and _kind(a) not in ("int", "float", "string"):
        raise TemplateError(f"invalid type for comparison: {_kind(a)}")
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def _to_int(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def _printf(fmt, *args):
    out, index = [], 0

    def take(match):
        nonlocal index
        verb = match.group(1)
        if verb == "%":
            return "%"
        if index >= len(args):
            return f"%!{verb}(MISSING)"
        arg = args[index]
        index += 1
        if verb == "d":
            if _kind(arg) != "int" and not (isinstance(arg, float) and arg.is_integer()):
                return f"%!d({_kind(arg)}={go_str(arg)})"
            return str(int(arg)) if _kind(arg) == "int" else f"%!d(float64={go_str(arg)})"
        return go_str(arg)

    out.append(re.sub(r"%([sdv%])", take, fmt))
    return "".join(out)


def _fail(message):
    raise TemplateError(message)


def _required(message, value):
    if value is None or value == "":
        raise TemplateError(message)
    return value


FUNCTIONS = {
    "not": lambda v: not truth(v),
    "eq": lambda a, *bs: any(_compare(a, b, "eq") for b in bs),
    "ne": lambda a, b: _compare(a, b, "ne"),
    "lt": lambda a, b: _compare(a, b, "lt"),
    "le": lambda a, b: _compare(a, b, "le"),
    "gt": lambda a, b: _compare(a, b, "gt"),
    "ge": lambda a, b: _compare(a, b, "ge"),
    "default": lambda d, v=None: v if truth(v) else d,
    "empty": lambda v: not truth(v),
    "required": _required,
    "fail": _fail,
    "quote": lambda *vs: " ".join(json.dumps(go_str(v), ensure_ascii=False) for v in vs
                                  if v is not None),
    "toString": go_str,
    "upper": lambda s: go_str(s).upper(),
    "printf": _printf,
    "indent": _indent,
    "nindent": lambda n, text: "\n" + _indent(n, text),
    "toYaml": to_yaml,
    "toJson": to_json,
    "sha256sum": lambda s: hashlib.sha256(go_str(s).encode()).hexdigest(),
    "int": _to_int,
    "add": lambda *vs: sum(_to_int(v) for v in vs),
    "sub": lambda a, b: _to_int(a) - _to_int(b),
    "list": lambda *vs: list(vs),
    "hasKey": lambda d, k: isinstance(d, dict) and k in d,
}
LAZY = {"and", "or"}  # Go evaluates their arguments only as far as needed


# ---------------------------------------------------------------------------------------------
# Lexing and parsing.

# An action runs to the first }} outside a string literal.
_ACTION = re.compile(r"""\{\{(- )?((?:"(?:\\.|[^"\\])*"|`[^`]*`|[^"`}]|\}(?!\}))*?)( -)?\}\}""", re.S)
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:\\.|[^"\\])*")
  | (?P<raw>`[^`]*`)
  | (?P<declare>:=)
  | (?P<assign>=)
  | (?P<punct>[()|,])
  | (?P<number>-?\d+(?:\.\d+)?)
  | (?P<field>(?:\$[A-Za-z_0-9]*|\.[A-Za-z_][A-Za-z_0-9]*|\.)(?:\.[A-Za-z_][A-Za-z_0-9]*)*)
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)
""", re.X)


def _lex_action(body):
    tokens, pos = [], 0
    while pos < len(body):
        match = _TOKEN.match(body, pos)
        if not match:
            raise TemplateError(f"cannot read {body[pos:]!r} in {{{{{body}}}}}")
        pos = match.end()
        kind = match.lastgroup
        if kind != "space":
            tokens.append((kind, match.group()))
    return tokens


def _split_text(source):
    """[(kind, text)] with kind 'text' or 'action', trim markers applied."""
    parts, pos = [], 0
    for match in _ACTION.finditer(source):
        text = source[pos:match.start()]
        if match.group(1):
            text = text.rstrip(" \t\r\n")
        parts.append(["text", text])
        parts.append(["action", match.group(2).strip(), bool(match.group(3))])
        pos = match.end()
    parts.append(["text", source[pos:]])
    for i, part in enumerate(parts):
        if part[0] == "action" and part[2]:
            parts[i + 1][1] = parts[i + 1][1].lstrip(" \t\r\n")
    return [(p[0], p[1]) for p in parts if p[0] == "action" or p[1]]


class _Parser:
    def __init__(self, tokens):
        self.tokens, self.pos = tokens, 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def pipeline(self):
        """('pipe', declared_vars, mode, [commands]); mode ':=', '=', or None."""
        variables, mode = [], None
        save = self.pos
        while self.peek()[0] == "field" and self.peek()[1].startswith("$"):
            variables.append(self.take()[1])
            if self.peek() == ("punct", ","):
                self.take()
                continue
            break
        if variables and self.peek()[0] in ("declare", "assign"):
            mode = self.take()[1]
        else:
            variables, self.pos = [], save
        commands = [self.command()]
        while self.peek() == ("punct", "|"):
            self.take()
            commands.append(self.command())
        return ("pipe", variables, mode, commands)

    def command(self):
        operands = []
        while self.peek()[0] is not None and self.peek() not in (("punct", "|"), ("punct", ")")):
            operands.append(self.operand())
        if not operands:
            raise TemplateError("empty command")
        return operands

    def operand(self):
        kind, text = self.take()
        if kind == "punct" and text == "(":
            inner = self.pipeline()
            if self.take() != ("punct", ")"):
                raise TemplateError("unclosed (")
            return ("paren", inner)
        if kind == "string":
            return ("lit", json.loads(text))
        if kind == "raw":
            return ("lit", text[1:-1])
        if kind == "number":
            return ("lit", float(text) if "." in text else int(text))
        if kind == "ident":
            if text in ("true", "false"):
                return ("lit", text == "true")
            if text == "nil":
                return ("lit", None)
            if text not in FUNCTIONS and text not in LAZY:
                raise TemplateError(f"function {text!r} is outside the supported subset")
            return ("func", text)
        if kind == "field":
            return ("field", text)
        raise TemplateError(f"unexpected {text!r}")


def _parse_pipeline(body):
    parser = _Parser(_lex_action(body))
    pipe = parser.pipeline()
    if parser.peek()[0] is not None:
        raise TemplateError(f"unexpected {parser.peek()[1]!r} in {{{{{body}}}}}")
    return pipe


def parse(source):
    """The template as a tree: a list of nodes."""
    parts = _split_text(source)
    pos = 0

    def block(stop):
        nonlocal pos
        nodes = []
        while pos < len(parts):
            kind, text = parts[pos]
            pos += 1
            if kind == "text":
                nodes.append(("text", text))
                continue
            if text.startswith("/*"):
                if not text.endswith("*/"):
                    raise TemplateError("unclosed comment")
                continue
            word = text.split(None, 1)[0] if text else ""
            rest = text[len(word):].strip()
            if word in stop:
                return nodes, word, rest
            if word == "if":
                nodes.append(conditional("if", rest))
            elif word == "with":
                nodes.append(conditional("with", rest))
            elif word == "range":
                body, end, _ = block({"end"})
                if end != "end":
                    raise TemplateError("range without end")
                nodes.append(("range", _parse_pipeline(rest), body))
            elif word in ("define", "template", "include", "block", "break", "continue"):
                raise TemplateError(f"{word} is outside the supported subset")
            else:
                nodes.append(("action", _parse_pipeline(text)))
        if stop:
            raise TemplateError(f"missing {'/'.join(sorted(stop))}")
        return nodes, None, None

    def conditional(word, condition):
        branches, otherwise = [], []
        body, end, rest = block({"else", "end"})
        branches.append((_parse_pipeline(condition), body))
        while end == "else":
            if word == "if" and rest.startswith("if "):
                body, end, next_rest = block({"else", "end"})
                branches.append((_parse_pipeline(rest[3:]), body))
                rest = next_rest
            elif rest:
                raise TemplateError(f"else {rest!r} is outside the supported subset")
            else:
                otherwise, end, rest = block({"end"})
        return (word, branches, otherwise)

    nodes, end, _ = block(set())
    return nodes


# ---------------------------------------------------------------------------------------------
# Evaluation.

class _Scope:
    def __init__(self, parent=None):
        self.vars, self.parent = {}, parent

    def lookup(self, name):
        scope = self
        while scope:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        raise TemplateError(f"undefined variable {name}")

    def assign(self, name, value):
        scope = self
        while scope:
            if name in scope.vars:
                scope.vars[name] = value
                return
            scope = scope.parent
        raise TemplateError(f"undefined variable {name}")


class _Files:
    def __init__(self, root):
        self.root = root

    def get(self, name):
        path = (self.root / name).resolve()
        if self.root.resolve() not in path.parents or not path.is_file():
            return ""  # Helm's Files.Get of a missing file is empty
        return path.read_text()


def _field(value, names, label):
    for name in names:
        if value is None:
            return None
        if isinstance(value, dict):
            value = value.get(name)
        elif isinstance(value, _Files) and name == "Get":
            value = value.get
        else:
            raise TemplateError(f"{label}: cannot take .{name} of a {_kind(value)}")
    return value


def _evaluate_pipe(pipe, dot, scope):
    _, variables, mode, commands = pipe
    value, first = None, True
    for command in commands:
        value = _evaluate_command(command, dot, scope, None if first else value, first)
        first = False
    if mode == ":=":
        if len(variables) != 1:
            raise TemplateError("only `$x := pipeline` declares outside range")
        scope.vars[variables[0]] = value
        return None, True
    if mode == "=":
        scope.assign(variables[0], value)
        return None, True
    return value, False


def _evaluate_operand(operand, dot, scope):
    kind, text = operand
    if kind == "lit":
        return text
    if kind == "paren":
        return _evaluate_pipe(text, dot, scope)[0]
    if kind == "field":
        if text == ".":
            return dot
        if text.startswith("$"):
            head, *names = text.split(".")
            return _field(scope.lookup(head), names, text)
        return _field(dot, text[1:].split("."), text)
    raise TemplateError(f"{text} is not a value")


def _evaluate_command(operands, dot, scope, piped, first):
    head = operands[0]
    if head[0] == "func":
        name = head[1]
        if name in LAZY:
            args = operands[1:] + ([("lit", piped)] if not first else [])
            value = None
            for arg in args:
                value = _evaluate_operand(arg, dot, scope)
                if truth(value) == (name == "or"):
                    return value
            return value
        args = [_evaluate_operand(o, dot, scope) for o in operands[1:]]
        if not first:
            args.append(piped)
        try:
            return FUNCTIONS[name](*args)
        except TypeError as error:
            raise TemplateError(f"{name}: wrong arguments ({error})") from error
    value = _evaluate_operand(head, dot, scope)
    if callable(value):  # .Files.Get "name"
        args = [_evaluate_operand(o, dot, scope) for o in operands[1:]]
        if not first:
            args.append(piped)
        return value(*args)
    if len(operands) > 1 or not first:
        raise TemplateError(f"{head[1]} is not a function")
    return value


def _execute(nodes, dot, scope, out):
    for node in nodes:
        kind = node[0]
        if kind == "text":
            out.append(node[1])
        elif kind == "action":
            value, declared = _evaluate_pipe(node[1], dot, scope)
            if not declared:
                out.append(go_str(value))
        elif kind in ("if", "with"):
            for pipe, body in node[1]:
                inner = _Scope(scope)
                value, _ = _evaluate_pipe(pipe, dot, inner)
                if truth(value):
                    _execute(body, value if kind == "with" else dot, inner, out)
                    break
            else:
                _execute(node[2], dot, _Scope(scope), out)
        elif kind == "range":
            _, variables, mode, commands = node[1]
            if mode == "=":
                raise TemplateError("range with = is outside the supported subset")
            collection, _ = _evaluate_pipe(("pipe", [], None, commands), dot, scope)
            if isinstance(collection, dict):
                items = [(k, collection[k]) for k in sorted(collection)]
            elif isinstance(collection, list):
                items = list(enumerate(collection))
            elif collection is None:
                items = []
            else:
                raise TemplateError(f"range over a {_kind(collection)}")
            for key, item in items:
                inner = _Scope(scope)
                if len(variables) == 1:
                    inner.vars[variables[0]] = item
                elif len(variables) == 2:
                    inner.vars[variables[0]] = key
                    inner.vars[variables[1]] = item
                _execute(node[2], item, inner, out)


def render_template(source, context):
    scope = _Scope()
    scope.vars["$"] = context
    out = []
    _execute(parse(source), context, scope, out)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Charts.

def chart_values(chart, overrides=None):
    """The chart's values.yaml with the overrides merged in, checked against values.schema.json."""
    chart = pathlib.Path(chart)
    values = yaml.safe_load((chart / "values.yaml").read_text()) or {}
    values = merge_values(values, overrides)
    schema_file = chart / "values.schema.json"
    if schema_file.exists():
        jsonschema.validate(values, json.loads(schema_file.read_text()))
    return values


def render_chart(chart, overrides=None, release="distarray", namespace="distarray"):
    """The chart's objects, as `helm template RELEASE CHART -n NAMESPACE -f overrides` renders
    them: every templates/*.yaml not starting with `_`, split at `---`, empty documents dropped."""
    chart = pathlib.Path(chart)
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    context = {
        "Values": _helm_numbers(chart_values(chart, overrides)),
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
        "Chart": {"Name": meta["name"], "Version": meta["version"],
                  "AppVersion": meta.get("appVersion", "")},
        "Files": _Files(chart),
    }
    docs = []
    for template in sorted((chart / "templates").glob("*.yaml")):
        if template.name.startswith("_"):
            continue
        try:
            text = render_template(template.read_text(), context)
        except TemplateError as error:
            raise TemplateError(f"{template.name}: {error}") from error
        for doc in re.split(r"(?m)^---\s*$", text):
            try:
                parsed = yaml.safe_load(doc)
            except yaml.YAMLError as error:
                raise TemplateError(f"{template.name}: rendered YAML is invalid: {error}\n{doc}")
            if parsed:
                docs.append(parsed)
    return docs


def main(argv):
    """helm_render.py CHART [-f VALUES]...: the rendered objects as YAML documents on stdout."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("chart")
    parser.add_argument("-f", "--values", action="append", default=[])
    args = parser.parse_args(argv)
    overrides = {}
    for path in args.values:
        overrides = merge_values(overrides, yaml.safe_load(pathlib.Path(path).read_text()) or {})
    sys.stdout.write(yaml.safe_dump_all(render_chart(args.chart, overrides), sort_keys=False))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
