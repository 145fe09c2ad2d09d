"""Sphinx configuration (extra ``docs``).

Build: ``sphinx-build -b html doc doc/_build/html``; add ``-D plot_gallery=0`` to skip
running the gallery's examples (fast; ``tests/test_docs.py`` builds that way).
"""

import re
from importlib.metadata import version as _version

from docutils import nodes

project = "sklearn-safescreen"
author = "sklearn-safescreen developers"
release = _version("sklearn-safescreen")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
autosummary_generate = True
# a class page documents its methods, inherited ones included (fit, predict, set_params...),
# but not those of object and of the exceptions (with_traceback...)
autodoc_default_options = {"members": True, "inherited-members": "object,BaseException"}
numpydoc_show_class_members = False
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "sg_execution_times.rst"]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
# an unreachable inventory costs one warning each, not a hung build
intersphinx_timeout = 10

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # the gallery runs the examples; ``-D plot_gallery=0`` skips them
    "plot_gallery": "True",
}

html_theme = "pydata_sphinx_theme"
html_title = "sklearn-safescreen"


# Docstrings inherited from scikit-learn (score, set_params, set_output,
# get_metadata_routing, set_fit_request...) use scikit-learn's own labels and glossary
# terms (:ref:`metadata_routing`, :term:`fit`), which are not in these docs. They are
# pointed at scikit-learn's inventory (``sklearn:`` prefix): intersphinx links them when
# the inventory is reachable, and otherwise they are shown as plain text rather than
# reported as broken. References in this package's own text are left alone, so a broken
# one still warns.
_SKLEARN_XREF = re.compile(r":(ref|term|doc):`([^`]+)`")
_EXPLICIT_TITLE = re.compile(r"(.*?)\s*<([^<>]+)>", re.DOTALL)


def _defined_in_sklearn(obj):
    module = getattr(getattr(obj, "fget", obj), "__module__", None) or ""
    return module == "sklearn" or module.startswith("sklearn.")


def _to_sklearn_inventory(match):
    role, text = match.groups()
    explicit = _EXPLICIT_TITLE.fullmatch(text)
    if explicit:
        title, target = explicit.groups()
    elif role == "term":  # a term shows its own text
        title, target = text, text
    else:  # a bare label: online, intersphinx shows the section title
        return f":{role}:`sklearn:{text}`"
    return f":{role}:`{title} <sklearn:{target}>`"


def _point_sklearn_refs(app, what, name, obj, options, lines):
    if not _defined_in_sklearn(obj):
        return
    text = _SKLEARN_XREF.sub(_to_sklearn_inventory, "\n".join(lines))
    lines[:] = text.split("\n")


def _unreachable_sklearn_ref(app, env, node, contnode):
    # runs after intersphinx (priority 900 > 500): only what it could not resolve
    target = node.get("reftarget", "")
    if node.get("refdomain") != "std" or not target.startswith("sklearn:"):
        return None
    if node.get("refexplicit"):
        return contnode
    return nodes.literal(text=target.removeprefix("sklearn:"))


def setup(app):
    app.connect("autodoc-process-docstring", _point_sklearn_refs)
    app.connect("missing-reference", _unreachable_sklearn_ref, priority=900)
