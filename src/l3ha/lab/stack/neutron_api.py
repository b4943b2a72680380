"""The stack's Neutron API server: neutron.wsgi.api:application on 127.0.0.1. I/O: serves HTTP.

Runs with the Neutron virtualenv's interpreter, never inside l3ha's (it imports
neutron and nothing of l3ha):

    python neutron_api.py CONFIG_DIR PORT

``CONFIG_DIR`` holds ``neutron.conf``, ``ml2_conf.ini`` and ``api-paste.ini``.
The application is served by a threading ``wsgiref`` server, one thread per
request, as the contract suite's server does, but against MariaDB (no lock).
"""

from __future__ import annotations

import os
import socketserver
import sys
from typing import Any
from wsgiref import simple_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class QuietHandler(simple_server.WSGIRequestHandler):
    """One access line per request on stderr (the stack's api.out)."""

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("access: " + (format % args) + "\n")


def main() -> None:
    config_dir, port = sys.argv[1], int(sys.argv[2])
    os.environ["OS_NEUTRON_CONFIG_DIR"] = config_dir
    os.environ["OS_NEUTRON_CONFIG_FILES"] = "neutron.conf;ml2_conf.ini"
    sys.argv = sys.argv[:1]
    from neutron.wsgi.api import application  # type: ignore[import-not-found]

    server = simple_server.make_server(
        "127.0.0.1",
        port,
        application,
        server_class=ThreadingWSGIServer,
        handler_class=QuietHandler,
    )
    server.serve_forever()


if __name__ == "__main__":
    main()
