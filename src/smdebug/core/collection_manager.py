"""``smdebug.core.collection_manager``, a documented import path: the module ``smdebug.core.config.collection_manager`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.config import collection_manager as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.config.collection_manager import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
