"""A real PostgreSQL server on 127.0.0.1 for the tests, started and stopped by them.

`postgres_server` (one per test session) finds PostgreSQL's server programs (`initdb`, `pg_ctl`,
`postgres`): first the ones the test extra installs (PyPI's `pgserver` wheel carries them in
pgserver/pginstall/bin, on Linux x86_64 and macOS with Python 3.11-3.12), else the newest under
/usr/lib/postgresql/*/bin, else on PATH. It makes a cluster in a temporary folder with a
password-protected user, starts it on a free port (its unix socket in that folder too) and
stops it at the end. `postgres_url` gives each test a database of its own. Without the programs
or the driver (psycopg) the tests are skipped, saying why and what to install.

initdb refuses to run as root: as root the cluster belongs to the `postgres` user (Debian's
package makes it) or `nobody`, and its programs run as that user (runuser). That user must be
able to reach the programs: when it cannot (a checkout under /root, whose mode is 700, holds the
venv and so the wheel's programs), they are copied into the cluster's temporary folder first.
"""

from __future__ import annotations

import glob
import importlib.util
import itertools
import os
import platform
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

USER, PASSWORD = "awl", "s3cret-Pa55:word@x"  # a password with URL characters, quoted in the URL
_databases = itertools.count(1)
PROGRAMS = ("initdb", "pg_ctl", "postgres")


def wheel_fits() -> bool:
    """Whether PyPI has a `pgserver` wheel for this machine (pyproject's markers on the test extra)."""
    return sys.version_info[:2] in ((3, 11), (3, 12)) and (
        sys.platform == "darwin" or (sys.platform.startswith("linux") and platform.machine() == "x86_64"))


def not_installed() -> str:
    """Why the tests skip, and the fix that fits this machine."""
    if wheel_fits():
        return ("PostgreSQL's server is not installed: install the test extra, which brings it "
                "(pip install -e '.[test]': its `pgserver` wheel)")
    return ("PostgreSQL's server is not installed, and the test extra has no `pgserver` wheel for this "
            f"machine (Python {sys.version_info[0]}.{sys.version_info[1]} on {sys.platform} "
            f"{platform.machine()}): install PostgreSQL (Debian: apt-get install postgresql)")


def packaged_programs() -> list[Path]:
    """pgserver/pginstall/bin of the installed `pgserver` package (the test extra's), found
    without importing it (its __init__ loads its own server manager, which the tests do not use)."""
    try:
        spec = importlib.util.find_spec("pgserver")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) / "pginstall" / "bin" for location in spec.submodule_search_locations]


def server_programs() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres, or None: the test extra's first (the same
    PostgreSQL wherever the extra installs), then the system's newest, then the one on PATH."""
    folders = packaged_programs()
    folders += [Path(text) for text in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)]
    on_path = shutil.which("initdb")
    if on_path:
        folders.append(Path(os.path.realpath(on_path)).parent)
    for folder in folders:
        if all((folder / name).is_file() for name in PROGRAMS):
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
            programs = reachable_programs(programs, owner, folder)
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


def reachable_programs(programs: Path, owner: str, folder: Path) -> Path:
    """`programs`, or a copy of them in `folder` when `owner` cannot run them where they are.

    As root the programs run as `owner`, who must be able to traverse every folder above them:
    the test extra's copy lives in the venv, and a checkout under a private folder (/root is
    700) hides it. Rather than open up the user's folders, the wheel's installation is copied
    into the cluster's folder (owner's own), keeping the layout its programs find their files
    by: lib/ and share/ beside bin/ (PostgreSQL finds them relative to its programs), and the
    wheel's own libraries (pgserver.libs, libpq, which the programs load through an rpath of
    $ORIGIN/../../../pgserver.libs) beside the package. About 27 MB, once per test session.
    """
    if _runs_as(owner, programs):
        return programs
    installation = programs.parent  # pgserver/pginstall (or a system prefix)
    package = installation.parent
    copied = folder / "programs"
    for part in ("bin", "lib", "share"):
        if (installation / part).is_dir():
            shutil.copytree(installation / part, copied / package.name / installation.name / part, symlinks=True)
    for libraries in (package.parent / f"{package.name}.libs", package / ".dylibs"):
        if libraries.is_dir():
            shutil.copytree(libraries, copied / libraries.relative_to(package.parent), symlinks=True)
    shutil.chown(copied, owner)
    programs = copied / package.name / installation.name / "bin"
    if not _runs_as(owner, programs):
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL's programs in {installation} cannot run as `{owner}`, even copied to {folder}")
    return programs


def _runs_as(owner: str, programs: Path) -> bool:
    """Whether `owner` can run every program in `programs` (reach it, execute it, load its libraries)."""
    for name in PROGRAMS:
        done = subprocess.run(["runuser", "-u", owner, "--", str(programs / name), "--version"],
                              cwd="/", capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            return False
    return True


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
        pytest.skip(not_installed())
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
