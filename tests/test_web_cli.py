"""python -m agents.web's flags: bad ones exit 2 naming what was allowed; a host other than
loopback prints a warning; the URL is printed."""

import socket

import pytest
import uvicorn

from agents.web.__main__ import is_loopback, main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--agents", "rule,nosuch"], "--agents: unknown agent spec 'nosuch'"),
        (["--agents", "rule,rule"], "names an agent twice"),
        (["--agents", "rule,"], "item 2 is empty"),
        (["--agents", "ppo:/no/such/file.pt"], "--agents: "),
        (["--think-limit", "0"], "--think-limit must be a positive number of seconds"),
        (["--think-limit", "nan"], "--think-limit must be a positive number"),
        (["--max-tables", "0"], "--max-tables must be a positive integer"),
        (["--idle-minutes", "-1"], "--idle-minutes must be a positive number"),
        (["--port", "70000"], "--port must be 0-65535"),
    ],
)
def test_bad_flags_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.fixture
def no_serving(monkeypatch):
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)


def test_loopback_prints_the_url_without_a_warning(capsys, no_serving):
    assert main(["--port", "0", "--agents", "rule"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Zhuoji web app: open http://127.0.0.1:")
    assert "warning" not in err


def test_another_host_warns_that_anyone_can_play(capsys, no_serving):
    assert main(["--host", "0.0.0.0", "--port", "0", "--agents", "rule"]) == 0
    err = capsys.readouterr().err
    assert "warning: serving on 0.0.0.0" in err and "anyone who can reach" in err


def test_is_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")


def test_the_listening_socket_has_nagle_off(monkeypatch):
    """With Nagle's algorithm on, every answer waited for the client's delayed ACK: about 45 ms
    a request on loopback instead of about 1 ms."""
    seen = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.extend(sockets))
    assert main(["--port", "0", "--agents", "rule"]) == 0
    (sock,) = seen
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    sock.close()
