"""Parse errors of the .hpvm text form: each names file, line and column
of the offending token, what was expected, and a fix."""
import pytest

from hpvm.errors import ParseError
from hpvm.ir.text import load_module, parse_module

GOOD = """\
hpvm 1.0
module t

func @k(in a: i64, out dst: f32[N]) {
  let total: i64 = a + 1
  dst[0] = f32(total)
}

graph @main(out res: f32[N]) {
  node run = @k [N]
  out run.dst -> res
}

root @main
"""


def error_of(text: str, filename: str | None = "t.hpvm") -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_module(text, filename)
    return info.value


def located(error: ParseError) -> tuple:
    (diagnostic,) = error.diagnostics
    location = diagnostic.location
    return location.line, location.column


def test_good_text_parses():
    parse_module(GOOD)


@pytest.mark.parametrize("old, new, line, column, words", [
    ("let total: i64 = a + 1", "let total: i64 = b + 1", 5, 20, "unknown name 'b'"),
    ("let total: i64 = a + 1", "let total: i64 = a +", 5, 23, "expected an expression"),
    ("dst[0] = f32(total)", "dst[0] = f32(totl)", 6, 16, "did you mean 'total'"),
    ("dst[0] = f32(total)", "dst[0] = @kk(total)", 6, 12, "unknown function '@kk'"),
    ("dst[0] = f32(total)", "dst[0] = sqrtt(total)", 6, 12, "unknown function 'sqrtt'"),
    ("dst[0] = f32(total)", "dst[0] = f32(total", 6, 21, "expected ')'"),
    ("dst[0] = f32(total)", "a[0] = f32(total)", 6, 3, "'a' is a scalar"),
    ("let total: i64 = a + 1", "let for: i64 = a + 1", 5, 7, "reserved word"),
    ("let total: i64 = a + 1", "let total: i65 = a + 1", 5, 14, "expected a scalar type"),
    ("let total: i64 = a + 1", "let total: i64 = a + 1 a", 5, 26, "expected end of line"),
    ("let total: i64 = a + 1", "let total: i64 = i32(3000000000)", 5, 24, "does not fit i32"),
    ("let total: i64 = a + 1", "let total: i64 = i32(1.5)", 5, 24, "must be an integer"),
    ("let total: i64 = a + 1", "for i in 0 .. 4 { }", 5, 19, "expected 'step'"),
    ("let total: i64 = a + 1", "for i in 0 .. 4 step 1 [unrol = 2] {}", 5, 27,
     "unknown loop attribute"),
    ("let total: i64 = a + 1", 'let total: i64 = "x', 5, 20, "unterminated string"),
    ("let total: i64 = a + 1", "let total: i64 = a $ 1", 5, 22, "unexpected character"),
    ("node run = @k [N]", "node run = @kernel [N]", 10, 14, "unknown function '@kernel'"),
    ("node run = @k [N]", "node run = @k [M]", 10, 18, "unknown name 'M'"),
    ("out run.dst -> res", "out run.dst => res", 11, 15, "expected '->'"),
    ("out run.dst -> res", "edge run.dst -> run.a one-to-many", 11, 25, "unknown edge kind"),
    ("out run.dst -> res", "wire run.dst -> res", 11, 3, "expected 'node', 'edge'"),
    ("root @main", "root @mian", 14, 6, "did you mean 'main'"),
    ("module t", "modul t", 2, 1, "expected 'module'"),
])
def test_error_names_line_column_and_problem(old, new, line, column, words):
    assert old in GOOD
    error = error_of(GOOD.replace(old, new))
    assert located(error) == (line, column)
    assert words in str(error)
    assert str(error).startswith(f"t.hpvm:{line}:{column}: ")


def test_missing_header_is_reported_on_the_first_line():
    error = error_of(GOOD.replace("hpvm 1.0\n", ""))
    assert located(error) == (1, 1)
    assert "expected 'hpvm'" in str(error)


def test_other_major_version_is_refused_naming_both_versions():
    error = error_of(GOOD.replace("hpvm 1.0", "hpvm 2.3"))
    assert located(error) == (1, 6)
    assert "format 2.3" in str(error) and "1.x" in str(error)


def test_duplicate_node_is_refused():
    line = "  node run = @k [N]\n"
    error = error_of(GOOD.replace(line, line + line))
    assert located(error) == (11, 3)
    assert "node 'run' is defined twice" in str(error)


def test_duplicate_function_is_refused():
    text = GOOD.replace("graph @main", "func @k() {}\n\ngraph @main")
    assert "function '@k' is defined twice" in str(error_of(text))


def test_unclosed_block_points_at_its_opening_brace():
    error = error_of(GOOD.replace("  dst[0] = f32(total)\n}\n", "  dst[0] = f32(total)\n"))
    assert located(error) == (4, 37)
    assert "never closed" in str(error)


def test_missing_root_is_reported_at_end_of_file():
    error = error_of(GOOD.replace("root @main\n", ""))
    assert "'root @graph'" in str(error)


def test_bad_base64_is_reported_at_the_string():
    text = GOOD.replace("  out run.dst", '  node w = const f32[2] base64 "!!"\n  out run.dst')
    error = error_of(text)
    assert located(error) == (11, 32)
    assert "invalid base64" in str(error)


def test_constant_size_must_match_its_type():
    constant = '  node w = const f32[3] base64 "AAAAAAAAgD8="\n'
    text = GOOD.replace("  out run.dst", constant + "  out run.dst")
    assert "holds 2 values" in str(error_of(text))


def test_error_carries_a_fix():
    error = error_of(GOOD.replace("let total", "let for"))
    assert error.diagnostics[0].fix == 'write %"for" to use it as a name'


def test_load_module_names_the_file(tmp_path):
    path = tmp_path / "broken.hpvm"
    path.write_text(GOOD.replace("a + 1", "a + "))
    with pytest.raises(ParseError) as info:
        load_module(path)
    assert str(info.value).startswith(f"{path}:5:")


def test_load_module_reports_a_missing_file(tmp_path):
    with pytest.raises(ParseError) as info:
        load_module(tmp_path / "absent.hpvm")
    assert "absent.hpvm" in str(info.value)


def test_error_without_filename_still_shows_line_and_column():
    assert str(error_of(GOOD.replace("a + 1", "b + 1"), None)).startswith("<text>:5:20: ")


def test_second_root_line_is_refused():
    error = error_of(GOOD + "root @main\n")
    assert located(error) == (15, 1)
    assert "named twice" in str(error)


def test_blocks_nested_too_deep_are_a_located_error():
    loops = "".join(f"  for i{n} in 0 .. 2 step 1 {{\n" for n in range(3000))
    body = loops + "  dst[0] = f32(1.0)\n" + "  }\n" * 3000
    text = GOOD.replace("  let total: i64 = a + 1\n  dst[0] = f32(total)\n", body)
    error = error_of(text)
    # the function body is the first block: the 50th loop opens the 51st
    assert located(error) == (54, 1 + len("  for i49 in 0 .. 2 step 1 "))
    assert "blocks nested more than 50 levels deep" in str(error)
