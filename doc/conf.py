"""Sphinx configuration: ``sphinx-build -b html doc doc/_build/html`` (extra ``docs``)."""

import os
from importlib.metadata import version as _version

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
numpydoc_show_class_members = False
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "sg_execution_times.rst"]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # the gallery runs the examples; set SPHINX_GALLERY_PLOT=0 for a fast build
    "plot_gallery": os.environ.get("SPHINX_GALLERY_PLOT", "True"),
}

html_theme = "pydata_sphinx_theme"
html_title = "sklearn-safescreen"
