"""``python -m smdebug.cli``: the same as the ``smdebug`` command."""

import sys

from smdebug.cli import main

sys.exit(main())
