"""The loopback harness's own checks see what they must (fast; no Syncthing needed): the
strace reader flags every inet address that is not loopback, IPv4 and IPv6, whatever the call,
and passes loopback and unix sockets."""

from __future__ import annotations

from tests.sync_loopback.harness import network_calls

TRACE = """\
524   bind(9, {sa_family=AF_INET, sin_port=htons(38605), sin_addr=inet_addr("127.0.0.1")}, 16) = 0
524   connect(11, {sa_family=AF_INET, sin_port=htons(52581), sin_addr=inet_addr("127.0.0.1")}, 16 <unfinished ...>
524   <... connect resumed>)            = -1 EINPROGRESS (Operation now in progress)
530   connect(7, {sa_family=AF_INET6, sin6_port=htons(22000), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
531   connect(8, {sa_family=AF_UNIX, sun_path="/run/user/0/bus"}, 110) = 0
532   socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 12
532   sendto(12, "\\x12\\x34", 2, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("192.0.2.53")}, 16) = 2
533   connect(13, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = -1 ENETUNREACH (Network is unreachable)
534   bind(14, {sa_family=AF_INET, sin_port=htons(21027), sin_addr=inet_addr("0.0.0.0")}, 16) = 0
535   sendmsg(15, {msg_name={sa_family=AF_INET, sin_port=htons(21027), sin_addr=inet_addr("255.255.255.255")}, msg_namelen=16}, 0) = 40
536   getsockname(9, {sa_family=AF_INET, sin_port=htons(1), sin_addr=inet_addr("10.0.0.1")}, [16]) = 0
"""


def test_the_strace_reader_flags_every_address_off_loopback() -> None:
    calls = network_calls(TRACE)
    assert calls.loopback == ["bind 127.0.0.1:38605", "connect 127.0.0.1:52581",
                              "connect ::1:22000"]
    assert calls.outside == ["sendto 192.0.2.53:53", "connect 2001:db8::1:443",
                             "bind 0.0.0.0:21027", "sendmsg 255.255.255.255:21027"]
