"""TLS as the client programs make it: CA and CRL checks, TLS versions,
client certificates, fingerprints, against a private MariaDB that serves a
certificate signed by a CA made here.

Strategy: openssl makes a CA, a server certificate for 127.0.0.1, a client
certificate and two revocation lists (one revoking the server's certificate,
one revoking nothing). The library's `connect` shows what each option does;
`binlake dump -R` and mariadb-binlog -R, given the same options, must both
read the log or both refuse.
"""
from __future__ import annotations

import hashlib
import ssl
import subprocess

import pytest

from binlake.connection.settings import SchemaSourceError, ServerAddress, connect
from binlake.testing.mariadb import MariaDBServer

from .replay import run_binlake

pytestmark = pytest.mark.server


def _openssl(directory, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def _make_pki(directory) -> dict:
    """CA, server and client certificates, and CRLs; the paths by name."""
    _openssl(directory, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=binlake test CA", "-keyout", "ca-key.pem", "-out", "ca.pem")
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl(directory, "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                 "-keyout", f"{name}-key.pem", "-out", f"{name}.csr")
        _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
                 "ca-key.pem", "-CAcreateserial", "-days", "2", "-extfile", "san.ext",
                 "-out", f"{name}.pem")
    (directory / "index.txt").write_text("")
    (directory / "ca.cnf").write_text(
        "[ca]\ndefault_ca=own\n[own]\ndatabase=index.txt\ncrlnumber=crlnumber\n"
        "default_md=sha256\ndefault_crl_days=2\n")
    (directory / "crlnumber").write_text("01\n")
    _openssl(directory, "ca", "-config", "ca.cnf", "-gencrl", "-cert", "ca.pem", "-keyfile",
             "ca-key.pem", "-out", "empty.crl")
    _openssl(directory, "ca", "-config", "ca.cnf", "-revoke", "server.pem", "-cert", "ca.pem",
             "-keyfile", "ca-key.pem")
    _openssl(directory, "ca", "-config", "ca.cnf", "-gencrl", "-cert", "ca.pem", "-keyfile",
             "ca-key.pem", "-out", "revoked.crl")
    names = ("ca.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem",
             "empty.crl", "revoked.crl")
    return {name.replace(".pem", "").replace(".", "_").replace("-", "_"): str(directory / name)
            for name in names}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    try:
        return _make_pki(tmp_path_factory.mktemp("pki"))
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"openssl could not make the test certificates: {exc}")


@pytest.fixture(scope="module")
def server(mariadbd, pki, tmp_path_factory):
    extra = {"ssl_ca": pki["ca"], "ssl_cert": pki["server"], "ssl_key": pki["server_key"]}
    with MariaDBServer(tmp_path_factory.mktemp("tls"), extra=extra) as server:
        server.execute("CREATE DATABASE IF NOT EXISTS tls_db")
        server.execute("CREATE TABLE IF NOT EXISTS tls_db.t (id INT PRIMARY KEY)")
        server.execute("INSERT INTO tls_db.t VALUES (1)")
        server.flush_logs()
        yield server


def _address(server, **tls) -> ServerAddress:
    return ServerAddress(host="127.0.0.1", port=server.port, user="root", password="", **tls)


def _fingerprint(path: str, name: str = "sha256") -> str:
    der = ssl.PEM_cert_to_DER_cert(open(path).read())
    return hashlib.new(name, der).hexdigest()


def test_verified_with_the_ca_and_a_client_certificate(server, pki):
    connection = connect(_address(server, ssl_mode="VERIFY_IDENTITY", ssl_ca=pki["ca"],
                                  ssl_cert=pki["client"], ssl_key=pki["client_key"]))
    assert isinstance(connection._sock, ssl.SSLSocket)
    connection.close()


def test_tls_version_is_the_one_asked_for(server, pki):
    for version in ("TLSv1.2", "TLSv1.3"):
        connection = connect(_address(server, ssl_mode="REQUIRED", tls_version=version))
        assert connection._sock.version() == version
        connection.close()
    connection = connect(_address(server, ssl_mode="REQUIRED", tls_version="TLSv1.2",
                                  tls_ciphersuites=""))
    assert connection._sock.version() == "TLSv1.2"
    connection.close()


def test_a_revoked_certificate_is_refused(server, pki):
    connection = connect(_address(server, ssl_mode="VERIFY_CA", ssl_ca=pki["ca"],
                                  ssl_crl=pki["empty_crl"]))
    connection.close()
    with pytest.raises(SchemaSourceError, match="revoked"):
        connect(_address(server, ssl_mode="VERIFY_CA", ssl_ca=pki["ca"],
                         ssl_crl=pki["revoked_crl"]))
    with pytest.raises(SchemaSourceError, match="--ssl-crl"):
        connect(_address(server, ssl_mode="VERIFY_CA", ssl_ca=pki["ca"],
                         ssl_crl=pki["ca"] + ".missing"))


def test_fingerprints_name_the_servers_certificate(server, pki, tmp_path):
    for name in ("sha256", "sha1", "sha512"):
        connection = connect(_address(server, ssl_fp=_fingerprint(pki["server"], name)))
        assert isinstance(connection._sock, ssl.SSLSocket)  # a fingerprint implies --ssl
        connection.close()
    with_colons = ":".join(_fingerprint(pki["server"])[i:i + 2] for i in range(0, 64, 2))
    connect(_address(server, ssl_fp=with_colons.upper())).close()
    with pytest.raises(SchemaSourceError, match="matches no --ssl-fp"):
        connect(_address(server, ssl_fp=_fingerprint(pki["client"])))
    listing = tmp_path / "fingerprints"
    listing.write_text(f"# accepted\n{_fingerprint(pki['client'])}\n"
                       f"{_fingerprint(pki['server'])}\n")
    connect(_address(server, ssl_fplist=str(listing))).close()


def test_a_saved_session_is_not_resumed(server, pki, tmp_path):
    session = tmp_path / "session.pem"
    session.write_text("-----BEGIN SSL SESSION PARAMETERS-----\n")
    with pytest.raises(SchemaSourceError, match="continue-on-failed-reuse"):
        connect(_address(server, ssl_mode="REQUIRED", ssl_session_data=str(session)))
    connect(_address(server, ssl_mode="REQUIRED", ssl_session_data=str(session),
                     ssl_session_data_continue_on_failed_reuse=True)).close()


def _read_remote(command: list[str], server, options: list[str]) -> int:
    first = server.query("SHOW BINARY LOGS")[0][0]
    connection = ["--no-defaults", "-R", "--host=127.0.0.1", f"--port={server.port}", "--user=root"]
    if command[0] == "binlake":
        status, _, _ = run_binlake("dump", *connection, *options, first)
        return status
    return subprocess.run([*command, *connection, *options, first], capture_output=True,
                          env={"TZ": "UTC"}).returncode


@pytest.mark.parametrize("options, status", [
    (["--ssl-verify-server-cert", "--ssl-ca={ca}"], 0),
    (["--ssl-verify-server-cert", "--ssl-ca={ca}", "--ssl-crl={empty_crl}"], 0),
    (["--ssl-verify-server-cert", "--ssl-ca={ca}", "--ssl-crl={revoked_crl}"], 1),
    (["--ssl", "--tls-version=TLSv1.2", "--ssl-cert={client}", "--ssl-key={client_key}"], 0),
    (["--ssl", "--tls-version=TLSv1.3"], 0),
], ids=["ca", "crl-empty", "crl-revoked", "tls12-client-cert", "tls13"])
def test_dash_r_connects_or_refuses_as_mariadb_binlog(server, pki, options, status):
    options = [option.format(**pki) for option in options]
    assert _read_remote(["mariadb-binlog"], server, options) == status, options
    assert _read_remote(["binlake"], server, options) == status, options
