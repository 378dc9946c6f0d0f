"""The call signatures the pages spell out are the code's: parameter names, order, kinds
(positional or keyword-only) and defaults, so a page cannot drift from a signature."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from tfrecord_io import cluster, ml
from tfrecord_io.datasets import images

DOCS = Path(__file__).resolve().parents[2] / "docs"
NO_DEFAULT = inspect.Parameter.empty

# (page, how the page writes the call, the function it documents)
DOCUMENTED = [
    ("cluster.md", "cluster.run(", cluster.run),
    ("cluster.md", "c.train(", cluster.Cluster.train),
    ("cluster.md", "c.wait(", cluster.Cluster.wait),
    ("cluster.md", "feed(", cluster.NodeContext.feed),
    ("cluster.md", "stop_feed(", cluster.NodeContext.stop_feed),
    ("ml.md", "ml.predict(", ml.predict),
    ("images.md", "images.convert(", images.convert),
]


def documented_parameters(page: str, call: str) -> list[tuple[str, str, object]]:
    """(name, kind, default value) of the first signature on *page* written as
    ``CALL...)`` in backticks, in order."""
    text = (DOCS / page).read_text()
    found = re.search(r"`" + re.escape(call) + r"([^`]*)\)", text)
    assert found, f"{page} spells out no `{call}...)`"
    tree = ast.parse(f"def f({found.group(1)}): pass")
    args = tree.body[0].args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults  # None: no default
    params = [(a.arg, "positional", d) for a, d in zip(positional, defaults, strict=True)]
    if args.vararg:
        params.append((args.vararg.arg, "var_positional", None))
    kw_defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    params += [(a.arg, "keyword", d) for a, d in kw_defaults]
    if args.kwarg:
        params.append((args.kwarg.arg, "var_keyword", None))
    return [(n, k, NO_DEFAULT if d is None else ast.literal_eval(d)) for n, k, d in params]


def actual_parameters(function) -> list[tuple[str, str, object]]:
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
        inspect.Parameter.VAR_POSITIONAL: "var_positional",
        inspect.Parameter.KEYWORD_ONLY: "keyword",
        inspect.Parameter.VAR_KEYWORD: "var_keyword",
    }
    return [
        (
            p.name,
            kinds[p.kind],
            p.default,
        )
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


@pytest.mark.parametrize(
    ("page", "call", "function"), DOCUMENTED, ids=[call for _, call, _ in DOCUMENTED]
)
def test_the_page_spells_the_signature_as_the_code_has_it(page, call, function):
    assert documented_parameters(page, call) == actual_parameters(function)
