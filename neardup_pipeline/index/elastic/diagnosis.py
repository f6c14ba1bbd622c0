"""What went wrong between neardup and Elasticsearch, said with its cause and its fix.

`diagnose` turns a client error into one of neardup's: a certificate not trusted, TLS on one side
only (`http://` to an HTTPS port), credentials refused, a privilege missing (named from the 403
body: which action, which privileges grant it), or a server out of reach. Messages name the
server by its redacted location and never quote a request, a header or a secret.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, NodeConfig, TlsError, TransportError
from elasticsearch import ApiError
from urllib3.util.ssl_match_hostname import CertificateError

from neardup_pipeline.errors import (
    CaFileError,
    CertificateUntrusted,
    CredentialsRefused,
    IndexFailure,
    IndexUnavailable,
    NearDupError,
    PrivilegeMissing,
    TlsMismatch,
)
from neardup_pipeline.index.elastic.credentials import BASIC_AUTH_VARIABLES, ENV_API_KEY

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["LIVENESS_CALL", "diagnose", "is_access_or_setup", "speaks_tls"]

LIVENESS_CALL = "the liveness check (cluster health)"
CA_HINT = "--es-ca-certs FILE or NEARDUP_ES_CA_CERTS"
INSECURE_HINT = ("--no-es-verify-certs or NEARDUP_ES_VERIFY_CERTS=false, which trusts any "
                 "server: for testing only")
TLS_PROBE_SECONDS = 2.0
# "action [A] is unauthorized for user [U] with effective roles [R] (on indices [I]), this
# action is granted by the (cluster|index) privileges [P]"
_UNAUTHORIZED = re.compile(
    r"action \[(?P<action>[^\]]+)\] is unauthorized for (?P<who>user \[[^\]]*\]|API key id "
    r"\[[^\]]*\][^,]*?)(?: with (?:effective )?roles \[[^\]]*\])?"
    r"(?: on indices \[(?P<indices>[^\]]*)\])?, this action is granted by the "
    r"(?P<kind>cluster|index) privileges \[(?P<privileges>[^\]]+)\]"
)
_USER = re.compile(r"unable to authenticate user \[(?P<user>[^\]]*)\]")


def diagnose(
    exc: BaseException, client: Elasticsearch, location: str, call: str | None = None
) -> NearDupError:
    """The error to raise for a client error from a call to `location` (`call`: what neardup
    was doing, when it knows better than the server's action name)."""
    if isinstance(exc, ApiError):
        if exc.meta.status == 401:
            return _credentials_refused(exc, location)
        if exc.meta.status == 403:
            return _privilege_missing(exc, location, call)
        return IndexFailure(f"Elasticsearch at {location} refused {call or 'a request'}: "
                            f"{_api_reason(exc)}")
    node = _node_config(client)
    if isinstance(exc, TlsError):
        return _tls_problem(exc, location, node)
    if isinstance(exc, TransportConnectionError) and node is not None \
            and node.scheme == "http" and _dropped(exc) \
            and speaks_tls(node.host, node.port, TLS_PROBE_SECONDS):
        return TlsMismatch(
            f"Elasticsearch at {location} expects HTTPS: use https://{_host_port(node)} "
            f"(and the CA that signs its certificate: {CA_HINT})")
    return IndexUnavailable(
        f"Elasticsearch at {location} is not reachable ({_transport_reason(exc)}); check the "
        "URL, that the server runs, and the network")


def is_access_or_setup(problem: NearDupError) -> bool:
    """Whether waiting cannot help: refused, or TLS set up differently on the two sides."""
    return not isinstance(problem, IndexUnavailable)


def speaks_tls(host: str, port: int, timeout: float) -> bool:
    """Whether a TLS handshake succeeds at host:port (no verification: the only question is
    whether the server speaks TLS there)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                context.wrap_socket(raw, server_hostname=host):
            return True
    except (OSError, ssl.SSLError):
        return False


def _credentials_refused(exc: ApiError, location: str) -> CredentialsRefused:
    error = _error(exc)
    reason = str(error.get("reason") or "")
    extra = str(error.get("additional_unsuccessful_credentials") or "")
    if "missing authentication credentials" in reason:
        return CredentialsRefused(
            f"Elasticsearch at {location} needs credentials: set {BASIC_AUTH_VARIABLES}, or "
            f"{ENV_API_KEY}")
    user = _USER.search(reason)
    if user is not None:
        # One 401 for an unknown user and for a wrong password: say neither.
        return CredentialsRefused(
            f"Elasticsearch at {location} refused the credentials of user "
            f"{user.group('user')!r} (401: unknown user or wrong password): check "
            f"{BASIC_AUTH_VARIABLES}")
    if "api key" in extra.lower() or "apikey" in extra.lower():
        return CredentialsRefused(
            f"Elasticsearch at {location} refused the API key (401): check {ENV_API_KEY} (the "
            "`encoded` value of the create-API-key answer; the key may be expired or revoked)")
    return CredentialsRefused(
        f"Elasticsearch at {location} refused the credentials (401: {reason or 'no reason'}): "
        f"check {BASIC_AUTH_VARIABLES}, or {ENV_API_KEY}")


def _privilege_missing(exc: ApiError, location: str, call: str | None) -> PrivilegeMissing:
    reason = str(_error(exc).get("reason") or exc.message)
    found = _UNAUTHORIZED.search(reason)
    if found is None:
        return PrivilegeMissing(f"Elasticsearch at {location} refused {call or 'a request'} "
                                f"(403: {reason})")
    privileges = [p.strip() for p in found.group("privileges").split(",") if p.strip()]
    kind, indices = found.group("kind"), found.group("indices")
    on = f" on {indices}" if indices else ""
    action = f"action {found.group('action')}{on}"
    head = f"{call}: {action} needs" if call else f"{action}: its role needs"
    return PrivilegeMissing(
        f"Elasticsearch at {location}: {found.group('who')} may not run {head} the {kind} "
        f"privilege {privileges[0]!r}{on} (or any of {', '.join(privileges)}); the "
        "least-privilege role: docs/elasticsearch.md#least-privilege")


def _tls_problem(exc: TlsError, location: str, node: NodeConfig | None) -> NearDupError:
    ca = node.ca_certs if node is not None else None
    for cause in _causes(exc):
        if node is not None and _is_ip(node.host) and _names_mismatch(cause):
            return _ip_not_named(cause, location, node)
        if isinstance(cause, CertificateError):  # urllib3's own check of the name
            return CertificateUntrusted(
                f"Elasticsearch at {location}: its certificate does not name this host "
                f"({cause}): connect with a name the certificate lists, or have one issued "
                "for this name")
        if isinstance(cause, ssl.SSLCertVerificationError):
            why = cause.verify_message or "certificate verify failed"
            if "hostname" in why.lower() or "ip address mismatch" in why.lower():
                return CertificateUntrusted(
                    f"Elasticsearch at {location}: its certificate does not name this host "
                    f"({why}): connect with a name the certificate lists, or have one issued "
                    "for this name")
            if ca:
                return CertificateUntrusted(
                    f"Elasticsearch at {location}: its certificate is not signed by the CA "
                    f"file {ca} ({why}): give the CA that signed it ({CA_HINT}), or "
                    f"{INSECURE_HINT}")
            return CertificateUntrusted(
                f"Elasticsearch at {location}: its certificate is not trusted ({why}): give the "
                f"CA that signed it with {CA_HINT}, or {INSECURE_HINT}")
        if isinstance(cause, FileNotFoundError | IsADirectoryError | PermissionError):
            return CaFileError(f"the CA file {ca} cannot be read ({cause.strerror}): give an "
                               f"existing PEM file with {CA_HINT}")
    ssl_errors = [c for c in _causes(exc) if isinstance(c, ssl.SSLError)]
    text = " ".join(str(c) for c in ssl_errors) or str(exc)
    if any(word in text for word in ("WRONG_VERSION_NUMBER", "record layer failure",
                                     "packet length too long", "UNEXPECTED_EOF")):
        return TlsMismatch(f"Elasticsearch at {location} does not speak TLS on that port: use "
                           "http:// (or turn HTTPS on at the server)")
    if ca and ("NO_CERTIFICATE" in text or "PEM lib" in text):
        return CaFileError(f"the CA file {ca} holds no PEM certificate: give the CA's "
                           f"certificate with {CA_HINT}")
    return CertificateUntrusted(f"Elasticsearch at {location}: TLS failed "
                                f"({_short(str(ssl_errors[0]) if ssl_errors else text)})")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _names_mismatch(cause: BaseException) -> bool:
    """Whether a TLS failure is the certificate's names not matching (urllib3 checks an IP
    address itself; Python's ssl says "IP address mismatch")."""
    if isinstance(cause, CertificateError):
        return True
    return isinstance(cause, ssl.SSLCertVerificationError) and \
        "mismatch" in (cause.verify_message or "").lower()


def _ip_not_named(cause: BaseException, location: str, node: NodeConfig) -> CertificateUntrusted:
    """A certificate reached by IP address that names only host names (no IP SAN)."""
    ip = node.host.strip("[]")
    cert = getattr(cause, "_peer_cert", None)  # urllib3 attaches the certificate it checked
    names = _certificate_names(cert) if isinstance(cert, dict) else \
        _fetch_certificate_names(node)
    host = f"[{ip}]" if ":" in ip else ip  # an IPv6 address as a URL writes it
    named = f" (it names {', '.join(names)})" if names else ""
    example = next((n for n in names if not _is_ip(n) and "*" not in n), None)
    by_name = f"https://{example}:{node.port}" if example else "https://NAME:PORT"
    return CertificateUntrusted(
        f"Elasticsearch at {location}: its certificate does not name the IP address "
        f"{host}{named}: connect by a name the certificate holds ({by_name}), or re-issue the "
        f"certificate with the IP address {host} among its subject alternative names (IP SAN)")


def _certificate_names(cert: dict[str, Any]) -> list[str]:
    """The DNS names and IP addresses a certificate (as `getpeercert()` gives it) holds."""
    names = [str(value) for kind, value in cert.get("subjectAltName", ())
             if kind in ("DNS", "IP Address")]
    return [n.strip() for n in names]


def _fetch_certificate_names(node: NodeConfig) -> list[str]:
    """The names of the server's certificate, read in a handshake that checks the chain (with
    the client's CA file) but not the name; none when that fails."""
    try:
        context = ssl.create_default_context(cafile=node.ca_certs or None)
        context.check_hostname = False
        with socket.create_connection((node.host.strip("[]"), node.port),
                                      timeout=TLS_PROBE_SECONDS) as raw, \
                context.wrap_socket(raw) as tls:
            cert = tls.getpeercert()
    except (OSError, ssl.SSLError, ValueError):
        return []
    return _certificate_names(cert) if isinstance(cert, dict) else []


def _dropped(exc: BaseException) -> bool:
    """Whether the server closed the connection without an answer (as an HTTPS port does when
    plain HTTP arrives), as opposed to refusing it or timing out."""
    return any(isinstance(c, http.client.RemoteDisconnected | ConnectionResetError
                          | http.client.BadStatusLine) for c in _causes(exc))


def _transport_reason(exc: BaseException) -> str:
    """A few words on why a connection failed."""
    causes = list(_causes(exc))
    if any(isinstance(c, ConnectionRefusedError) for c in causes):
        return "connection refused"
    if any(isinstance(c, socket.gaierror) for c in causes):
        return "host name not resolved"
    if any(isinstance(c, ConnectionTimeout | TimeoutError) for c in causes):
        return "timed out"
    if _dropped(exc):
        return "the server closed the connection"
    deepest = causes[-1] if causes else exc
    return f"{type(deepest).__name__}: {_short(str(deepest))}"


def _api_reason(exc: ApiError) -> str:
    error = _error(exc)
    if error:
        return f"status {exc.meta.status}: {error.get('type')}: {error.get('reason')}"
    return f"status {exc.meta.status}: {exc.message}"


def _error(exc: ApiError) -> dict[str, Any]:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    return error if isinstance(error, dict) else {}


def _node_config(client: Elasticsearch) -> NodeConfig | None:
    """The configuration of the client's (one) node: scheme, host, port, CA file."""
    nodes = client.transport.node_pool.all()
    return nodes[0].config if nodes else None


def _host_port(node: NodeConfig) -> str:
    return f"{node.host}:{node.port}{node.path_prefix or ''}"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and contexts, and the errors a TlsError gathers."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, TransportError):  # a TlsError gathers one error per attempt
            stack.extend(current.errors)
        stack.extend(a for a in current.args if isinstance(a, BaseException))


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
