#!/usr/bin/env python3
"""Run a command against a throwaway, real Elasticsearch server (the test command's server).

Usage::

    python tests/es_server.py -- CMD [ARGS...]   # start ES, run CMD, stop ES, exit with CMD's code
    python tests/es_server.py --serve            # start ES and keep it running until Ctrl-C

The server is Elastic's published ``integ-test-zip`` distribution, fetched once with
``mvn dependency:copy`` into a cache folder outside the clone and unpacked there. Every run gets
its own config, data, logs and tmp folders in a temporary directory, a free port on 127.0.0.1,
a single node with security off, a small heap and the disk watermarks off (and the disk
monitor idle, so that a flood-stage block a test sets stays until the test lifts it). CMD sees
``NEARDUP_TEST_ES_URL`` and ``NEARDUP_TEST_ES_REQUIRED=1``. ``Server(version, Security(...))``
starts a secured one instead (HTTPS and users; tests/secured_es.py makes the certificates and
users and is the pytest fixture).

Environment:
    NEARDUP_ES_VERSION         server version (default 9.2.0; 8.19.x runs too, on a JDK 17..23)
    NEARDUP_ES_CACHE           cache folder (default ~/.cache/neardup/elasticsearch)
    NEARDUP_ES_JAVA_HOME       JDK to run it with (default: picked from /usr/lib/jvm)
    NEARDUP_ES_JAVA_OPTS       JVM options (default "-Xms512m -Xmx512m")
    NEARDUP_ES_START_TIMEOUT   seconds to wait for yellow health (default 180)
    NEARDUP_ES_USER            system user that runs ES when started as root (default neardup-es)

Standard library only, so it runs before the project's virtualenv is complete.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

DEFAULT_VERSION = "9.2.0"
DEFAULT_JAVA_OPTS = "-Xms512m -Xmx512m"
DEFAULT_START_TIMEOUT = 180.0
DEFAULT_USER = "neardup-es"
STOP_TIMEOUT = 30.0
JVM_ROOT = Path("/usr/lib/jvm")
ARTIFACT = "org.elasticsearch.distribution.integ-test-zip:elasticsearch:{version}:zip"


class ServerError(RuntimeError):
    """The server could not be fetched, unpacked or started."""


class Interrupted(BaseException):
    """A termination signal arrived; unwinds the stack so every ``finally`` runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def log(message: str) -> None:
    """Print a progress line on stderr (stdout belongs to the wrapped command)."""
    print(f"[es_server] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- fetch and unpack


def cache_dir() -> Path:
    """The cache folder, outside the clone so ``git clean`` never throws the 100 MB zip away."""
    configured = os.environ.get("NEARDUP_ES_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "neardup" / "elasticsearch"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock file so parallel runs do not fetch or unpack at the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_zip(version: str, cache: Path) -> Path:
    """Return the cached distribution zip, fetching it with ``mvn dependency:copy`` if missing."""
    target = cache / f"elasticsearch-{version}.zip"
    if target.is_file() and zipfile.is_zipfile(target):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServerError("mvn not found on PATH; it fetches the Elasticsearch test distribution")
    download = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        log(f"fetching Elasticsearch {version} with mvn (once; cached in {cache})")
        started = time.monotonic()
        command = [
            mvn,
            "-q",
            "-B",
            "-Dstyle.color=never",
            "dependency:copy",
            f"-Dartifact={ARTIFACT.format(version=version)}",
            f"-DoutputDirectory={download}",
        ]
        # cwd=download: no stray pom.xml can turn this into a project build.
        result = subprocess.run(
            command, cwd=download, stdin=subprocess.DEVNULL, stdout=sys.stderr, check=False
        )
        if result.returncode != 0:
            raise ServerError(f"mvn dependency:copy failed with exit code {result.returncode}")
        fetched = download / f"elasticsearch-{version}.zip"
        if not zipfile.is_zipfile(fetched):
            raise ServerError(f"mvn did not produce a valid {fetched.name}")
        fetched.replace(target)
        log(f"fetched {target.name} in {time.monotonic() - started:.1f} s")
    finally:
        shutil.rmtree(download, ignore_errors=True)
    return target


def unpack(archive: Path, version: str, cache: Path) -> Path:
    """Unpack the zip once into the cache; return the Elasticsearch home folder.

    Unpacks beside the target and renames, so an interrupted unpack never looks complete.
    File modes come from the zip (``bin/`` must stay executable), widened to world-readable
    because the server may run as another user.
    """
    home = cache / f"elasticsearch-{version}"
    if (home / "bin" / "elasticsearch").is_file():
        return home
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
    try:
        log(f"unpacking {archive.name}")
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                extracted = Path(bundle.extract(info, staging))
                mode = (info.external_attr >> 16) & 0o777
                if info.is_dir():
                    extracted.chmod(0o755)
                else:
                    extracted.chmod((mode or 0o644) | 0o444 | (0o111 if mode & 0o100 else 0))
        unpacked = staging / f"elasticsearch-{version}"
        if not (unpacked / "bin" / "elasticsearch").is_file():
            raise ServerError(f"{archive.name} has no elasticsearch-{version}/bin/elasticsearch")
        if home.exists():
            shutil.rmtree(home)
        unpacked.rename(home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return home


def install(version: str) -> Path:
    """Fetch and unpack the requested version (both cached); return its home folder."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with locked(cache / ".lock"):
        return unpack(fetch_zip(version, cache), version, cache)


# --------------------------------------------------------------------------- JDK


def java_range(version: str) -> tuple[int, int]:
    """The Java majors a server version runs on, as an inclusive (lowest, highest) range.

    8.x needs Java 17+ and still uses the Security Manager, which Java 24 removed; 9.x needs 21+.
    """
    major = int(version.split(".", 1)[0])
    if major >= 9:
        return 21, 999
    if major == 8:
        return 17, 23
    return 11, 17


def jdk_major(home: Path) -> int | None:
    """The Java major version of a JDK folder, from its ``release`` file or else its name."""
    release = home / "release"
    text = ""
    with contextlib.suppress(OSError):
        text = release.read_text(encoding="utf-8", errors="replace")
    found = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.MULTILINE)
    if found:
        first = int(found.group(1))
        # Java 8 and older report "1.8.0_x".
        return int(found.group(2) or 0) if first == 1 else first
    named = re.search(r"(?:^|[-_.])(?:1\.)?(\d{1,2})(?:[-_.]|$)", home.name)
    return int(named.group(1)) if named else None


def find_java_home(version: str) -> Path:
    """Pick a JDK suited to the server version: the override, else the newest fitting one."""
    configured = os.environ.get("NEARDUP_ES_JAVA_HOME")
    if configured:
        home = Path(configured)
        if not (home / "bin" / "java").is_file():
            raise ServerError(f"NEARDUP_ES_JAVA_HOME={configured} has no bin/java")
        return home
    lowest, highest = java_range(version)
    fitting: dict[Path, tuple[int, Path]] = {}
    seen: list[str] = []
    if JVM_ROOT.is_dir():
        for home in sorted(JVM_ROOT.iterdir()):
            if not (home / "bin" / "java").is_file():
                continue
            major = jdk_major(home)
            seen.append(f"{home.name} ({major})")
            if major is not None and lowest <= major <= highest:
                fitting.setdefault(home.resolve(), (major, home))
    if not fitting:
        raise ServerError(
            f"no JDK {lowest}..{highest} for Elasticsearch {version} in {JVM_ROOT} "
            f"(found: {', '.join(seen) or 'none'}); set NEARDUP_ES_JAVA_HOME"
        )
    _major, home = max(fitting.values(), key=lambda pair: pair[0])
    return home


# --------------------------------------------------------------------------- user and files


@dataclass(frozen=True)
class RunAs:
    """The account the server runs under (Elasticsearch refuses to run as root)."""

    uid: int
    gid: int
    name: str

    @property
    def is_other(self) -> bool:
        """True when the server runs under another account than this process."""
        return self.uid != os.geteuid()


def server_user() -> RunAs:
    """The current user, or (when root) a system user created on first use."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return RunAs(entry.pw_uid, entry.pw_gid, entry.pw_name)
    name = os.environ.get("NEARDUP_ES_USER", DEFAULT_USER)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        log(f"running as root: creating system user {name} for Elasticsearch")
        nologin = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", nologin, name], check=True
        )
        entry = pwd.getpwnam(name)
    return RunAs(entry.pw_uid, entry.pw_gid, entry.pw_name)


def link_tree(source: Path, target: Path) -> None:
    """Mirror ``source`` into ``target`` with hard links (a plain copy across filesystems).

    Lets another user run the server when the cache sits in a home folder it cannot enter,
    at the cost of a few hundred links instead of a 110 MB copy.
    """

    def link_or_copy(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(source, target, symlinks=True, copy_function=link_or_copy)


def chown_tree(root: Path, user: RunAs) -> None:
    """Give a folder tree to the server's user."""
    os.chown(root, user.uid, user.gid)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.chown(os.path.join(folder, name), user.uid, user.gid, follow_symlinks=False)


def absolute_jvm_paths(jvm_options: Path, work: Path) -> None:
    """Point the JVM's log, error and heap-dump files into this run's folders.

    8.x's jvm.options names them relative to the Elasticsearch home (``logs/gc.log``,
    ``HeapDumpPath=data``), which the server's user may not write (a root-owned cache or its
    hard links); 9.x's are relative to the logs folder already and are left as they are.
    """
    text = jvm_options.read_text(encoding="utf-8")
    text = re.sub(r"(?<=[=:])logs/", f"{work / 'logs'}/", text)
    text = re.sub(r"HeapDumpPath=data$", f"HeapDumpPath={work / 'data'}", text, flags=re.M)
    jvm_options.write_text(text, encoding="utf-8")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tail(path: Path, lines: int = 60) -> str:
    """The last lines of a text file, or a note that it is missing."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"({path} not found)\n"
    return "\n".join(text.splitlines()[-lines:]) + "\n"


# --------------------------------------------------------------------------- the server


@dataclass(frozen=True)
class Security:
    """A secured server: xpack security on, HTTPS on the HTTP layer, users of the file realm.

    ``files`` are written into the server's config folder (certificates, ``users``,
    ``users_roles``, ``roles.yml``) before it starts; ``settings`` are its ``-E`` options (paths
    relative to the config folder); the health check trusts ``ca_file`` and logs in as ``auth``.
    """

    files: Mapping[str, bytes]
    settings: Mapping[str, str]
    ca_file: Path
    auth: tuple[str, str]
    # Transport TLS is needless on one node bound to loopback: bootstrap checks only warn there.
    defaults: Mapping[str, str] = field(default_factory=lambda: {
        "xpack.security.enabled": "true",
        "xpack.security.http.ssl.enabled": "true",
        "xpack.security.transport.ssl.enabled": "false",
    })

    def options(self) -> list[str]:
        """The ``-E`` options of the server."""
        return [f"-E{key}={value}" for key, value in {**self.defaults, **self.settings}.items()]

    def write(self, config: Path) -> None:
        """Put the files into the server's config folder, replacing the distribution's."""
        for name, content in self.files.items():
            target = config / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def health_context(self) -> tuple[ssl.SSLContext, dict[str, str]]:
        """How the health check reaches the server: the TLS context and the auth header."""
        token = base64.b64encode(":".join(self.auth).encode("utf-8")).decode("ascii")
        return ssl.create_default_context(cafile=str(self.ca_file)), {
            "Authorization": f"Basic {token}"
        }


class Server:
    """One Elasticsearch process group on 127.0.0.1, with its own temporary folders."""

    def __init__(self, version: str, security: Security | None = None) -> None:
        self.version = version
        self.security = security
        self.port = 0
        self.workdir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.console: Path | None = None
        self._launch: tuple[list[str], dict[str, str], RunAs] | None = None

    @property
    def url(self) -> str:
        """The server's HTTP address (https:// when secured)."""
        return f"{'https' if self.security else 'http'}://127.0.0.1:{self.port}"

    def ports(self) -> tuple[int, int]:
        """Its HTTP and transport ports: free ones (a cluster's nodes are given theirs)."""
        http = free_port()
        transport = free_port()
        while transport == http:
            transport = free_port()
        return http, transport

    def node_options(self) -> list[str]:
        """Its name and how it finds its cluster: alone (tests/es_cluster.py: three nodes)."""
        return ["-Enode.name=neardup-test", "-Ediscovery.type=single-node"]

    def start(self, timeout: float) -> None:
        """Start the server and wait for yellow health; raises ``ServerError`` on failure."""
        es_home = install(self.version)
        java_home = find_java_home(self.version)
        user = server_user()
        self.workdir = Path(tempfile.mkdtemp(prefix="neardup-es-"))
        work = self.workdir
        if user.is_other:
            # The cache may be in /root (mode 700): run from hard links inside our own folder.
            link_tree(es_home, work / "home")
            es_home = work / "home"
        config = work / "config"
        shutil.copytree(es_home / "config", config)
        absolute_jvm_paths(config / "jvm.options", work)
        if self.security is not None:
            self.security.write(config)
        for name in ("data", "logs", "tmp"):
            (work / name).mkdir()
        if user.is_other:
            chown_tree(config, user)
            for name in ("data", "logs", "tmp"):
                os.chown(work / name, user.uid, user.gid)
            os.chmod(work, 0o755)  # mkdtemp makes 0700; the server user must enter it
        self.port, transport_port = self.ports()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(work / "tmp"),
            "ES_JAVA_HOME": str(java_home),
            "ES_JAVA_OPTS": os.environ.get("NEARDUP_ES_JAVA_OPTS", DEFAULT_JAVA_OPTS),
            "ES_PATH_CONF": str(config),
            "ES_TMPDIR": str(work / "tmp"),
            # The launcher's probe of the JVM's final flags runs in a folder of its own temp
            # directory, where 9.x's relative gc.log lands: this run's, not /tmp, so it goes
            # with the run.
            "CLI_JAVA_OPTS": f"-Djava.io.tmpdir={work / 'tmp'}",
        }
        command = [
            str(es_home / "bin" / "elasticsearch"),
            "-Ecluster.name=neardup-test",
            *self.node_options(),
            *(["-Expack.security.enabled=false"] if self.security is None
              else self.security.options()),
            "-Enetwork.host=127.0.0.1",
            f"-Ehttp.port={self.port}",
            f"-Etransport.port={transport_port}",
            f"-Epath.data={work / 'data'}",
            f"-Epath.logs={work / 'logs'}",
            "-Ecluster.routing.allocation.disk.threshold_enabled=false",
            # With the threshold off, each pass of the disk monitor lifts every
            # read-only-allow-delete block: the flood-stage faults the tests set must stay.
            "-Ecluster.info.update.interval=1h",
        ]
        self.console = work / "console.log"
        log(
            f"starting Elasticsearch {self.version} on {self.url} "
            f"(JDK {java_home.name}, user {user.name}, folder {work})"
        )
        self._launch = (command, env, user)
        self.launch(timeout)

    def launch(self, timeout: float) -> None:
        """Start the prepared server (again: same port, same data folder) and wait for it."""
        assert self._launch is not None and self.workdir is not None and self.console is not None
        command, env, user = self._launch
        work = self.workdir
        with self.console.open("ab") as console:
            self.process = subprocess.Popen(
                command,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=console,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as a whole
                user=user.uid if user.is_other else None,
                group=user.gid if user.is_other else None,
                extra_groups=[] if user.is_other else None,
            )
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        """Poll cluster health until yellow, the process dies or the timeout passes."""
        assert self.process is not None
        started = time.monotonic()
        deadline = started + timeout
        health = f"{self.url}/_cluster/health?wait_for_status=yellow&timeout=2s"
        context, headers = (None, {}) if self.security is None else self.security.health_context()
        while True:
            code = self.process.poll()
            if code is not None:
                self.report_failure(f"Elasticsearch exited with code {code} while starting")
            try:
                request = urllib.request.Request(health, headers=headers)
                with urllib.request.urlopen(request, timeout=5, context=context) as response:
                    status = json.load(response).get("status")
                if status in ("yellow", "green"):
                    log(f"Elasticsearch is {status} after {time.monotonic() - started:.1f} s")
                    return
            except (OSError, ValueError):
                pass  # not listening yet, or a 408 until the status is reached
            if time.monotonic() > deadline:
                self.report_failure(f"Elasticsearch not yellow after {timeout:.0f} s")
            time.sleep(0.5)

    def report_failure(self, reason: str) -> None:
        """Print the tails of the console and server logs, then raise ``ServerError``."""
        # The console repeats the server log; the log file matters when the console is empty.
        for path in (self.console, self.workdir and self.workdir / "logs" / "neardup-test.log"):
            if path is not None and path.is_file() and path.stat().st_size:
                log(f"--- tail of {path} ---")
                sys.stderr.write(tail(path))
                break
        raise ServerError(reason)

    def halt(self) -> None:
        """Stop the process group but keep port, config and data: `launch` starts it again."""
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
                os.killpg(process.pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
            stop_group(process, STOP_TIMEOUT)
            log("Elasticsearch stopped")

    def pause(self) -> None:
        """Freeze every process of the server (SIGSTOP): connections hang, nothing answers."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL) and delete the folders."""
        self.halt()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def group_alive(pgid: int) -> bool:
    """True while any process in the group exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def own_server(version: str = DEFAULT_VERSION) -> Iterator[Server]:
    """A server of the caller's own, to stop, pause, block and start again at will (a test
    module's fixture): never the shared one other tests use."""
    server = Server(version)
    server.start(DEFAULT_START_TIMEOUT)
    try:
        yield server
    finally:
        server.stop()


def stop_group(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Terminate a session leader's whole group; kill what remains after ``timeout`` seconds."""
    pgid = process.pid  # start_new_session: the leader's pid is the group id
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.2)
        if process.poll() is not None and not group_alive(pgid):
            return
    log(f"Elasticsearch did not stop within {timeout:.0f} s: killing it")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    process.wait()
    for _ in range(50):
        if not group_alive(pgid):
            return
        time.sleep(0.1)


# --------------------------------------------------------------------------- entry point


def on_signal(signum: int, _frame: FrameType | None) -> None:
    """Turn SIGTERM/SIGHUP/SIGINT into an exception so the server is always stopped."""
    raise Interrupted(signum)


def run_command(command: Sequence[str], url: str) -> int:
    """Run the wrapped command with the server's address; return its exit code."""
    env = dict(os.environ, NEARDUP_TEST_ES_URL=url, NEARDUP_TEST_ES_REQUIRED="1")
    log(f"running: {' '.join(command)}")
    child = subprocess.Popen(list(command), env=env)
    try:
        code = child.wait()
    except BaseException:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise
    return 128 - code if code < 0 else code


def serve_forever(server: Server) -> int:
    """Keep the server running until interrupted (or until it dies)."""
    assert server.process is not None
    print(f"Elasticsearch {server.version} is up at {server.url}", flush=True)
    print(f"  export NEARDUP_TEST_ES_URL={server.url} NEARDUP_TEST_ES_REQUIRED=1", flush=True)
    print("Press Ctrl-C to stop it.", flush=True)
    code = server.process.wait()
    log(f"Elasticsearch exited on its own with code {code}")
    return 1


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """Split ``[options] -- CMD ARGS...`` into options and the command."""
    argv = list(argv)
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        description="Start a throwaway Elasticsearch on 127.0.0.1, run CMD against it, stop it.",
        usage="%(prog)s [--version V] [--timeout S] (--serve | -- CMD [ARGS...])",
    )
    parser.add_argument("--serve", action="store_true", help="start and run until Ctrl-C")
    parser.add_argument(
        "--version",
        default=os.environ.get("NEARDUP_ES_VERSION", DEFAULT_VERSION),
        help="Elasticsearch version (env NEARDUP_ES_VERSION, default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=float(os.environ.get("NEARDUP_ES_START_TIMEOUT", DEFAULT_START_TIMEOUT)),
        help="seconds to wait for the server (env NEARDUP_ES_START_TIMEOUT)",
    )
    options = parser.parse_args(argv)
    if options.serve == bool(command):
        parser.error("give either --serve or -- CMD [ARGS...]")
    return options, command


def main(argv: Sequence[str] | None = None) -> int:
    """Start the server, run the command or serve, and always stop the server."""
    options, command = parse_args(sys.argv[1:] if argv is None else argv)
    previous = {
        signum: signal.signal(signum, on_signal)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    }
    server = Server(options.version)
    try:
        server.start(options.timeout)
        if options.serve:
            return serve_forever(server)
        return run_command(command, server.url)
    except ServerError as error:
        log(f"error: {error}")
        return 1
    except Interrupted as interrupted:
        log(f"stopping on signal {signal.Signals(interrupted.signum).name}")
        return 128 + interrupted.signum
    finally:
        # A second signal during shutdown must not leave the server behind.
        for signum in previous:
            signal.signal(signum, signal.SIG_IGN)
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
