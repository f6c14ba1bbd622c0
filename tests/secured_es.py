"""A secured Elasticsearch for the tests: HTTPS with a CA made here, file-realm users, roles.

The session fixture `secured_es` starts one server (tests/es_server.py's `Server` with a
`Security`) the first time a test asks for it and stops it when the session ends; a test that
uses it is marked `elasticsearch` (tests/conftest.py), so `make test` runs it and
`-m "not elasticsearch"` leaves it out. It needs what the plain test server needs (mvn, a JDK),
not NEARDUP_TEST_ES_URL; NEARDUP_ES_VERSION picks the version as for the plain server. Start:
about as long as the plain server (~30 s on 2 cores), run beside it.

What a test gets (`SecuredES`, frozen):

- `url`: `https://127.0.0.1:PORT`; `http_url_of_https_port`: `http://` to the same port (the
  server expects HTTPS there); `ca_path`: the CA that signed the node certificate (IP SAN
  127.0.0.1, DNS localhost); `other_ca_path`: a CA that signed nothing of the server's.
- `users` (`SecuredUsers`), each a `User(name, password)` pair, unpackable as a tuple:
  - `admin`: the built-in `superuser` role;
  - `neardup`: the least-privilege role `neardup_writer`: cluster `monitor` and
    `manage_index_templates`; `read`, `write`, `manage` on `neardup-*`. Its password holds
    `/ # ? @ : %` (and a space-free ASCII rest), so redaction and URL handling meet them;
  - `no_monitor`: role `neardup_no_monitor`: as `neardup_writer` without the cluster `monitor`
    privilege (the liveness check, cluster health, gets 403);
  - `index_only`: role `neardup_index_only`: cluster `monitor`; `read`, `write`, `manage` on
    `neardup-*`; no template privilege (for templates installed by an administrator);
  - `reader`: role `neardup_reader`: cluster `monitor`; `read`, `view_index_metadata` on
    `neardup-*`: reads indices that exist, may create none (a hygiene dry run, the reading
    commands);
  - `wrong_password`: the `neardup` user with a password that is not its own (401).
- `env(user)`: NEARDUP_ES_USERNAME / NEARDUP_ES_PASSWORD / NEARDUP_ES_CA_CERTS for a user;
  `url_with(user)`: the https URL with the user's name and password in it, unencoded.

Users are written to the file realm as PBKDF2 hashes (`users`, `users_roles`, `roles.yml` in the
server's config folder); the certificates are made with `cryptography` (no network, no JVM tool).
API keys need the security index, which this distribution cannot create (it lacks the
analysis-common module): tests use basic auth for real and check that a refused API key is
reported.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.es_server import DEFAULT_START_TIMEOUT, DEFAULT_VERSION, Security, Server

NASTY_PASSWORD = "Nd/p#w?x@y:z%q-7"  # every character that breaks a URL written by hand
PBKDF2_COST = 10_000

ROLES = """\
neardup_writer:
  cluster: [monitor, manage_index_templates]
  indices:
    - names: ["neardup-*"]
      privileges: [read, write, manage]
neardup_no_monitor:
  cluster: [manage_index_templates]
  indices:
    - names: ["neardup-*"]
      privileges: [read, write, manage]
neardup_index_only:
  cluster: [monitor]
  indices:
    - names: ["neardup-*"]
      privileges: [read, write, manage]
neardup_reader:
  cluster: [monitor]
  indices:
    - names: ["neardup-*"]
      privileges: [read, view_index_metadata]
