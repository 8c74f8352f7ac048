"""``smdebug.core.writer``, a documented import path: the module ``smdebug.core.output.writer`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.output import writer as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.output.writer import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
