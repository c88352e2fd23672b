"""``python -m apps --host 127.0.0.1 --port 7860 --home DIR``."""

from __future__ import annotations

import sys

from apps.app import main

if __name__ == "__main__":
    sys.exit(main())