"""


class User(NamedTuple):
    """A user of the secured server: `name, password = user`."""

    name: str
    password: str


@dataclass(frozen=True)
class SecuredUsers:
    admin: User
    neardup: User
    no_monitor: User
    index_only: User
    reader: User
    wrong_password: User


@dataclass(frozen=True)
class SecuredES:
    """The running secured server (see the module docstring)."""

    url: str
    http_url_of_https_port: str
    ca_path: Path
    other_ca_path: Path
    users: SecuredUsers

    def env(self, user: User) -> dict[str, str]:
        """NEARDUP_ES_* variables that reach the server as `user`, trusting its CA."""
        return {"NEARDUP_ES_USERNAME": user.name, "NEARDUP_ES_PASSWORD": user.password,
                "NEARDUP_ES_CA_CERTS": str(self.ca_path)}

    def url_with(self, user: User) -> str:
        """`https://NAME:PASSWORD@127.0.0.1:PORT`, the password as a person would type it."""
        scheme, rest = self.url.split("://", 1)
        return f"{scheme}://{user.name}:{user.password}@{rest}"


def pbkdf2_hash(password: str) -> str:
    """The file realm's `{PBKDF2}` hash: cost, salt and PBKDF2-HMAC-SHA512 (256 bits), base64."""
    salt = secrets.token_bytes(32)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode("utf-8"), salt, PBKDF2_COST, 32)
    return (f"{{PBKDF2}}{PBKDF2_COST}${base64.b64encode(salt).decode()}$"
            f"{base64.b64encode(digest).decode()}")


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A self-signed CA key and certificate, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


NODE_NAMES: tuple[x509.GeneralName, ...] = (
    x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"))


def make_node_cert(
    ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate,
    names: tuple[x509.GeneralName, ...] = NODE_NAMES, subject: str = "neardup-test",
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A server's key and certificate for `names` (the node's: 127.0.0.1 and localhost),
    signed by the CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(_name(subject))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def make_users() -> SecuredUsers:
    def password() -> str:
        return secrets.token_urlsafe(12)

    return SecuredUsers(
        admin=User("neardup_admin", password()),
        neardup=User("neardup", NASTY_PASSWORD),
        no_monitor=User("neardup_no_monitor", password()),
        index_only=User("neardup_index_only", password()),
        reader=User("neardup_reader", password()),
        wrong_password=User("neardup", NASTY_PASSWORD + "-not"),
    )


def security_for(users: SecuredUsers, folder: Path) -> tuple[Security, Path, Path]:
    """The server's security files and settings, the CA file (in `folder`) and another CA."""
    ca_key, ca_cert = make_ca("neardup test CA")
    node_key, node_cert = make_node_cert(ca_key, ca_cert)
    _, other_cert = make_ca("neardup other CA")
    ca_path, other_path = folder / "ca.crt", folder / "other-ca.crt"
    ca_path.write_bytes(_pem(ca_cert))
    other_path.write_bytes(_pem(other_cert))
    roles = {"superuser": users.admin, "neardup_writer": users.neardup,  # superuser: built in
             "neardup_no_monitor": users.no_monitor, "neardup_index_only": users.index_only,
             "neardup_reader": users.reader}
    files = {
        "certs/ca.crt": _pem(ca_cert),
        "certs/node.crt": _pem(node_cert),
        "certs/node.key": _key_pem(node_key),
        "users": "".join(f"{u.name}:{pbkdf2_hash(u.password)}\n"
                         for u in roles.values()).encode(),
        "users_roles": "".join(f"{role}:{u.name}\n" for role, u in roles.items()).encode(),
        "roles.yml": ROLES.encode(),
    }
    settings = {
        "xpack.security.http.ssl.key": "certs/node.key",
        "xpack.security.http.ssl.certificate": "certs/node.crt",
        "xpack.security.http.ssl.certificate_authorities": "certs/ca.crt",
    }
    security = Security(files=files, settings=settings, ca_file=ca_path,
                        auth=(users.admin.name, users.admin.password))
    return security, ca_path, other_path


@pytest.fixture(scope="session")
def secured_es() -> Iterator[SecuredES]:
    """One secured server for the session (see the module docstring); stopped at its end."""
    folder = Path(tempfile.mkdtemp(prefix="neardup-secured-"))  # the CA files the tests read
    users = make_users()
    security, ca_path, other_path = security_for(users, folder)
    server = Server(os.environ.get("NEARDUP_ES_VERSION", DEFAULT_VERSION), security)
    try:
        server.start(float(os.environ.get("NEARDUP_ES_START_TIMEOUT", DEFAULT_START_TIMEOUT)))
        yield SecuredES(
            url=server.url,
            http_url_of_https_port=f"http://127.0.0.1:{server.port}",
            ca_path=ca_path,
            other_ca_path=other_path,
            users=users,
        )
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
