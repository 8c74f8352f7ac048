"""``python -m smdebug``: the ``smdebug`` command line."""

import sys

from smdebug.cli import main

sys.exit(main())
