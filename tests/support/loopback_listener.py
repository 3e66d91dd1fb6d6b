"""The listening side the TCP emulators share: a free loopback port, published to a file only once it listens (the
test waits for the file), and one thread per connection."""

import os
import socket
import threading


def serve_connections(port_file, handle):
    """Listens on 127.0.0.1 at a free port, writes the port to `port_file` (atomically), then runs handle(client)
    on a daemon thread for every connection, forever."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(tmp, port_file)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=handle, args=(client,), daemon=True).start()
