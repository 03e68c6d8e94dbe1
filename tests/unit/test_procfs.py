"""procfs readers against the real /proc."""
import os
import socket

from stalldiag import fds, procfs


def test_net_tables_are_read_whole_with_many_sockets():
    """/proc/net/tcp comes a page of records per read (under 4096 bytes): a reader that stops
    at the first short read loses every socket after the ~27th, as on any node running NCCL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(256)
    clients = [socket.create_connection(server.getsockname()) for _ in range(120)]
    try:
        text = procfs.read_text("/proc/self/net/tcp")
        ports = {c.getsockname()[1] for c in clients}
        listed = {int(line.split()[1].split(":")[1], 16) for line in text.splitlines()[1:]}
        assert ports <= listed
        last = clients[-1]
        inode = fds.socket_inode(procfs.fd_target(os.getpid(), last.fileno()))
        described = fds.SocketTable().describe(os.getpid(), inode)
        assert described["state"] == "ESTABLISHED" and described["local"].endswith(":%d" % last.getsockname()[1])
    finally:
        for c in clients:
            c.close()
        server.close()
