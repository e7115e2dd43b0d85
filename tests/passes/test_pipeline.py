"""Pipeline text: parsing, option typing, and every error path."""
import pytest

from hpvm.passes import (
    Option, PipelineError, format_pipeline, parse_pipeline, register_pass,
    unregister_pass,
)


@pytest.fixture(autouse=True)
def toy_pass():
    """A pass with one option of every type."""
    register_pass("toy-unroll", options=[
        Option("factor", int, 4, "unroll factor"),
        Option("ratio", float, 0.5, "a ratio"),
        Option("fast", bool, False, "go fast"),
        Option("mode", str, "auto", "a mode"),
        Option("nodes", list, (), "node names"),
    ])(lambda module, **options: module)
    yield
    unregister_pass("toy-unroll")


def error_of(text: str) -> str:
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text)
    return str(info.value)


def test_empty_pipeline_has_no_steps():
    assert parse_pipeline("") == []
    assert parse_pipeline("   ") == []


def test_passes_are_listed_in_order_with_whitespace_allowed():
    steps = parse_pipeline(" dce , const-fold,inline ")
    assert [name for name, _ in steps] == ["dce", "const-fold", "inline"]


def test_options_default_when_not_given():
    [(name, options)] = parse_pipeline("toy-unroll")
    assert options == {"factor": 4, "ratio": 0.5, "fast": False, "mode": "auto", "nodes": ()}


def test_options_are_typed():
    [(_, options)] = parse_pipeline(
        "toy-unroll{factor=8 ratio=2 fast=true mode='a b' nodes=x,y,g.z}")
    assert options == {"factor": 8, "ratio": 2.0, "fast": True, "mode": "a b",
                       "nodes": ("x", "y", "g.z")}
    assert isinstance(options["ratio"], float)


def test_options_may_be_separated_by_commas():
    [(_, options)] = parse_pipeline("toy-unroll{factor=2, fast=on}")
    assert options["factor"] == 2 and options["fast"] is True


def test_negative_int_option():
    [(_, options)] = parse_pipeline("toy-unroll{factor=-3}")
    assert options["factor"] == -3


def test_bool_option_accepts_false_spellings():
    for text in ("false", "0", "no", "off", "False"):
        [(_, options)] = parse_pipeline(f"toy-unroll{{fast={text}}}")
        assert options["fast"] is False


def test_format_pipeline_round_trips():
    steps = parse_pipeline("dce,toy-unroll{factor=8 nodes=a,b},inline{keep=true}")
    text = format_pipeline(steps)
    assert text == "dce,toy-unroll{factor=8 nodes=a,b},inline{keep=true}"
    assert parse_pipeline(text) == steps


def test_unknown_pass_suggests_closest_and_lists_known():
    message = error_of("dce,cnst-fold")
    assert "unknown pass 'cnst-fold'" in message
    assert "did you mean 'const-fold'?" in message
    assert "dce" in message and "inline" in message and "sequentialize" in message
    assert "<pipeline>:1:5" in message


def test_unknown_option_lists_the_pass_options():
    message = error_of("toy-unroll{factr=2}")
    assert "unknown option 'factr' of pass 'toy-unroll'" in message
    assert "factor (int, default 4)" in message and "nodes" in message
    assert "<pipeline>:1:12" in message


def test_option_of_pass_without_options():
    message = error_of("dce{x=1}")
    assert "unknown option 'x' of pass 'dce'" in message
    assert "takes no options" in message


@pytest.mark.parametrize("text, expected", [
    ("toy-unroll{factor=four}", "option 'factor' of pass 'toy-unroll' expects an int, got 'four'"),
    ("toy-unroll{factor=2.5}", "expects an int, got '2.5'"),
    ("toy-unroll{ratio=fast}", "expects a float, got 'fast'"),
    ("toy-unroll{fast=maybe}", "expects a bool (true or false), got 'maybe'"),
])
def test_bad_option_value_names_the_expected_type(text, expected):
    assert expected in error_of(text)


@pytest.mark.parametrize("text, column, expected", [
    ("dce,", 5, "expected a pass name after ','"),
    (",dce", 1, "expected a pass name, found ','"),
    ("dce;inline", 4, "expected ',' between passes, found ';'"),
    ("dce inline", 5, "expected ',' between passes, found 'i'"),
    ("toy-unroll{factor=2", 20, "'{' opened at column 11 is not closed"),
    ("toy-unroll{factor}", 18, "expected '=' after option 'factor'"),
    ("toy-unroll{factor=}", 19, "expected a value, found '}'"),
    ("toy-unroll{=3}", 12, "expected an option name, found '='"),
    ("toy-unroll{mode='abc}", 17, "string starting at column 17 is not closed"),
    ("toy-unroll{factor=1 factor=2}", 21, "option 'factor' of pass 'toy-unroll' is given twice"),
    ("3dce", 1, "expected a pass name, found '3'"),
])
def test_syntax_errors_give_the_column(text, column, expected):
    message = error_of(text)
    assert expected in message
    assert f"<pipeline>:1:{column}:" in message


def test_error_carries_a_diagnostic_with_column():
    with pytest.raises(PipelineError) as info:
        parse_pipeline("dce,nope")
    [diagnostic] = info.value.diagnostics
    assert diagnostic.location.column == 5
    assert diagnostic.fix


def test_pipeline_error_is_a_parse_error():
    from hpvm.errors import ParseError
    assert issubclass(PipelineError, ParseError)
