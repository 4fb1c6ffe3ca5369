"""Sphinx configuration of the documentation site: ``make docs`` builds docs/ (MyST markdown)
and the packages' docstrings (autodoc) into docs/_build/html, with warnings as errors."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the packages of this checkout, also where they are not installed

project = "zhuoji-env"
author = "zhuoji-env maintainers"
copyright = "2026, zhuoji-env maintainers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "ladder-*.md"]  # the ladder tables: agents.ladder --markdown output

# markdown: GitHub's heading anchors (the pages link to them), $...$ maths, tables, ...
myst_heading_anchors = 6
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]

# the API pages: members in source order (those without a docstring too), type hints in the
# descriptions; a method that only overrides a library's (torch's forward, Gymnasium's step)
# shows its own docstring or none, not the library's
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_inherit_docstrings = False
autodoc_mock_imports = ["ray", "tree"]  # the rllib extra lives in its own environment (make rllib)

# -n checks every cross-reference between the project's own objects. The libraries' objects
# (numpy's ndarray, torch's Tensor, the standard library's Path, ...) would need their
# inventories, which a build without the network cannot fetch, so references into them are
# left unchecked; one into the project that does not resolve is still an error.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|torch|pandas|pathlib|os|collections|typing|argparse|subprocess)\..*"),
    (r"py:.*", r"(dataclasses|gymnasium|pettingzoo|stable_baselines3|sb3_contrib|ray)\..*"),
    (r"py:class", r"training\.cli\.T|ObsType|ActType"),  # type variables
]


def resolve_imported_name(app, env, node, contnode):
    """A cross-reference means what its name means in the module whose docstring holds it, as
    Python reads it there: ``:class:`Rules``` in a module that imports ``Rules``, or
    ``:func:`zhuoji_env.env``` (a name the package re-exports), links to the object where it is
    defined. A name that Python resolves to another library's object is left as plain text
    (its inventory is not at hand, as above); one that resolves to nothing still warns."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module, cls = node.get("py:module"), node.get("py:class")
    bases = [f"{module}.{cls}" if module and cls else None, module, ""]
    for base in (b for b in bases if b is not None):
        found = _lookup(f"{base}.{target}" if base else target)
        if found:
            break
    else:
        return _unique_short_name(app, env, node, contnode, target)
    obj, where = found
    name = getattr(obj, "__qualname__", None)
    canonical = f"{obj.__module__}.{name}" if name and getattr(obj, "__module__", None) else where
    if isinstance(obj, type(sys)):
        canonical = obj.__name__
    if not canonical.startswith(tuple(p + "." for p in PACKAGES) + PACKAGES):
        return contnode  # another library's object: plain text
    if not getattr(obj, "__qualname__", None) and not isinstance(obj, type(sys)):
        return _unique_short_name(app, env, node, contnode, canonical)  # data: where defined
    return _resolve(app, env, node, contnode, canonical)


def _resolve(app, env, node, contnode, target: str):
    refnode = node.deepcopy()
    refnode["reftarget"] = target
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, refnode, contnode
    )


def _unique_short_name(app, env, node, contnode, target: str):
    """The one documented object of the project whose name ends as ``target``'s last part
    does, where exactly one does (a constant imported from another module, a name a
    re-exported function's docstring uses in its defining module)."""
    last = target.rsplit(".", 1)[-1]
    names = [n for n in env.get_domain("py").objects if n.rsplit(".", 1)[-1] == last]
    return _resolve(app, env, node, contnode, names[0]) if len(names) == 1 else None


PACKAGES = ("zhuoji_env", "agents", "training")


def _lookup(dotted: str):
    """``(object, where)``: the object a dotted name reaches by importing its longest module
    prefix and following attributes, and that path (None where nothing is reached)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for part in parts[cut:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj, dotted
    return None


def setup(app):
    app.connect("missing-reference", resolve_imported_name)


html_theme = "furo"
html_title = "zhuoji-env"
