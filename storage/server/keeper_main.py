"""The keeper process (``python -m storage.server.keeper_main PGDATA SECONDS``): see
``storage.server.keeper``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psycopg

from storage.server.engine import embedded_url, install_signal_handlers
from storage.server.keeper import OTHER_CLIENTS, fast_shutdown, keep, postmaster_pid, try_lock


class _DataDirGone(Exception):
    """The data directory was deleted while the server ran."""


def main(argv: list[str]) -> int:
    pgdata, seconds = Path(argv[0]), float(argv[1])
    with try_lock(pgdata) as held:
        if held is None:
            return 0  # another keeper holds this server
        held.seek(0)
        held.truncate()  # no pid shown until this keeper holds the server
        install_signal_handlers()  # SIGTERM: a normal exit, which releases the server
        uri = embedded_url(pgdata).replace("postgresql+psycopg://", "postgresql://", 1)
        postmaster = postmaster_pid(pgdata)
        # Shown now: a keeper's pid means the server runs and is held. The command that
        # spawned it may have left before (and stopped the server, its last holder then).
        held.write(str(os.getpid()))
        held.flush()
        with psycopg.connect(uri, autocommit=True) as conn:

            def clients() -> int:
                if not (pgdata / "PG_VERSION").exists():
                    raise _DataDirGone  # deleted under the server (a throw-away store)
                row = conn.execute(OTHER_CLIENTS).fetchone()
                return int(row[0]) if row else 0

            try:
                keep(seconds, clients)
            except psycopg.OperationalError:
                pass  # the server went away (stopped by hand): nothing left to keep
            except _DataDirGone:
                # The wheel's holder list went with the directory, so no holder would stop
                # the server.
                if postmaster is not None:
                    fast_shutdown(postmaster)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
