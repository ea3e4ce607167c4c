"""helm_render renders each construct it claims as Helm's Go templates do, and refuses the
others, so a chart template outside the subset fails CI instead of rendering differently. The
expected strings are what `helm template` prints for the same template and values."""

import pytest

import helm_render
from helm_render import TemplateError, render_template


def run(source, values=None, **context):
    return render_template(source, {"Values": helm_render._helm_numbers(values or {}), **context})


@pytest.mark.parametrize("source,values,want", [
    ("a: {{ .Values.x }}", {"x": "b"}, "a: b"),
    ("{{ .Values.missing }}|{{ .Values.a.missing }}", {"a": {}}, "|"),
    # Helm's numbers are float64: whole ones print bare, large ones in Go's %v exponent form.
    ("{{ .Values.n }} {{ .Values.m }} {{ .Values.f }} {{ .Values.big }}",
     {"n": 8, "m": 1000000, "f": 0.9, "big": 123456789}, "8 1e+06 0.9 1.23456789e+08"),
    ("{{ int .Values.m }} {{ sub .Values.n 1 }} {{ add .Values.n 1 2 }}", {"m": 1000000, "n": 8},
     "1000000 7 11"),
    ("{{ .Values.n | quote }} {{ quote .Values.s }} {{ .Values.t | quote }}",
     {"n": 8, "s": 'say "hi"', "t": True}, '"8" "say \\"hi\\"" "true"'),
    ("{{ toString .Values.n }}/{{ toString .Values.s }}", {"n": 4, "s": "all"}, "4/all"),
    ("{{ printf \"%s:%s\" .Values.a .Values.b }} {{ upper \"x_y\" }}", {"a": "r", "b": "t"}, "r:t X_Y"),
    # Trim markers eat all whitespace, newlines included, on their side only.
    ("a\n  {{- .Values.x }}  \nb", {"x": "X"}, "aX  \nb"),
    ("a  {{ .Values.x -}}\n\n  b", {"x": "X"}, "a  Xb"),
    ("a{{/* a comment */}}b\n{{- /* trimmed */ -}}\nc", {}, "abc"),
    # if / else if / else, Go's truth: empty strings, lists, maps and zero are false.
    ("{{ if .Values.a }}A{{ else if .Values.b }}B{{ else }}C{{ end }}", {"a": "", "b": [1]}, "B"),
    ("{{ if .Values.a }}A{{ else if .Values.b }}B{{ else }}C{{ end }}", {"a": {}, "b": 0}, "C"),
    ("{{ if not .Values.a }}no{{ end }}", {"a": []}, "no"),
    ("{{ if and .Values.a (eq .Values.b \"x\") }}y{{ end }}", {"a": True, "b": "x"}, "y"),
    ("{{ or .Values.a .Values.b }}", {"a": "", "b": "second"}, "second"),
    ("{{ if eq .Values.s \"a\" \"b\" }}any{{ end }}", {"s": "b"}, "any"),
    ("{{ if ne (toString .Values.c) \"all\" }}{{ sub .Values.c 1 }}{{ end }}", {"c": 8}, "7"),
    # with rebinds dot; range over lists and over maps in key order, with variables and $.
    ("{{ with .Values.m }}{{ .k }}{{ else }}none{{ end }}", {"m": {"k": "v"}}, "v"),
    ("{{ with .Values.m }}{{ .k }}{{ else }}none{{ end }}", {"m": {}}, "none"),
    ("{{ range .Values.l }}[{{ . }}]{{ end }}", {"l": ["a", "b"]}, "[a][b]"),
    ("{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }}{{ $.Values.sep }}{{ end }}",
     {"m": {"b": "2", "a": "1"}, "sep": ";"}, "a=1;b=2;"),
    ("{{ range $i, $v := .Values.l }}{{ $i }}{{ $v }}{{ end }}", {"l": ["x", "y"]}, "0x1y"),
    # Variables: declared, reassigned inside a block and seen after it (Go 1.11 semantics).
    ("{{ $r := .Values.a }}{{ if .Values.g }}{{ $r = .Values.b }}{{ end }}{{ $r.cpu }}",
     {"a": {"cpu": "1"}, "b": {"cpu": "2"}, "g": True}, "2"),
    ("{{ default \"d\" .Values.x }} {{ .Values.y | default \"e\" }}", {"y": ""}, "d e"),
    ("{{ empty .Values.l }} {{ hasKey .Values \"l\" }}", {"l": []}, "true true"),
    # toYaml (sorted keys, no trailing newline) with nindent and indent, as sprig pads lines.
    ("k:\n  {{- toYaml .Values.m | nindent 2 }}", {"m": {"b": [1, 2], "a": "x"}},
     "k:\n  a: x\n  b:\n  - 1\n  - 2"),
    ("{{ \"a\\nb\\n\" | indent 2 }}", {}, "  a\n  b\n  "),
    ("{{ toJson .Values.m }}", {"m": {"b": 1000000, "a": "<&>"}},
     '{"a":"\\u003c\\u0026\\u003e","b":1000000}'),
    ("{{ \"abc\" | sha256sum }}", {}, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ("{{ list .Values.a \"b\" | toJson }}", {"a": 1}, '[1,"b"]'),
    ("{{ `raw {{ x }}` }}", {}, "raw {{ x }}"),
])
def test_renders_like_helm(source, values, want):
    assert run(source, values) == want


def test_files_get_and_release(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.txt").write_text("line1\nline2\n")
    files = helm_render._Files(tmp_path)
    out = run('x: |\n  {{- .Files.Get "files/a.txt" | nindent 2 }}{{ .Files.Get "none" }}',
              Files=files)
    assert out == "x: |\n  line1\n  line2\n  "
    assert run("{{ .Release.Name }}/{{ .Release.Namespace }}",
               Release={"Name": "r", "Namespace": "n"}) == "r/n"


@pytest.mark.parametrize("source,values,message", [
    ("{{ eq .Values.n 8 }}", {"n": 8}, "incompatible types"),   # float64 value, int literal
    ("{{ .Values.m }}", {"m": {"a": 1}}, "printing a dict"),
    ("{{ include \"x\" . }}", {}, "outside the supported subset"),
    ("{{ define \"x\" }}{{ end }}", {}, "outside the supported subset"),
    ("{{ tpl .Values.s . }}", {"s": ""}, "outside the supported subset"),
    ("{{ if .Values.a }}", {}, "missing else/end"),
    ("{{ $x = 1 }}", {}, "undefined variable"),
    ("{{ required \"give x\" .Values.x }}", {}, "give x"),
    ("{{ fail \"no\" }}", {}, "no"),
    ("{{ .Values.s.field }}", {"s": "str"}, "cannot take .field"),
])
def test_refuses_what_helm_would_not_render_the_same(source, values, message):
    with pytest.raises(TemplateError, match=message):
        run(source, values)


def test_values_merge_like_helm():
    base = {"a": {"b": 1, "c": 2}, "l": [1, 2], "d": "x"}
    assert helm_render.merge_values(base, {"a": {"b": 3}, "l": [9], "d": None}) == {
        "a": {"b": 3, "c": 2}, "l": [9]}
    assert base["a"]["b"] == 1  # not modified


def test_chart_rendering_splits_documents_and_skips_partials(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (tmp_path / "values.yaml").write_text("n: 2\non: false\n")
    (tmp_path / "values.schema.json").write_text('{"type": "object", "properties": {"n": {"type": "integer"}}}')
    (tmp_path / "templates" / "a.yaml").write_text(
        "kind: A\nn: {{ .Values.n }}\n---\n{{- if .Values.on }}\nkind: B\n{{- end }}\n---\nkind: C\n"
        "chart: {{ .Chart.Name }}-{{ .Chart.Version }}\n")
    (tmp_path / "templates" / "_helpers.tpl").write_text("{{ broken")
    (tmp_path / "templates" / "_skipped.yaml").write_text("{{ broken")
    assert helm_render.render_chart(tmp_path) == [{"kind": "A", "n": 2},
                                                  {"kind": "C", "chart": "c-1.0.0"}]
    import jsonschema
    with pytest.raises(jsonschema.ValidationError):
        helm_render.render_chart(tmp_path, {"n": "two"})
