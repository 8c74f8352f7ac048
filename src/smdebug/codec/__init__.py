"""Pure bytes <-> values functions for smdebug's on-disk format. No I/O happens here."""
