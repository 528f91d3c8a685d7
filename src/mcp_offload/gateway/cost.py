"""Provider cache prices and the cost rule (skeleton; filled in next)."""

from __future__ import annotations
