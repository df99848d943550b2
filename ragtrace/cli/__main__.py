"""``python -m ragtrace.cli``: the ``ragtrace`` command."""

import sys

from ragtrace.cli import main

sys.exit(main())
