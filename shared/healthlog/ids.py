"""Delivery ids: UUIDv7 that sort by the time they carry, to the microsecond.

The id is built from the server's ``received_at``: the 48-bit millisecond field holds
the milliseconds, and the 12-bit ``rand_a`` field holds the sub-millisecond fraction
(RFC 9562 §6.2, method 3), so ``received_at_of(id)`` gives the exact microsecond back.
That lets ``reconcile`` rebuild a journal row from nothing but an archive key.
"""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now() -> datetime:
    """The server's clock, UTC, microsecond resolution: the one source of received_at."""
    return micros_to_datetime(time.time_ns() // 1000)


def datetime_to_micros(at: datetime) -> int:
    delta = at - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def micros_to_datetime(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def new_delivery_id(received_at: datetime) -> str:
    us = datetime_to_micros(received_at)
    ms, frac = divmod(us, 1000)
    rand_a = frac * 4096 // 1000
    rand_b = secrets.randbits(62)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= rand_a << 64
    value |= 0b10 << 62
    value |= rand_b
    return str(uuid.UUID(int=value))


def received_at_of(delivery_id: str) -> datetime:
    value = uuid.UUID(delivery_id).int
    if (value >> 76) & 0xF != 7:
        raise ValueError("not a UUIDv7")
    ms = value >> 80
    rand_a = (value >> 64) & 0xFFF
    frac = -((-rand_a * 1000) // 4096)  # ceil: inverts the floor in new_delivery_id
    return micros_to_datetime(ms * 1000 + frac)
