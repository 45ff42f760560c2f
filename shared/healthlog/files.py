"""Files and folders that hold health data: private to the service, whatever the umask.

``os.makedirs(path, mode)`` gives ``mode`` to the last folder only, and every missing
parent the default ``0o777`` less the umask: under ``umask 000`` a new archive root
would be world-writable. The helpers here create each missing folder themselves, and
set the mode after creating it, since the umask can also take bits away.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: folders that hold bodies, the journal or its lock
DIR_MODE = 0o700
#: files that hold them
FILE_MODE = 0o600


def private_dirs(path: Path | str) -> list[Path]:
    """Create ``path`` and its missing parents, each ``DIR_MODE``; return those created.

    Folders that exist already are left as they are (an operator may have chosen their
    mode). Safe against another process creating the same folders at once.
    """
    missing: list[Path] = []
    folder = Path(path)
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    created = []
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(folder, DIR_MODE)
        created.append(folder)
    return created


def private_file(path: Path | str, flags: int = os.O_RDWR) -> int:
    """Open ``path`` (created ``FILE_MODE`` if missing) and return its descriptor.

    A regular file of this user's that is new or empty (``O_TRUNC`` empties it) is made
    ``FILE_MODE``; anything else keeps its mode: ``-o /dev/null`` must not chmod the
    system's null device, even as root.
    """
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        found = os.fstat(fd)
        # new (or empty): not one the operator set up
        if stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid() and found.st_size == 0:
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd
