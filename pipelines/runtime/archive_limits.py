"""How far one compressed landing file may inflate: the ``RELIA_ARCHIVE_*`` settings as a value.

:mod:`pipelines.ingest.archives` applies the limits; :class:`pipelines.runtime.settings.Settings`
builds them from the environment.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_BYTES = 4 * 2**30
"""Most plain bytes one archive may inflate to (``RELIA_ARCHIVE_MAX_BYTES``)."""
DEFAULT_MAX_RATIO = 200.0
"""Most plain bytes per compressed byte once past :data:`DEFAULT_RATIO_AFTER_BYTES`
(``RELIA_ARCHIVE_MAX_RATIO``)."""
DEFAULT_RATIO_AFTER_BYTES = 64 * 2**20
"""Plain bytes an archive may always inflate to, whatever its ratio
(``RELIA_ARCHIVE_RATIO_AFTER_BYTES``)."""


def size_text(n: float) -> str:
    """Return ``n`` bytes as a person reads them (``512 bytes``, ``1.5 MiB``)."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"  # pragma: no cover - the loop returns


@dataclass(frozen=True)
class ArchiveLimits:
    """How far one compressed file may inflate.

    Attributes
    ----------
    max_bytes
        Most plain bytes of one archive (default :data:`DEFAULT_MAX_BYTES`).
    max_ratio
        Most plain bytes per compressed byte (default :data:`DEFAULT_MAX_RATIO`)...
    ratio_after_bytes
        ...once the plain content passes this many bytes (default
        :data:`DEFAULT_RATIO_AFTER_BYTES`).
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    max_ratio: float = DEFAULT_MAX_RATIO
    ratio_after_bytes: int = DEFAULT_RATIO_AFTER_BYTES

    def cap(self, compressed_bytes: int) -> tuple[int, str]:
        """Return the most plain bytes an archive of ``compressed_bytes`` may hold, and why.

        The reason names the limit that sets the cap, with the setting that changes it.
        """
        by_ratio = max(self.ratio_after_bytes, int(self.max_ratio * compressed_bytes))
        if by_ratio < self.max_bytes:
            return by_ratio, (
                f"the ratio limit ({self.max_ratio:g} plain bytes per compressed byte once past "
                f"{size_text(self.ratio_after_bytes)}; RELIA_ARCHIVE_MAX_RATIO)"
            )
        return self.max_bytes, "the size limit of a file's plain content (RELIA_ARCHIVE_MAX_BYTES)"
