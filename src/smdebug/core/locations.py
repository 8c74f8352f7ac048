"""``smdebug.core.locations``, a documented import path: the module ``smdebug.core.output.locations`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.output import locations as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.output.locations import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
