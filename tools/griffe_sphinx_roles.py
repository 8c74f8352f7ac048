"""A griffe extension for the documentation site (mkdocs.yml): the docstrings' Sphinx roles
(``:class:`~smdebug.trials.Trial```, ``:func:`create_trial```) are shown as code, ``Trial``."""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj):`~?([^`]+)`")


class SphinxRoles(Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        docstring = getattr(obj, "docstring", None)
        if docstring is not None:
            docstring.value = ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", docstring.value)
