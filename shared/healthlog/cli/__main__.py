"""``python -m healthlog.cli``: the ``healthlog`` command, with its exit status."""

import sys

from healthlog.cli import main

sys.exit(main())
