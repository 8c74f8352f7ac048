"""``smdebug.core.hook``, a documented import path: the module ``smdebug.core.engine.hook`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.engine import hook as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.engine.hook import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
