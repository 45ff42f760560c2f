"""``python -m healthlog.cli``: the ``healthlog`` command."""

from healthlog.cli import main

main()
