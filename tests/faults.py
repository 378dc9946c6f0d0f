"""Real faults for tests that need one, rather than a patched method."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def write_records_past_a_file_size_limit(url: str, count: int, size: int, limit: int) -> str:
    """Runs ``records.write(url, ...)`` of *count* records of *size* bytes in a process of its
    own whose local files may not grow past *limit* bytes (``RLIMIT_FSIZE``: writes past it
    fail with ``EFBIG``, "File too large"; an object store's local staging file is such a file
    too). Returns what the process printed: ``"refused: <strerror>"`` for an ``OSError``,
    ``"written"`` otherwise. The process inherits this one's environment (a store's
    settings)."""
    program = textwrap.dedent(f"""
        import resource, signal
        from tfrecord_io import records
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))
        try:
            records.write({url!r}, [b"x" * {size}] * {count})
        except OSError as e:
            print("refused:", e.strerror or e)
        else:
            print("written")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()
