"""The socket queues stalldiag reads to say where a request is (fds.inet_sockets: /proc/net/tcp's
tx_queue:rx_queue column)."""
from stalldiag.fds import inet_sockets

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9C47 0100007F:AE98 01 00000000:0000001A 00:00000000 00000000     0        0 100426 1 0000000000000000 20 4 30 10 -1
   1: 0100007F:AE98 0100007F:9C47 01 00000000:00000000 00:00000000 00000000     0        0 100453 1 0000000000000000 20 4 30 10 -1
"""


def test_a_tcp_socket_carries_its_queues():
    found = inet_sockets(TCP, "tcp")
    assert found[100426]["rx_queue"] == 26 and found[100426]["tx_queue"] == 0
    assert found[100453]["rx_queue"] == 0
    assert found[100426]["local"] == "127.0.0.1:40007" and found[100426]["state"] == "ESTABLISHED"
