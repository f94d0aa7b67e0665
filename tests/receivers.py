"""Real servers that notifications go to in the tests: an SMTP server (aiosmtpd) and an HTTP
receiver (http.server), both on loopback, each keeping what it received."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
import time
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: EmailMessage


class SmtpServer:
    """aiosmtpd on 127.0.0.1:``port``; ``start()`` and ``stop()`` as often as a test likes,
    the port kept (a server down is nothing listening on it)."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.inbox: list[Received] = []
        self._controller: Controller | None = None

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    async def handle_DATA(self, server, session, envelope):   # aiosmtpd's handler hook
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.inbox.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"

    def start(self) -> SmtpServer:
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None


@dataclass
class Post:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class HttpReceiver:
    """Answers POST /ok with 200, /fail with 500, /hang after ``hang_s`` (past any client's
    timeout); keeps every request it read."""

    hang_s: float = 30.0
    posts: list[Post] = field(default_factory=list)

    def start(self) -> HttpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.posts.append(Post(self.path, dict(self.headers), body, time.time()))
                if self.path == "/hang":
                    time.sleep(receiver.hang_s)
                code = 500 if self.path == "/fail" else 200
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def on(self, path: str) -> list[Post]:
        return [p for p in self.posts if p.path == path]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
