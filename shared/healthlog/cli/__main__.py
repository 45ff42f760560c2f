"""``python -m healthlog.cli``: the ``healthlog`` command."""

import sys

from healthlog.cli import main

sys.exit(main())
