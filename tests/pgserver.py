"""A real PostgreSQL server on 127.0.0.1 for the tests, started and stopped by them.

`postgres_server` (one per test session) finds PostgreSQL's server programs (`initdb`, `pg_ctl`
under /usr/lib/postgresql/*/bin, or on PATH), makes a cluster in a temporary folder with a
password-protected user, starts it on a free port (its unix socket in that folder too) and
stops it at the end. `postgres_url` gives each test a database of its own. Without the
programs (Debian: apt-get install postgresql) or the driver (psycopg) the tests are skipped,
saying why.

initdb refuses to run as root: as root the cluster belongs to the `postgres` user (Debian's
package makes it) or `nobody`, and its programs run as that user (runuser).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

NOT_INSTALLED = "PostgreSQL's server is not installed: apt-get install postgresql"
USER, PASSWORD = "awl", "s3cret-Pa55:word@x"  # a password with URL characters, quoted in the URL
_databases = itertools.count(1)


def server_programs() -> Path | None:
    """The folder holding initdb and pg_ctl (the newest PostgreSQL's), or None."""
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda text: _version(text), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        folders.append(str(Path(os.path.realpath(on_path)).parent))
    for folder in map(Path, folders):
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file() and (folder / "postgres").is_file():
            return folder
    return None


def _version(folder: str) -> tuple[int, ...]:
    name = Path(folder).parent.name
    return tuple(int(part) for part in name.split(".") if part.isdigit()) or (0,)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


@dataclass
class PostgresServer:
    """One cluster: `start`, `stop`, `url(database)`, `create_database()`."""

    programs: Path
    folder: Path
    port: int = 0
    owner: str | None = None  # the user its programs run as (when we are root)
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.folder / "server.log"

    @classmethod
    def make(cls, programs: Path) -> PostgresServer:
        folder = Path(tempfile.mkdtemp(prefix="awl-pg-"))
        owner = None
        if os.geteuid() == 0:
            owner = next((name for name in ("postgres", "nobody") if _user_exists(name)), None)
            if owner is None:
                shutil.rmtree(folder)
                pytest.skip("PostgreSQL cannot run as root here, and there is no `postgres` or `nobody` user")
            entry = pwd.getpwnam(owner)
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        server = cls(programs, folder, owner=owner)
        secret = folder / "password"
        secret.write_text(PASSWORD + "\n")
        server._own(secret)
        server._program("initdb", "-D", str(folder / "data"), "-U", USER, "--pwfile", str(secret),
                        "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", timeout=180)
        secret.unlink()
        return server

    def start(self, *, same_port: bool = False) -> None:
        """Start the server on a free port (`same_port`: again on the one it had)."""
        for _ in range(1 if same_port else 3):
            self.port = self.port if same_port else free_port()
            options = (f"-p {self.port} -h 127.0.0.1 -k {self.folder} -c fsync=off -c synchronous_commit=off "
                       "-c full_page_writes=off -c max_connections=200")
            done = self._program("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.log), "-w", "-t", "120",
                                 "-o", options, "start", check=False, timeout=180)
            if done.returncode == 0:
                return
        raise RuntimeError(f"PostgreSQL did not start: {done.stdout}{done.stderr}{self._log_tail()}")

    def stop(self, mode: str = "fast") -> None:
        self._program("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop", check=False, timeout=120)

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres", *, password: str = PASSWORD, port: int | None = None) -> str:
        return f"postgresql://{USER}:{quoted(password)}@127.0.0.1:{port or self.port}/{database}"

    def create_database(self) -> str:
        """A new database; its URL (with the password)."""
        import psycopg

        name = f"awl_test_{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def _program(self, name: str, *args: str, check: bool = True, timeout: float) -> subprocess.CompletedProcess[str]:
        command = [str(self.programs / name), *args]
        if self.owner is not None:
            command = ["runuser", "-u", self.owner, "--", *command]
        done = subprocess.run(command, cwd=self.folder, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "LC_ALL": "C"})
        if check and done.returncode != 0:
            raise RuntimeError(f"{name} failed: {done.stdout}{done.stderr}")
        return done

    def _own(self, path: Path) -> None:
        if self.owner is not None:
            entry = pwd.getpwnam(self.owner)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _log_tail(self) -> str:
        try:
            return self.log.read_text()[-2000:]
        except OSError:
            return ""


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def started_server() -> PostgresServer:
    """A new, started server (the caller removes it), or a skip saying why there is none."""
    pytest.importorskip("psycopg", reason="PostgreSQL's driver is not installed: pip install 'psycopg[binary]'")
    programs = server_programs()
    if programs is None:
        pytest.skip(NOT_INSTALLED)
    server = PostgresServer.make(programs)
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server


@pytest.fixture(scope="session")
def postgres_server():
    server = started_server()
    yield server
    server.remove()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A database of this test's own on the session's server: its URL, with the password."""
    return postgres_server.create_database()
