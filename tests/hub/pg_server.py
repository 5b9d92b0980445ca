"""A real PostgreSQL server for the hub's tests: initdb + pg_ctl in a temporary folder, on a
Unix socket only. initdb refuses to run as root, so as root the server runs as an unprivileged
user (``postgres`` when there is one, else one made here)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ADMIN = "hubadmin"
PG_GLOB = "/usr/lib/postgresql/*/bin"
SERVER_USER = "postgres"
FALLBACK_USER = "journalhubpg"


class NoPostgres(RuntimeError):
    pass


def pg_bin() -> Path:
    found = sorted(glob.glob(PG_GLOB), key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0)
    if not found:
        raise NoPostgres(f"PostgreSQL's server programs are not installed ({PG_GLOB}); "
                         "apt-get install postgresql (.ci/run does)")
    return Path(found[-1])


def _server_user() -> pwd.struct_passwd | None:
    """Who runs the server: None for ourselves when not root."""
    if os.geteuid() != 0:
        return None
    for name in (SERVER_USER, FALLBACK_USER):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_USER],
                   check=True, capture_output=True)
    return pwd.getpwnam(FALLBACK_USER)


@dataclass
class PgServer:
    folder: Path
    bin: Path
    user: pwd.struct_passwd | None
    port: int = 5432

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "socket"

    def url(self, role: str = ADMIN, database: str = "postgres") -> str:
        return f"postgresql://{quote(role)}@/{quote(database)}?host={quote(str(self.socket_dir))}&port={self.port}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kwargs = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run([str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, check=check,
                              cwd=self.folder, timeout=120, **kwargs)  # type: ignore[call-overload]

    def init(self) -> None:
        self.socket_dir.mkdir(parents=True)
        if self.user is not None:
            for path in (self.folder, self.socket_dir):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", ADMIN, "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")

    def start(self) -> None:
        options = (f"-k {self.socket_dir} -c listen_addresses='' -p {self.port} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        done = self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "server.log"),
                         "-w", "-t", "60", "start", check=False)
        if done.returncode != 0:
            log = (self.folder / "server.log").read_text(errors="replace")[-2000:]
            raise NoPostgres(f"pg_ctl start failed: {done.stderr.strip()}\n{log}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> PgServer:
    folder = Path(tempfile.mkdtemp(prefix="journal-hub-pg-"))
    server = PgServer(folder, pg_bin(), _server_user())
    server.init()
    server.start()
    return server
