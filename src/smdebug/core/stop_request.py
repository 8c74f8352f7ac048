"""``smdebug.core.stop_request``, a documented import path: the module ``smdebug.core.engine.stop_request`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.engine import stop_request as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.engine.stop_request import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
