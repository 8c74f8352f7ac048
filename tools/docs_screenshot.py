"""docs/images/reference-trials.png: headless Chromium's screenshot of the built site's Trial
reference page (run ``make docs`` first). ``python tools/docs_screenshot.py [PAGE] [OUT]``."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    page = ROOT / "site" / (argv[0] if argv else "reference/api/trials.html")
    out = ROOT / (argv[1] if len(argv) > 1 else "docs/images/reference-trials.png")
    if not page.is_file():
        raise SystemExit(f"{page}: no such page (run make docs first)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile; no network is needed
        subprocess.run(
            [
                "/usr/bin/chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--virtual-time-budget=5000",
                f"--user-data-dir={profile}",
                "--window-size=1280,2000",
                f"--screenshot={out}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
